"""The Rollout tab: the query's attention rolled out through every block (Abnar & Zuidema 2020), with the head
fusion, the discard ratio and the first block rolled out."""
from __future__ import annotations

import gradio as gr

from viz.maps.rollout import FUSIONS

from ..components import note, picture
from ..controls import DISPLAY, ROLLOUT, ControlValues
from viz.rollout.view import rollout_view

OUTPUTS = ("rollout", "rollout_note")


def build(page) -> None:
    i18n = page.i18n
    with gr.Row():
        with gr.Column(scale=3, min_width=300):
            page.add("rollout", picture(i18n, "picture.rollout", elem_id="rollout-image"))
            page.add("rollout_note", note("rollout-note"))
        with gr.Column(scale=2, min_width=260):
            gr.Markdown(i18n("about.rollout"))
            page.add("fusion", gr.Radio([(i18n(f"choice.{f}"), f) for f in FUSIONS], value=FUSIONS[0],
                                        label=i18n("control.fusion"), info=i18n("help.fusion")))
            page.add("discard_ratio", gr.Slider(0.0, 0.99, value=0.9, step=0.01, label=i18n("control.discard"),
                                                info=i18n("help.discard")))
            page.add("start_layer", gr.Slider(0, page.depth - 1, value=0, step=1, label=i18n("control.start_layer"),
                                              info=i18n("help.start_layer")))


def uses(v: ControlValues) -> frozenset[str]:
    """The controls the rollout picture depends on."""
    return ROLLOUT | DISPLAY


def draw(session, a, c, lang: str) -> dict:
    image, rollout_note = rollout_view(a, c, lang)
    return {"rollout": image, "rollout_note": rollout_note or ""}


def show(shown) -> dict:
    return {name: shown.pictures[name] for name in OUTPUTS}
