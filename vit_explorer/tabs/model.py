"""The Model tab: the family, its stages with this photo's tensor shapes and parameter counts, and the principal
components of the patch-embedding filters (the ViT paper's Figure 7, left)."""
from __future__ import annotations

import gradio as gr


from viz.position.view import filters_panel

from ..components import Picture
from viz.model.view import architecture

OUTPUTS = ("architecture", "filters")


def build(page) -> None:
    page.add("architecture", gr.Markdown(elem_id="architecture"))
    gr.Markdown(page.i18n("about.filters"))
    page.add("filters", Picture(label=page.i18n("picture.filters"), interactive=False, format="png",
                                     elem_classes=["picture"]))


def show(shown) -> dict:
    return {"architecture": architecture(shown.served, shown.analysis, shown.lang),
            "filters": shown.served.drawn(("filters",), lambda: filters_panel(shown.served.arrays))}
