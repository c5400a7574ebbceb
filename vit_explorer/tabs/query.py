"""The Patch query tab: click a patch of the photo to see where it attends and which patches attend to it, in
one block and head or rolled out through every block."""
from __future__ import annotations

import gradio as gr


from .. import state
from ..components import note, picture
from ..controls import DISPLAY, ROLLOUT, ControlValues
from viz.query.view import query_photo, query_views, select_patch

OUTPUTS = ("query_photo", "query_out", "query_in", "query_note")
DRAWN = ("query_out", "query_in", "query_note")     # what a control change redraws (the photo stays)


def build(page) -> None:
    i18n = page.i18n
    gr.Markdown(i18n("about.query"))
    page.add("rolled", gr.Checkbox(False, label=i18n("control.rolled"), info=i18n("help.rolled")))
    with gr.Row():
        page.add("query_photo", picture(i18n, "picture.query_photo", enlarge=False, elem_id="query-photo",
                                        min_width=300))
        page.add("query_out", picture(i18n, "picture.query_out", elem_id="query-out", min_width=300))
        page.add("query_in", picture(i18n, "picture.query_in", elem_id="query-in", min_width=300))
    page.add("query_note", note("query-note"))


def uses(v: ControlValues) -> frozenset[str]:
    """The controls the two maps depend on: one block's (and head's) attention, or the rollout's controls."""
    if v.rolled:
        return frozenset({"rolled"}) | ROLLOUT | DISPLAY
    return frozenset({"rolled", "layer", "mean_heads", "shared_scale"}) | DISPLAY | \
        (frozenset() if v.mean_heads else frozenset({"head"}))


def draw(session, a, c, lang: str) -> dict:
    query_out, query_in, query_note = query_views(session, a, c, lang)
    return {"query_out": query_out, "query_in": query_in, "query_note": query_note or ""}


def show(shown) -> dict:
    return {name: shown.pictures[name] for name in OUTPUTS}


def pick_patch(evt: gr.SelectData, session, controls, lang):
    """A click on the photo queries the patch under it."""
    if (a := state.session_analysis(session, lang)) is None:
        return {}
    session = select_patch(session, a, *evt.index)
    return {"session": session, "query_photo": query_photo(session, a),
            **draw(session, a, controls.for_analysis(a), lang)}


def wire(page) -> None:
    page["query_photo"].select(**page.wire(pick_patch, ["session", *OUTPUTS]), **page.render)
