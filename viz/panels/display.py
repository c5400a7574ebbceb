"""How every tab draws a map for the page: at display size (``Display``, the photo enlarged once: ``display_photo``),
read in multiples of uniform attention (1 = 1/T, ``uniform_tokens``, ``draw_map``), on a range over the kept patches
(``value_range``, ``kept_range``), returned as a ``MapPanel`` with the numbers behind the picture and the note when
artifact tokens dominate it (``artifact_note``). The tabs' own panels are in their slices (``viz.rollout``,
``viz.attention``, ``viz.query``, ...).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image

from ..cache import Cache, nbytes
from ..drawing import render, screens
from ..i18n import t
from ..maps import norms
from ..records import Analysis
from .select import artifact_drop

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


def uniform_tokens(a: Analysis, drop: np.ndarray | None, layer: int = 0) -> int:
    """T, the tokens an attention row of ``layer`` is spread over (uniform attention gives each 1/T): all its tokens,
    or the ones left after dropping ``drop`` (gh, gw)."""
    return a.architecture.block(layer).num_tokens - (0 if drop is None else int(np.count_nonzero(drop)))


def uniform_ticks(vmin: float, vmax: float) -> list[float]:
    """Colour-bar ticks for maps in multiples of uniform: the top, 1 (uniform) when inside, the bottom."""
    if not vmax > vmin:
        return [vmax]
    ticks = [vmax, (vmin + vmax) / 2, vmin]
    if vmin < 1.0 < vmax:   # mark uniform attention instead of the middle when it is on the bar
        ticks[1] = 1.0
    return ticks


def artifact_note(a: Analysis, values: np.ndarray, mask_artifacts: bool, norm_ratio: float,
                  lang: str) -> str | None:
    """The note for a map of the CLS attention: artifacts masked, or dominating the unmasked map, or None (a model
    of windows or stages has no artifact tokens: ``select.artifact_flags``)."""
    flagged = artifact_drop(a, True, norm_ratio)
    if flagged is None or values.shape != flagged.shape:
        return None
    if mask_artifacts:
        count = int(flagged.sum())
        return t("note.artifacts_masked", lang, count=count) if count else None
    share = norms.artifact_share(values, flagged)
    return t("note.artifacts_dominate", lang, share=share.share, count=share.count) if share.dominates else None


def draw_map(base: Image.Image, values: np.ndarray, vmin: float, vmax: float, label: str, tokens: int,
             display: Display, outline: np.ndarray | None = None) -> Image.Image:
    """A map over the photo at display size in multiples of uniform attention, its colour bar saying so."""
    return render.overlay(base, values, display.cmap, display.alpha, vmin=vmin, vmax=vmax, mask=outline,
                          colorbar=display.colorbar,
                          label=f"{label}\n{t('colorbar.uniform', display.lang, tokens=tokens)}",
                          lang=display.lang, smooth=not display.patch_true, ticks=uniform_ticks(vmin, vmax),
                          font_size=display.font_size)


def value_range(values: np.ndarray, drop: np.ndarray | None) -> tuple[float, float]:
    """(min, max) of a map over its kept patches (dropped ones read 0 and stay out of the scale)."""
    kept = values if drop is None or drop.all() else values[~drop]
    return float(kept.min()), float(kept.max())


def kept_range(maps: list[np.ndarray], drop: np.ndarray | None) -> tuple[float, float]:
    """(min, max) over several maps' kept patches (a shared scale)."""
    kept = [m if drop is None or drop.all() or m.shape != drop.shape else m[~drop] for m in maps]
    return min(float(k.min()) for k in kept), max(float(k.max()) for k in kept)
