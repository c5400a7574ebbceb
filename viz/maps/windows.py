"""Attention inside windows, as arrays: a windowed block's (nW, H, N, N) maps placed on its grid, rows carried
through windows and down through merges, and the source that gives the views a windowed model's rows and columns
(``WindowedAttention``). Arrays in, arrays out; which blocks have windows, and where, is the model's description
(``vit.architecture.BlockLayout``); the model side is the model's own capture (``blocks_with_attention``).

**Windows on the grid.** A block with windows of wh×ww tokens on a gh×gw grid, shifted by (sh, sw), rolls the grid
by (−sh, −sw) before cutting it, and masks apart the tokens the roll brought together from opposite borders: on the
grid itself its windows are the tiles displaced by (sh, sw) and cut at the border. Window k (row-major over the
tiles) lists its tokens in row-major order; ``window_index`` says which token of the grid each slot holds,
``expand`` writes a block's (nW, N, N) window matrices into its (T, T) matrix, T = gh·gw, zero between tokens of
different windows (a masked pair keeps the e^−100-small weight it really had).

**Rows through windows and merges.** A row r over a block's tokens times the block's expanded matrix is computed
window by window (``rows_through``), never forming the (T, T) matrix. Between stages a row comes down to the finer
grid through the merge's adjoint (``vit.architecture.share_down``): each merged token's value shared equally by the
tokens it was merged from (the assumption rollout already makes for the heads of a block, which it averages), so a
row keeps its total and a distribution stays one. ``viz.maps.source.rollout_rows`` takes a row over the last block's
tokens down through every block's matrix to block 0's grid, whatever the blocks are:

    row · Â_last ··· Â_first(stage S) · M_{S−1} · Â_last(stage S−1) ··· M_0 · ··· Â_0        (a row over block 0)

With Â = rownorm(0.5·A + 0.5·I) (heads fused) this is attention rollout (Abnar & Zuidema 2020) through the hierarchy;
with I + mean_h((∂score/∂A ⊙ A)⁺) it is GAE (Chefer, Gur & Wolf 2021; ``viz.explain.gae`` carries it through any
blocks). docs/swin.md works both out on a Swin.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from vit.architecture import BlockLayout

from .layout import layer_index
from .rollout import FUSIONS


class Windows(NamedTuple):
    """Where a block's windows lie (a ``vit.architecture.BlockLayout`` has these fields and more, and is accepted)."""
    grid: tuple[int, int]       # (gh, gw) tokens of the block
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
    """A block's window matrices (nW, …, N, N) (e.g. (nW, H, N, N) per head, or (nW, N, N) fused) -> its (…, T, T)
    token matrices, T = gh·gw: entry (i, j) is the window entry of tokens i and j when they share a window, 0
    otherwise; the cyclic shift is undone."""
    windows = np.moveaxis(_checked(windows, layout), 0, -3)           # (…, nW, N, N)
    index = _index(layout)                                            # (nW, N)
    T = layout.grid[0] * layout.grid[1]
    dense = np.zeros(windows.shape[:-3] + (T, T), dtype=windows.dtype)
    dense[..., index[:, :, None], index[:, None, :]] = windows
    return dense


def rows_through(rows: np.ndarray, windows: np.ndarray, layout) -> np.ndarray:
    """``rows @ expand(windows)`` without forming it: rows (…, T) over the block's tokens, windows (nW, N, N)."""
    windows = _checked(windows, layout, ndim=3)
    index = _index(layout)
    rows = np.asarray(rows, dtype=np.float32)
    per_window = np.einsum("...wi,wij->...wj", rows[..., index], windows.astype(np.float32, copy=False))
    out = np.zeros_like(rows)
    out[..., index] = per_window                                      # every token lies in exactly one window
    return out


def through_columns(windows: np.ndarray, columns: np.ndarray, layout) -> np.ndarray:
    """``expand(windows) @ columns`` without forming it: windows (nW, N, N), columns (T, …) over the block's tokens."""
    windows = _checked(windows, layout, ndim=3)
    index = _index(layout)
    columns = np.asarray(columns, dtype=np.float32)
    per_window = np.einsum("wij,wj...->wi...", windows.astype(np.float32, copy=False), columns[index])
    out = np.zeros_like(columns)
    out[index] = per_window
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
    the grid lies inside the windows, so this is the expanded Â's own window form)."""
    a = 0.5 * np.asarray(fused, dtype=np.float32)
    np.einsum("...ii->...i", a)[...] += 0.5
    return a / a.sum(axis=-1, keepdims=True)


def mean_row(grid: tuple[int, int]) -> np.ndarray:
    """(gh·gw,) 1/T each: the average pool's readout over a grid of tokens."""
    T = grid[0] * grid[1]
    return np.full(T, 1.0 / T, dtype=np.float32)


def token_distances(layout, token_size: float) -> np.ndarray:
    """(nW, N, N) float32: distance in pixels between the centres of every pair of tokens of each window, as they
    lie on the grid (tokens ``token_size`` pixels apart)."""
    index = _index(layout)
    rows, cols = np.divmod(index, layout.grid[1])                      # (nW, N) each
    d = np.hypot(rows[:, :, None] - rows[:, None, :], cols[:, :, None] - cols[:, None, :])
    return (token_size * d).astype(np.float32)


