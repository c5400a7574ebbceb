"""The Attention distance tab: every head's mean attention distance by depth on this photo (the ViT paper's
Figure 7, right)."""
from __future__ import annotations

import gradio as gr

from ..components import Picture

OUTPUTS = ("distance",)


def build(page) -> None:
    gr.Markdown(page.i18n("about.distance"))
    page.add("distance", Picture(label=page.i18n("picture.distance"), interactive=False, format="png",
                                      elem_classes=["picture"]))


def show(shown) -> dict:
    return {"distance": shown.pictures["distance"]}
