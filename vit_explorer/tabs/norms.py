"""The Token norms tab: every token's norm after each block, as thumbnails and as curves by depth, with the
high-norm artifact tokens flagged."""
from __future__ import annotations

import gradio as gr

from ..components import Picture, picture

OUTPUTS = ("norms", "norm_curves")


def build(page) -> None:
    gr.Markdown(page.i18n("about.norms"))
    page.add("norms", picture(page.i18n, "picture.norms", height=None))
    page.add("norm_curves", Picture(label=page.i18n("picture.norm_curves"), interactive=False,
                                         format="png", elem_classes=["picture"]))


def show(shown) -> dict:
    return {name: shown.pictures[name] for name in OUTPUTS}
