"""The map panels for the page: drawn at display size (``Display``), read in multiples of uniform attention
(1 = 1/T), optionally on one colour scale across layers and patch-true, each returned as a ``MapPanel`` with
the numbers behind the picture and a note when artifact tokens dominate it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image

from ..cache import Cache, nbytes
from ..drawing import render, screens
from ..drawing.grids import banded_grid, label_margins
from ..i18n import t
from ..maps import attention, norms
from ..maps.layout import layer_index, patch_token
from ..maps.rollout import kept_tokens
from ..maps.source import check_head, kept_column, kept_rows
from ..records import Analysis
from .select import (artifact_drop, artifact_flags, attention_caption, attention_of, query_maps, readout_rows_of,
                     rollout_caption, rollout_of, where_name)

@dataclass(frozen=True)
class Display:
    """How the page draws a map: at its panel's pixel size, in one language, smooth or patch-true."""
    size: int | None = None          # longer side of the photo and map in pixels (e.g. 448–768); None: the model's
    lang: str = "en"                 # language of every text drawn ("en" or "zh-CN")
    cmap: str = render.DEFAULT_CMAP
    alpha: float = 0.6               # opacity of the map over the photo
    colorbar: bool = True
    patch_true: bool = False         # one colour per patch (nearest), thin lines at the patch borders
    narrow: bool = False             # for a phone-sized screen: text that reads MIN_TEXT there (viz.drawing.screens)

    @property
    def font_size(self) -> int:
        """Colour-bar text size: about 1/32 of the picture, never below 12 pixels; on a narrow screen, what reads
        ``screens.MIN_TEXT`` CSS pixels when the picture (the map and its colour bar, about 1.35× the map's width)
        fills the phone's width."""
        if self.narrow:
            return screens.text_for(round((self.size or 224) * 1.35))
        return max(12, round((self.size or 224) / 32))


@dataclass(frozen=True)
class MapPanel:
    """A drawn map with the numbers behind it, so the page can show values, ranges and the note."""
    image: Image.Image
    values: np.ndarray               # (gh, gw) the map as drawn, in multiples of uniform attention (1 = 1/tokens)
    vmin: float                      # colour-scale range, same unit (over all layers with a shared scale)
    vmax: float
    tokens: int                      # T: the tokens the attention is spread over (kept ones when masking)
    note: str | None = None          # one line for under the picture, in the display's language, or None


# The last display-size photos, keyed by the photo object itself (a new analysis never gets another photo's
# pixels): the page's 3 sizes (640, 320, 448 px) of about 4 photos
DISPLAY_PHOTOS = Cache(None, 12 * 2**20, weigh=lambda kept: nbytes(kept[1]))


def display_photo(a: Analysis, size: int | None = None,
                  resample: Image.Resampling = Image.Resampling.BICUBIC) -> Image.Image:
    """The pixels the model saw, resized so that the longer side is ``size`` pixels (bicubic, or ``resample``;
    None: as is).

    The last few enlargements are kept (a slider move or a click re-renders the same photo at the same size)."""
    if size is None or max(a.image.size) == size:
        return a.image

    def enlarge() -> tuple[Image.Image, Image.Image]:
        w, h = a.image.size
        scale = size / max(w, h)
        return a.image, a.image.resize((max(1, round(w * scale)), max(1, round(h * scale))), resample)

    key = (id(a.image), size, resample)
    kept = DISPLAY_PHOTOS.get(key, enlarge)
    if kept[0] is not a.image:          # another photo that lived at the same address before
        kept = enlarge()
        DISPLAY_PHOTOS.put(key, kept)
    return kept[1]


def uniform_tokens(a: Analysis, drop: np.ndarray | None) -> int:
    """T, the tokens an attention row is spread over (uniform attention gives each 1/T): all tokens, or the
    ones left after dropping ``drop`` (gh, gw)."""
    return a.num_prefix + a.grid[0] * a.grid[1] - (0 if drop is None else int(np.count_nonzero(drop)))


def _uniform_ticks(vmin: float, vmax: float) -> list[float]:
    """Colour-bar ticks for maps in multiples of uniform: the top, 1 (uniform) when inside, the bottom."""
    if not vmax > vmin:
        return [vmax]
    ticks = [vmax, (vmin + vmax) / 2, vmin]
    if vmin < 1.0 < vmax:   # mark uniform attention instead of the middle when it is on the bar
        ticks[1] = 1.0
    return ticks


def _artifact_note(a: Analysis, values: np.ndarray, mask_artifacts: bool, norm_ratio: float,
                   lang: str) -> str | None:
    """The note for a map of the CLS attention: artifacts masked, or dominating the unmasked map, or None."""
    flagged = artifact_drop(a, True, norm_ratio)
    if mask_artifacts:
        count = int(flagged.sum())
        return t("note.artifacts_masked", lang, count=count) if count else None
    share = norms.artifact_share(values, flagged)
    return t("note.artifacts_dominate", lang, share=share.share, count=share.count) if share.dominates else None


