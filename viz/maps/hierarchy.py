"""A Swin's window attention as arrays: each block's windows on its stage's token grid, rows carried through the
windows and back across patch merging, and the maps made of them (attention rollout and GAE through the hierarchy,
attention distance). Arrays in, arrays out; the model side is ``vit.swin`` and ``vit.explain.windows``.

**Windows on the grid.** A block of a stage with a gh×gw grid attends inside windows of wh×ww tokens. A shifted
block rolls the grid by (−sh, −sw) before cutting it, and masks apart the tokens the roll brought together from
opposite borders: on the grid itself its windows are the tiles displaced by (sh, sw) and cut at the border.
Window k (row-major over the tiles) lists its tokens in row-major order; ``window_index`` says which token of the
grid each slot holds, ``expand`` writes a block's (nW, N, N) window matrices into its stage's (T, T) matrix, T =
gh·gw, zero between tokens of different windows (a masked pair keeps the e^−100-small weight it really had).

**Patch merging and its adjoint.** A merging turns each 2×2 group of tokens into one token of the next stage. As
a mixing matrix M (T_{s+1} × T_s) it is taken to read its four children equally, M[p, c] = 1/4 (the assumption
rollout already makes for the heads of a block, which it averages); a row r over the merged tokens is carried back
to the children as r·M, the adjoint of that mean: each merged token's value is shared equally by its four children
(``share_to_children``), so a row keeps its total and a distribution stays one.

**Rollout through the hierarchy** (Abnar & Zuidema 2020, extended): inside a stage every block's expanded attention,
heads fused, becomes Â = rownorm(0.5·A + 0.5·I) and the blocks multiply; between stages the merge's adjoint carries
rows back. With no CLS token the model reads the average pool, the mean of the last stage's tokens, so the map is
that mean row carried down to stage 0's grid:

    map = (1/T_S)·1ᵀ · Â_S,last ··· Â_S,first · M_{S−1} · Â_{S−1},last ··· M_0 · ··· Â_0,first     (a row over stage 0)

**GAE through the hierarchy** (Chefer, Gur & Wolf 2021's rule for self-attention): inside a stage R ← R + Ā·R from
R = I with Ā = mean_h((∂score/∂A ⊙ A)⁺), i.e. the blocks' steps I + Ā multiply; between stages the same adjoint; the
same readout row. Both are computed as a row carried through the windows (``carry``), never forming a (T, T) matrix.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from .rollout import FUSIONS


class Windows(NamedTuple):
    """Where a block's windows lie (``vit.swin.WindowLayout`` has these fields and more, and is accepted too)."""
    grid: tuple[int, int]       # (gh, gw) tokens of the stage
    window: tuple[int, int]     # (wh, ww) tokens of a window
    shift: tuple[int, int]      # (sh, sw) the cyclic shift


