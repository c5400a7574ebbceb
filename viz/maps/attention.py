"""Raw attention maps read straight from the captured probabilities, and DINO's threshold mask.

Attention arrays are (L, H, T, T) for one image: ``attn[l, h, i, j]`` is how much query token i attends
to key token j in block l, head h (each row sums to 1). Layers and heads are 0-based; negative indices
count from the end; ``head=None`` means the mean over heads.
"""
from __future__ import annotations

import numpy as np

from .layout import check_attention, layer_index, patch_token, to_grid
from .rollout import rollout_product


def _layer_heads(attn: np.ndarray, layer: int, head: int | None) -> np.ndarray:
    """(L, H, T, T) -> (T, T) float32 for one layer: one head, or the mean of heads when head is None."""
    L, H = attn.shape[:2]
    a = attn[layer_index(layer, L)]
    if head is None:
        return a.mean(axis=0, dtype=np.float32)
    if not -H <= head < H:
        raise ValueError(f"Head {head} does not exist! Expected 0 <= head < {H}, or None for the mean of heads.")
    return a[head].astype(np.float32, copy=False)


def token_attention_map(attn: np.ndarray, num_prefix: int, grid: tuple[int, int], layer: int = -1,
                        head: int | None = None, token: int = 0) -> np.ndarray:
    """Where one token (default CLS) looks in one layer: its attention row over the patches -> (gh, gw)."""
    attn = check_attention(attn, num_prefix, grid)
    return to_grid(_layer_heads(attn, layer, head)[token], num_prefix, grid)


def all_heads_maps(attn: np.ndarray, num_prefix: int, grid: tuple[int, int], token: int = 0) -> np.ndarray:
    """The "model view": one token's attention over the patches for every layer and head -> (L, H, gh, gw)."""
    attn = check_attention(attn, num_prefix, grid)
    return to_grid(attn[:, :, token, :], num_prefix, grid).astype(np.float32, copy=False)


def patch_query_maps(attn: np.ndarray, num_prefix: int, grid: tuple[int, int], row: int, col: int,
                     layer: int = -1, head: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """For the patch at (row, col): (where it attends, who attends to it), each (gh, gw), in one layer.

    The first is the patch's attention row over the patches; the second its column: how much each patch
    attends to it. Prefix tokens are left out of both.
    """
    attn = check_attention(attn, num_prefix, grid)
    q = patch_token(row, col, num_prefix, grid)
    a = _layer_heads(attn, layer, head)
    return to_grid(a[q], num_prefix, grid), to_grid(a[:, q], num_prefix, grid)


def rollout_query_maps(fused: np.ndarray, num_prefix: int, grid: tuple[int, int], row: int, col: int,
                       discard_ratio: float = 0.0, start_layer: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Like ``patch_query_maps`` through all layers: the row and the column of the rollout matrix.

    ``fused``: head-fused attention (L, T, T) (``viz.maps.rollout.fuse_heads``). The query patch is the protected
    token of the discard (see ``viz.maps.rollout``).
    """
    q = patch_token(row, col, num_prefix, grid)
    matrix = rollout_product(fused, discard_ratio, start_layer, protect=(q,))
    return to_grid(matrix[q], num_prefix, grid), to_grid(matrix[:, q], num_prefix, grid)


def threshold_mask(values: np.ndarray, share: float = 0.6) -> np.ndarray:
    """DINO's mask: the smallest set of highest-valued patches holding at least ``share`` of the total mass.

    values: non-negative (gh, gw) map (e.g. CLS attention) -> bool (gh, gw). As in DINO's
    ``visualize_attention.py`` the values are sorted, the cumulative share is taken from the top, and a patch
    is kept while the mass ranked above it is still below ``share``. Ties at the boundary are broken by
    position (stable sort), so the set size is exact.
    """
    if not 0.0 < share <= 1.0:
        raise ValueError(f"share must be in (0, 1] but got {share}!")
    values = np.asarray(values, dtype=np.float64)
    if values.size and values.min() < 0:
        raise ValueError("threshold_mask needs non-negative values (attention weights)!")
    flat = values.ravel()
    total = flat.sum()
    mask = np.zeros(flat.shape, dtype=bool)
    if total <= 0:
        return mask.reshape(values.shape)
    order = np.argsort(-flat, kind="stable")            # highest first
    above = np.concatenate([[0.0], np.cumsum(flat[order])[:-1]]) / total  # mass ranked strictly above each patch
    mask[order[above < share * (1 - 1e-9)]] = True     # tolerance: a set reaching share exactly stops there
    return mask.reshape(values.shape)
