"""The Learn tab: one step of the guided walk through the forward pass on the photo (``viz.learn.steps`` draws it
from a ``viz.learn.walkthrough.Walkthrough``: this model's real tensors and shapes), the table of every step's shape,
and, for a model of stages (whose walk is one page), the photo with its first layer's tokens and windows."""
from __future__ import annotations

import numpy as np
from PIL import Image

from ..controls import DISPLAY_SIZE
from ..drawing import render, screens
from ..i18n import t
from ..maps.norms import artifact_share
from ..panels.display import display_photo, uniform_tokens
from ..panels.select import artifact_drop, attention_of
from ..records import Analysis
from . import steps as walk_steps
from .walkthrough import Walkthrough


LEARN_SIZE = 560   # pixels of the Learn tab's pictures

STEPS = ("crop", "patches", "flatten", "projection", "cls", "position", "layers", "output", "logits")


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


def stages_picture(a: Analysis, size: int = DISPLAY_SIZE) -> Image.Image:
    """The Learn tab's one page for a model of stages: the photo with the first layer's tokens and windows outlined."""
    base = display_photo(a, size)
    block = a.architecture.blocks[0]
    gridded = Image.fromarray(render.draw_patch_grid(np.asarray(base), block.grid))
    return render.outline_windows(gridded, block, color=(255, 255, 0))


def _corners(a: Analysis, layer: int, lang: str) -> str:
    """One more sentence for step 7 when the layer's CLS attention (mean of heads) is dominated by high-norm
    artifact tokens (``viz.maps.norms.artifact_share``): what the bright spots are, where to read more."""
    flagged = artifact_drop(a, True)
    if flagged is None or not flagged.any() or a.readout != "cls":
        return ""
    values = attention_of(a, layer % a.depth) * uniform_tokens(a, None)
    share = artifact_share(values, flagged)
    if not share.dominates:
        return ""
    return " " + t("walk.blocks.artifacts", lang, count=share.count, share=share.share)
