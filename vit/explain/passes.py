"""The model-side half of every explanation: one forward and one backward pass per (images, target, family).

- ``gradient_pass``: the plain model's backward from ``target.score``; returns every block's attention
  with its gradient (GAE, gradient-weighted rollout) and the last block's ``norm1`` output with its
  gradient (Grad-CAM), all from the same pass, tapped from ``Block.step`` (no hooks, no module swapped).
- ``relevance_pass``: the backward of a rule-wired view (``rules.ATTN_LRP`` or ``rules.CP_LRP``); returns
  gradient × input of every patch token at the patch embedding, i.e. LRP relevance per patch.

Both differentiate with ``torch.autograd.grad`` towards the few tensors they need and cut the graph at the
embedding (the relevance pass at the patch embedding's output, whose relevance it reads), so no gradient of any
weight is ever computed (the backward costs about one forward, not two), whether or not the parameters require
grad. The model is never changed: the passes run views of it (``rules.without_parameter_grads``,
``rules.rewired``) and keep everything they record in their own locals, so concurrent calls
do not interfere. The formulas that turn these arrays into maps live in ``viz.explain``.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn

from ..model import PatchEmbed, TokenLayout, VisionTransformer
from ..readout import kind as readout_kind, token_weights
from ..swin import refuse_swin
from .rules import ATTN_LRP, RuleSet, rule_view, without_parameter_grads
from .targets import ClassTarget, Target


@dataclass(frozen=True)
class Readout:
    """Which tokens the model's output is read from, as weights over the T tokens (sum 1).

    weights: (T,) float32 (``vit.readout.token_weights``), or None for MAP pooling when no probe attention was
    captured: e_0 for the CLS token; 1/N on every patch token for the mean of the patches (prefix tokens 0); the
    MAP probe's attention over the tokens, mean of heads, for SigLIP's and PE's probes (it depends on the image);
    half on CLS and half on the distillation token for a distilled DeiT (its two heads are averaged); … GAE,
    rollout and the attention map read their (T, T) matrices through this row. ``query`` is the readout's name
    (``vit.readout``), which ``viz.maps.readout`` gives the same query, so a map and an explanation of one model
    say the same query.
    """
    weights: torch.Tensor | None
    description: str
    query: str = "cls"


def readout(model: VisionTransformer, layout: TokenLayout, probe: torch.Tensor | None = None) -> Readout:
    """The model's readout over the tokens of ``layout`` (see ``Readout``).

    ``probe``: for "map" pooling, the probe's attention of one image, (H, T) or (1, H, T) as
    ``forward_with_attention`` returns it; its mean over the heads is the readout row (``viz.maps.readout``'s
    "map" query, ``fuse_probe(probe, "mean")``); without it the weights are None (a formula that reads them
    then says so) and only the description is known.
    """
    cfg = model.cfg
    T = layout.num_tokens
    if cfg.family == "swin":   # the average pool over the last stage, carried down to the patches: uniform
        return Readout(torch.full((T,), 1.0 / T), "the mean of the last stage's tokens", "mean")
    kind = readout_kind(cfg.readout)
    row = None
    if kind.probe:
        if probe is None:
            return Readout(None, kind.description, cfg.readout)
        probe = probe.detach().float().cpu().reshape(-1, probe.shape[-1])           # (H, T)
        if probe.shape[-1] != T:
            raise ValueError(f"Wrong probe shape! Expected (heads, {T}) for this layout but got {tuple(probe.shape)}.")
        row = probe.mean(dim=0).numpy()
    weights = torch.from_numpy(token_weights(cfg.readout, T, layout.num_prefix, row))
    return Readout(weights, kind.description, cfg.readout)


@dataclass(frozen=True)
class GradientPass:
    """One image batch through the plain model and back from the target's score.

    Shapes: B images, L blocks, H heads, T = prefix + gh·gw tokens, D width. All detached, on the model's device.
    """
    output: torch.Tensor            # (B, K) what model(x) returns (logits)
    score: torch.Tensor             # (B,) the explained score
    attention: torch.Tensor         # (B, L, H, T, T) every block's attention probabilities
    attention_grad: torch.Tensor    # (B, L, H, T, T) ∂score/∂attention, block l paired with block l
    tokens: torch.Tensor            # (B, T, D) output of the last block's norm1 (Grad-CAM's activation)
    tokens_grad: torch.Tensor       # (B, T, D) ∂score/∂tokens
    layout: TokenLayout
    readout: Readout                # of the first image (for "map" pooling the probe's row depends on it)
    probe: torch.Tensor | None = None  # (B, H, T) "map" pooling: the probe's attention (0 on prefix tokens)


@dataclass(frozen=True)
class RelevancePass:
    """LRP relevance of every patch token for the target's score, from one rule-wired backward pass."""
    output: torch.Tensor            # (B, K)
    score: torch.Tensor             # (B,)
    relevance: torch.Tensor         # (B, N) gradient × input at the patch embedding, N = gh·gw (row-major)
    layout: TokenLayout
    rules: str                      # "attnlrp" or "cp_lrp"


