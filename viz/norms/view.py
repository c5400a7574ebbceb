"""The Token norms tab: every patch token's L2 norm after each layer (a token of a coarser stage drawn over the patches
it covers), the high-norm artifact tokens of Darcet et al. flagged, and the norms against depth (``norms_views``,
``norms_grid_panel``, ``token_norms_panel``, ``token_norm_curves_panel``)."""
from __future__ import annotations

import numpy as np
from PIL import Image

from ..drawing import plots, render, screens
from ..drawing.grids import GridLayout, banded_grid, label_margins, thumbnail_grid
from ..i18n import language, t
from ..panels.select import artifact_flags, token_norm_maps_of
from ..records import Analysis


def norms_views(a: Analysis, lang: str = "en", narrow: bool = False) -> tuple[Image.Image, Image.Image]:
    """(token norms per layer as thumbnails with their colour bar, norms against depth as curves)."""
    lang = language(lang)
    return norms_grid_panel(a, lang=lang, narrow=narrow), token_norm_curves_panel(a, lang=lang, narrow=narrow)


NARROW_NORM_LAYERS = 4      # layers per row of the token-norm thumbnails on a narrow screen
NORMS_WIDTH = {False: 1100, True: 560}   # the token-norm thumbnails' width in pixels, wide and narrow screen


def norms_grid_panel(a: Analysis, norm_ratio: float = 3.0, lang: str = "en", narrow: bool = False,
                     cmap: str = "viridis") -> Image.Image:
    """The page's token norms: every patch token's L2 norm after each layer, one thumbnail per layer (in rows of
    ``NARROW_NORM_LAYERS`` on a narrow screen), each on its own scale from its smallest norm to its largest
    unflagged one (written under the layer's number), high-norm patches outlined in cyan and saturated, with a
    colour bar that says so (a token after a merge drawn over the patches it covers)."""
    maps = token_norm_maps_of(a)
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

    def drawn(bar: int) -> Image.Image:
        cell = max(8, round((width - left - bar - 2 * (per_row - 1)) / per_row * gh / gw))
        return banded_grid(scaled[None], per_row, labels, cell=cell, cmap=cmap, marks=flags[None], lang=lang,
                           value_range=(0.0, 1.0), font_size=font_size, title=t("axis.layer", lang))[0]

    image = drawn(bar)
    beside = render.colorbar_width(0.0, 1.0, bar_label, lang=lang, ticks=[1.0, 0.0], font_size=font_size,
                                   height=image.height)     # the bar's label wraps to the picture's height
    if beside > bar:
        image = drawn(beside)
    return render.add_colorbar(image, cmap, 0.0, 1.0, bar_label, lang=lang, ticks=[1.0, 0.0], font_size=font_size)


def token_norms_panel(a: Analysis, norm_ratio: float = 3.0, cell: int = 56,
                      cmap: str = "viridis", lang: str = "en") -> tuple[Image.Image, GridLayout]:
    """The L2 norm of every patch token after each layer (one thumbnail per layer, each scaled on its
    own between its min and its largest unflagged norm), high-norm patches outlined in cyan."""
    maps = token_norm_maps_of(a)
    flags = artifact_flags(a, norm_ratio)
    ordinary_max = np.where(flags, -np.inf, maps).max(axis=(1, 2), keepdims=True)
    maps = np.minimum(maps, ordinary_max)       # flagged patches saturate instead of washing out the rest
    return thumbnail_grid(maps[None], cell=cell, cmap=cmap,
                          col_labels=[t("name.layer", lang, layer=l) for l in range(a.depth)],
                          row_labels=[t("name.norm", lang)], marks=flags[None], lang=lang)


def token_norm_curves_panel(a: Analysis, norm_ratio: float = 3.0, lang: str = "en",
                            narrow: bool = False) -> Image.Image:
    """Token norms against depth (log scale), flagged patches in red; ``narrow``: for a phone."""
    return plots.token_norm_image(a.token_norms, a.num_prefix, artifact_flags(a, norm_ratio), lang=lang,
                                  narrow=narrow)
