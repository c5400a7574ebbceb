"""The All heads tab: every layer's and head's attention of the query as thumbnails on one colour scale; a click
on one shows that layer and head in the Attention tab and says its mean distance and entropy."""
from __future__ import annotations

import gradio as gr


from .. import state
from ..components import note, picture
from ..controls import DISPLAY, ControlValues
from . import attention, query
from viz.heads.view import head_at, head_info, heads_view

OUTPUTS = ("heads", "heads_note")


def build(page) -> None:
    i18n = page.i18n
    gr.Markdown(i18n("about.heads"))
    page.add("heads_info", gr.Markdown(i18n("help.heads_info"), elem_id="heads-info"))
    page.add("heads", picture(i18n, "picture.heads", enlarge=False, elem_id="heads-image"))
    page.add("heads_note", note("heads-note"))


def uses(v: ControlValues) -> frozenset[str]:
    """The controls the grid depends on: the chosen layer and head are framed when one head is shown."""
    return frozenset({"mean_heads", "shared_scale"}) | DISPLAY | \
        (frozenset() if v.mean_heads else frozenset({"layer", "head"}))


def draw(session, a, c, lang: str) -> dict:
    """The grid, and the session that remembers its geometry for clicks."""
    session, image, heads_note = heads_view(session, a, c, lang)
    return {"session": session, "heads": image, "heads_note": heads_note}


def show(shown) -> dict:
    return {name: shown.pictures[name] for name in OUTPUTS}


def pick_head(evt: gr.SelectData, session, controls, lang):
    """A click on the grid: that layer and head in the sliders and the Attention tab, and one line on it."""
    if (a := state.session_analysis(session, lang)) is None or (cell := head_at(session, *evt.index)) is None:
        return {}
    layer, head = cell
    c = controls.but(layer=layer, head=head, mean_heads=False).for_analysis(a)
    values = draw(session, a, c, lang)
    values.update(attention.draw(values["session"], a, c, lang), **query.draw(values["session"], a, c, lang))
    return {**values, "layer": layer, "head": gr.Slider(value=head, interactive=True), "mean_heads": False,
            "heads_info": head_info(a, layer, head, c.mask_artifacts, lang)}


def wire(page) -> None:
    page["heads"].select(**page.wire(pick_head, ["session", *attention.OUTPUTS, *OUTPUTS, *query.DRAWN, "layer",
                                                 "head", "mean_heads", "heads_info"]), **page.render)
