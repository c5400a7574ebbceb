"""The class-agnostic maps in the same form as the explanations, so that they can be compared by name:
the readout's attention in the last block, attention rollout, and a seeded random map.

``attention`` and ``rollout`` are the existing maps of ``viz.maps`` read out through the model's readout
(the CLS row for a CLS model, which is exactly ``token_attention_map`` and ``rollout_map``; the mean of the
patch rows for a mean-pooled model; the MAP probe's attention, and p · R, for SigLIP: the same queries as
``viz.maps.readout``'s ``readout_attention_map`` and ``readout_rollout_map``). They do not depend on the target: the same picture for every class.
``random`` is the baseline every faithfulness score needs: uniform values in [0, 1), the same for a given
grid and seed.
"""
from __future__ import annotations

import numpy as np

from ..maps.rollout import fuse_heads, with_residual
from .arrays import ExplainArrays, chain_row, read_out, row_to_grid

RANDOM_SEED = 0


def attention_map(arrays: ExplainArrays) -> np.ndarray:
    """The readout's attention over the patches in the last block, mean of heads -> (gh, gw).

    For "map" pooling (SigLIP) the query that reads the image out is the probe, which attends once, after the
    last block: its attention (mean of heads) *is* the readout row, as ``viz.maps.readout`` shows it."""
    if arrays.query in ("map", "map_all"):
        (readout,) = arrays.need("readout")
        return row_to_grid(readout, arrays.num_prefix, arrays.grid)
    attention, readout = arrays.need("attention", "readout")
    last = np.asarray(attention[-1]).mean(axis=0, dtype=np.float32)      # (T, T)
    return read_out(last, readout, arrays.num_prefix, arrays.grid)


def rollout_map(arrays: ExplainArrays) -> np.ndarray:
    """Attention rollout (mean of heads, no discard, from block 0), the readout's row -> (gh, gw)."""
    attention, readout = arrays.need("attention", "readout")
    steps = [with_residual(fused) for fused in fuse_heads(np.asarray(attention), "mean")]   # Â_l, first block first
    return row_to_grid(chain_row(steps, readout), arrays.num_prefix, arrays.grid)


def random_values(grid: tuple[int, int], seed: int = RANDOM_SEED) -> np.ndarray:
    """Uniform values in [0, 1) on the grid, reproducible from ``seed`` -> (gh, gw) float32."""
    return np.random.default_rng(seed).random(tuple(grid), dtype=np.float32)


def random_map(arrays: ExplainArrays) -> np.ndarray:
    return random_values(arrays.grid)