def attention_distance(attention: np.ndarray, layout, token_size: float) -> np.ndarray:
    """Mean attention distance in pixels of the photo of every head of one block (Figure 7 of the ViT paper, right)
    -> (H,): for each query token Σ_j A_ij · dist(i, j), averaged over the block's tokens."""
    attention = _checked(attention, layout, ndim=4)                    # (nW, H, N, N)
    weighted = np.einsum("whij,wij->h", attention.astype(np.float32, copy=False), token_distances(layout, token_size))
    return weighted / (layout.grid[0] * layout.grid[1])


class WindowedAttention:
    """An ``AttentionSource`` (``viz.maps.source``) over blocks that attend inside windows: each block's window
    attention (nW, H, N, N) kept whole (float32, small: T·H·N per block), with its ``BlockLayout``. Rows and columns
    are over the block's own grid (no prefix tokens), zero outside the query's (or key's) window."""

    def __init__(self, attention: Sequence[np.ndarray], layouts: Sequence[BlockLayout]):
        self.attention, self.layouts = tuple(attention), tuple(layouts)
        self.depth = len(self.attention)
        self.heads = max(a.shape[1] for a in self.attention)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.attention)

    def layout(self, layer: int) -> tuple[int, tuple[int, int]]:
        return 0, tuple(self.layouts[layer_index(layer, self.depth)].grid)

    def windows(self, layer: int, head: int | None = None, fusion: str = "mean") -> np.ndarray:
        """(nW, N, N) float32: one head's windows of a block, or the heads fused by ``fusion`` (``head`` None)."""
        windows = self.attention[layer_index(layer, self.depth)]
        if head is None:
            return fuse_windows(windows, fusion)
        if not -windows.shape[1] <= head < windows.shape[1]:
            raise ValueError(f"Head {head} does not exist in layer {layer_index(layer, self.depth)}! Expected "
                             f"0 <= head < {windows.shape[1]}, or the mean of heads.")
        return np.asarray(windows[:, head], dtype=np.float32)

    def rows(self, layer: int, head: int | None, queries: Sequence[int]) -> np.ndarray:
        layout = self.layouts[layer_index(layer, self.depth)]
        T = layout.grid[0] * layout.grid[1]
        one_hot = np.zeros((len(queries), T), np.float32)
        one_hot[np.arange(len(queries)), np.asarray(queries)] = 1.0
        return rows_through(one_hot, self.windows(layer, head), layout)

    def columns(self, layer: int, head: int | None, keys: Sequence[int]) -> np.ndarray:
        layout = self.layouts[layer_index(layer, self.depth)]
        T = layout.grid[0] * layout.grid[1]
        one_hot = np.zeros((T, len(keys)), np.float32)
        one_hot[np.asarray(keys), np.arange(len(keys))] = 1.0
        return through_columns(self.windows(layer, head), one_hot, layout)

    def fused(self, layer: int, fusion: str = "mean") -> np.ndarray:
        return expand(self.windows(layer, None, fusion), self.layouts[layer_index(layer, self.depth)])

    def readout_rows(self, layer: int) -> np.ndarray:
        """(H, T): each head's mean of the block's query rows, the average pool's view of the block (a windowed block
        holds no prefix tokens: its query is the mean of its tokens)."""
        layer = layer_index(layer, self.depth)
        windows, layout = self.attention[layer], self.layouts[layer]
        weights = mean_row(tuple(layout.grid))
        return np.stack([rows_through(weights, windows[:, h], layout) for h in range(windows.shape[1])])

    def carry(self, layer: int, rows: np.ndarray, fusion: str = "mean", discard_ratio: float = 0.0,
              keep: np.ndarray | None = None, protect: Sequence[int] = (0,)) -> np.ndarray:
        """``rows`` (…, T) times the block's rollout step Â = rownorm(0.5·A + 0.5·I), heads fused by ``fusion``: the
        rows are carried whole (``discard_ratio`` acts on global attention only); tokens cannot be left out of a
        window (``keep`` must be all of them)."""
        layer = layer_index(layer, self.depth)
        layout = self.layouts[layer]
        if keep is not None and len(keep) < layout.grid[0] * layout.grid[1]:
            raise ValueError("A windowed block's tokens cannot be dropped: every window tiles the grid.")
        return rows_through(rows, rollout_step(self.windows(layer, None, fusion)), layout)

    def mean_distance(self, patch_size: int, renormalise: bool = False) -> np.ndarray:
        """(L, most heads) float32: every head's mean attention distance in pixels of the input (Figure 7, right), NaN
        where a block has fewer heads. The tokens of a block are ``patch_size`` times the block's merges apart; there
        are no prefix tokens, so ``renormalise`` changes nothing."""
        table = np.full((self.depth, self.heads), np.nan, np.float32)
        for i, (windows, layout) in enumerate(zip(self.attention, self.layouts)):
            size = patch_size * layout.token_size // self.layouts[0].token_size
            table[i, :windows.shape[1]] = attention_distance(windows, layout, size)
        return table
