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
from ..panels.display import Display, uniform_ticks, uniform_tokens
from ..panels.select import artifact_drop, layer_readout_rows, mean_distance_of

@dataclass(frozen=True)
class HeadStats:
    """Numbers per (layer, head) for hover and click: how far and how spread out each head attends (NaN where a
    block has fewer heads than the most of any block)."""
    mean_distance: np.ndarray        # (L, H) mean attention distance in pixels (ViT paper, Figure 7)
    entropy_bits: np.ndarray         # (L, H) entropy of the query's attention row, in bits
    max_bits: np.ndarray             # (L,) log2(T_l): the entropy of uniform attention over the layer's (kept) tokens

    @property
    def entropy_share(self) -> np.ndarray:
        """(L, H) entropy as a share of its maximum: 1 = uniform, near 0 = one token takes everything."""
        top = self.max_bits[:, None]
        return np.where(top > 0, self.entropy_bits / np.where(top > 0, top, 1.0), 0.0)


def head_stats(a: Analysis, mask_artifacts: bool = False, norm_ratio: float = 3.0) -> HeadStats:
    """Mean attention distance (L, H) and the entropy of every head's query row (the CLS row, or the mean of
    the patch rows for models without a CLS token; over all tokens, or over the kept ones, renormalised, when
    masking)."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    entropy = np.full((a.depth, a.heads), np.nan, np.float32)
    for layer in range(a.depth):
        rows = layer_readout_rows(a, layer, drop).astype(np.float64)                   # (H_l, T_l)
        logs = np.log2(np.where(rows > 0, rows, 1.0))
        entropy[layer, :rows.shape[0]] = -(rows * logs).sum(axis=-1)
    top = np.log2([uniform_tokens(a, drop, layer) for layer in range(a.depth)]).astype(np.float64)
    return HeadStats(mean_distance_of(a), entropy, top)


@dataclass(frozen=True)
class HeadsLayout:
    """Where each (layer, head) thumbnail of the last heads grid is, whichever of layers or heads runs across: one
    grid, or (drawn for a narrow screen) bands of a few layers each, one under the other (``bands``); ``layers``: the
    layers it shows, in order (a stage's blocks)."""
    layout: GridLayout
    layers_across: bool
    bands: Bands | None = None       # the layers in bands (heads the rows); None: one grid, ``layout``
    layers: tuple[int, ...] | None = None   # the layer of each row (or column) of thumbnails; None: 0, 1, 2, …

    def cell_at(self, x: float, y: float) -> tuple[int, int] | None:
        """Pixel (x, y) of the grid picture -> (layer, head), or None (labels, gaps, colour bar)."""
        cell = self.bands.cell_at(x, y) if self.bands is not None else self.layout.cell_at(x, y)
        if cell is None:
            return None
        layer, head = (cell[1], cell[0]) if self.layers_across else cell
        return (layer if self.layers is None else self.layers[layer]), head

    def box(self, layer: int, head: int) -> tuple[int, int, int, int]:
        """Pixel box (x0, y0, x1, y1) of the thumbnail of (layer, head)."""
        layer = layer if self.layers is None else self.layers.index(layer)
        if self.bands is not None:
            return self.bands.box(head, layer)
        return self.layout.box(head, layer) if self.layers_across else self.layout.box(layer, head)


@dataclass(frozen=True)
class StagesLayout:
    """Where each (layer, head) thumbnail is in the stages' heads grids stacked one under the other: the same
    questions as ``HeadsLayout``, for a model of several stages."""
    grids: tuple[tuple[int, int, HeadsLayout], ...]   # per stage: its top and height in pixels, its thumbnails

    def cell_at(self, x: float, y: float) -> tuple[int, int] | None:
        """Pixel (x, y) of the stacked picture -> (layer, head), or None (titles, labels, gaps between stages)."""
        for top, height, placement in self.grids:
            if top <= y < top + height:
                return placement.cell_at(x, y - top)
        return None

    def box(self, layer: int, head: int) -> tuple[int, int, int, int]:
        """Pixel box (x0, y0, x1, y1) of the thumbnail of (layer, head) in the stacked picture."""
        for top, _, placement in self.grids:
            if layer in placement.layers:
                x0, y0, x1, y1 = placement.box(layer, head)
                return x0, y0 + top, x1, y1 + top
        raise ValueError(f"Layer {layer} is in no stage of this model!")


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
    placement: HeadsLayout | StagesLayout | None = None  # where each thumbnail is (bands; a grid per stage)

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
                 share=float(s.entropy_share[layer, head]), maximum=float(s.max_bits[layer]))


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
    """Every layer's and head's attention of the query as thumbnails over the photo, filling ``width`` pixels (colour
    bar included), in multiples of uniform attention with one colour bar: on one colour scale for all
    (``shared_scale``), or each layer on its own, from 0 to its brightest value, which is written under the layer's
    number (the bar then reads a share of that value). Early layers attend nearly uniformly and late ones peak tens
    of times higher: on one scale the early thumbnails are plain photos.

    The longer of (layers, heads) runs across, so a 12×3 ViT-Ti fills the width as well as a 12×12 ViT-B;
    thumbnails are at most ``max_cell`` pixels high. Drawn for a narrow screen (``display.narrow``), layers run
    across in bands of a few, one under the other, with text readable on a phone (``viz.drawing.screens``).
    A model of several stages gets one such grid per stage (its blocks and heads, on its grid), titled, one under
    the other. ``display``: the language, colours, opacity and patch-true drawing (its ``size`` is not used:
    ``width`` is)."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    stages = a.architecture.stages
    maps = [to_grid(np.stack([layer_readout_rows(a, layer, drop) for layer in blocks]),
                    a.architecture.blocks[blocks[0]].prefix, a.architecture.blocks[blocks[0]].grid)
            * uniform_tokens(a, drop, blocks[0]) for blocks in stages]                 # per stage (B_s, H_s, gh, gw)
    kept = [m if drop is None or drop.all() else m[:, :, ~drop] for m in maps]
    vmin, vmax = min(float(k.min()) for k in kept), max(float(k.max()) for k in kept)
    layer_max = np.concatenate([k.reshape(k.shape[0], -1).max(axis=1) for k in kept]) if not shared_scale else None
    tokens = uniform_tokens(a, drop)
    note = _grid_note(a, maps[-1], drop, mask_artifacts, norm_ratio, display.lang)
    stats = head_stats(a, mask_artifacts, norm_ratio)
    drawn = [_stage_grid(a, blocks, m, width, None if layer_max is None else layer_max[list(blocks)],
                         (vmin, vmax), display, max_cell, drop)
             for blocks, m in zip(stages, maps)]
    if layer_max is not None:
        vmin, vmax = float(layer_max.min()), float(layer_max.max())
    if len(drawn) == 1:
        image, placement = drawn[0]
        return HeadsGrid(image, placement.layout, placement.layers_across, stats, vmin, vmax, tokens, note,
                         display.lang, layer_max, placement)
    image, placement = _stacked(a, drawn, display)
    first = drawn[0][1]
    return HeadsGrid(image, first.layout, first.layers_across, stats, vmin, vmax, tokens, note, display.lang,
                     layer_max, placement)


def _stage_grid(a: Analysis, blocks: tuple[int, ...], maps: np.ndarray, width: int, layer_max: np.ndarray | None,
                scale: tuple[float, float], display: Display, max_cell: int, drop) -> tuple[Image.Image, HeadsLayout]:
    """One stage's blocks × heads grid (``maps`` (B, H, gh, gw) in multiples of uniform attention) with its colour bar,
    and where its thumbnails are."""
    lang = display.lang
    first = a.architecture.blocks[blocks[0]]
    if layer_max is not None:                               # each layer from 0 to its own brightest value
        drawn = maps / np.where(layer_max > 0, layer_max, 1.0)[:, None, None, None]
        value_range = (0.0, 1.0)
        bar_label, ticks = t("colorbar.layer_share", lang), [1.0, 0.5, 0.0]
        layer_names = [f"{l}\n{render.tick_text(float(m))}×" for l, m in zip(blocks, layer_max)]
    else:
        drawn, value_range = maps, scale
        bar_label, ticks = t("colorbar.uniform", lang, tokens=uniform_tokens(a, drop, blocks[0])), uniform_ticks(*scale)
        layer_names = [str(l) for l in blocks]
    font_size = screens.text_for(width) if display.narrow else 12
    bar = render.colorbar_width(*value_range, bar_label, lang=lang, ticks=ticks, font_size=font_size)
    gap = 2
    gh, gw = first.grid
    options = dict(cmap=display.cmap, background=a.image, alpha=display.alpha, gap=gap, lang=lang,
                   value_range=value_range, smooth=not display.patch_true, font_size=font_size,
                   right=bar if display.colorbar else 0)
    if display.narrow:
        return _banded(first.heads, first.grid, blocks, drawn, width, bar, options, layer_names, bar_label, ticks,
                       display)
    layers_across = len(blocks) >= first.heads
    if layers_across:
        drawn = drawn.transpose(1, 0, 2, 3)                                   # (H, L, gh, gw): heads are rows
    rows, cols = drawn.shape[:2]
    row_names = [t("name.head", lang, head=h) for h in range(rows)] if layers_across else \
        [t("name.layer", lang, layer=l) + ("" if layer_max is None else f" ({render.tick_text(float(m))}×)")
         for l, m in zip(blocks, layer_max if layer_max is not None else blocks)]
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
    return image, HeadsLayout(layout, layers_across, layers=tuple(blocks))


def _stacked(a: Analysis, drawn: list, display: Display) -> tuple[Image.Image, StagesLayout]:
    """The stages' grids one under the other, each under a strip naming its stage and grid."""
    font_size = screens.text_for(max(g.width for g, _ in drawn)) if display.narrow else 13
    strip = render.caption_strip_height(font_size)
    width = max(g.width for g, _ in drawn)
    out = Image.new("RGB", (width, sum(g.height + strip for g, _ in drawn) + 8 * (len(drawn) - 1)), "white")
    draw = ImageDraw.Draw(out)
    y, grids = 0, []
    for stage, (grid, placement) in enumerate(drawn):
        gh, gw = a.architecture.blocks[placement.layers[0]].grid
        title = t("name.stage_grid", display.lang, stage=stage, grid=f"{gh}×{gw}")
        draw.text((6, y + strip / 2), title, fill="black", font=render.font(font_size, display.lang, title),
                  anchor="lm")
        out.paste(grid, (0, y + strip))
        grids.append((y + strip, grid.height, placement))
        y += grid.height + strip + 8
    return out, StagesLayout(tuple(grids))


