"""The Explain tab: every method of ``viz.explain.METHODS`` for one target, computed once per (photo, model, target)
by ``explanations`` (each model pass once) and re-drawn in milliseconds when the method, contrast or opacity changes
(``explain_view``, ``methods_view``)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from PIL import Image

from ..controls import DISPLAY_SIZE, NARROW_SIZE
from ..drawing import screens
from ..i18n import t
from ..panels.display import Display, display_photo
from ..records import Analysis
from .methods import METHODS
from .panels import contrast_panel, explanation_panel, methods_row


@dataclass(frozen=True)
class Explained:
    """Every method's map for one (photo, model, target): what the Explain tab re-draws from."""
    target: dict                                   # {"index", "name", ...} of the explained class or text
    maps: dict[str, np.ndarray] = field(default_factory=dict)   # method -> (gh, gw)
    failed: dict[str, str] = field(default_factory=dict)        # method -> why it could not run on this model
    probability: float = float("nan")
    score: float = float("nan")
    readout: str = ""                              # which tokens the maps read, in words (English, as vit.explain says)
    grid: tuple[int, int] = (0, 0)
    query: str = ""                                # the same as a key: the readout's name (vit.readout)

    def readout_words(self, lang: str = "en") -> str:
        """Which tokens the maps read, in ``lang``: "the CLS token", "the mean of the patch tokens", …"""
        return t(f"readout.{self.query}", lang) if self.query else self.readout

    @property
    def nbytes(self) -> int:
        return sum(m.nbytes for m in self.maps.values()) + 1024


def explanations(explain_tensor, model, x, target, labels) -> Explained:
    """Run every family of methods once for ``target`` (``viz.analysis.explain_tensor``); a family the model
    does not support is recorded with the library's own message instead of failing the others."""
    maps, failed, first = {}, {}, None
    for name in METHODS:
        if name in maps or name in failed:
            continue
        try:
            e = explain_tensor(model, x, target, [name], labels)
        except (ValueError, NotImplementedError, RuntimeError) as err:
            failed[name] = str(err)
            continue
        first = first or e
        maps.update({m: e.map(m) for m in e.maps if m in METHODS})
    if first is None:
        return Explained({"index": None, "name": str(target)}, {}, failed)
    return Explained(first.target, maps, failed, first.probability, first.score, first.readout, first.grid,
                     first.query)


def explain_view(a: Analysis, e: Explained, method: str, contrast: Explained | None = None, alpha: float = 0.6,
                 lang: str = "en", narrow: bool = False) -> tuple[Image.Image | None, str]:
    """(the method's map for the target on the photo at display size — or the target's map minus the contrast's,
    diverging —, one line with the numbers), or (None, the reason) when the method cannot run on this model.

    The map is drawn in multiples of an even share, as attention is: each patch's value divided by the map's total
    (of |values| for signed maps and contrasts, the target's), times the number of patches, so 1 is what a patch
    would get if the map were spread evenly (the numbers behind it, as the method gives them, are the API's)."""
    if method not in e.maps:
        return None, t("message.explain_failed", lang, error=e.failed.get(method, method))
    name = e.target["name"]
    line = t("explain.line", lang, method=t(f"method_title.{method}", lang), target=name, probability=e.probability,
             score=e.score, grid="×".join(map(str, e.grid)), readout=e.readout_words(lang))
    display = Display(size=NARROW_SIZE if narrow else DISPLAY_SIZE, lang=lang, alpha=alpha, narrow=narrow)
    photo = display_photo(a, display.size)
    patches = e.maps[method].size
    values = e.maps[method]
    short = t(f"method.{method}", lang)
    if contrast is not None and method in contrast.maps:
        values = (values - contrast.maps[method]) * _even_share(values, patches)   # as viz.explain.contrast: A − B
        label = t("colorbar.contrast_map", lang, method=short, target=name, other=contrast.target["name"],
                  patches=patches)
        picture = contrast_panel(photo, values, alpha, label=label, lang=lang, font_size=display.font_size)
        return picture, line + t("explain.contrast", lang, other=contrast.target["name"])
    kind = "colorbar.signed_map" if METHODS[method].signed else "colorbar.class_map"
    label = t(kind, lang, method=short, target=name, patches=patches)
    return explanation_panel(photo, values * _even_share(values, patches), method, alpha=alpha, label=label, lang=lang,
                             font_size=display.font_size), line


def _even_share(values: np.ndarray, patches: int) -> float:
    """The factor that puts a map in multiples of an even share: patches / Σ|values| (1 for an all-zero map)."""
    total = float(np.abs(np.asarray(values, dtype=np.float64)).sum())
    return patches / total if total > 0 else 1.0


NARROW_METHODS = 2     # methods to a row on a narrow screen
NARROW_TILE = 200      # and the side of each, in pixels


def methods_view(a: Analysis, e: Explained, alpha: float = 0.6, lang: str = "en",
                 narrow: bool = False) -> Image.Image | None:
    """Every method that ran, side by side for the same target (two to a row on a narrow screen), each on its own
    scale, with a colour bar that says so."""
    if not e.maps:
        return None
    names = {m: t(f"method.{m}", lang) for m in e.maps}
    if narrow:
        width = NARROW_METHODS * (NARROW_TILE + 6) + 120     # two tiles with their gaps, the title and the colour bar
        return methods_row(a.image, e.maps, cell=NARROW_TILE, alpha=alpha, title=str(e.target["name"]), names=names,
                           per_row=NARROW_METHODS, font_size=screens.text_for(width), lang=lang,
                           legend=t("colorbar.own_scale", lang))
    return methods_row(a.image, e.maps, cell=140, alpha=alpha, title=str(e.target["name"]), names=names,
                       font_size=14, lang=lang, legend=t("colorbar.own_scale", lang))
