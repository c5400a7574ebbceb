"""The page's heads grid: every layer's and head's attention of the query as thumbnails over the photo, on one
colour scale with one colour bar, and the numbers a hover or click tells (mean attention distance, entropy).
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass, replace

import numpy as np
from PIL import Image, ImageDraw

from ..cache import Cache, nbytes
from ..drawing import render
from ..drawing.grids import GridLayout, label_margins, thumbnail_grid
from ..i18n import t
from ..maps import norms
from ..maps.layout import to_grid
from ..records import Analysis
from .display import Display, _uniform_ticks, uniform_tokens
from .select import artifact_drop, mean_distance_of, readout_rows_all

@dataclass(frozen=True)
class HeadStats:
    """Numbers per (layer, head) for hover and click: how far and how spread out each head attends."""
    mean_distance: np.ndarray        # (L, H) mean attention distance in pixels (ViT paper, Figure 7)
    entropy_bits: np.ndarray         # (L, H) entropy of the CLS attention row, in bits
    max_bits: float                  # log2(T): the entropy of uniform attention over the T (kept) tokens

    @property
    def entropy_share(self) -> np.ndarray:
        """(L, H) entropy as a share of its maximum: 1 = uniform, near 0 = one token takes everything."""
        return self.entropy_bits / self.max_bits if self.max_bits > 0 else np.zeros_like(self.entropy_bits)


def head_stats(a: Analysis, mask_artifacts: bool = False, norm_ratio: float = 3.0) -> HeadStats:
    """Mean attention distance (L, H) and the entropy of every head's query row (the CLS row, or the mean of
    the patch rows for models without a CLS token; over all tokens, or over the kept ones, renormalised, when
    masking)."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    rows = readout_rows_all(a, drop).astype(np.float64)                               # (L, H, T)
    logs = np.log2(np.where(rows > 0, rows, 1.0))
    entropy = -(rows * logs).sum(axis=-1)
    return HeadStats(mean_distance_of(a), entropy.astype(np.float32), float(np.log2(uniform_tokens(a, drop))))


@dataclass(frozen=True)
class HeadsLayout:
    """Where each (layer, head) thumbnail of the last heads grid is, whichever of layers or heads runs across."""
    layout: GridLayout
    layers_across: bool

    def cell_at(self, x: float, y: float) -> tuple[int, int] | None:
        """Pixel (x, y) of the grid picture -> (layer, head), or None (labels, gaps, colour bar)."""
        cell = self.layout.cell_at(x, y)
        if cell is None:
            return None
        return (cell[1], cell[0]) if self.layers_across else cell

    def box(self, layer: int, head: int) -> tuple[int, int, int, int]:
        """Pixel box (x0, y0, x1, y1) of the thumbnail of (layer, head)."""
        return self.layout.box(head, layer) if self.layers_across else self.layout.box(layer, head)


@dataclass(frozen=True)
class HeadsGrid:
    """The layers × heads grid as drawn, and how to read it back."""
    image: Image.Image
    layout: GridLayout               # the thumbnails' geometry (grid rows and columns, see ``layers_across``)
    layers_across: bool              # True: layers are the columns and heads the rows; False: the other way
    stats: HeadStats
    vmin: float                      # the one colour scale of every thumbnail, in multiples of uniform attention
    vmax: float
    tokens: int
    note: str | None = None
    lang: str = "en"

    @property
    def placement(self) -> HeadsLayout:
        """Where each (layer, head) thumbnail is: what a page keeps to turn clicks into heads."""
        return HeadsLayout(self.layout, self.layers_across)

    def head_at(self, x: float, y: float) -> tuple[int, int] | None:
        """Pixel (x, y) of ``image`` -> (layer, head) of the thumbnail under it, or None (labels, bar, outside)."""
        return self.placement.cell_at(x, y)

    def box(self, layer: int, head: int) -> tuple[int, int, int, int]:
        """Pixel box (x0, y0, x1, y1) of the thumbnail of (layer, head), e.g. to place a tooltip."""
        return self.placement.box(layer, head)

    def info(self, layer: int, head: int, lang: str | None = None) -> str:
        """One line on a head for hover or click, e.g. "layer 3, head 1: mean attention distance 52 pixels,
        entropy 5.10 bits (67% of the maximum 7.62)"."""
        s = self.stats
        return t("note.head_info", lang or self.lang, layer=layer, head=head,
                 distance=float(s.mean_distance[layer, head]), entropy=float(s.entropy_bits[layer, head]),
                 share=float(s.entropy_share[layer, head]), maximum=s.max_bits)


