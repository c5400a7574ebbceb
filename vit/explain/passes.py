"""The model-side half of every explanation: one forward and one backward pass per (images, target), for every
architecture, through the models' uniform interface (``blocks_with_attention``, ``forward_head``,
``architecture``) and two facts each model class states about itself: where the patch tokens are first projected
(``patch_projection``, where the graph starts) and which module's output is Grad-CAM's activation
(``gradcam_layer``, pytorch-grad-cam's target layer).

- ``gradient_pass``: the plain model's backward from ``target.score``; returns every block's attention on its own
  layout ((H, T, T) for global attention, (nW, H, N, N) for a windowed block) with its gradient (GAE, rollout) and
  Grad-CAM's activation with its gradient, all from the same pass, tapped from each block's own computation.
- ``relevance_pass``: the backward of a rule-wired view (``rules.ATTN_LRP`` or ``rules.CP_LRP``); returns
  gradient × input of every patch at the patch projection, i.e. LRP relevance per patch of the photo's grid.

Both differentiate with ``torch.autograd.grad`` towards the few tensors they need and cut the graph at the patch
projection (whose output the relevance pass reads), so no gradient of any weight is ever computed (the backward
costs about one forward, not two), whether or not the parameters require grad. The model is never changed: the
passes run views of it (``rules.without_parameter_grads``, ``rules.rewired``) and keep everything they record in
their own locals, so concurrent calls do not interfere. The formulas that turn these arrays into maps live in
``viz.explain``.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn

from ..architecture import Architecture
from ..model import TokenLayout
from ..readout import kind as readout_kind, token_weights
from .rules import ATTN_LRP, RuleSet, rewired, rule_view, without_parameter_grads
from .targets import ClassTarget, Target


@dataclass(frozen=True)
class Readout:
    """Which tokens the model's output is read from, as weights over the last block's T tokens (sum 1).

    weights: (T,) float32 (``vit.readout.token_weights``), or None for MAP pooling when no probe attention was
    captured: e_0 for the CLS token; 1/N on every patch token for the mean of the patches (prefix tokens 0; a model
    of stages: the last stage's tokens); the MAP probe's attention over the tokens, mean of heads, for SigLIP's and
    PE's probes (it depends on the image); half on CLS and half on the distillation token for a distilled DeiT (its
    two heads are averaged); … GAE, rollout and the attention map read their matrices through this row. ``query``
    is the readout's name (``vit.readout``), which ``viz.maps.readout`` gives the same query, so a map and an
    explanation of one model say the same query.
    """
    weights: torch.Tensor | None
    description: str
    query: str = "cls"


def readout(model: nn.Module, layout: TokenLayout, probe: torch.Tensor | None = None) -> Readout:
    """The model's readout (``Architecture.readout``) over the last block's tokens for an input whose first block
    holds ``layout`` (see ``Readout``).

    ``probe``: for "map" pooling, the probe's attention of one image, (H, T) or (1, H, T) as
    ``forward_with_attention`` returns it; its mean over the heads is the readout row (``viz.maps.readout``'s
    "map" query, ``fuse_probe(probe, "mean")``); without it the weights are None (a formula that reads them
    then says so) and only the description is known.
    """
    cfg = model.cfg
    arch = model.architecture(layout.grid[0] * cfg.patch_size, layout.grid[1] * cfg.patch_size)
    last = arch.blocks[-1]
    T = last.num_tokens
    kind = readout_kind(arch.readout)
    description = kind.description if last.grid == arch.grid else "the mean of the last stage's tokens"
    row = None
    if kind.probe:
        if probe is None:
            return Readout(None, description, arch.readout)
        probe = probe.detach().float().cpu().reshape(-1, probe.shape[-1])           # (H, T)
        if probe.shape[-1] != T:
            raise ValueError(f"Wrong probe shape! Expected (heads, {T}) for this layout but got {tuple(probe.shape)}.")
        row = probe.mean(dim=0).numpy()
    weights = torch.from_numpy(token_weights(arch.readout, T, last.prefix, row))
    return Readout(weights, description, arch.readout)


@dataclass(frozen=True)
class GradientPass:
    """One image batch through the plain model and back from the target's score.

    Shapes: B images; block l's attention on its own layout (``architecture.blocks[l]``): (B, H, T, T) for global
    attention over T tokens, (B, nW, H, N, N) for nW windows of N tokens; Grad-CAM's activation over the last
    block's T_L tokens of width D_L. All detached, on the model's device.
    """
    output: torch.Tensor                     # (B, K) what model(x) returns (logits)
    score: torch.Tensor                      # (B,) the explained score
    attention: tuple[torch.Tensor, ...]      # per block, first first: its attention probabilities
    attention_grad: tuple[torch.Tensor, ...]  # per block: ∂score/∂attention, block l paired with block l
    tokens: torch.Tensor                     # (B, T_L, D_L) output of the model's ``gradcam_layer`` (Grad-CAM)
    tokens_grad: torch.Tensor                # (B, T_L, D_L) ∂score/∂tokens
    layout: TokenLayout                      # block 0's tokens: the photo's patch grid, where the maps end
    architecture: Architecture               # the blocks' layouts for this input
    readout: Readout                         # of the first image (for "map" pooling the probe's row depends on it)
    probe: torch.Tensor | None = None        # (B, H, T) "map" pooling: the probe's attention (0 on prefix tokens)


@dataclass(frozen=True)
class RelevancePass:
    """LRP relevance of every patch token for the target's score, from one rule-wired backward pass."""
    output: torch.Tensor            # (B, K)
    score: torch.Tensor             # (B,)
    relevance: torch.Tensor         # (B, N) gradient × input at the patch projection, N = gh·gw (row-major)
    layout: TokenLayout
    rules: str                      # "attnlrp" or "cp_lrp"


