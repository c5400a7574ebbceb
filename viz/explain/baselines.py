"""The class-agnostic maps in the same form as the explanations, so that they can be compared by name:
the readout's attention in the last block, attention rollout, and a seeded random map.

``attention`` and ``rollout`` are the existing maps of ``viz.maps`` read out through the model's readout
(the CLS row for a CLS model, which is exactly ``token_attention_map`` and ``rollout_map``; the mean of the
patch rows for a mean-pooled model; the MAP probe's attention, and p · R, for SigLIP: the same queries as
``viz.maps.readout``'s ``readout_attention_map`` and ``readout_rollout_map``), through any blocks and merges (a
windowed block's matrices window by window, a map read on a coarser grid shared down to the patch grid, as
``viz.maps.source.rollout_rows`` carries rollout). They do not depend on the target: the same picture for every
class. ``random`` is the baseline every faithfulness score needs: uniform values in [0, 1), the same for a given
grid and seed.
"""
from __future__ import annotations

import numpy as np

from ..maps.rollout import with_residual
from ..maps.source import rollout_rows
from .arrays import BlockSteps, ExplainArrays, through

RANDOM_SEED = 0


def attention_map(arrays: ExplainArrays) -> np.ndarray:
    """The readout's attention over the last block's tokens, mean of heads, on the patch grid -> (gh, gw).

    For "map" pooling (SigLIP) the query that reads the image out is the probe, which attends once, after the
    last block: its attention (mean of heads) *is* the readout row, as ``viz.maps.readout`` shows it."""
    if arrays.query in ("map", "map_all"):
        (readout,) = arrays.need("readout")
        return arrays.on_patch_grid(readout, -1)
    attention, readout = arrays.need("attention", "readout")
    last = np.asarray(attention[-1]).mean(axis=-3, dtype=np.float32)     # heads averaged, on the block's layout
    return arrays.on_patch_grid(through(readout, last, arrays.description.blocks[-1]), -1)


def rollout_map(arrays: ExplainArrays) -> np.ndarray:
    """Attention rollout (mean of heads, no discard, from block 0), the readout's row -> (gh, gw)."""
    attention, readout = arrays.need("attention", "readout")
    steps = [with_residual(np.asarray(A).mean(axis=-3, dtype=np.float32)) for A in attention]   # Â_l, first first
    return arrays.on_patch_grid(rollout_rows(BlockSteps(steps, arrays.description.blocks), readout))


def random_values(grid: tuple[int, int], seed: int = RANDOM_SEED) -> np.ndarray:
    """Uniform values in [0, 1) on the grid, reproducible from ``seed`` -> (gh, gw) float32."""
    return np.random.default_rng(seed).random(tuple(grid), dtype=np.float32)


def random_map(arrays: ExplainArrays) -> np.ndarray:
    return random_values(arrays.grid)
