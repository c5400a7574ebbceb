"""What the page's Learn, Explain and Compare tabs show, from cached results. No Gradio here.

- Learn: one step of the guided walk (``viz.drawing.walk_steps``) on the photo, with this model's real shapes;
- Explain: every method of ``viz.explain.METHODS`` for one target, computed once per (photo, model, target) by
  ``explanations`` (each model pass once) and re-drawn in milliseconds when the method, contrast or opacity
  changes;
- Compare: two checkpoints on the same photo (``viz.compare``), the depth animation (``viz.animate``) and a
  training run's snapshots (``viz.dynamics``).

The Trust tab's texts and figure are in ``viz.trust.view``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from PIL import Image

from .analysis.walkthrough import Walkthrough
from . import panels
from .explorer import DISPLAY_SIZE, NARROW_SIZE
from .drawing import screens, walk_steps
from .explain import METHODS
from .explain.panels import contrast_panel, explanation_panel, methods_row
from .i18n import t
from .maps.norms import artifact_share
from .records import Analysis

LEARN_SIZE = 560   # pixels of the Learn tab's pictures

STEPS = ("crop", "patches", "flatten", "projection", "cls", "position", "layers", "output", "logits")


# --- Learn ----------------------------------------------------------------------------------------------------

def learn_table(w: Walkthrough, layer: int = -1, lang: str = "en") -> str:
    """Every step with its real shape, as a Markdown table (the guided tab's overview)."""
    rows = [f"| {s.title} | `{s.shape}` |" for s in walk_steps.step_texts(w, layer, lang=lang)]
    return "\n".join([t("walk.table_header", lang), *rows])


def learn_step(w: Walkthrough, step: int, layer: int = -1, lang: str = "en", a: Analysis | None = None,
               narrow: bool = False) -> tuple[str, Image.Image]:
    """Step ``step`` (1–9) -> (its title, real shape and sentence in Markdown, its picture on this photo). With the
    photo's analysis ``a``, step 7 says when the picture's brightest spots are high-norm artifact tokens (the same
    rule as the maps' note). ``narrow``: text in the pictures readable on a phone (``viz.drawing.screens``)."""
    index = min(max(int(step), 1), len(STEPS)) - 1
    s = walk_steps.step_texts(w, layer, lang=lang)[index]
    gh, gw = w.grid
    row, col = gh // 2, gw // 2
    patch = w.patch_index(row, col)
    size = LEARN_SIZE
    fs = screens.text_for(round(size * 1.35)) if narrow else None      # the walk's own size (1/32) on a desktop
    pictures = {
        "crop": lambda: w.image.resize((round(w.image.width * size / max(w.image.size)),
                                        round(w.image.height * size / max(w.image.size))),
                                       Image.Resampling.BICUBIC),
        "patches": lambda: walk_steps.grid_picture(w, row, col, size, lang, fs),
        "flatten": lambda: walk_steps.patch_picture(w, row, col, size, lang, fs),
        "projection": lambda: walk_steps.vector_picture(w.embeddings[patch], t("walk.caption.embedding", lang,
                                                         dim=w.embeddings.shape[1]), size, lang, font_size=fs),
        "cls": lambda: walk_steps.tokens_picture(w, "tokens", size, lang, fs),
        "position": lambda: walk_steps.position_patch_picture(w, row, col, size, lang, fs),
        "layers": lambda: walk_steps.attention_picture(w, layer, None, size, lang, fs),
        "output": lambda: walk_steps.vector_picture(w.output, t("walk.caption.embedding", lang,
                                                     dim=w.output.shape[0]), size, lang, font_size=fs),
        "logits": lambda: walk_steps.logits_picture(w, 5, lang, narrow),
    }
    text = f"### {s.title}\n\n`{s.shape}` · {s.text}"
    if s.key == "layers" and a is not None:
        text += _corners(a, layer, lang)
    return text, pictures[s.key]()


def _corners(a: Analysis, layer: int, lang: str) -> str:
    """One more sentence for step 7 when the layer's CLS attention (mean of heads) is dominated by high-norm
    artifact tokens (``viz.maps.norms.artifact_share``): what the bright spots are, where to read more."""
    flagged = panels.artifact_drop(a, True)
    if not flagged.any() or a.readout != "cls":
        return ""
    values = panels.attention_layers(a)[layer % a.depth]
    share = artifact_share(values, flagged)
    if not share.dominates:
        return ""
    return " " + t("walk.blocks.artifacts", lang, count=share.count, share=share.share)


# --- Explain ----------------------------------------------------------------------------------------------------

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
    display = panels.Display(size=NARROW_SIZE if narrow else DISPLAY_SIZE, lang=lang, alpha=alpha, narrow=narrow)
    photo = panels.display_photo(a, display.size)
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
