"""The Position embeddings tab: how similar each patch's position embedding is to every other's (the ViT paper's
Figure 7, centre), drawn once per model and language."""
from __future__ import annotations

import gradio as gr

from viz.analysis.windows import is_swin
from viz.drawing.render import message_image
from viz.i18n import t

from ..components import Picture

OUTPUTS = ("position",)


def build(page) -> None:
    gr.Markdown(page.i18n("about.position"))
    page.add("position", Picture(label=page.i18n("picture.position"), interactive=False, format="png",
                                      elem_classes=["picture"]))


def show(shown) -> dict:
    if is_swin(shown.served.loaded.model):    # no table of positions: the one sentence why
        return {"position": message_image(t("swin.not.position", shown.lang), lang=shown.lang)}
    return {"position": shown.served.position(shown.lang, shown.controls.narrow)}
