"""One image's attention as the views read it: rows and columns per layer and head, however it is kept.

The definitions (``viz.maps.attention``, ``rollout``, ``readout``) are written for the whole (L, H, T, T) array of
probabilities. A view needs only a few rows or columns of it, or one layer's head-fused matrix at a time: an
``AttentionSource`` gives exactly those, so that the probabilities need never exist all at once. Two sources:

- ``HeldAttention``: the captured array itself (the library's full capture, the CLI's attention.npz), with the
  head-fused copies when they were kept;
- ``viz.analysis.recompute.RecomputedAttention``: each layer's rows recomputed on demand from the kept residual
  stream through the model's own attention (what the page keeps: memory that grows with the tokens, not their
  square).

A model whose blocks attend inside windows (a Swin) gives the same things for each block over that block's own
tokens (``viz.maps.windows.WindowedAttention``: a row is zero outside its window), and each block's grid is its own
(``layout(layer)``); rollout carries a row down through every block and merge (``rollout_rows``). A source may also
offer ``mean_distance(patch_size, renormalise) -> (L, H)`` where it can compute the mean attention distance faster
than row by row (``viz.panels.select.mean_distance_of`` asks for it). The functions below build every view's
numbers from them, layer by layer, and equal the definitions applied to the whole array (``tests/maps/test_sources.py``).
"""
from __future__ import annotations

from typing import Protocol, Sequence

import numpy as np

from vit.architecture import share_down
from vit.readout import token_weights

from .attention import without_tokens
from .layout import layer_index
from .readout import query_row
from .rollout import FUSIONS, discard_lowest, fuse_heads, with_residual

COLUMNS_BYTES = 64 * 2**20     # columns of every head asked for together when summing a row's kept mass


class AttentionSource(Protocol):
    """Rows, columns and head-fused matrices of one image's attention; every array float32, each row a softmax over
    the layer's T tokens (summing to 1). Layers 0-based (negative from the end); ``head`` None: the mean of heads."""
    depth: int                          # L
    heads: int                          # H

    def layout(self, layer: int) -> tuple[int, tuple[int, int]]:
        """(prefix tokens, patch grid (gh, gw)) of the layer's tokens: T = prefix + gh·gw."""

    def rows(self, layer: int, head: int | None, queries: Sequence[int]) -> np.ndarray:
        """(Tq, T): how much each query attends to every token."""

    def columns(self, layer: int, head: int | None, keys: Sequence[int]) -> np.ndarray:
        """(T, Tk): how much every query attends to each key."""

    def fused(self, layer: int, fusion: str = "mean") -> np.ndarray:
        """(T, T): the layer's heads combined by mean, max or min (what rollout multiplies); a new array the caller
        may write into."""

    def readout_rows(self, layer: int) -> np.ndarray:
        """(H, T): each head's row of the layer's query (``viz.maps.readout.heads_query``): the CLS row, the mean of
        the patch rows for models without a CLS token, … (the readout's weighted rows)."""

    def carry(self, layer: int, rows: np.ndarray, fusion: str = "mean", discard_ratio: float = 0.0,
              keep: np.ndarray | None = None, protect: Sequence[int] = (0,)) -> np.ndarray:
        """``rows`` (…, K) over the layer's (kept) tokens times its rollout step Â (``residual_step``)."""


