"""The pictures of patch features: the PCA colours at the photo's size, a similarity map over the photo with the
query patch framed, and one PCA's colours over several photos (a folder)."""
from __future__ import annotations

import numpy as np
from PIL import Image

from ..drawing import render
from ..drawing.grids import tile_images
from ..i18n import t

QUERY_COLOR = (0, 255, 0)        # the clicked patch
MATCH_COLOR = (0, 255, 255)      # its best match on the other photo


def rgb_image(rgb: np.ndarray, size: tuple[int, int], smooth: bool = False) -> Image.Image:
    """Colours per patch (gh, gw, 3) in [0, 1] -> an RGB picture of ``size`` (width, height): each patch one block
    of colour, or bilinear between patch centres (``smooth``)."""
    pixels = Image.fromarray((np.clip(rgb, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8), "RGB")
    return pixels.resize(size, Image.Resampling.BILINEAR if smooth else Image.Resampling.NEAREST)


def pca_caption(layer: int, ratio: np.ndarray | None, foreground: bool = False, lang: str = "en") -> str:
    """What a PCA picture shows: the layer and each component's share of the variance (``ratio``; None: no
    foreground to colour)."""
    if ratio is None:
        return t("caption.features_pca_empty", lang, layer=layer)
    shares = ", ".join(f"{100 * r:.1f}%" for r in ratio)
    return t("caption.features_pca_foreground" if foreground else "caption.features_pca", lang, layer=layer,
             shares=shares)


def pca_picture(photo: Image.Image, rgb: np.ndarray, layer: int, ratio: np.ndarray | None, smooth: bool = False,
                foreground: bool = False, lang: str = "en") -> Image.Image:
    """The PCA colours (gh, gw, 3) at the photo's size with ``pca_caption`` underneath."""
    return render.caption(rgb_image(rgb, photo.size, smooth), pca_caption(layer, ratio, foreground, lang), lang)


def similarity_picture(photo: Image.Image, similarity: np.ndarray, query: tuple[int, int] | None,
                       match: tuple[int, int] | None = None, label: str = "", cmap: str = render.DEFAULT_CMAP,
                       alpha: float = 0.6, smooth: bool = True, lang: str = "en",
                       font_size: int | None = None) -> Image.Image:
    """Cosine similarity (gh, gw) over the photo with a colour bar from its lowest to its highest value, the query
    patch framed in green (when it is on this photo) and the best match in cyan (``match``)."""
    grid = similarity.shape
    picture = render.overlay(photo, similarity, cmap, alpha, colorbar=True, label=label, lang=lang, smooth=smooth,
                             font_size=font_size)
    width = max(2, round(photo.width / 150))
    for patch, color in ((query, QUERY_COLOR), (match, MATCH_COLOR)):
        if patch is not None:
            render.frame_patch(picture, patch[0], patch[1], grid, photo.size, color, width)
    return picture


def joint_picture(photos: list[Image.Image], projections: list[np.ndarray], layer: int, ratio: np.ndarray,
                  cell: int = 224, lang: str = "en") -> Image.Image:
    """One PCA over several photos: each photo above its colours, every component scaled by one minimum and one
    maximum over all the photos' patches (the same part, the same colour in every photo). ``projections``: each
    photo's (gh, gw, 3) unscaled projections on the shared components."""
    flat = np.concatenate([p.reshape(-1, 3) for p in projections])
    low, high = flat.min(axis=0), flat.max(axis=0)
    span = np.where(high > low, high - low, 1.0)
    tiles = []
    for photo, projection in zip(photos, projections):
        scale = cell / max(photo.size)
        size = (max(1, round(photo.width * scale)), max(1, round(photo.height * scale)))
        shown = photo.convert("RGB").resize(size, Image.Resampling.BICUBIC)
        colours = rgb_image((projection - low) / span, size)
        tile = Image.new("RGB", (cell, 2 * cell + 4), (255, 255, 255))
        tile.paste(shown, ((cell - size[0]) // 2, (cell - size[1]) // 2))
        tile.paste(colours, ((cell - size[0]) // 2, cell + 4 + (cell - size[1]) // 2))
        tiles.append(np.asarray(tile))
    grid = tile_images(np.stack(tiles) / 255.0, cols=min(len(tiles), 8), scale=1, gap=6)
    shares = ", ".join(f"{100 * r:.1f}%" for r in ratio)
    return render.caption(grid, t("caption.features_joint", lang, layer=layer, images=len(photos), shares=shares),
                          lang, font_size=14)
