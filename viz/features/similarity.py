"""Cosine similarity between patch features: of one patch with every patch of its photo (DINOv3's dense matching
demo), or of a patch of one photo with every patch of another (where does that part appear there?).

cos(a, b) = a·b / (|a| |b|), in float64, 1 for the same direction, 0 for orthogonal, -1 for opposite; a zero vector
has similarity 0 with everything.
"""
from __future__ import annotations

import numpy as np

from ..maps.layout import patch_token


def cosine_to(features: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Rows (N, D), one vector (D,) -> (N,) float32: each row's cosine similarity with the vector."""
    rows = np.asarray(features, dtype=np.float64)
    q = np.asarray(query, dtype=np.float64)
    norms = np.linalg.norm(rows, axis=-1) * np.linalg.norm(q)
    dots = rows @ q
    return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0).astype(np.float32)


def patch_similarity(features: np.ndarray, grid: tuple[int, int], row: int, col: int,
                     other: np.ndarray | None = None, other_grid: tuple[int, int] | None = None) -> np.ndarray:
    """The cosine similarity of patch (row, col)'s features (``features`` (gh·gw, D)) with every patch of the same
    photo -> (gh, gw), or, given ``other`` (gh'·gw', D) on ``other_grid``, with every patch of that photo ->
    (gh', gw')."""
    query = np.asarray(features)[patch_token(row, col, 0, grid)]
    if other is None:
        return cosine_to(features, query).reshape(grid)
    return cosine_to(other, query).reshape(other_grid)


def best_match(similarity: np.ndarray) -> tuple[int, int]:
    """(row, col) of the largest value of a (gh, gw) map (the first one on ties, row-major)."""
    index = int(np.argmax(similarity))
    return index // similarity.shape[1], index % similarity.shape[1]