class HeldAttention:
    """The whole captured array as a source: (L, H, T, T) probabilities of one image (any float dtype), and the
    head-fused copies ``fused`` {"mean", "max", "min": (L, T, T)} when they were kept."""

    def __init__(self, attention: np.ndarray, num_prefix: int, grid: tuple[int, int], fused: dict | None = None,
                 query: str = "cls"):
        self.attention, self.fused_copies, self.query = attention, fused or {}, query
        self.depth, self.heads = attention.shape[:2]
        self._layout = (num_prefix, tuple(grid))

    def layout(self, layer: int) -> tuple[int, tuple[int, int]]:
        return self._layout

    def _matrix(self, layer: int, head: int | None) -> np.ndarray:
        layer = layer_index(layer, self.depth)
        if head is None:
            fused = self.fused_copies.get("mean")
            return fused[layer] if fused is not None else self.attention[layer].mean(axis=0, dtype=np.float32)
        check_head(head, self.heads)
        return self.attention[layer, head]

    def rows(self, layer: int, head: int | None, queries: Sequence[int]) -> np.ndarray:
        return np.asarray(self._matrix(layer, head)[np.asarray(queries)], dtype=np.float32)

    def columns(self, layer: int, head: int | None, keys: Sequence[int]) -> np.ndarray:
        return np.asarray(self._matrix(layer, head)[:, np.asarray(keys)], dtype=np.float32)

    def fused(self, layer: int, fusion: str = "mean") -> np.ndarray:
        layer = layer_index(layer, self.depth)
        if fusion in self.fused_copies:
            return np.array(self.fused_copies[fusion][layer], dtype=np.float32)
        return fuse_heads(self.attention[layer:layer + 1], fusion)[0]

    def readout_rows(self, layer: int) -> np.ndarray:
        layer = layer_index(layer, self.depth)
        if self.query == "cls":
            return np.asarray(self.attention[layer, :, 0, :], dtype=np.float32)
        if self.query == "mean":
            return self.attention[layer, :, self._layout[0]:, :].mean(axis=1, dtype=np.float32)
        return query_row(self.attention[layer], self.query, self._layout[0])

    def carry(self, layer: int, rows: np.ndarray, fusion: str = "mean", discard_ratio: float = 0.0,
              keep: np.ndarray | None = None, protect: Sequence[int] = (0,)) -> np.ndarray:
        return dense_carry(self, layer, rows, fusion, discard_ratio, keep, protect)


def check_head(head: int, heads: int) -> None:
    if not -heads <= head < heads:
        raise ValueError(f"Head {head} does not exist! Expected 0 <= head < {heads}, or None for the mean of heads.")


def kept_rows(source: AttentionSource, layer: int, head: int | None, queries: Sequence[int],
              keep: np.ndarray | None = None) -> np.ndarray:
    """(Tq, T) rows, each renormalised over the kept keys (``keep``: token indices; None: all) with the others 0."""
    rows = source.rows(layer, head, queries)
    return rows if keep is None else without_tokens(rows, keep)


