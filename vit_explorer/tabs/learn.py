"""The Learn tab: a guided walk through the ViT on the photo, step by step, with this model's real tensor shapes
(drawn while the tab is open)."""
from __future__ import annotations

import gradio as gr

from viz.i18n import t

from .. import state
from ..components import picture
from viz.learn.view import STEPS, learn_step, learn_table, stages_picture
from viz.model.view import architecture

OUTPUTS = ("learn_text", "learn_picture", "learn_table")


def build(page) -> None:
    i18n = page.i18n
    walks = page.served.architecture.one_sequence   # one sequence: a walk of steps; stages: one page (``fit``)
    page.add("learn_about", gr.Markdown(i18n("about.learn"), visible=walks, elem_id="learn-about"))
    with page.add("learn_steps", gr.Row(equal_height=True, visible=walks, elem_id="learn-steps")):
        # the buttons side by side, on a phone too
        page.add("back", gr.Button(i18n("button.back"), scale=1, min_width=80, elem_id="learn-back"))
        page.add("forward", gr.Button(i18n("button.next"), variant="primary", scale=1, min_width=80,
                                      elem_id="learn-next"))
    page.add("step", gr.Slider(1, len(STEPS), value=1, step=1, label=i18n("control.step"),
                               info=i18n("help.step"), visible=walks, elem_id="learn-step"))
    with gr.Row():
        with gr.Column(scale=3, min_width=300):
            page.add("learn_picture", picture(i18n, "picture.step", elem_id="learn-picture"))
        with gr.Column(scale=2, min_width=260):
            page.add("learn_text", gr.Markdown(elem_id="learn-text"))
            page.add("learn_layer", gr.Slider(0, page.depth - 1, value=page.depth - 1, step=1,
                                              label=i18n("control.layer"), info=i18n("help.layer"), visible=walks,
                                              elem_id="learn-layer"))
            page.add("learn_table", gr.Markdown(elem_id="learn-table"))


def show(session, step, learn_layer, lang, narrow=False):
    """The guided walk's step ``step`` (1–9) on the photo, the layer of step 7, and the table of real shapes."""
    if session is None:
        return {}
    served = state.model_of(session.key)
    if not served.architecture.one_sequence:      # a model of stages: its stages and this photo's shapes
        a = state.analysis(session.key, lang)
        return dict(learn_text=t("learn.stages", lang), learn_picture=stages_picture(a),
                    learn_table=architecture(served, a, lang))
    try:
        w = state.WALKS.get(session.key)
    except (ValueError, OSError) as err:
        raise gr.Error(t("message.analyse_again", lang, error=err), print_exception=False) from None
    layer = min(int(learn_layer), w.depth - 1)
    text, image = learn_step(w, int(step), layer, lang, state.analysis(session.key, lang), bool(narrow))
    return dict(learn_text=text, learn_picture=image, learn_table=learn_table(w, layer, lang))


FITTED = ("learn_about", "learn_steps", "step", "learn_layer")     # what ``fit`` sets when the model changes


def fit(served) -> dict:
    """The walk's controls for a newly chosen model: the steps (Back, Next, the step slider), step 7's layer, its
    layers, and the line on how to use them; hidden for a model of stages, whose walk is one page of its stages
    (nothing for them to move; its own sentence says what the page shows)."""
    walks = served.architecture.one_sequence
    return {"learn_about": gr.Markdown(visible=walks), "learn_steps": gr.Row(visible=walks),
            "step": gr.Slider(visible=walks),
            "learn_layer": gr.Slider(maximum=served.depth - 1, value=served.depth - 1, visible=walks)}


def step_by(delta: int):
    """The Back (-1) and Next (+1) buttons: the step slider moves, inside the walk."""
    def move(step):
        return min(max(int(step) + delta, 1), len(STEPS))
    return move


def wire(page) -> None:
    walk = page.wire(show, OUTPUTS)
    for button, delta in (("back", -1), ("forward", 1)):
        page[button].click(step_by(delta), page["step"], page["step"], **page.instant).then(**walk, **page.render)
    gr.on([page["step"].release, page["learn_layer"].release], **walk, **page.render)
