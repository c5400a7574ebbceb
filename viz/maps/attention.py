"""Raw attention maps read straight from the captured probabilities, and DINO's threshold mask.

Attention arrays are (L, H, T, T) for one image: ``attn[l, h, i, j]`` is how much query token i attends
to key token j in layer l, head h (each row sums to 1). Layers and heads are 0-based; negative indices
count from the end; ``head=None`` means the mean over heads.

Dropping tokens (``drop_patches`` (gh, gw) bool, e.g. the high-norm artifact tokens of ``viz.maps.norms``)
works as in the rollout: the dropped tokens are removed as keys and as queries, and every remaining row is
renormalised over the remaining keys, i.e. the attention each query would give if the dropped tokens were
not there (a softmax over fewer keys is exactly the renormalised one). Dropped patches read 0 in the maps.
"""
from __future__ import annotations

import numpy as np

from .layout import check_attention, layer_index, patch_token, to_grid
from .rollout import columns_through, kept_tokens, residual_steps, rows_through


def without_tokens(rows: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Attention rows (..., T) -> float32 rows with the keys not in ``keep`` (token indices) set to 0 and each
    row renormalised over the kept keys (rows with no kept mass stay 0)."""
    rows = np.asarray(rows, dtype=np.float32)
    if keep.size == rows.shape[-1]:
        return rows
    out = np.zeros_like(rows)
    out[..., keep] = rows[..., keep]
    total = out.sum(axis=-1, keepdims=True)
    return np.divide(out, total, out=np.zeros_like(out), where=total > 0)


def _check_kept(token: int, keep: np.ndarray, name: str) -> None:
    if not np.isin(token, keep):
        raise ValueError(f"{name} is masked out (it is one of the dropped tokens), so it has no attention map! "
                         f"Expected a token that is kept; unmask the tokens to see it.")


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
                        head: int | None = None, token: int = 0,
                        drop_patches: np.ndarray | None = None) -> np.ndarray:
    """Where one token (default CLS) looks in one layer: its attention row over the patches -> (gh, gw).

    ``drop_patches`` (gh, gw) bool: patches removed as keys, the row renormalised over the rest (they read 0)."""
    attn = check_attention(attn, num_prefix, grid)
    row = _layer_heads(attn, layer, head)[token]
    if drop_patches is not None:
        keep = kept_tokens(num_prefix, grid, drop_patches)
        _check_kept(token % row.shape[-1], keep, f"Token {token}")
        row = without_tokens(row, keep)
    return to_grid(row, num_prefix, grid)


def all_heads_maps(attn: np.ndarray, num_prefix: int, grid: tuple[int, int], token: int = 0,
                   drop_patches: np.ndarray | None = None) -> np.ndarray:
    """The "model view": one token's attention over the patches for every layer and head -> (L, H, gh, gw);
    with ``drop_patches``, each row renormalised without those patches (they read 0)."""
    attn = check_attention(attn, num_prefix, grid)
    rows = attn[:, :, token, :]
    if drop_patches is not None:
        keep = kept_tokens(num_prefix, grid, drop_patches)
        _check_kept(token % rows.shape[-1], keep, f"Token {token}")
        rows = without_tokens(rows, keep)
    return to_grid(rows, num_prefix, grid).astype(np.float32, copy=False)


def patch_query_maps(attn: np.ndarray, num_prefix: int, grid: tuple[int, int], row: int, col: int,
                     layer: int = -1, head: int | None = None,
                     drop_patches: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """For the patch at (row, col): (where it attends, who attends to it), each (gh, gw), in one layer.

    The first is the patch's attention row over the patches; the second its column: how much each patch
    attends to it. Prefix tokens are left out of both. With ``drop_patches`` the dropped patches are removed
    as keys and as queries, every row renormalised over the kept keys; querying a dropped patch raises
    ValueError.
    """
    attn = check_attention(attn, num_prefix, grid)
    q = patch_token(row, col, num_prefix, grid)
    a = _layer_heads(attn, layer, head)
    if drop_patches is None:
        return to_grid(a[q], num_prefix, grid), to_grid(a[:, q], num_prefix, grid)
    keep = kept_tokens(num_prefix, grid, drop_patches)
    _check_kept(q, keep, f"Patch ({row}, {col})")
    out_row = without_tokens(a[q], keep)
    in_col = np.zeros(a.shape[0], dtype=np.float32)
    in_col[keep] = without_tokens(a[keep], keep)[:, q]        # only kept queries, each renormalised
    return to_grid(out_row, num_prefix, grid), to_grid(in_col, num_prefix, grid)


def rollout_query_maps(fused: np.ndarray, num_prefix: int, grid: tuple[int, int], row: int, col: int,
                       discard_ratio: float = 0.0, start_layer: int = 0,
                       drop_patches: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Like ``patch_query_maps`` through all layers: the row and the column of the rollout matrix.

    ``fused``: head-fused attention (L, T, T) (``viz.maps.rollout.fuse_heads``). The query patch is the protected
    token of the discard (see ``viz.maps.rollout``). ``drop_patches``: tokens removed from every layer before
    the product, as ``viz.maps.rollout.rollout_map`` does; they read 0.
    """
    q = patch_token(row, col, num_prefix, grid)
    keep = kept_tokens(num_prefix, grid, drop_patches)
    _check_kept(q, keep, f"Patch ({row}, {col})")
    fused = np.asarray(fused)[layer_index(start_layer, len(fused)):]
    if keep.size < fused.shape[-1]:
        fused = fused[:, keep][:, :, keep]
    where = int(np.flatnonzero(keep == q)[0])
    steps = residual_steps(fused, discard_ratio, 0, protect=(where,))
    one_hot = np.zeros(keep.size, dtype=np.float32)
    one_hot[where] = 1.0
    T = num_prefix + grid[0] * grid[1]
    out_row, in_col = np.zeros(T, dtype=np.float32), np.zeros(T, dtype=np.float32)
    out_row[keep], in_col[keep] = rows_through(steps, one_hot), columns_through(steps, one_hot)   # R[q], R[:, q]
    return to_grid(out_row, num_prefix, grid), to_grid(in_col, num_prefix, grid)


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
