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

from typing import Sequence

import numpy as np

from ..maps.rollout import discard_lowest, with_residual
from ..maps.source import rollout_rows
from .arrays import BlockSteps, ExplainArrays

DEFAULT_DISCARD_RATIO = 0.9  # vit-explain's default for gradient rollout
ONE_SEQUENCE = ("vit-explain's gradient-weighted rollout is defined for one sequence of tokens through every block (its "
                "discard ranks the entries of one (T, T) matrix per block over the same tokens); this model's blocks "
                "change grid or attend inside windows, so use gae, the gradient-weighted map through any blocks and "
                "merges.")


def gradient_fused(attention: Sequence[np.ndarray], attention_grad: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Every block's (H, T, T) attention and gradient, first block first (e.g. (L, H, T, T) arrays) -> (T, T) each:
    (mean over heads of A ⊙ ∂score/∂A)⁺."""
    if len(attention) != len(attention_grad):
        raise ValueError(f"Expected the attention and its gradient of the same blocks but got {len(attention)} and "
                         f"{len(attention_grad)} blocks.")
    fused = []
    for A, G in zip(attention, attention_grad):
        A, G = np.asarray(A), np.asarray(G)
        if A.shape != G.shape or A.ndim != 3:
            raise ValueError(f"Wrong shapes! Expected a block's attention and its gradient both (H, T, T) but got "
                             f"{A.shape} and {G.shape}.")
        fused.append(np.maximum((A * G).mean(axis=0, dtype=np.float32), 0.0))
    return fused


def grad_rollout_map(arrays: ExplainArrays, discard_ratio: float = DEFAULT_DISCARD_RATIO) -> np.ndarray:
    """Gradient-weighted rollout of the patches -> (gh, gw): the readout's row of R, without forming R. ValueError
    (``ONE_SEQUENCE``) for arrays of a model without one sequence of tokens."""
    attention, grad, readout = arrays.need("attention", "attention_grad", "readout")
    if not arrays.description.one_sequence:
        raise ValueError(ONE_SEQUENCE)
    protect = arrays.protected()
    steps = [with_residual(discard_lowest(fused, discard_ratio, protect)) for fused in gradient_fused(attention, grad)]
    return arrays.on_patch_grid(rollout_rows(BlockSteps(steps, arrays.description.blocks), readout))
