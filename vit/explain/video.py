"""The model-side half of Grad-CAM for a video transformer: one plain forward and one backward per (clips, target).

pytorch-grad-cam explains a video model by hooking its target layer and handing the tokens to a ``reshape_transform``
that lays them out as a 3-D feature map (B, C, T', gh, gw); its GradCAM then reads that volume as it reads a
convolution's. ``gradcam_pass`` records the same thing: the output of the model's ``gradcam_layer`` (the tokens the
last attention step reads, its LayerNorm's output) and the target score's gradient there, put into that volume by the
description (``feature_volume``), not by the family: the layer's output holds the last step's groups of tokens
(``BlockLayout.groups``: every token at once, or a TimeSformer's one group per frame with its CLS token), the prefix
tokens are dropped and every patch token goes to its (time position, row, column).

The forward runs the fused attention (no attention map is kept: Grad-CAM needs none), the graph starts at the tubelet
projection (``patch_projection``) and ``torch.autograd.grad`` goes to the one activation, so no weight gradient is
computed and the model is never changed (``rules.without_parameter_grads``, ``rules.rewired``). The formula that
turns the volume into maps is ``viz.video.classmap``.

With ``attention=True`` the same pass serves GAE too (``viz.video.gae``): the forward runs
``blocks_with_attention`` (the explicit softmax, every step's attention a tensor of the graph, on its layout) and
``forward_head(..., return_probe=True)``, and the one ``autograd.grad`` goes to every step's attention as well as to
Grad-CAM's activation; the steps' attention costs about one (H, T, T) float32 array per step twice (the map and its
gradient), where the fused forward keeps none.
"""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
import torch.nn as nn

from ..architecture import Architecture, BlockLayout, architecture_of
from ..video import in_turns
from .passes import differentiable, gradient_view
from .targets import ClassTarget, Target


@dataclass(frozen=True)
class ClassMapPass:
    """B clips through the plain model and back from the target's score (detached, on the model's device)."""
    output: torch.Tensor            # (B, K) what model(x) returns (logits)
    score: torch.Tensor             # (B,) the explained score
    activation: torch.Tensor        # (B, D, T', gh, gw) the ``gradcam_layer``'s patch tokens as a feature volume
    gradient: torch.Tensor          # (B, D, T', gh, gw) ∂score/∂activation
    block: BlockLayout              # the attention step that reads the activation (the description's last)
    architecture: Architecture | None = None        # every step's layout for this clip
    # with ``attention=True``: every step's attention on its layout ((B, H, T, T), or (B, G, H, n, n) inside its
    # groups), first first, and ∂score/∂attention paired with it; V-JEPA 2's probe query's attention (B, H, T'·N)
    attention: tuple[torch.Tensor, ...] | None = None
    attention_grad: tuple[torch.Tensor, ...] | None = None
    probe: torch.Tensor | None = None
    reduced: tuple | None = None    # with ``reduce``: what it kept of each step (instead of attention, attention_grad)


# What a caller keeps of a step's attention once its gradient is known: (the attention, ∂score/∂attention, both on
# the step's layout with the clips first, the step) -> anything (e.g. GAE's per-group mean_h((∇A ⊙ A)⁺))
Reduce = Callable[[torch.Tensor, torch.Tensor, BlockLayout], object]


def feature_volume(tokens: torch.Tensor, block: BlockLayout, batch: int) -> torch.Tensor:
    """The tokens a step reads, (B·G, n, D) in its G groups of n (``block.groups()``), -> (B, D, T', gh, gw): the
    prefix tokens dropped, every patch token at its time position, row and column (pytorch-grad-cam's 3-D
    ``reshape_transform``)."""
    index = block.groups()                                                          # (G, n) stream index per slot
    G, n = index.shape
    D = tokens.shape[-1]
    if tokens.shape != (batch * G, n, D):
        raise ValueError(f"Wrong activation shape! Expected ({batch * G}, {n}, D) for {batch} clips in {G} groups "
                         f"of {n} tokens but got {tuple(tokens.shape)}.")
    slots = torch.from_numpy(np.flatnonzero(index.ravel() >= block.prefix)).to(tokens.device)
    order = torch.from_numpy(index.ravel()[slots.cpu().numpy()] - block.prefix).to(tokens.device)
    patches = tokens.reshape(batch, G * n, D).index_select(1, slots)                # (B, T'·N, D) in slot order
    stream = torch.empty_like(patches).index_copy_(1, order, patches)               # in stream order
    return stream.reshape(batch, block.frames, *block.grid, D).permute(0, 4, 1, 2, 3)