def _draw_map(base: Image.Image, values: np.ndarray, vmin: float, vmax: float, label: str, tokens: int,
              display: Display, outline: np.ndarray | None = None) -> Image.Image:
    return render.overlay(base, values, display.cmap, display.alpha, vmin=vmin, vmax=vmax, mask=outline,
                          colorbar=display.colorbar,
                          label=f"{label}\n{t('colorbar.uniform', display.lang, tokens=tokens)}",
                          lang=display.lang, smooth=not display.patch_true, ticks=_uniform_ticks(vmin, vmax),
                          font_size=display.font_size)


def _range(values: np.ndarray, drop: np.ndarray | None) -> tuple[float, float]:
    """(min, max) of a map over its kept patches (dropped ones read 0 and stay out of the scale)."""
    kept = values if drop is None or drop.all() else values[~drop]
    return float(kept.min()), float(kept.max())


def _layer_rows(a: Analysis, head: int | None, query: int, keep: np.ndarray | None) -> np.ndarray:
    """Attention rows of token ``query`` in every layer (L, T) float32: one head, or the mean of heads, each
    renormalised over the kept keys (``keep``: token indices; None: all)."""
    if head is not None:
        check_head(head, a.heads)
    return np.stack([kept_rows(a.maps, layer, head, [query], keep)[0] for layer in range(a.depth)])


def _layer_columns(a: Analysis, head: int | None, key: int, keep: np.ndarray | None) -> np.ndarray:
    """How much every kept query attends to token ``key``, every layer (L, T) float32, each query row renormalised
    over the kept keys."""
    return np.stack([kept_column(a.maps, layer, head, key, keep) for layer in range(a.depth)])


def rollout_map_panel(a: Analysis, fusion: str = "mean", discard_ratio: float = 0.0, start_layer: int = 0,
                      mask_artifacts: bool = False, norm_ratio: float = 3.0,
                      display: Display = Display(), stop_layer: int | None = None) -> MapPanel:
    """The query's rollout (CLS, MAP probe or mean of patches) on the photo at display size, in multiples of
    uniform attention, with the artifact note; ``stop_layer``: of the layers up to that one only (an animation's
    frame)."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    tokens = uniform_tokens(a, drop)
    values = rollout_of(a, fusion, discard_ratio, start_layer, mask_artifacts, norm_ratio, stop_layer) * tokens
    vmin, vmax = _range(values, drop)
    image = _draw_map(display_photo(a, display.size), values, vmin, vmax, rollout_caption(a, display.lang), tokens,
                      display)
    return MapPanel(image, values, vmin, vmax, tokens, _artifact_note(a, values, mask_artifacts, norm_ratio,
                                                                        display.lang))


def attention_layers(a: Analysis, head: int | None = None, mask_artifacts: bool = False,
                     norm_ratio: float = 3.0) -> np.ndarray:
    """The query's attention over the patches in every layer (L, gh, gw), in multiples of uniform attention
    (the CLS row, or the mean of the patch rows for models without a CLS token), the artifact tokens dropped
    (and the rows renormalised) when masking: what ``attention_map_panel`` draws for one layer."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    rows = readout_rows_of(a, head, drop)
    return rows[:, a.num_prefix:].reshape(a.depth, *a.grid) * uniform_tokens(a, drop)


