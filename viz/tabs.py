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
from .drawing import walk_steps
from .explain import METHODS
from .explain.panels import contrast_panel, explanation_panel, methods_row
from .i18n import t
from .records import Analysis

LEARN_SIZE = 560   # pixels of the Learn tab's pictures
STEPS = ("crop", "patches", "flatten", "projection", "cls", "position", "layers", "output", "logits")


# --- Learn ----------------------------------------------------------------------------------------------------

def learn_table(w: Walkthrough, layer: int = -1, lang: str = "en") -> str:
    """Every step with its real shape, as a Markdown table (the guided tab's overview)."""
    rows = [f"| {s.title} | `{s.shape}` |" for s in walk_steps.step_texts(w, layer, lang=lang)]
    return "\n".join([t("walk.table_header", lang), *rows])


def learn_step(w: Walkthrough, step: int, layer: int = -1, lang: str = "en") -> tuple[str, Image.Image]:
    """Step ``step`` (1–9) -> (its title, real shape and sentence in Markdown, its picture on this photo)."""
    index = min(max(int(step), 1), len(STEPS)) - 1
    s = walk_steps.step_texts(w, layer, lang=lang)[index]
    gh, gw = w.grid
    row, col = gh // 2, gw // 2
    patch = w.patch_index(row, col)
    pictures = {
        "crop": lambda: w.image.resize((round(w.image.width * LEARN_SIZE / max(w.image.size)),
                                        round(w.image.height * LEARN_SIZE / max(w.image.size))),
                                       Image.Resampling.BICUBIC),
        "patches": lambda: walk_steps.grid_picture(w, row, col, LEARN_SIZE, lang),
        "flatten": lambda: walk_steps.patch_picture(w, row, col, LEARN_SIZE, lang),
        "projection": lambda: walk_steps.vector_picture(w.embeddings[patch], t("walk.caption.embedding", lang,
                                                         dim=w.embeddings.shape[1]), LEARN_SIZE, lang),
        "cls": lambda: walk_steps.tokens_picture(w, "tokens", LEARN_SIZE, lang),
        "position": lambda: walk_steps.position_patch_picture(w, row, col, LEARN_SIZE, lang),
        "layers": lambda: walk_steps.attention_picture(w, layer, None, LEARN_SIZE, lang),
        "output": lambda: walk_steps.vector_picture(w.output, t("walk.caption.embedding", lang,
                                                     dim=w.output.shape[0]), LEARN_SIZE, lang),
        "logits": lambda: walk_steps.logits_picture(w, 5, lang),
    }
    text = f"### {s.title}\n\n`{s.shape}` · {s.text}"
    return text, pictures[s.key]()


# --- Explain ----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Explained:
    """Every method's map for one (photo, model, target): what the Explain tab re-draws from."""
    target: dict                                   # {"index", "name", ...} of the explained class or text
    maps: dict[str, np.ndarray] = field(default_factory=dict)   # method -> (gh, gw)
    failed: dict[str, str] = field(default_factory=dict)        # method -> why it could not run on this model
    probability: float = float("nan")
    score: float = float("nan")
    readout: str = ""
    grid: tuple[int, int] = (0, 0)

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
    return Explained(first.target, maps, failed, first.probability, first.score, first.readout, first.grid)


def explain_view(a: Analysis, e: Explained, method: str, contrast: Explained | None = None, alpha: float = 0.6,
                 lang: str = "en") -> tuple[Image.Image | None, str]:
    """(the method's map for the target on the photo — or the target's map minus the contrast's, diverging —,
    one line with the numbers), or (None, the reason) when the method cannot run on this model."""
    if method not in e.maps:
        return None, t("message.explain_failed", lang, error=e.failed.get(method, method))
    name = e.target["name"]
    line = t("explain.line", lang, method=METHODS[method].title, target=name, probability=e.probability,
             score=e.score, grid="×".join(map(str, e.grid)), readout=e.readout)
    if contrast is not None and method in contrast.maps:
        values = e.maps[method] - contrast.maps[method]          # as viz.explain.contrast: positive where A has more
        picture = contrast_panel(a.image, values, alpha, label=f"{method}: {name} − {contrast.target['name']}")
        return _sized(picture), line + t("explain.contrast", lang, other=contrast.target["name"])
    return _sized(explanation_panel(a.image, e.maps[method], method, alpha=alpha, label=f"{method}: {name}")), line


def _sized(picture: Image.Image, height: int = 480) -> Image.Image:
    """Explanation pictures come at the model's size: enlarged for the page (nearest keeps the text crisp)."""
    scale = max(1, round(height / picture.height))
    return picture.resize((picture.width * scale, picture.height * scale), Image.Resampling.NEAREST)


def methods_view(a: Analysis, e: Explained, alpha: float = 0.6) -> Image.Image | None:
    """Every method that ran, side by side for the same target."""
    if not e.maps:
        return None
    return methods_row(a.image, e.maps, cell=140, alpha=alpha, title=str(e.target["name"]))
