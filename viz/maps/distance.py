"""How far each head attends, the right of Figure 7 of the ViT paper (Dosovitskiy et al. 2021): the mean attention
distance in pixels of every block and head, and the distance a uniformly attending head would have.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from .layout import check_attention


def patch_distances(grid: tuple[int, int], patch_size: int) -> np.ndarray:
    """Euclidean distance in pixels between the centres of every pair of patches -> (gh·gw, gh·gw)."""
    gh, gw = grid
    rows, cols = np.divmod(np.arange(gh * gw), gw)
    dr = rows[:, None] - rows[None, :]
    dc = cols[:, None] - cols[None, :]
    return (patch_size * np.sqrt(dr ** 2 + dc ** 2)).astype(np.float32)


@lru_cache(maxsize=16)
def uniform_distance(grid: tuple[int, int], patch_size: int) -> float:
    """The mean attention distance in pixels of a head attending uniformly to all patches: the mean of
    ``patch_distances`` (the reference line of Figure 7, right), summed over the (2·gh - 1)·(2·gw - 1) offsets, each
    weighted by how many pairs of patches it separates: (gh - |Δr|)·(gw - |Δc|). No N×N table (at 73×73 patches it
    would take 0.9 GB to make)."""
    gh, gw = grid
    dr = np.arange(1 - gh, gh, dtype=np.float64)[:, None]
    dc = np.arange(1 - gw, gw, dtype=np.float64)[None, :]
    pairs = (gh - np.abs(dr)) * (gw - np.abs(dc))
    return float(patch_size * (pairs * np.sqrt(dr * dr + dc * dc)).sum() / (gh * gw) ** 2)


def mean_attention_distance(attn: np.ndarray, num_prefix: int, grid: tuple[int, int], patch_size: int,
                            renormalise: bool = False) -> np.ndarray:
    """Mean attention distance in pixels for every block and head -> (L, H).

    For each query patch i: Σ_j A_ij · dist(i, j) over the patch tokens j, then the mean over query
    patches — the paper's "distance between the query pixel and all other pixels, weighted by the
    attention weight", as its common reproduction (keras-io "Investigating Vision Transformer
    representations") computes it: attention given to prefix tokens is not renormalised away, i.e. it
    counts as distance 0. With ``renormalise=True`` each query row is divided by its mass on patches
    first, giving the expected distance given that attention lands on a patch.
    """
    attn = check_attention(attn, num_prefix, grid)
    patches = attn[:, :, num_prefix:, num_prefix:].astype(np.float32, copy=False)  # (L, H, N, N)
    dist = patch_distances(grid, patch_size)
    weighted = np.einsum("lhij,ij->lhi", patches, dist)                              # (L, H, N)
    if renormalise:
        weighted = weighted / np.maximum(patches.sum(axis=-1), 1e-12)
    return weighted.mean(axis=-1)