def in_graph(attention: torch.Tensor) -> torch.Tensor:
    """The tensor of the graph behind a step's attention: a divided step hands its groups' attention out as a view
    (B, G, H, n, n) of the (B·G, H, n, n) softmax the step multiplied by the values; the gradient is taken there (and
    read back in the view's shape)."""
    base = attention._base
    return base if base is not None and base.numel() == attention.numel() else attention


def gradcam_pass(model: nn.Module, x: torch.Tensor, target: Target | None = None,
                 attention: bool = False, reduce: Reduce | None = None, turn=None) -> ClassMapPass:
    """Clips (B, F, C, H, W) -> ``ClassMapPass`` for ``target`` (default: each clip's top-1 class): the activation of
    ``model.gradcam_layer()`` and its gradient, from one forward of the plain model and one ``autograd.grad``; with
    ``attention`` also every step's attention and its gradient (and the probe's attention) from the same pass.

    ``reduce``: each step's attention and gradient are handed to it as soon as the backward reaches the step (a
    tensor hook) and only what it returns is kept (``reduced``): a step's attention and gradient are then freed as
    the backward goes down, instead of every step's being held together at the end. ``turn``: a context manager
    taken for each attention step of the forward and for the backward (a server's model turn: a job whose visitor
    has gone stops at the next one)."""
    model.eval_layout(x, "Explanations")
    architecture = architecture_of(model, x)
    block = architecture.blocks[-1]
    target = target if target is not None else ClassTarget()
    view, store = gradient_view(model)
    maps: list[torch.Tensor] = []
    probe = None
    pending: dict[int, tuple[torch.Tensor, BlockLayout]] = {}
    reduced: dict[int, object] = {}

    def keep(i: int, grad: torch.Tensor) -> None:
        attn, layout = pending.pop(i)
        reduced[i] = reduce(attn, grad.reshape(attn.shape), layout)

    with torch.inference_mode(False), torch.enable_grad():
        if attention:
            steps = in_turns(view.blocks_with_attention(differentiable(x)), turn)
            for i, (tokens, step, layout) in enumerate(steps):
                if reduce is None:
                    maps.append(step)                                               # part of the graph
                else:
                    pending[i] = (step.detach(), layout)
                    in_graph(step).register_hook(lambda grad, i=i: keep(i, grad))
            output, probe = view.forward_head(tokens, return_probe=True)
        else:
            tokens = differentiable(x)
            for step in in_turns(view.steps(tokens, keep=None), turn):              # the plain forward, step by step
                tokens = step.tokens
            output = view.forward_head(tokens)
        score = target.score(output)                                                # (B,)
        # with ``reduce`` the backward goes down to the tubelet projection, through every step's hook
        wrt = [store["tokens"]] + ([store["patches"]] if reduce is not None and attention else
                                   [in_graph(m) for m in maps])
        with turn if turn is not None else nullcontext():
            grads = torch.autograd.grad(score.sum(), wrt)                           # clips are independent: sum
    grads = [grads[0]] + [g.reshape(m.shape) for g, m in zip(grads[1:], maps)]
    B = x.shape[0]
    return ClassMapPass(output=output.detach(), score=score.detach(),
                        activation=feature_volume(store["tokens"].detach(), block, B),
                        gradient=feature_volume(grads[0], block, B), block=block, architecture=architecture,
                        attention=tuple(m.detach() for m in maps) if maps else None,
                        attention_grad=tuple(grads[1:]) if maps else None,
                        probe=None if probe is None else probe.detach(),
                        reduced=tuple(reduced[i] for i in range(len(reduced))) if reduced else None)
