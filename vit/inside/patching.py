"""Activation patching (Meng et al. 2022; Heimersheim & Nanda 2024, "How to use and interpret activation
patching"): run this photo with one piece taken from another photo's run, and measure how much of the difference
between the two photos' scores moves with it.

The share of the score difference moved is (score_patched − score_this) / (score_other − score_this): 0 when the
piece changes nothing, 1 when it alone turns this photo's score into the other's.

- ``patch_heads``: for every head, this photo with that head's output (its slice of attn @ v) taken from the other
  photo's run, exactly: cached prefixes and one batch of H variants per layer, as ``ablation.head_importance``
  (``patch_heads_steps`` yields one layer at a time);
- ``patch_residual_estimate``: the same share per (layer, token position) of the stream entering each block,
  estimated by attribution patching: gradient × (other − this) of the stream, from one forward and one backward of
  this photo (``trace(…, score=…)``) and one forward of the other.
"""
from __future__ import annotations

from typing import Iterator

import torch

from ..model import VisionTransformer
from .readout import Score
from .stream import Trace, head_variants, run_from


def _check_pair(this: Trace, other: Trace) -> None:
    if this.output.shape[0] != 1 or other.output.shape[0] != 1:
        raise ValueError("Patching takes one photo and one other photo (traces of one image each).")
    if this.layout != other.layout:
        raise ValueError(f"The two photos must have the same token layout (the same input size); got "
                         f"{this.layout.num_tokens} and {other.layout.num_tokens} tokens.")


def score_gap(this: Trace, other: Trace, score: Score) -> tuple[float, float]:
    """(score of this photo, score of the other), both from their own unpatched outputs."""
    return float(score(this.output)[0]), float(score(other.output)[0])


def patch_heads_steps(model: VisionTransformer, this: Trace, other: Trace, score: Score) -> Iterator[tuple[int, torch.Tensor]]:
    """For each layer in turn: (layer, the share moved (H,) by each of its heads patched from ``other``)."""
    _check_pair(this, other)
    s_this, s_other = score_gap(this, other, score)
    H = this.heads[0].shape[1]
    for layer in range(this.depth):
        variants = head_variants(this.heads[layer], other.heads[layer])           # (H, H, T, Dh)
        stream = this.residual[layer].expand(H, -1, -1)                             # (H, T, D)
        patched = score(run_from(model, stream, layer, variants, this.positions), torch.zeros(H, dtype=torch.long))
        yield layer, ((patched.double().cpu() - s_this) / (s_other - s_this)).float()


def patch_heads(model: VisionTransformer, this: Trace, other: Trace, score: Score) -> torch.Tensor:
    """The exact per-head shares (L, H) (NaN everywhere when the two photos give the score the same value)."""
    return torch.stack([share for _, share in patch_heads_steps(model, this, other, score)])


def patch_residual_estimate(this: Trace, other: Trace, score: Score) -> torch.Tensor:
    """The attribution-patching estimate of the share moved by patching the stream entering block l at token t,
    (L, T): Σ_d ∂score/∂x_l,t · (x_other − x_this)_l,t / (score_other − score_this). ``this`` from
    ``trace(…, score=score)`` (its gradients), ``other`` a plain ``trace`` of the other photo."""
    _check_pair(this, other)
    if this.residual_grad is None:
        raise ValueError("The residual estimate needs this photo's gradients: run trace(model, x, score=…).")
    s_this, s_other = score_gap(this, other, score)
    rows = [(this.residual_grad[l][0] * (other.residual[l][0] - this.residual[l][0])).sum(dim=-1)
            for l in range(this.depth)]
    return (torch.stack(rows).double().cpu() / (s_other - s_this)).float()