class GraphStart(nn.Module):
    """The patch projection whose output starts the graph: detached, then requiring grad (kept in ``store``).

    Nothing below it (pixels, patch weights) gets a gradient, and everything above does, even when no
    parameter requires grad.
    """

    def __init__(self, inner: nn.Module, store: dict):
        super().__init__()
        self.inner, self.store = inner, store

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.inner(x).detach().requires_grad_()
        self.store["patches"] = y
        return y


class Record(nn.Module):
    """Runs ``inner`` and keeps its output under ``key`` in ``store`` (a block's output: its tokens, the first of
    what it returns)."""

    def __init__(self, inner: nn.Module, store: dict, key: str):
        super().__init__()
        self.inner, self.store, self.key = inner, store, key

    def forward(self, *args, **kwargs):
        y = self.inner(*args, **kwargs)
        self.store[self.key] = y[0] if isinstance(y, tuple) else y
        return y


def differentiable(x: torch.Tensor) -> torch.Tensor:
    """A copy usable in autograd even if ``x`` was made under torch.inference_mode()."""
    return x.clone() if x.is_inference() else x


def gradient_view(model: nn.Module) -> tuple[nn.Module, dict[str, torch.Tensor]]:
    """The model rewired for one gradient pass, and the store it fills: the graph starts at the patch projection
    (``model.patch_projection()``, kept as "patches"; nothing below it needs a gradient) and Grad-CAM's activation is
    recorded at ``model.gradcam_layer()`` (as "tokens"); no weight gradient is computed."""
    store: dict[str, torch.Tensor] = {}
    start, cam = model.patch_projection()[0], model.gradcam_layer()

    def replace(name: str, module: nn.Module) -> nn.Module | None:
        if name == start:
            return GraphStart(module, store)
        return Record(module, store, "tokens") if name == cam else None

    return rewired(without_parameter_grads(model), replace), store


def gradient_pass(model: nn.Module, x: torch.Tensor, target: Target | None = None) -> GradientPass:
    """Images (B, C, H, W) -> ``GradientPass`` for ``target`` (default: each image's top-1 class).

    One forward through ``blocks_with_attention`` (the explicit softmax: every block's attention a tensor of the
    graph) and ``forward_head``, Grad-CAM's activation recorded at ``model.gradcam_layer()``, and one
    ``autograd.grad`` towards those maps and that activation. The graph starts at the patch projection
    (``model.patch_projection()``): nothing below it needs a gradient.
    """
    layout = model.eval_layout(x, "Explanations")
    architecture = model.architecture(x.shape[-2], x.shape[-1])
    target = target if target is not None else ClassTarget()
    view, store = gradient_view(model)
    with torch.inference_mode(False), torch.enable_grad():
        maps: list[torch.Tensor] = []
        for tokens, attention, *_ in view.blocks_with_attention(differentiable(x)):
            maps.append(attention)                                          # part of the graph
        output, probe = view.forward_head(tokens, return_probe=True)
        score = target.score(output)                                        # (B,)
        grads = torch.autograd.grad(score.sum(), maps + [store["tokens"]])  # images are independent: sum
    probe = None if probe is None else probe.detach()                       # (B, H, T), 0 on the prefix
    activation = store["tokens"].detach()
    return GradientPass(output=output.detach(), score=score.detach(), attention=tuple(m.detach() for m in maps),
                        attention_grad=tuple(grads[:-1]), tokens=activation.flatten(1, -2),
                        tokens_grad=grads[-1].flatten(1, -2), layout=layout, architecture=architecture,
                        readout=readout(model, layout, None if probe is None else probe[0]), probe=probe)


def relevance_pass(model: nn.Module, x: torch.Tensor, target: Target | None = None,
                   rules: RuleSet = ATTN_LRP) -> RelevancePass:
    """Images (B, C, H, W) -> ``RelevancePass``: LRP relevance per patch for ``target`` under ``rules``.

    The relevance of patch n is Σ_d (W·x_n)_d · ∂score/∂e_{n,d}, with e_n = W·x_n + b the patch projection
    (``model.patch_projection()``): gradient × input of the patch's pixels summed over its pixels and channels (the
    projection is linear, so the two are equal), i.e. lxt's pixel heatmap summed per patch. The bias, the position
    embeddings and the prefix tokens are model constants, not input, and get no share. ValueError (one sentence,
    from the rule table) for a model with a module the rules do not reproduce (Swin v2's cosine attention).
    """
    layout = model.eval_layout(x, "Explanations")
    target = target if target is not None else ClassTarget()
    store: dict[str, torch.Tensor] = {}
    start, channels = model.patch_projection()

    def first(name: str, module: nn.Module) -> nn.Module | None:
        return GraphStart(module, store) if name == start else None

    view = rule_view(without_parameter_grads(model), rules, first)
    with torch.inference_mode(False), torch.enable_grad():
        output = view(differentiable(x))
        score = target.score(output)
        (grad,) = torch.autograd.grad(score.sum(), [store["patches"]])     # e.g. (B, N, D) or (B, D, gh, gw)
    patches = store["patches"].detach()
    channels %= patches.ndim
    bias = model.patch_embed.proj.bias
    if bias is not None:                                                # W·x_n: the part that comes from pixels
        patches = patches - bias.detach().reshape((-1,) + (1,) * (patches.ndim - 1 - channels))
    return RelevancePass(output=output.detach(), score=score.detach(),
                         relevance=(patches * grad).sum(dim=channels).flatten(1), layout=layout, rules=rules.name)
