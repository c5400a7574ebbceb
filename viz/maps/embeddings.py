"""What a checkpoint learnt in its embeddings, the left and centre of Figure 7 of the ViT paper (Dosovitskiy et al.
2021, which has no public code): the principal components of the patch-embedding filters, the cosine similarity
between the position embeddings of every pair of patches, and how much that similarity follows the 2-D grid.
"""
from __future__ import annotations

import numpy as np


def embedding_filter_components(weight: np.ndarray, count: int = 28) -> tuple[np.ndarray, np.ndarray]:
    """Patch-embedding filters (D, C, P, P) -> (top ``count`` principal components (count, P, P, C) scaled to
    [0, 1] each, their explained-variance ratios (count,)).

    Each of the D filters is one sample of C·P·P pixels; PCA centres the samples and takes the right
    singular vectors, as the paper's "first 28 principal components" of the RGB embedding filters.
    A component's sign is arbitrary: it is fixed so that its largest-magnitude pixel is positive. Each
    component is min-max scaled on its own for display (as the paper's tiles are).
    """
    weight = np.asarray(weight, dtype=np.float64)
    if weight.ndim != 4 or weight.shape[2] != weight.shape[3]:
        raise ValueError(f"Wrong filter shape! Expected (D, C, P, P) but got {weight.shape}!")
    D, C, P, _ = weight.shape
    samples = weight.reshape(D, C * P * P)
    samples = samples - samples.mean(axis=0)
    _, s, vt = np.linalg.svd(samples, full_matrices=False)
    count = min(count, vt.shape[0])
    comps = vt[:count]                                                   # (count, C·P·P)
    signs = np.sign(comps[np.arange(count), np.abs(comps).argmax(axis=1)])
    comps = comps * signs[:, None]
    lo, hi = comps.min(axis=1, keepdims=True), comps.max(axis=1, keepdims=True)
    comps = (comps - lo) / np.maximum(hi - lo, 1e-12)
    variance = s ** 2 / max((s ** 2).sum(), 1e-12)
    tiles = comps.reshape(count, C, P, P).transpose(0, 2, 3, 1)           # (count, P, P, C)
    return tiles.astype(np.float32), variance[:count].astype(np.float32)


def position_similarity(pos_embed: np.ndarray, grid: tuple[int, int]) -> np.ndarray:
    """Position embeddings (1, prefix + gh·gw, D) or (prefix + gh·gw, D) -> cosine similarity (gh·gw, gh·gw).

    ``grid`` is the checkpoint's native grid; the leading prefix embeddings (CLS, DIST, if any) are
    dropped, their number being whatever precedes the gh·gw patch embeddings. Entry (i, j) compares patch i
    with patch j in row-major order; the diagonal is 1.
    """
    pos = np.asarray(pos_embed, dtype=np.float64)
    pos = pos.reshape(-1, pos.shape[-1])
    n = grid[0] * grid[1]
    if pos.shape[0] < n:
        raise ValueError(f"Too few position embeddings! Expected at least {n} for a {grid[0]}×{grid[1]} grid "
                         f"but got {pos.shape[0]}!")
    patches = pos[pos.shape[0] - n:]
    unit = patches / np.maximum(np.linalg.norm(patches, axis=1, keepdims=True), 1e-12)
    sim = unit @ unit.T
    np.fill_diagonal(sim, 1.0)   # exact 1 on the diagonal (a zero vector would otherwise give 0)
    return sim.astype(np.float32)


def neighbour_similarity(similarity: np.ndarray, grid: tuple[int, int]) -> float:
    """How much the position embeddings have learnt the 2-D grid, from their cosine similarity (gh·gw, gh·gw).

    For each patch: the mean similarity with its grid neighbours (up, down, left, right; 2 or 3 at the border)
    minus its mean similarity with all patches, itself included; then the mean over patches. Random embeddings
    give about -1/(gh·gw) (the self-similarity 1 is in the second mean only); embeddings that vary smoothly over
    the grid give clearly positive values. Needs a grid with at least two patches.
    """
    sim = np.asarray(similarity, dtype=np.float64)
    gh, gw = grid
    n = gh * gw
    if sim.shape != (n, n):
        raise ValueError(f"Wrong similarity shape! Expected ({n}, {n}) for a {gh}×{gw} grid but got {sim.shape}!")
    if n < 2:
        raise ValueError(f"A {gh}×{gw} grid has no neighbours! Expected at least two patches.")
    rows, cols = np.divmod(np.arange(n), gw)
    adjacent = np.abs(rows[:, None] - rows[None, :]) + np.abs(cols[:, None] - cols[None, :]) == 1  # (n, n)
    neighbours = (sim * adjacent).sum(axis=1) / adjacent.sum(axis=1)
    return float(np.mean(neighbours - sim.mean(axis=1)))
