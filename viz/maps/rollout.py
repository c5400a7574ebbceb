"""Attention rollout (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers").

Attention in a pre-norm block mixes tokens, but the residual connection carries every token forward
unchanged as well. Rollout models one block as Â = 0.5·A + 0.5·I (A: the block's attention with its
heads fused into one matrix), and follows the flow through the blocks by multiplying these matrices:
``R = Â_{L-1} · … · Â_start``. Row t of R says how much of token t's final representation came from
each input token; the usual map is the CLS row over the patch columns.

Options, in the order they are applied per block:
  1. token dropping (``drop_patches``): flagged tokens (e.g. high-norm artifacts) are removed — their row
     and column deleted from every block's attention — so no flow passes through them;
  2. head fusion: mean, max or min over heads;
  3. discard (vit-explain's filter): the lowest ``discard_ratio`` fraction of the fused matrix's entries is
     set to 0. Entries in the row and in the column of every *protected* token (by default the token
     whose row is read out, e.g. CLS) are never candidates, so ``k = floor(ratio · (T - p)²)`` of the
     remaining (T - p)² entries are zeroed (p = number of protected tokens), ties at the k-th value falling in
     row-major order;
  4. Â = 0.5·A + 0.5·I, then every row is divided by its sum. After a discard (or max/min fusion) the rows
     of A no longer sum to 1; renormalising the *rows* keeps Â a proper mixing matrix (vit-explain divides
     by ``a.sum(dim=-1)`` without keepdim, which divides columns instead — its issue #16).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .layout import check_attention, layer_index, to_grid

FUSIONS = ("mean", "max", "min")


def fuse_heads(attn: np.ndarray, fusion: str = "mean") -> np.ndarray:
    """(L, H, T, T) -> (L, T, T) float32: one matrix per block, heads combined by mean, max or min."""
    if fusion not in FUSIONS:
        raise ValueError(f"Unknown head fusion {fusion!r}! Expected one of {FUSIONS}.")
    if fusion == "mean":
        return attn.mean(axis=1, dtype=np.float32)
    reduce = np.max if fusion == "max" else np.min
    return reduce(attn, axis=1).astype(np.float32, copy=False)


def discard_lowest(matrix: np.ndarray, ratio: float, protect: Sequence[int] = (0,), overwrite: bool = False) -> np.ndarray:
    """(T, T) -> copy with the lowest ``ratio`` of the unprotected entries set to 0 (``overwrite``: the float32 matrix
    itself, which the caller no longer needs, instead of a copy).

    Entries in the rows and columns of the ``protect`` tokens are kept whatever their value. The candidates are
    the block of the other tokens' rows and columns; the k = floor(ratio · candidates) lowest fall, and where
    entries tie at the k-th value the first of them in row-major order fall (a stable sort's first k): the same
    entries on every machine, found from the k-th value without an index of every entry.
    """
    if not 0.0 <= ratio < 1.0:
        raise ValueError(f"discard_ratio must be in [0, 1) but got {ratio}!")
    fresh = overwrite and isinstance(matrix, np.ndarray) and matrix.dtype == np.float32 and matrix.flags.writeable
    out = matrix if fresh else np.array(matrix, dtype=np.float32)
    free = np.ones(out.shape[-1], dtype=bool)
    free[list(protect)] = False
    tokens = np.flatnonzero(free)                       # the tokens whose rows and columns may be discarded
    k = int(ratio * tokens.size ** 2)
    if k == 0:
        return out
    one_run = tokens[-1] - tokens[0] + 1 == tokens.size  # (protect the CLS: 1 … T-1): a view, else a copy
    block = out[tokens[0]:tokens[-1] + 1, tokens[0]:tokens[-1] + 1] if one_run else out[np.ix_(tokens, tokens)]
    cut = np.partition(block, k - 1, axis=None)[k - 1]  # the k-th lowest value
    below = block < cut
    tied = k - int(np.count_nonzero(below))             # how many of the entries equal to the cut fall
    block[below] = 0.0
    if cut != 0.0:                                      # (tied zeros are 0 whichever of them fall)
        first = np.flatnonzero(block == cut)[:tied]     # row-major order
        block[first // block.shape[1], first % block.shape[1]] = 0.0
    if not one_run:
        out[np.ix_(tokens, tokens)] = block
    return out


def with_residual(matrix: np.ndarray, overwrite: bool = False) -> np.ndarray:
    """(T, T) attention -> Â = 0.5·A + 0.5·I with every row renormalised to sum to 1 (``overwrite``: computed in the
    float32 matrix itself, which the caller no longer needs)."""
    fresh = overwrite and isinstance(matrix, np.ndarray) and matrix.dtype == np.float32 and matrix.flags.writeable
    if not fresh:
        a = 0.5 * np.asarray(matrix)
        np.einsum("...ii->...i", a)[...] += 0.5          # the diagonal, in place
        return a / a.sum(axis=-1, keepdims=True)
    matrix *= 0.5
    np.einsum("...ii->...i", matrix)[...] += 0.5
    matrix /= matrix.sum(axis=-1, keepdims=True)
    return matrix


def residual_steps(fused: np.ndarray, discard_ratio: float = 0.0, start_layer: int = 0,
                   protect: Sequence[int] = (0,)) -> list[np.ndarray]:
    """Head-fused attention (L, T, T) -> Â of every block from ``start_layer`` on (0-based), first block first,
    each (T, T) float32: the lowest entries discarded, the residual added, the rows renormalised."""
    fused = np.asarray(fused)
    return [with_residual(discard_lowest(matrix, discard_ratio, protect))
            for matrix in fused[layer_index(start_layer, fused.shape[0]):]]


def rollout_product(fused: np.ndarray, discard_ratio: float = 0.0, start_layer: int = 0,
                    protect: Sequence[int] = (0,)) -> np.ndarray:
    """Head-fused attention (L, T, T) -> rollout R (T, T) = Â_{L-1} · … · Â_start (start_layer 0-based).

    Row t of R is the rolled-out attention of token t over all input tokens; each row sums to 1.
    """
    result = np.eye(np.shape(fused)[-1], dtype=np.float32)
    for step in residual_steps(fused, discard_ratio, start_layer, protect):   # from the start block upward
        result = step @ result
    return result


def rows_through(steps: Sequence[np.ndarray], rows: np.ndarray) -> np.ndarray:
    """``rows @ R`` for R = Â_{L-1} · … · Â_0 (``steps`` first block first), rows (k, T) or (T,) -> same shape.

    Vectors times each block's Â from the last block down: k·T² per block instead of the T³ of forming R, for
    a map that reads rows of R (the CLS row, the mean of the patch rows, the probe's row)."""
    out = np.asarray(rows, dtype=np.float32)
    for step in reversed(steps):
        out = out @ step
    return out


def columns_through(steps: Sequence[np.ndarray], columns: np.ndarray) -> np.ndarray:
    """``R @ columns`` for R = Â_{L-1} · … · Â_0 (``steps`` first block first), columns (T, k) or (T,)."""
    out = np.asarray(columns, dtype=np.float32)
    for step in steps:
        out = step @ out
    return out


def rollout_rows(fused: np.ndarray, rows: np.ndarray, discard_ratio: float = 0.0, start_layer: int = 0,
                 protect: Sequence[int] = (0,)) -> np.ndarray:
    """Rows of the rollout: weights ``rows`` (k, T) or (T,) over the tokens -> ``rows @ R``, without forming R
    (``rollout_product``'s R, the same discard and residual; equal to it within float32 rounding)."""
    return rows_through(residual_steps(fused, discard_ratio, start_layer, protect), rows)


def kept_tokens(num_prefix: int, grid: tuple[int, int], drop_patches: np.ndarray | None) -> np.ndarray:
    """Token indices left after dropping the patches flagged True in ``drop_patches`` (gh, gw); prefix kept."""
    T = num_prefix + grid[0] * grid[1]
    if drop_patches is None:
        return np.arange(T)
    drop_patches = np.asarray(drop_patches, dtype=bool)
    if drop_patches.shape != tuple(grid):
        raise ValueError(f"Wrong token mask shape! Expected the patch grid {tuple(grid)} but got {drop_patches.shape}!")
    keep = np.concatenate([np.ones(num_prefix, dtype=bool), ~drop_patches.ravel()])
    return np.flatnonzero(keep)


def rollout_map(attn: np.ndarray, num_prefix: int, grid: tuple[int, int], token: int = 0, fusion: str = "mean",
                discard_ratio: float = 0.0, start_layer: int = 0,
                drop_patches: np.ndarray | None = None) -> np.ndarray:
    """Rolled-out attention of one token over the patches -> (gh, gw).

    ``token``: the token whose row is read out (0 = CLS; a patch via ``layout.patch_token``); it is the
    protected token of the discard. ``drop_patches`` (gh, gw) bool: patches removed before rollout; they
    read 0 in the map. Values are the rollout weights themselves (prefix columns excluded), not rescaled.
    """
    attn = check_attention(attn, num_prefix, grid)
    start = layer_index(start_layer, attn.shape[0])
    return fused_rollout_map(fuse_heads(attn[start:], fusion), num_prefix, grid, token, discard_ratio, 0, drop_patches)


def fused_rollout_map(fused: np.ndarray, num_prefix: int, grid: tuple[int, int], token: int = 0,
                      discard_ratio: float = 0.0, start_layer: int = 0,
                      drop_patches: np.ndarray | None = None) -> np.ndarray:
    """``rollout_map`` from attention whose heads are already fused, (L, T, T) (e.g. ``Analysis.fused``)."""
    fused = np.asarray(fused)
    T = num_prefix + grid[0] * grid[1]
    if fused.ndim != 3 or fused.shape[1:] != (T, T):
        raise ValueError(f"Wrong fused attention shape! Expected (layers, {T}, {T}) for {num_prefix} prefix "
                         f"tokens and a {grid[0]}×{grid[1]} grid but got {fused.shape}!")
    if not -T <= token < T:
        raise ValueError(f"Token {token} does not exist! Expected 0 <= token < {T}.")
    token %= T
    keep = kept_tokens(num_prefix, grid, drop_patches)
    where = np.flatnonzero(keep == token)
    if where.size == 0:
        raise ValueError(f"Token {token} is masked out, so it has no rollout! Unmask it or read out another token.")
    fused = fused[layer_index(start_layer, fused.shape[0]):]
    if keep.size < T:                                    # drop the tokens' rows and columns in every block
        fused = fused[:, keep][:, :, keep]
    query = np.zeros(keep.size, dtype=np.float32)
    query[where[0]] = 1.0
    row = np.zeros(T, dtype=np.float32)
    row[keep] = rollout_rows(fused, query, discard_ratio, 0, protect=(int(where[0]),))
    return to_grid(row, num_prefix, grid)
