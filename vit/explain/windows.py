"""The model side of a Swin's class maps: one forward and one backward pass per (images, target), as ``passes`` does
for a ViT, on ``vit.swin.SwinTransformer``.

- ``window_gradient_pass``: the plain Swin's backward from ``target.score``; every block's window attention with its
  gradient (GAE through the hierarchy) and the last block's ``norm1`` output with its gradient (Grad-CAM on the
  last stage: pytorch-grad-cam's Swin target layer, ``layers[-1].blocks[-1].norm1``), from the same pass;
- ``window_relevance_pass``: the backward of a rule-wired view (``rules.ATTN_LRP`` or ``rules.CP_LRP``, whose tables
  hold the Swin v1 window attention's rule); gradient × input of every patch at the patch convolution's output,
  i.e. LRP relevance per patch of stage 0. Swin v2 has no rule (its cosine attention), and the view says so.

The graph starts at the patch convolution's output (detached, then requiring grad), so no weight gradient is ever
computed; the model is never changed (views of it run), and what a pass records lives in its own locals.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn

from ..model import TokenLayout
from ..architecture import BlockLayout
from ..swin import SwinTransformer
from .passes import RelevancePass, _differentiable, _GraphStart
from .rules import ATTN_LRP, RuleSet, rewired, rule_view, without_parameter_grads
from .targets import ClassTarget, Target

GRAPH_START = "patch_embed.proj"   # the patch convolution: its output (B, D, gh, gw) is where the graph starts


@dataclass(frozen=True)
class WindowGradientPass:
    """One image batch through the plain Swin and back from the target's score.

    Shapes: B images, per block nW windows of N tokens and H heads; the last stage's grid gh×gw of width C.
    Everything is detached, on the model's device.
    """
    output: torch.Tensor                 # (B, K) logits
    score: torch.Tensor                  # (B,) the explained score
    attention: list[torch.Tensor]        # per block, first first: (B, nW, H, N, N) window attention
    attention_grad: list[torch.Tensor]   # per block: (B, nW, H, N, N) ∂score/∂attention, block l with block l
    layouts: list[BlockLayout]            # per block: stage, grid, window, shift, token size
    tokens: torch.Tensor                 # (B, gh, gw, C) the last block's norm1 output (Grad-CAM's activation)
    tokens_grad: torch.Tensor            # (B, gh, gw, C) ∂score/∂tokens
    layout: TokenLayout                  # stage 0's patch grid (no prefix tokens): where the maps end


class _Record(nn.Module):
    """Runs ``inner`` and keeps its output under ``key`` in ``store`` (the last block's norm1: Grad-CAM's tokens)."""

    def __init__(self, inner: nn.Module, store: dict, key: str):
        super().__init__()
        self.inner, self.store, self.key = inner, store, key

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.inner(x)
        self.store[self.key] = y
        return y


def _check(model: nn.Module) -> None:
    if not isinstance(model, SwinTransformer):
        raise ValueError(f"These passes take a vit.swin.SwinTransformer but got a {type(model).__name__}; a ViT's "
                         f"are vit.explain.gradient_pass and relevance_pass.")


def window_gradient_pass(model: SwinTransformer, x: torch.Tensor, target: Target | None = None) -> WindowGradientPass:
    """Images (B, C, H, W) -> ``WindowGradientPass`` for ``target`` (default: each image's top-1 class): one forward
    with the explicit softmax (every block's attention a tensor of the graph) and one ``autograd.grad`` towards the
    blocks' attention and the last block's norm1 output."""
    _check(model)
    layout = model.eval_layout(x, "Explanations")
    target = target if target is not None else ClassTarget()
    store: dict[str, torch.Tensor] = {}
    last_norm = f"layers.{len(model.layers) - 1}.blocks.{len(model.layers[-1].blocks) - 1}.norm1"

    def replace(name: str, module: nn.Module) -> nn.Module | None:
        if name == GRAPH_START:
            return _GraphStart(module, store)
        if name == last_norm:
            return _Record(module, store, "tokens")
        return None

    view = rewired(without_parameter_grads(model), replace)
    with torch.inference_mode(False), torch.enable_grad():
        capture = view.forward_with_attention(_differentiable(x))
        score = target.score(capture.output)                                          # (B,)
        grads = torch.autograd.grad(score.sum(), capture.attention + [store["tokens"]])  # images are independent
    return WindowGradientPass(output=capture.output.detach(), score=score.detach(),
                              attention=[a.detach() for a in capture.attention], attention_grad=list(grads[:-1]),
                              layouts=capture.layouts, tokens=store["tokens"].detach(), tokens_grad=grads[-1],
                              layout=layout)


def window_relevance_pass(model: SwinTransformer, x: torch.Tensor, target: Target | None = None,
                          rules: RuleSet = ATTN_LRP) -> RelevancePass:
    """Images (B, C, H, W) -> ``RelevancePass``: LRP relevance per patch of stage 0 for ``target`` under ``rules``.

    The relevance of patch n is Σ_d (W·x_n)_d · ∂score/∂e_{n,d}, e_n = W·x_n + b the patch convolution's output
    before the patch LayerNorm (which gets its rule): gradient × input of the patch's pixels summed over them (the
    convolution is linear), i.e. lxt's pixel heatmap summed per patch. ValueError (one sentence, from the rule
    table) for a Swin v2."""
    _check(model)
    layout = model.eval_layout(x, "Explanations")
    target = target if target is not None else ClassTarget()
    store: dict[str, torch.Tensor] = {}

    def first(name: str, module: nn.Module) -> nn.Module | None:
        return _GraphStart(module, store) if name == GRAPH_START else None

    view = rule_view(without_parameter_grads(model), rules, first)
    with torch.inference_mode(False), torch.enable_grad():
        output = view(_differentiable(x))
        score = target.score(output)
        (grad,) = torch.autograd.grad(score.sum(), [store["patches"]])              # (B, D, gh, gw)
    patches = store["patches"].detach()
    inputs = patches - model.patch_embed.proj.bias.detach()[:, None, None]        # W·x_n: the part from pixels
    return RelevancePass(output=output.detach(), score=score.detach(),
                         relevance=(inputs * grad).sum(dim=1).flatten(1), layout=layout, rules=rules.name)