def kept_column(source: AttentionSource, layer: int, head: int | None, key: int,
                keep: np.ndarray | None = None) -> np.ndarray:
    """(T,): how much each kept query attends to ``key``, its row renormalised over the kept keys (its mass on them
    summed, not 1 minus the mass on the dropped ones: when artifact tokens take nearly all of a row, that difference
    would cancel its digits away); dropped queries read 0."""
    column = source.columns(layer, head, [key])[:, 0]
    T = column.shape[0]
    if keep is None or keep.size == T:
        return column
    step = max(1, COLUMNS_BYTES // (4 * T * source.heads))
    kept_mass = sum(source.columns(layer, head, keep[i:i + step]).sum(axis=1, dtype=np.float64)
                    for i in range(0, keep.size, step))
    out = np.zeros_like(column)
    out[keep] = column[keep] / np.maximum(kept_mass[keep], 1e-12)
    return out


def query_row_of(source: AttentionSource, layer: int, head: int | None, query: str,
                 keep: np.ndarray | None = None) -> np.ndarray:
    """(T,): a per-block query's row (``viz.maps.readout.query_row``: the mean of the (kept) patch rows of a
    mean-pooled model, …) from the rows it weighs, each renormalised over the kept keys."""
    num_prefix, grid = source.layout(layer)
    T = num_prefix + grid[0] * grid[1]
    queries = np.arange(T) if keep is None else keep
    weights = token_weights(query, queries.size, num_prefix)
    used = np.flatnonzero(weights)
    rows = kept_rows(source, layer, head, queries[used], keep)
    return weights[used] @ rows


def residual_step(source: AttentionSource, layer: int, fusion: str, discard_ratio: float, keep: np.ndarray,
                  protect: Sequence[int]) -> np.ndarray:
    """Â of one layer as ``viz.maps.rollout.residual_steps`` makes it: the heads fused, the dropped tokens' rows and
    columns removed, the lowest entries discarded, the residual added, the rows renormalised -> (K, K) for the K kept
    tokens (``protect``: indices among them)."""
    if fusion not in FUSIONS:
        raise ValueError(f"Unknown head fusion {fusion!r}! Expected one of {FUSIONS}.")
    matrix = source.fused(layer, fusion)                 # a new array: discarded and mixed in place
    if keep.size < matrix.shape[0]:
        matrix = matrix[np.ix_(keep, keep)]
    return with_residual(discard_lowest(matrix, discard_ratio, protect, overwrite=True), overwrite=True)


def dense_carry(source: AttentionSource, layer: int, rows: np.ndarray, fusion: str = "mean",
                discard_ratio: float = 0.0, keep: np.ndarray | None = None, protect: Sequence[int] = (0,)) -> np.ndarray:
    """``rows @ Â`` for a block of global attention (``residual_step``; ``keep``: the kept tokens, default all)."""
    keep = np.arange(np.shape(rows)[-1]) if keep is None else keep
    return rows @ residual_step(source, layer, fusion, discard_ratio, keep, protect)


def rollout_rows(source: AttentionSource, weights: np.ndarray, fusion: str = "mean", discard_ratio: float = 0.0,
                 start_layer: int = 0, keep: np.ndarray | None = None, protect: Sequence[int] = (0,),
                 stop_layer: int | None = None) -> np.ndarray:
    """``weights @ R`` for R = Â_stop · … · Â_start (``stop_layer`` default: the last), the weights (K,) over the
    stop layer's (kept) tokens going down from the top one vector–matrix product at a time (one layer's matrix at a
    time): ``viz.maps.rollout.rollout_rows``. Where a layer's grid is finer than the one above (a patch merging), the
    row comes down through the merge's adjoint (``vit.architecture.share_down``), and it ends on layer 0's grid
    whatever the start layer. ``discard_ratio`` acts on blocks of global attention; a windowed block's rows are
    carried whole."""
    out = np.asarray(weights, dtype=np.float32)
    stop = source.depth - 1 if stop_layer is None else layer_index(stop_layer, source.depth)
    grid = source.layout(stop)[1]
    for layer in reversed(range(layer_index(start_layer, source.depth), stop + 1)):
        out, grid = _merged_down(out, grid, source.layout(layer)[1])
        out = source.carry(layer, out, fusion, discard_ratio, keep, protect)
    return _merged_down(out, grid, source.layout(0)[1])[0]


def _merged_down(rows: np.ndarray, grid: tuple[int, int], finer: tuple[int, int]) -> tuple[np.ndarray, tuple]:
    """(rows over ``grid``, grid) -> (rows over ``finer``, finer): the merge's adjoint where the grids differ."""
    if tuple(grid) == tuple(finer):
        return rows, grid
    return share_down(rows, grid, finer), finer


def rollout_columns(source: AttentionSource, columns: np.ndarray, fusion: str = "mean", discard_ratio: float = 0.0,
                    start_layer: int = 0, keep: np.ndarray | None = None, protect: Sequence[int] = (0,)) -> np.ndarray:
    """``R @ columns`` over the kept tokens, from the start layer up: ``viz.maps.rollout.columns_through``."""
    keep = np.arange(np.shape(columns)[0]) if keep is None else keep
    out = np.asarray(columns, dtype=np.float32)
    for layer in range(layer_index(start_layer, source.depth), source.depth):
        out = residual_step(source, layer, fusion, discard_ratio, keep, protect) @ out
    return out