NARROW_LAYERS = 3           # layers per band of a heads grid drawn for a narrow screen (4 with more than 6 heads)


def _banded(heads: int, grid: tuple[int, int], blocks: tuple[int, ...], drawn, width, bar, options, layer_names,
            bar_label, ticks, display) -> tuple[Image.Image, HeadsLayout]:
    """The heads grid for a narrow screen: layers across in bands of ``NARROW_LAYERS`` (heads the rows), the bands
    one under the other, one colour bar beside them all."""
    lang, font_size, gap = options["lang"], options["font_size"], options["gap"]
    per_band = NARROW_LAYERS if heads <= 6 else NARROW_LAYERS + 1
    gh, gw = grid
    row_names = [t("name.head", lang, head=h) for h in range(heads)]
    title = t("axis.layer", lang)
    left = label_margins(tuple(row_names), tuple(layer_names), title, lang, font_size)[0]
    cell_w = max(8, (width - left - bar - gap * (per_band - 1)) // per_band)
    image, bands = banded_grid(drawn.transpose(1, 0, 2, 3), per_band, layer_names, right=bar if display.colorbar else 0,
                               cell=max(8, round(cell_w * gh / gw)), row_labels=row_names, title=title,
                               **{k: v for k, v in options.items() if k != "right"})
    if display.colorbar:
        render.draw_colorbar(image, image.width - bar, image.height, display.cmap, *options["value_range"], bar_label,
                             lang=lang, ticks=ticks, font_size=font_size)
    return image, HeadsLayout(bands.layout, True, bands, layers=tuple(blocks))


def _grid_note(a: Analysis, maps: np.ndarray, drop, mask_artifacts: bool, norm_ratio: float, lang: str) -> str | None:
    """Artifacts masked, or dominating the last layer's heads (maps (L, H, gh, gw)), or None."""
    if drop is not None and drop.any():
        return t("note.artifacts_masked", lang, count=int(drop.sum()))
    if mask_artifacts:
        return None
    flagged = artifact_drop(a, True, norm_ratio)
    if flagged is None:                          # no artifact tokens in a model of windows or stages
        return None
    last = maps[-1]                                                          # the last layer's heads
    if any(norms.artifacts_dominate(m, flagged) for m in last):
        share = norms.artifact_share(last.mean(axis=0), flagged)
        return t("note.artifacts_dominate", lang, share=share.share, count=share.count)
    return None
