"""The Position embeddings tab: how similar each patch's position embedding is to every other's (the ViT paper's
Figure 7, centre), drawn once per model and language."""
from __future__ import annotations

import gradio as gr

from viz.position.view import position_panel

from ..components import Picture

OUTPUTS = ("position",)


def build(page) -> None:
    gr.Markdown(page.i18n("about.position"))
    page.add("position", Picture(label=page.i18n("picture.position"), interactive=False, format="png",
                                      elem_classes=["picture"]))


def show(shown) -> dict:
    """Figure 7's centre of the served model (a model with no table of positions: the sentence why)."""
    served, lang, narrow = shown.served, shown.lang, shown.controls.narrow
    return {"position": served.drawn(("position", lang, narrow),
                                     lambda: position_panel(served.arrays, lang=lang, narrow=narrow))}