class _GraphStart(nn.Module):
    """The patch embedding whose output starts the graph: detached, then requiring grad (kept in ``store``).

    Nothing below it (pixels, patch weights) gets a gradient, and everything above does, even when no
    parameter requires grad.
    """

    def __init__(self, inner: PatchEmbed, store: dict):
        super().__init__()
        self.inner, self.store = inner, store

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.inner(x).detach().requires_grad_()     # (B, N, D)
        self.store["patches"] = y
        return y


def _differentiable(x: torch.Tensor) -> torch.Tensor:
    """A copy usable in autograd even if ``x`` was made under torch.inference_mode()."""
    return x.clone() if x.is_inference() else x


def gradient_pass(model: VisionTransformer, x: torch.Tensor, target: Target | None = None) -> GradientPass:
    """Images (B, C, H, W) -> ``GradientPass`` for ``target`` (default: each image's top-1 class).

    One forward through ``Block.step`` with the explicit softmax (so every block's attention is a tensor of the
    graph, tapped with the last block's normalised input) and one ``autograd.grad`` towards those L attention maps
    and that input. The graph starts at the embedded tokens: nothing below them needs a gradient.
    """
    refuse_swin(model, "gradient_pass (a Swin's is vit.explain.windows.window_gradient_pass)")
    layout = model.eval_layout(x, "Explanations")
    target = target if target is not None else ClassTarget()
    view = without_parameter_grads(model)
    last = len(view.blocks) - 1
    with torch.inference_mode(False), torch.enable_grad():
        x = _differentiable(x)
        positions = view.token_positions(x.shape[-2], x.shape[-1], x.device)
        stream = view.embed(x).detach().requires_grad_()                    # (B, T, D): the graph starts here
        maps: list[torch.Tensor] = []
        for i, blk in enumerate(view.blocks):
            step = blk.step(stream, positions, taps=("attn", "normed") if i == last else ("attn",))
            stream = step.out
            maps.append(step.attn)                                          # (B, H, T, T), part of the graph
        tokens = step.normed                                                # (B, T, D) the last block's norm1
        output, probe = view.forward_head(stream, return_probe=True)
        score = target.score(output)                                        # (B,)
        grads = torch.autograd.grad(score.sum(), maps + [tokens])           # images are independent: sum
    probe = None if probe is None else probe.detach()                       # (B, H, T), 0 on the prefix
    return GradientPass(output=output.detach(), score=score.detach(),
                        attention=torch.stack([m.detach() for m in maps], dim=1),   # (B, L, H, T, T)
                        attention_grad=torch.stack(grads[:-1], dim=1),
                        tokens=tokens.detach(), tokens_grad=grads[-1], layout=layout,
                        readout=readout(model, layout, None if probe is None else probe[0]), probe=probe)


def relevance_pass(model: VisionTransformer, x: torch.Tensor, target: Target | None = None,
                   rules: RuleSet = ATTN_LRP) -> RelevancePass:
    """Images (B, C, H, W) -> ``RelevancePass``: LRP relevance per patch for ``target`` under ``rules``.

    The relevance of patch n is Σ_d (W·x_n)_d · ∂score/∂e_{n,d}, with e_n = W·x_n + b the patch embedding:
    gradient × input of the patch's pixels summed over its pixels and channels (the patch embedding is
    linear, so the two are equal), i.e. lxt's pixel heatmap summed per patch. The bias, the position
    embeddings and the prefix tokens are model constants, not input, and get no share.
    """
    refuse_swin(model, "relevance_pass (a Swin's is vit.explain.windows.window_relevance_pass)")
    layout = model.eval_layout(x, "Explanations")
    target = target if target is not None else ClassTarget()
    store: dict[str, torch.Tensor] = {}

    def first(name: str, module: nn.Module) -> nn.Module | None:
        return _GraphStart(module, store) if isinstance(module, PatchEmbed) else None

    view = rule_view(without_parameter_grads(model), rules, first)
    with torch.inference_mode(False), torch.enable_grad():
        output = view(_differentiable(x))
        score = target.score(output)
        (grad,) = torch.autograd.grad(score.sum(), [store["patches"]])     # (B, N, D)
    patches = store["patches"].detach()
    bias = model.patch_embed.proj.bias
    bias = bias.detach() if bias is not None else None
    inputs = patches if bias is None else patches - bias           # W·x_n: the part that comes from pixels
    return RelevancePass(output=output.detach(), score=score.detach(), relevance=(inputs * grad).sum(dim=-1),
                         layout=layout, rules=rules.name)
