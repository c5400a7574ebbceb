"""What the page's Features tab shows, from cached analyses (no Gradio, no model): the PCA colours of one layer's
patch features (with DINOv2's foreground option), the photo to click a patch on, that patch's cosine similarity to
every patch, and to every patch of a second photo with its best match.

A layer's PCA is fitted once per (analysis, layer, foreground) and kept among the last few (``FITTED``); a click or an
opacity change only redraws. Layers are 0-based, as in every picture of the page.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np
from PIL import Image

from ..cache import Cache, nbytes
from ..drawing import render
from ..i18n import t
from ..maps.layout import layer_index, pixel_to_patch
from ..panels.display import display_photo
from ..records import Analysis
from .pca import Pca, foreground_rgb, pca_rgb
from .pictures import pca_caption, rgb_image, similarity_picture
from .similarity import best_match, patch_similarity
from .tokens import patch_features

PHOTO_SIZE = 512        # longer side of the photo to click on, in pixels
MAP_SIZE = 448          # longer side of the PCA picture and the similarity maps


@dataclass(frozen=True)
class Fitted:
    """One layer's PCA picture of an analysis."""
    rgb: np.ndarray                  # (gh, gw, 3) in [0, 1]
    pca: Pca | None                  # None: foreground asked for, and too few foreground patches
    foreground: np.ndarray | None    # (gh, gw) bool, with the foreground option


# The last PCAs fitted, keyed by the analysis object (which they do not keep alive), the layer and the option
FITTED = Cache(None, 8 * 2**20, weigh=lambda kept: nbytes(kept[1]))


def fitted(a: Analysis, layer: int, foreground: bool = False) -> Fitted:
    """The PCA of the analysis' patch features after ``layer``, on all patches or on DINOv2's foreground."""
    layer = layer_index(layer, a.depth)

    def fit() -> tuple[weakref.ref, Fitted]:
        features = patch_features(a, layer)
        if foreground:
            rgb, mask, pca = foreground_rgb(features, a.grid)
            return weakref.ref(a), Fitted(rgb, pca, mask)
        rgb, pca = pca_rgb(features, a.grid)
        return weakref.ref(a), Fitted(rgb, pca, None)

    key = (id(a), layer, foreground)
    kept = FITTED.get(key, fit)
    if kept[0]() is not a:               # another analysis that lived at the same address before
        kept = fit()
        FITTED.put(key, kept)
    return kept[1]


def _size(a: Analysis, longer: int) -> tuple[int, int]:
    width, height = a.image.size
    scale = longer / max(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def pca_view(a: Analysis, layer: int, foreground: bool = False, smooth: bool = False,
             lang: str = "en") -> tuple[Image.Image, str]:
    """(the PCA colours at display size, the line under them: layer, variance per component or no foreground)."""
    f = fitted(a, layer, foreground)
    ratio = None if f.pca is None else f.pca.explained_variance_ratio
    return rgb_image(f.rgb, _size(a, MAP_SIZE), smooth), pca_caption(layer_index(layer, a.depth), ratio, foreground,
                                                                     lang)


def photo_view(a: Analysis, query: tuple[int, int]) -> Image.Image:
    """The photo to click a patch on, the queried patch framed."""
    return render.mark_patch(display_photo(a, PHOTO_SIZE), query[0], query[1], a.grid)


def patch_at(a: Analysis, x: float, y: float) -> tuple[int, int]:
    """Pixel (x, y) of ``photo_view`` -> the patch (row, col) under it."""
    return pixel_to_patch(x, y, _size(a, PHOTO_SIZE), a.grid)


def similarity_view(a: Analysis, layer: int, query: tuple[int, int], alpha: float = 0.6, smooth: bool = True,
                    lang: str = "en") -> Image.Image:
    """The cosine similarity of the queried patch's features to every patch of its photo, over the photo."""
    layer = layer_index(layer, a.depth)
    values = patch_similarity(patch_features(a, layer), a.grid, *query)
    return similarity_picture(display_photo(a, MAP_SIZE), values, query,
                              label=t("colorbar.similarity", lang, row=query[0], col=query[1], layer=layer),
                              alpha=alpha, smooth=smooth, lang=lang, font_size=max(12, MAP_SIZE // 32))


def match_view(a: Analysis, other: Analysis, layer: int, query: tuple[int, int], alpha: float = 0.6,
               smooth: bool = True, lang: str = "en") -> tuple[Image.Image, str]:
    """(the cosine similarity of the first photo's queried patch to every patch of ``other`` over it, its best
    match framed; the line saying where that is and how alike)."""
    if other.depth != a.depth or other.stream is None or other.stream.shape[-1] != a.stream.shape[-1]:
        raise ValueError("The second photo was analysed by another model: analyse it with this one.")
    layer = layer_index(layer, a.depth)
    values = patch_similarity(patch_features(a, layer), a.grid, *query, patch_features(other, layer), other.grid)
    best = best_match(values)
    picture = similarity_picture(display_photo(other, MAP_SIZE), values, None, best,
                                 label=t("colorbar.similarity_other", lang, row=query[0], col=query[1], layer=layer),
                                 alpha=alpha, smooth=smooth, lang=lang, font_size=max(12, MAP_SIZE // 32))
    return picture, t("note.features_match", lang, row=best[0], col=best[1], value=float(values[best]))