def heads_grid_panel(a: Analysis, width: int = 1024, mask_artifacts: bool = False, norm_ratio: float = 3.0,
                     selected: tuple[int, int] | None = None, display: Display = Display(),
                     max_cell: int = 160) -> HeadsGrid:
    """``heads_grid`` with ``selected`` (layer, head) framed in green. The grid itself does not depend on the
    selection, so it is drawn once per (analysis, options) and kept among the last grids drawn (``GRIDS``): moving
    the layer or head slider, or clicking a thumbnail, only copies it and draws the frame (the grid is most of a
    re-render)."""
    key = (id(a), width, mask_artifacts, norm_ratio, display, max_cell)

    def draw() -> tuple[weakref.ref, HeadsGrid]:
        return weakref.ref(a), heads_grid(a, width, mask_artifacts, norm_ratio, display, max_cell)

    kept = GRIDS.get(key, draw)
    if kept[0]() is not a:              # another analysis that lived at the same address before
        kept = draw()
        GRIDS.put(key, kept)
    g = kept[1]
    if selected is None:
        return g
    x0, y0, x1, y1 = g.box(*selected)
    image = g.image.copy()
    ImageDraw.Draw(image).rectangle((x0 - 1, y0 - 1, x1 + 1, y1 + 1), outline=(0, 200, 0), width=2)
    return replace(g, image=image)


# Heads grids drawn for the analyses on the page (keyed by the analysis object, which they do not keep alive): a
# ViT-B/16 grid is 1100 × ~1000 pixels (3 MB)
GRIDS = Cache(None, 32 * 2**20, weigh=lambda kept: nbytes(kept[1]))


def heads_grid(a: Analysis, width: int = 1024, mask_artifacts: bool = False, norm_ratio: float = 3.0,
               display: Display = Display(), max_cell: int = 160) -> HeadsGrid:
    """Every layer's and head's CLS attention as thumbnails over the photo, filling ``width`` pixels (colour
    bar included), all on one colour scale in multiples of uniform attention with one shared colour bar.

    The longer of (layers, heads) runs across, so a 12×3 ViT-Ti fills the width as well as a 12×12 ViT-B;
    thumbnails are at most ``max_cell`` pixels high. ``display``: the
    language, colours, opacity and patch-true drawing (its ``size`` is not used: ``width`` is)."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    tokens = uniform_tokens(a, drop)
    maps = to_grid(readout_rows_all(a, drop), a.num_prefix, a.grid) * tokens         # (L, H, gh, gw)
    kept = maps if drop is None or drop.all() else maps[:, :, ~drop]
    vmin, vmax = float(kept.min()), float(kept.max())
    layers_across = a.depth >= a.heads
    if layers_across:
        maps = maps.transpose(1, 0, 2, 3)                                     # (H, L, gh, gw): heads are rows
    rows, cols = maps.shape[:2]
    lang = display.lang
    font_size = 12
    row_names = [t("name.head", lang, head=h) for h in range(rows)] if layers_across else \
        [t("name.layer", lang, layer=l) for l in range(rows)]
    col_names = [str(i) for i in range(cols)]
    title = t("axis.layer" if layers_across else "axis.head", lang)                    # what the columns count
    left = label_margins(tuple(row_names), tuple(col_names), title, lang, font_size)[0]
    bar_label, ticks = t("colorbar.uniform", lang, tokens=tokens), _uniform_ticks(vmin, vmax)
    bar = render.colorbar_width(vmin, vmax, bar_label, lang=lang, ticks=ticks, font_size=font_size)
    gap = 2
    gh, gw = a.grid
    cell_w = max(8, (width - left - bar - gap * (cols - 1)) // cols)
    cell_h = min(max_cell, max(8, round(cell_w * gh / gw)))
    image, layout = thumbnail_grid(maps, cell=cell_h, cmap=display.cmap, row_labels=row_names,
                                   col_labels=col_names, background=a.image, alpha=display.alpha,
                                   gap=gap, lang=lang, value_range=(vmin, vmax),
                                   smooth=not display.patch_true, font_size=font_size,
                                   title=title, right=bar if display.colorbar else 0)
    if display.colorbar:
        render.draw_colorbar(image, image.width - bar, image.height, display.cmap, vmin, vmax, bar_label, lang=lang,
                             ticks=ticks, font_size=font_size)
    note = t("note.artifacts_masked", lang, count=int(drop.sum())) if drop is not None and drop.any() else None
    if note is None and not mask_artifacts:
        flagged = artifact_drop(a, True, norm_ratio)
        last = maps[:, -1] if layers_across else maps[-1]                   # the last layer's heads
        if any(norms.artifacts_dominate(m, flagged) for m in last):
            share = norms.artifact_share(last.mean(axis=0), flagged)
            note = t("note.artifacts_dominate", lang, share=share.share, count=share.count)
    return HeadsGrid(image, layout, layers_across, head_stats(a, mask_artifacts, norm_ratio), vmin, vmax, tokens,
                     note, lang)
