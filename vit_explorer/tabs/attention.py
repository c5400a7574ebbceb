"""The Attention tab: one block's attention of the query (the mean of heads or one head), with DINO's outline."""
from __future__ import annotations

import gradio as gr


from ..components import note, picture
from ..controls import DISPLAY, ControlValues
from viz.attention.view import attention_view

OUTPUTS = ("attention", "attention_note")


def build(page) -> None:
    i18n = page.i18n
    with gr.Row():
        with gr.Column(scale=3, min_width=300):
            page.add("attention", picture(i18n, "picture.attention", elem_id="attention-image"))
            page.add("attention_note", note("attention-note"))
        with gr.Column(scale=2, min_width=260):
            gr.Markdown(i18n("about.attention"))
            page.add("layer", gr.Slider(0, page.depth - 1, value=page.depth - 1, step=1, label=i18n("control.layer"),
                                        info=i18n("help.layer"), elem_id="layer-slider"))
            page.add("mean_heads", gr.Checkbox(True, label=i18n("control.mean_heads"), info=i18n("help.mean_heads"),
                                               elem_id="mean-heads"))
            page.add("head", gr.Slider(0, page.heads - 1, value=0, step=1, label=i18n("control.head"),
                                       info=i18n("help.head"), interactive=False, elem_id="head-slider"))
            page.add("head_note", gr.Markdown(i18n("note.head_rests"), elem_id="head-note", elem_classes=["note"]))
            page.add("dino_mask", gr.Checkbox(False, label=i18n("control.dino_mask"), info=i18n("help.dino_mask")))


def uses(v: ControlValues) -> frozenset[str]:
    """The controls the attention picture depends on (the head only when one head is shown)."""
    return frozenset({"layer", "mean_heads", "dino_mask", "shared_scale"}) | DISPLAY | \
        (frozenset() if v.mean_heads else frozenset({"head"}))


def draw(session, a, c, lang: str) -> dict:
    image, attention_note = attention_view(a, c, lang)
    return {"attention": image, "attention_note": attention_note or ""}


def show(shown) -> dict:
    return {name: shown.pictures[name] for name in OUTPUTS}


def rest_head(mean_heads):
    """The Head slider is usable only when one head is shown; while it rests, the note under it says why."""
    return {"head": gr.Slider(interactive=not mean_heads), "head_note": gr.Markdown(visible=bool(mean_heads))}


def wire(page) -> None:
    page["mean_heads"].change(**page.wire(rest_head, ["head", "head_note"]), **page.instant)
