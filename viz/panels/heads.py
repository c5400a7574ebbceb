"""The page's heads grid: every layer's and head's attention of the query as thumbnails over the photo, on one
colour scale with one colour bar, and the numbers a hover or click tells (mean attention distance, entropy).
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass, replace

import numpy as np
from PIL import Image, ImageDraw

from ..cache import Cache, nbytes
from ..drawing import render, screens
from ..drawing.grids import Bands, GridLayout, banded_grid, label_margins, thumbnail_grid
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
    """Where each (layer, head) thumbnail of the last heads grid is, whichever of layers or heads runs across: one
    grid, or (drawn for a narrow screen) bands of a few layers each, one under the other (``bands``)."""
    layout: GridLayout
    layers_across: bool
    bands: Bands | None = None       # the layers in bands (heads the rows); None: one grid, ``layout``

    def cell_at(self, x: float, y: float) -> tuple[int, int] | None:
        """Pixel (x, y) of the grid picture -> (layer, head), or None (labels, gaps, colour bar)."""
        cell = self.bands.cell_at(x, y) if self.bands is not None else self.layout.cell_at(x, y)
        if cell is None:
            return None
        return (cell[1], cell[0]) if self.layers_across else cell

    def box(self, layer: int, head: int) -> tuple[int, int, int, int]:
        """Pixel box (x0, y0, x1, y1) of the thumbnail of (layer, head)."""
        if self.bands is not None:
            return self.bands.box(head, layer)
        return self.layout.box(head, layer) if self.layers_across else self.layout.box(layer, head)


@dataclass(frozen=True)
class HeadsGrid:
    """The layers × heads grid as drawn, and how to read it back."""
    image: Image.Image
    layout: GridLayout               # the thumbnails' geometry (grid rows and columns, see ``layers_across``)
    layers_across: bool              # True: layers are the columns and heads the rows; False: the other way
    stats: HeadStats
    vmin: float                      # the colour scale, in multiples of uniform attention (one scale: every
    vmax: float                      # thumbnail's; a scale per layer: the lowest and highest of the layers' ranges)
    tokens: int
    note: str | None = None
    lang: str = "en"
    layer_max: np.ndarray | None = None   # (L,) each layer's own top of the scale (its brightest value); None: one scale
    placement: HeadsLayout | None = None  # where each thumbnail is (bands on a narrow screen)

    def __post_init__(self):
        if self.placement is None:
            object.__setattr__(self, "placement", HeadsLayout(self.layout, self.layers_across))

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
                     max_cell: int = 160, shared_scale: bool = True) -> HeadsGrid:
    """``heads_grid`` with ``selected`` (layer, head) framed in green. The grid itself does not depend on the
    selection, so it is drawn once per (analysis, options) and kept among the last grids drawn (``GRIDS``): moving
    the layer or head slider, or clicking a thumbnail, only copies it and draws the frame (the grid is most of a
    re-render)."""
    key = (id(a), width, mask_artifacts, norm_ratio, display, max_cell, shared_scale)

    def draw() -> tuple[weakref.ref, HeadsGrid]:
        return weakref.ref(a), heads_grid(a, width, mask_artifacts, norm_ratio, display, max_cell, shared_scale)

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
               display: Display = Display(), max_cell: int = 160, shared_scale: bool = True) -> HeadsGrid:
    """Every layer's and head's CLS attention as thumbnails over the photo, filling ``width`` pixels (colour bar
    included), in multiples of uniform attention with one colour bar: on one colour scale for all (``shared_scale``),
    or each layer on its own, from 0 to its brightest value, which is written under the layer's number (the bar
    then reads a share of that value). Early layers attend nearly uniformly and late ones peak tens of times higher:
    on one scale the early thumbnails are plain photos.

    The longer of (layers, heads) runs across, so a 12×3 ViT-Ti fills the width as well as a 12×12 ViT-B;
    thumbnails are at most ``max_cell`` pixels high. Drawn for a narrow screen (``display.narrow``), layers run
    across in bands of a few, one under the other, with text readable on a phone (``viz.drawing.screens``).
    ``display``: the language, colours, opacity and patch-true drawing (its ``size`` is not used: ``width`` is)."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    tokens = uniform_tokens(a, drop)
    maps = to_grid(readout_rows_all(a, drop), a.num_prefix, a.grid) * tokens         # (L, H, gh, gw)
    kept = maps if drop is None or drop.all() else maps[:, :, ~drop]
    vmin, vmax = float(kept.min()), float(kept.max())
    lang = display.lang
    layer_max = None
    if not shared_scale:                                    # each layer from 0 to its own brightest value
        layer_max = kept.reshape(a.depth, -1).max(axis=1)
        drawn = maps / np.where(layer_max > 0, layer_max, 1.0)[:, None, None, None]
        value_range = (0.0, 1.0)
        bar_label, ticks = t("colorbar.layer_share", lang), [1.0, 0.5, 0.0]
        layer_names = [f"{l}\n{render.tick_text(float(m))}×" for l, m in enumerate(layer_max)]
        vmin, vmax = float(layer_max.min()), float(layer_max.max())
    else:
        drawn, value_range = maps, (vmin, vmax)
        bar_label, ticks = t("colorbar.uniform", lang, tokens=tokens), _uniform_ticks(vmin, vmax)
        layer_names = [str(l) for l in range(a.depth)]
    font_size = screens.text_for(width) if display.narrow else 12
    bar = render.colorbar_width(*value_range, bar_label, lang=lang, ticks=ticks, font_size=font_size)
    gap = 2
    gh, gw = a.grid
    options = dict(cmap=display.cmap, background=a.image, alpha=display.alpha, gap=gap, lang=lang,
                   value_range=value_range, smooth=not display.patch_true, font_size=font_size,
                   right=bar if display.colorbar else 0)
    note = _grid_note(a, maps, drop, mask_artifacts, norm_ratio, lang)
    stats = head_stats(a, mask_artifacts, norm_ratio)
    if display.narrow:
        image, placement = _banded(a, drawn, width, bar, options, layer_names, bar_label, ticks, display)
        return HeadsGrid(image, placement.layout, True, stats, vmin, vmax, tokens, note, lang, layer_max, placement)
    layers_across = a.depth >= a.heads
    if layers_across:
        drawn = drawn.transpose(1, 0, 2, 3)                                   # (H, L, gh, gw): heads are rows
    rows, cols = drawn.shape[:2]
    row_names = [t("name.head", lang, head=h) for h in range(rows)] if layers_across else \
        [t("name.layer", lang, layer=l) + ("" if layer_max is None else f" ({render.tick_text(float(layer_max[l]))}×)")
         for l in range(rows)]
    col_names = layer_names if layers_across else [str(i) for i in range(cols)]
    title = t("axis.layer" if layers_across else "axis.head", lang)                    # what the columns count
    left = label_margins(tuple(row_names), tuple(col_names), title, lang, font_size)[0]
    cell_w = max(8, (width - left - bar - gap * (cols - 1)) // cols)
    cell_h = min(max_cell, max(8, round(cell_w * gh / gw)))
    image, layout = thumbnail_grid(drawn, cell=cell_h, row_labels=row_names, col_labels=col_names, title=title,
                                   **options)
    if display.colorbar:
        render.draw_colorbar(image, image.width - bar, image.height, display.cmap, *value_range, bar_label,
                             lang=lang, ticks=ticks, font_size=font_size)
    return HeadsGrid(image, layout, layers_across, stats, vmin, vmax, tokens, note, lang, layer_max)


NARROW_LAYERS = 3           # layers per band of a heads grid drawn for a narrow screen (4 with more than 6 heads)


def _banded(a, drawn, width, bar, options, layer_names, bar_label, ticks, display) -> tuple[Image.Image, HeadsLayout]:
    """The heads grid for a narrow screen: layers across in bands of ``NARROW_LAYERS`` (heads the rows), the bands
    one under the other, one colour bar beside them all."""
    lang, font_size, gap = options["lang"], options["font_size"], options["gap"]
    per_band = NARROW_LAYERS if a.heads <= 6 else NARROW_LAYERS + 1
    gh, gw = a.grid
    row_names = [t("name.head", lang, head=h) for h in range(a.heads)]
    title = t("axis.layer", lang)
    left = label_margins(tuple(row_names), tuple(layer_names), title, lang, font_size)[0]
    cell_w = max(8, (width - left - bar - gap * (per_band - 1)) // per_band)
    image, bands = banded_grid(drawn.transpose(1, 0, 2, 3), per_band, layer_names, right=bar if display.colorbar else 0,
                               cell=max(8, round(cell_w * gh / gw)), row_labels=row_names, title=title,
                               **{k: v for k, v in options.items() if k != "right"})
    if display.colorbar:
        render.draw_colorbar(image, image.width - bar, image.height, display.cmap, *options["value_range"], bar_label,
                             lang=lang, ticks=ticks, font_size=font_size)
    return image, HeadsLayout(bands.layout, True, bands)


def _grid_note(a: Analysis, maps: np.ndarray, drop, mask_artifacts: bool, norm_ratio: float, lang: str) -> str | None:
    """Artifacts masked, or dominating the last layer's heads (maps (L, H, gh, gw)), or None."""
    if drop is not None and drop.any():
        return t("note.artifacts_masked", lang, count=int(drop.sum()))
    if mask_artifacts:
        return None
    flagged = artifact_drop(a, True, norm_ratio)
    last = maps[-1]                                                          # the last layer's heads
    if any(norms.artifacts_dominate(m, flagged) for m in last):
        share = norms.artifact_share(last.mean(axis=0), flagged)
        return t("note.artifacts_dominate", lang, share=share.share, count=share.count)
    return None