def window_index(grid: tuple[int, int], window: tuple[int, int], shift: tuple[int, int]) -> np.ndarray:
    """(nW, wh·ww) int64: the row-major index on the gh×gw grid of the token each window slot holds.

    Slot (a, b) of window (kr, kc) holds the token of row (sh + kr·wh + a) mod gh, column (sw + kc·ww + b) mod gw."""
    (gh, gw), (wh, ww), (sh, sw) = grid, window, shift
    if gh % wh or gw % ww:
        raise ValueError(f"A {gh}×{gw} grid is not a whole number of {wh}×{ww} windows!")
    rows = (sh + np.arange(gh)) % gh                                  # rolled row r holds original row (r + sh) mod gh
    cols = (sw + np.arange(gw)) % gw
    rows = rows.reshape(gh // wh, 1, wh, 1)                           # (nWh, 1, wh, 1)
    cols = cols.reshape(1, gw // ww, 1, ww)                           # (1, nWw, 1, ww)
    return (rows * gw + cols).reshape((gh // wh) * (gw // ww), wh * ww).astype(np.int64)


def _index(layout) -> np.ndarray:
    return window_index(tuple(layout.grid), tuple(layout.window), tuple(layout.shift))


def _checked(windows: np.ndarray, layout, ndim: int | None = None) -> np.ndarray:
    """Window matrices (nW, …, N, N) of this layout (``ndim`` dimensions in all, when given)."""
    windows = np.asarray(windows)
    (gh, gw), (wh, ww) = layout.grid, layout.window
    nW, N = (gh // wh) * (gw // ww), wh * ww
    if windows.ndim < 3 or windows.shape[0] != nW or windows.shape[-2:] != (N, N) or ndim not in (None, windows.ndim):
        extra = "" if ndim == 3 else "…, "
        raise ValueError(f"Wrong window attention shape! Expected ({nW}, {extra}{N}, {N}) for {wh}×{ww} windows on a "
                         f"{gh}×{gw} grid but got {windows.shape}.")
    return windows


def expand(windows: np.ndarray, layout) -> np.ndarray:
    """A block's window matrices (nW, …, N, N) (e.g. (nW, H, N, N) per head, or (nW, N, N) fused) -> its stage's
    token matrices (…, T, T), T = gh·gw: entry (i, j) is the window entry of tokens i and j when they share a window,
    0 otherwise; the cyclic shift is undone."""
    windows = np.moveaxis(_checked(windows, layout), 0, -3)           # (…, nW, N, N)
    index = _index(layout)                                            # (nW, N)
    T = layout.grid[0] * layout.grid[1]
    dense = np.zeros(windows.shape[:-3] + (T, T), dtype=windows.dtype)
    dense[..., index[:, :, None], index[:, None, :]] = windows
    return dense


def rows_through(rows: np.ndarray, windows: np.ndarray, layout) -> np.ndarray:
    """``rows @ expand(windows)`` without forming it: rows (…, T) over the stage's tokens, windows (nW, N, N)."""
    windows = _checked(windows, layout, ndim=3)
    index = _index(layout)
    rows = np.asarray(rows, dtype=np.float32)
    per_window = np.einsum("...wi,wij->...wj", rows[..., index], windows.astype(np.float32, copy=False))
    out = np.zeros_like(rows)
    out[..., index] = per_window                                      # every token lies in exactly one window
    return out


def share_to_children(values: np.ndarray, grid: tuple[int, int]) -> np.ndarray:
    """Values (…, gh·gw) on a merged grid -> (…, 2gh·2gw) on the grid before the merge: each merged token's value
    shared equally by its 2×2 children (the merge's adjoint, r·M with M[p, c] = 1/4)."""
    values = np.asarray(values, dtype=np.float32)
    gh, gw = grid
    if values.shape[-1] != gh * gw:
        raise ValueError(f"Expected values over a {gh}×{gw} grid ({gh * gw}) but got shape {values.shape}.")
    parents = values.reshape(values.shape[:-1] + (gh, 1, gw, 1)) / 4.0
    return np.broadcast_to(parents, values.shape[:-1] + (gh, 2, gw, 2)).reshape(values.shape[:-1] + (4 * gh * gw,))


def sum_children(values: np.ndarray, grid: tuple[int, int]) -> np.ndarray:
    """Values (…, gh·gw) on a grid -> (…, gh/2·gw/2): each 2×2 group summed (undoes ``share_to_children``)."""
    values = np.asarray(values, dtype=np.float32)
    gh, gw = grid
    return values.reshape(values.shape[:-1] + (gh // 2, 2, gw // 2, 2)).sum(axis=(-3, -1)).reshape(
        values.shape[:-1] + ((gh // 2) * (gw // 2),))


def to_patch_grid(values: np.ndarray, grid: tuple[int, int], patch_grid: tuple[int, int]) -> np.ndarray:
    """A map (gh, gw) on a stage's grid -> (gh0, gw0) on stage 0's: shared down through every merge."""
    values = np.asarray(values, dtype=np.float32).reshape(-1)
    grid = tuple(grid)
    while grid != tuple(patch_grid):
        if grid[0] * 2 > patch_grid[0] or grid[1] * 2 > patch_grid[1]:
            raise ValueError(f"A {grid[0]}×{grid[1]} grid is no stage of a {patch_grid[0]}×{patch_grid[1]} patch grid!")
        values = share_to_children(values, grid)
        grid = (grid[0] * 2, grid[1] * 2)
    return values.reshape(patch_grid)


def carry(rows: np.ndarray, steps: Sequence[tuple[np.ndarray, object]]) -> np.ndarray:
    """Rows (…, T_last) over the last block's grid -> (…, T_0) over stage 0's: ``rows`` times every step's expanded
    matrix from the last block down (``steps``: (windows (nW, N, N), layout) per block, first block first), the
    merge's adjoint between stages (``share_to_children``)."""
    out = np.asarray(rows, dtype=np.float32)
    grid = tuple(steps[-1][1].grid)
    for windows, layout in reversed(steps):
        if grid != tuple(layout.grid):                                # crossed a patch merging
            if tuple(layout.grid) != (2 * grid[0], 2 * grid[1]):
                raise ValueError(f"A {grid[0]}×{grid[1]} stage cannot follow a {layout.grid[0]}×{layout.grid[1]} one: "
                                 f"expected each stage's grid half the one before, blocks first to last.")
            out = share_to_children(out, grid)
            grid = tuple(layout.grid)
        out = rows_through(out, windows, layout)
    return out


def fuse_windows(attention: np.ndarray, fusion: str = "mean") -> np.ndarray:
    """(nW, H, N, N) -> (nW, N, N): heads combined by mean, max or min."""
    if fusion not in FUSIONS:
        raise ValueError(f"Unknown head fusion {fusion!r}! Expected one of {FUSIONS}.")
    attention = np.asarray(attention)
    if fusion == "mean":
        return attention.mean(axis=1, dtype=np.float32)
    return (np.max if fusion == "max" else np.min)(attention, axis=1).astype(np.float32)


def rollout_step(fused: np.ndarray) -> np.ndarray:
    """A block's fused window matrices (nW, N, N) -> Â = rownorm(0.5·A + 0.5·I), window by window (the identity of
    the stage lies inside the windows, so this is the expanded Â's own window form)."""
    a = 0.5 * np.asarray(fused, dtype=np.float32)
    np.einsum("...ii->...i", a)[...] += 0.5
    return a / a.sum(axis=-1, keepdims=True)


def gae_step(attention: np.ndarray, attention_grad: np.ndarray) -> np.ndarray:
    """A block's window attention and its gradient (nW, H, N, N) -> I + mean_h((∂score/∂A ⊙ A)⁺), window by window."""
    attention, attention_grad = np.asarray(attention), np.asarray(attention_grad)
    if attention.shape != attention_grad.shape or attention.ndim != 4:
        raise ValueError(f"Wrong shapes! Expected attention and its gradient both (nW, H, N, N) but got "
                         f"{attention.shape} and {attention_grad.shape}.")
    step = np.maximum(attention * attention_grad, 0.0).mean(axis=1, dtype=np.float32)
    np.einsum("...ii->...i", step)[...] += 1.0
    return step


def mean_row(grid: tuple[int, int]) -> np.ndarray:
    """(gh·gw,) 1/T each: the average pool's readout over the last stage's tokens."""
    T = grid[0] * grid[1]
    return np.full(T, 1.0 / T, dtype=np.float32)


def _on_patches(row: np.ndarray, layouts: Sequence) -> np.ndarray:
    return row.reshape(tuple(layouts[0].grid))


def rollout_map(attention: Sequence[np.ndarray], layouts: Sequence, fusion: str = "mean") -> np.ndarray:
    """Attention rollout through the hierarchy (module docstring): every block's window attention (nW, H, N, N),
    first block first, with its layout -> (gh0, gw0) over stage 0's tokens; sums to 1."""
    steps = [(rollout_step(fuse_windows(a, fusion)), layout) for a, layout in zip(attention, layouts)]
    return _on_patches(carry(mean_row(tuple(layouts[-1].grid)), steps), layouts)


def gae_map(attention: Sequence[np.ndarray], attention_grad: Sequence[np.ndarray], layouts: Sequence) -> np.ndarray:
    """GAE through the hierarchy (module docstring): window attention and gradients (nW, H, N, N) per block, first
    block first -> (gh0, gw0) over stage 0's tokens."""
    steps = [(gae_step(a, g), layout) for a, g, layout in zip(attention, attention_grad, layouts)]
    return _on_patches(carry(mean_row(tuple(layouts[-1].grid)), steps), layouts)


def readout_attention(attention: np.ndarray, layout) -> np.ndarray:
    """The average pool's view of one block: the mean of its query rows of the expanded attention, heads averaged
    -> (gh, gw) over that block's stage (sums to 1)."""
    return rows_through(mean_row(tuple(layout.grid)), fuse_windows(attention), layout).reshape(tuple(layout.grid))


def token_distances(layout, token_size: float) -> np.ndarray:
    """(nW, N, N) float32: distance in pixels between the centres of every pair of tokens of each window, as they
    lie on the grid (tokens ``token_size`` pixels apart)."""
    index = _index(layout)
    rows, cols = np.divmod(index, layout.grid[1])                      # (nW, N) each
    d = np.hypot(rows[:, :, None] - rows[:, None, :], cols[:, :, None] - cols[:, None, :])
    return (token_size * d).astype(np.float32)


def attention_distance(attention: np.ndarray, layout, token_size: float) -> np.ndarray:
    """Mean attention distance in pixels of the photo of every head of one block (Figure 7 of the ViT paper, right)
    -> (H,): for each query token Σ_j A_ij · dist(i, j), averaged over the stage's tokens."""
    attention = _checked(attention, layout, ndim=4)                    # (nW, H, N, N)
    weighted = np.einsum("whij,wij->h", attention.astype(np.float32, copy=False), token_distances(layout, token_size))
    return weighted / (layout.grid[0] * layout.grid[1])
