"""Gradient-weighted attention rollout as vit-explain (jacobgil/vit-explain, ``vit_grad_rollout.py``)
describes it, with its two bugs fixed.

Per block l the heads are fused as the mean of attention × gradient, negative values are set to 0,
the lowest ``discard_ratio`` of the entries are discarded, the residual is mixed in and the rows are
renormalised, and the blocks are multiplied from the first upward:

    Â_l = rownorm(0.5·discard((mean_h(A_l ⊙ ∂score/∂A_l))⁺) + 0.5·I),   R = Â_{L-1} · … · Â_0

The map is the readout's row of R over the patch columns (raw values, not divided by the maximum).

What was wrong in vit-explain, and the fix:

- issue #6, gradients paired with the wrong blocks: its forward hooks append the attention maps in
  block order 0 … L-1, but its backward hooks append the gradients as the backward pass reaches them,
  L-1 … 0, and ``zip(attentions, gradients)`` then pairs block l's attention with block L-1-l's gradient.
  Here the gradient of block l is taken with respect to block l's own attention tensor
  (``vit.explain.gradient_pass``: one ``autograd.grad`` towards the L maps, returned in block order), and
  the formula indexes both arrays with the same l.
- issue #16, row normalisation without keepdim: ``a / a.sum(dim=-1)`` divides column j by the sum of row j
  (the (T,) sums broadcast along the last axis), so the rows of Â do not sum to 1. Here every row is
  divided by its own sum (``viz.maps.rollout.with_residual``: ``keepdims=True``).

Also different from vit-explain, on purpose: the discard never removes an entry in the row or column of
the read-out prefix tokens (as in this project's rollout; vit-explain has that filter commented out for
the gradient version), and any prefix count and grid shape work (it assumes one CLS token and a square grid).
"""
from __future__ import annotations

import numpy as np

from ..maps.rollout import discard_lowest, with_residual
from .arrays import ExplainArrays, chain_row, row_to_grid

DEFAULT_DISCARD_RATIO = 0.9  # vit-explain's default for gradient rollout


def gradient_fused(attention: np.ndarray, attention_grad: np.ndarray) -> np.ndarray:
    """(L, H, T, T) attention and gradient -> (L, T, T): (mean over heads of A ⊙ ∂score/∂A)⁺, block by block."""
    attention, attention_grad = np.asarray(attention), np.asarray(attention_grad)
    if attention.shape != attention_grad.shape or attention.ndim != 4:
        raise ValueError(f"Wrong shapes! Expected attention and its gradient both (L, H, T, T) but got "
                         f"{attention.shape} and {attention_grad.shape}.")
    return np.maximum((attention * attention_grad).mean(axis=1, dtype=np.float32), 0.0)


def grad_rollout_map(arrays: ExplainArrays, discard_ratio: float = DEFAULT_DISCARD_RATIO) -> np.ndarray:
    """Gradient-weighted rollout of the patches -> (gh, gw): the readout's row of R, without forming R."""
    attention, grad, readout = arrays.need("attention", "attention_grad", "readout")
    protect = arrays.protected()
    steps = [with_residual(discard_lowest(fused, discard_ratio, protect)) for fused in gradient_fused(attention, grad)]
    return row_to_grid(chain_row(steps, readout), arrays.num_prefix, arrays.grid)