def attention_map_panel(a: Analysis, layer: int = -1, head: int | None = None, mask_artifacts: bool = False,
                        outline_share: float | None = None, shared_scale: bool = False, norm_ratio: float = 3.0,
                        display: Display = Display()) -> MapPanel:
    """The query's attention of one layer (one head or their mean) at display size, in multiples of uniform
    attention: the CLS row, the mean of the patch rows (mean-pooled models), or the MAP probe's attention
    (SigLIP: it reads once, after the last layer, so ``layer`` does not apply). ``outline_share``: DINO's
    threshold mask (e.g. 0.6) outlined; ``shared_scale``: one colour scale for every layer (the min and max
    over all layers), so layers can be compared colour for colour."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    if a.readout in ("map", "map_all"):
        layers = (attention_of(a, layer, head, drop) * uniform_tokens(a, drop))[None]
        values = layers[0]
    else:
        layers = attention_layers(a, head, mask_artifacts, norm_ratio)
        values = layers[layer_index(layer, a.depth)]
    if shared_scale:
        kept = layers if drop is None or drop.all() else layers[:, ~drop]
        vmin, vmax = float(kept.min()), float(kept.max())
    else:
        vmin, vmax = _range(values, drop)
    outline = attention.threshold_mask(values, outline_share) if outline_share else None
    tokens = uniform_tokens(a, drop)
    image = _draw_map(display_photo(a, display.size), values, vmin, vmax,
                      attention_caption(a, layer, head, display.lang), tokens, display, outline)
    return MapPanel(image, values, vmin, vmax, tokens, _artifact_note(a, values, mask_artifacts, norm_ratio,
                                                                        display.lang))


def query_map_panels(a: Analysis, row: int, col: int, layer: int = -1, head: int | None = None,
                     rolled: bool = False, fusion: str = "mean", discard_ratio: float = 0.0, start_layer: int = 0,
                     mask_artifacts: bool = False, shared_scale: bool = False, norm_ratio: float = 3.0,
                     display: Display = Display()) -> tuple[MapPanel, MapPanel]:
    """(where patch (row, col) attends, which patches attend to it) at display size, in multiples of uniform
    attention, the patch framed. ``shared_scale`` (one layer only): each map's range over all layers.
    Querying a masked artifact patch raises ValueError (its text is ``t("note.query_masked", ...)``)."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    tokens = uniform_tokens(a, drop)
    q = patch_token(row, col, a.num_prefix, a.grid)
    if drop is not None and drop[row % a.grid[0], col % a.grid[1]]:
        raise ValueError(t("note.query_masked", "en", row=row % a.grid[0], col=col % a.grid[1]))
    out_map, in_map = query_maps(a, row, col, layer, head, rolled, fusion, discard_ratio, start_layer, drop)
    ranges = [_range(out_map * tokens, drop), _range(in_map * tokens, drop)]
    if shared_scale and not rolled:
        keep = None if drop is None else kept_tokens(a.num_prefix, a.grid, drop)
        for i, every in enumerate((_layer_rows(a, head, q, keep), _layer_columns(a, head, q, keep))):
            patches = every[:, a.num_prefix:].reshape(a.depth, *a.grid) * tokens
            kept = patches if drop is None or drop.all() else patches[:, ~drop]
            ranges[i] = (float(kept.min()), float(kept.max()))
    where = t("name.rollout", display.lang) if rolled else where_name(a, layer, head, display.lang)
    base = display_photo(a, display.size)
    panels = []
    for values, (vmin, vmax), kind in ((out_map * tokens, ranges[0], "colorbar.attends_to"),
                                       (in_map * tokens, ranges[1], "colorbar.attended_by")):
        image = _draw_map(base, values, vmin, vmax, t(kind, display.lang, where=where), tokens, display)
        render.frame_patch(image, row % a.grid[0], col % a.grid[1], a.grid, base.size,
                           width=max(2, round(base.width / 150)))
        panels.append(MapPanel(image, values, vmin, vmax, tokens,
                               _artifact_note(a, values, mask_artifacts, norm_ratio, display.lang)))
    return panels[0], panels[1]


NARROW_NORM_LAYERS = 4      # layers per row of the token-norm thumbnails on a narrow screen
NORMS_WIDTH = {False: 1100, True: 560}   # the token-norm thumbnails' width in pixels, wide and narrow screen


def norms_grid_panel(a: Analysis, norm_ratio: float = 3.0, lang: str = "en", narrow: bool = False,
                     cmap: str = "viridis") -> Image.Image:
    """The page's token norms: every patch token's L2 norm after each layer, one thumbnail per layer (in rows of
    ``NARROW_NORM_LAYERS`` on a narrow screen), each on its own scale from its smallest norm to its largest
    unflagged one (written under the layer's number), high-norm patches outlined in cyan and saturated, with a
    colour bar that says so."""
    maps = norms.token_norm_maps(a.token_norms, a.num_prefix, a.grid)
    flags = artifact_flags(a, norm_ratio)
    low = maps.min(axis=(1, 2), keepdims=True)
    high = np.where(flags, -np.inf, maps).max(axis=(1, 2), keepdims=True)     # the largest unflagged norm
    scaled = np.clip((maps - low) / np.where(high > low, high - low, 1.0), 0.0, 1.0)   # flagged ones saturate
    width = NORMS_WIDTH[narrow]
    font_size = screens.text_for(width) if narrow else 13
    labels = [f"{l}\n{low.ravel()[l]:.3g}–{high.ravel()[l]:.3g}" for l in range(a.depth)]
    bar_label = t("colorbar.norm_share", lang)
    bar = render.colorbar_width(0.0, 1.0, bar_label, lang=lang, ticks=[1.0, 0.0], font_size=font_size)
    per_row = NARROW_NORM_LAYERS if narrow else a.depth
    gh, gw = a.grid
    left = label_margins((), tuple(labels), t("axis.layer", lang), lang, font_size)[0]
    cell = max(8, round((width - left - bar - 2 * (per_row - 1)) / per_row * gh / gw))
    image, _ = banded_grid(scaled[None], per_row, labels, cell=cell, cmap=cmap, marks=flags[None],
                           lang=lang, value_range=(0.0, 1.0), font_size=font_size, title=t("axis.layer", lang))
    return render.add_colorbar(image, cmap, 0.0, 1.0, bar_label, lang=lang, ticks=[1.0, 0.0], font_size=font_size)
