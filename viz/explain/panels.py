"""Explanation maps drawn onto the photo, from cached arrays only (milliseconds per picture).

Maps that are non-negative (GAE, rollouts, Grad-CAM, attention, random) are scaled between their minimum
and maximum with the chosen colour map. Signed maps (AttnLRP and CP-LRP relevance) and contrasts ("why A
rather than B": A's map minus B's) use a diverging colour map centred on 0, symmetric in ±max|value|, so
that white means 0, red evidence for (or "more for A") and blue evidence against (or "more for B").
"""
from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

from ..drawing import render
from ..i18n import t
from .methods import METHODS

DIVERGING_CMAP = "RdBu_r"   # blue < 0 < red, white at 0


def signed_overlay(image: Image.Image | np.ndarray, values: np.ndarray, alpha: float = 0.6, colorbar: bool = True,
                   label: str | None = None, cmap: str = DIVERGING_CMAP, lang: str = "en",
                   font_size: int | None = None) -> Image.Image:
    """(gh, gw) signed map onto the photo, colour scale symmetric around 0 (±max|value|; ±1 for an all-zero map);
    the colour bar's texts in ``lang`` at ``font_size`` pixels (default: by height)."""
    bound = float(np.abs(np.asarray(values, dtype=np.float32)).max()) or 1.0
    return render.overlay(image, values, cmap, alpha, vmin=-bound, vmax=bound, colorbar=colorbar, label=label,
                          lang=lang, ticks=[bound, 0.0, -bound], font_size=font_size)


def explanation_panel(image: Image.Image | np.ndarray, values: np.ndarray, method: str, cmap: str = render.DEFAULT_CMAP,
                      alpha: float = 0.6, colorbar: bool = True, label: str | None = None,
                      diverging_cmap: str = DIVERGING_CMAP, lang: str = "en",
                      font_size: int | None = None) -> Image.Image:
    """One method's (gh, gw) map blended onto the photo the model saw, with a colour bar labelled ``label``
    (default: the method's name) in ``lang`` at ``font_size`` pixels (default: by height). Signed methods use
    ``diverging_cmap`` centred on 0, the others ``cmap``."""
    if method not in METHODS:
        raise ValueError(f"Unknown explanation method {method!r}! Expected one of: {', '.join(METHODS)}.")
    label = method if label is None else label
    if METHODS[method].signed:
        return signed_overlay(image, values, alpha, colorbar, label, diverging_cmap, lang, font_size)
    return render.overlay(image, values, cmap, alpha, colorbar=colorbar, label=label, lang=lang, font_size=font_size)


def contrast_panel(image: Image.Image | np.ndarray, values: np.ndarray, alpha: float = 0.6, colorbar: bool = True,
                   label: str | None = None, cmap: str = DIVERGING_CMAP, lang: str = "en",
                   font_size: int | None = None) -> Image.Image:
    """A contrast map (A's map minus B's, ``viz.explain.contrast``) onto the photo, diverging and centred on 0."""
    return signed_overlay(image, values, alpha, colorbar, label, cmap, lang, font_size)


def methods_row(image: Image.Image | np.ndarray, maps: dict, cell: int = 160, cmap: str = render.DEFAULT_CMAP,
                alpha: float = 0.6, gap: int = 6, title: str | None = None, names: dict | None = None,
                per_row: int | None = None, font_size: int = 13, lang: str = "en",
                legend: str | None = None) -> Image.Image:
    """Several methods' maps for the same target side by side (``per_row`` to a row, default all), each scaled on
    its own, names above (``names``: method -> what to write, default the method's name) and ``title`` (e.g. the
    class) on the left; ``legend``: a colour bar that says so (0 a map's lowest value, 1 its highest) with this
    label, and under the row which methods are signed (red for, blue against).

    ``maps``: method name -> (gh, gw). Every tile is ``cell`` pixels high, in the photo's aspect.
    """
    photo = Image.fromarray(render.as_rgb_array(image))
    width = max(1, round(cell * photo.width / photo.height))
    small = photo.resize((width, cell), Image.Resampling.LANCZOS)
    names = names or {}
    f = render.font(font_size, lang, "".join(names.get(m, m) for m in maps))
    per_row = per_row or max(len(maps), 1)
    rows = -(-len(maps) // per_row)
    top = f.size + 8
    left = int(f.size * 1.6) if title else 0
    row_h = top + cell + gap
    canvas = Image.new("RGB", (left + max(min(len(maps), per_row) * (width + gap) - gap, 1), rows * row_h - gap),
                       "white")
    draw = ImageDraw.Draw(canvas)
    for i, (name, values) in enumerate(maps.items()):
        tile = explanation_panel(small, values, name, cmap, alpha, colorbar=False)
        x, y = left + (i % per_row) * (width + gap), (i // per_row) * row_h
        canvas.paste(tile, (x, y + top))
        draw.text((x + width / 2, y + top - 4), names.get(name, name), fill="black", font=f, anchor="md")
    if title:
        title_font = render.font(font_size, lang, title)
        strip = Image.new("RGB", (cell, left), "white")
        ImageDraw.Draw(strip).text((cell // 2, left // 2), title, fill="black", font=title_font, anchor="mm")
        canvas.paste(strip.rotate(90, expand=True), (0, top))
    if legend is not None:
        canvas = render.add_colorbar(canvas, cmap, 0.0, 1.0, legend, lang=lang, ticks=[1.0, 0.0], font_size=font_size)
        signed = [names.get(m, m) for m in maps if METHODS[m].signed]
        if signed:
            canvas = render.caption(canvas, t("caption.signed_methods", lang, methods=t("list.separator", lang)
                                                                                           .join(signed)), lang,
                                    font_size)
    return canvas
