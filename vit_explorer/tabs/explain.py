"""The Explain tab: why this class: the chosen method's map for a class (or, with CLIP, a typed text), minus a
contrast class's map when one is chosen, every method side by side, and CLIP's zero-shot scores (drawn while the
tab is open)."""
from __future__ import annotations

import gradio as gr
import torch

from viz.explain import METHODS
from viz.explain.methods import DEFAULT_METHOD
from viz.i18n import t

from .. import state
from ..limits import LIMITS
from ..components import note, picture
from ..state import Pick
from viz.explain.view import explain_view, methods_view

ID = "explain"                # the tab's id in the table of tabs
OUTPUTS = ("explain_line", "explain_picture", "methods_row")
SHOWS = ("target", "contrast", "clip_box")   # a new photo or model: its classes to pick from, and the CLIP box
TOP1 = "__top1__"             # the target "the top-1 class"
NO_CONTRAST = "__none__"


def build(page) -> None:
    i18n = page.i18n
    gr.Markdown(i18n("about.explain"))
    with gr.Row():
        # each at least 300 px wide: one per line on a phone, the method's whole name in its box
        page.add("method", gr.Dropdown([(i18n(f"method_title.{m}"), m) for m in METHODS],
                                       value=DEFAULT_METHOD, label=i18n("control.method"), info=i18n("help.method"),
                                       elem_id="method", min_width=300))
        page.add("target", gr.Dropdown([], value=None, filterable=True, allow_custom_value=True, min_width=300,
                                       label=i18n("control.target"), info=i18n("help.target"), elem_id="target"))
        page.add("contrast", gr.Dropdown([], value=None, filterable=True, allow_custom_value=True, min_width=300,
                                         label=i18n("control.contrast"), info=i18n("help.contrast")))
    with gr.Group(visible=page.served.has_text_tower) as clip_box:
        with gr.Row(equal_height=True):
            page.add("texts", gr.Textbox(label=i18n("control.texts"), info=i18n("help.texts"), lines=2, scale=3))
            with gr.Column(scale=1, min_width=160):
                page.add("score_texts", gr.Button(i18n("button.zero_shot")))
                page.add("use_text", gr.Checkbox(False, label=i18n("control.explain_text"),
                                                 info=i18n("help.explain_text")))
        page.add("zero_shot", gr.Label(label=i18n("label.zero_shot")))
    page.add("clip_box", clip_box)
    page.add("explain_line", note("explain-line"))
    page.add("explain_picture", picture(i18n, "picture.explanation", elem_id="explain-image"))
    page.add("methods_row", picture(i18n, "picture.methods_row", elem_id="methods-row"))


def show(shown) -> dict:
    """A new photo or model: its classes in the target and contrast lists, and the CLIP box when the checkpoint
    has a text tower (a language switch keeps the choices: only their labels follow)."""
    if not shown.new:
        return {}
    labels = list(shown.served.loaded.labels)
    lang = shown.lang
    return {"target": gr.Dropdown(choices=[(t("choice.top1", lang), TOP1), *[(n, n) for n in labels]], value=TOP1),
            "contrast": gr.Dropdown(choices=[(t("choice.none", lang), NO_CONTRAST), *[(n, n) for n in labels]],
                                    value=NO_CONTRAST),
            "clip_box": gr.Group(visible=shown.served.has_text_tower)}


def pick(target) -> Pick | None:
    """A class picked in the page or named through the API -> what to explain (None: no contrast)."""
    if target is None or str(target).strip() in ("", NO_CONTRAST):
        return None
    return Pick() if str(target).strip() == TOP1 else Pick(str(target).strip())


def typed(texts: str | None) -> list[str]:
    """The CLIP box's texts: one per line or separated by commas, each at most ``Limits.typed_text_chars`` long
    (CLIP reads 77 tokens of it) and at most ``Limits.typed_texts`` of them."""
    parts = (texts or "").replace("\n", ",").split(",")
    return [p.strip()[:LIMITS.typed_text_chars] for p in parts if p.strip()][:LIMITS.typed_texts]


def explain(session, method, target, contrast, texts, use_text, opacity, lang, narrow=False):
    """The method's map for the target (a class, the top-1, or a typed text for CLIP), minus the contrast class's
    map when one is chosen, the numbers, and every method side by side."""
    if session is None:
        return {}
    served = state.model_of(session.key)
    a = state.analysis(session.key, lang)
    words = typed(texts)
    if use_text and words:
        if not served.has_text_tower:
            raise gr.Error(t("message.no_text_tower", lang), print_exception=False)
        chosen = Pick(words[0], tuple(words), text=True)
    else:
        chosen = pick(target) or Pick()
    chosen.require_classes(served.loaded, lang)
    e = state.explained(session.key, chosen, lang)
    other = None if use_text else pick(contrast)
    other = None if other is None else state.explained(session.key, other, lang)
    image, line = explain_view(a, e, method, other, float(opacity), lang, bool(narrow))
    values = dict(explain_line=line, methods_row=methods_view(a, e, float(opacity), lang, bool(narrow)))
    if image is not None:
        values["explain_picture"] = image
    return values


def explain_if_open(open_tab, session, method, target, contrast, texts, use_text, opacity, lang, narrow=False):
    """``explain`` while the tab is open; otherwise nothing now (the lazy renderer draws it when it is opened):
    the opacity slider and a click on the top-5 are outside the tab, and need no model pass for a closed tab."""
    if open_tab != ID:
        return {}
    return explain(session, method, target, contrast, texts, use_text, opacity, lang, narrow)


@torch.inference_mode()
def zero_shot(session, texts, lang):
    """CLIP zero-shot: softmax over the typed texts of exp(logit_scale) · cos(image, text)."""
    from vit.clip.zero_shot import zero_shot as scores

    if session is None:
        return {}
    served = state.model_of(session.key)
    if not served.has_text_tower:
        raise gr.Error(t("message.no_text_tower", lang), print_exception=False)
    words = typed(texts)
    if not words:
        return {}
    a = state.analysis(session.key, lang)
    x = served.loaded.preprocess.to_tensor(a.image)   # exactly the input the analysis saw (never preprocessed twice)
    with state.MODEL_TURN:
        probabilities = scores(served.loaded, x, words)[0].tolist()
    return {"zero_shot": dict(zip(words, probabilities))}


def pick_class(evt: gr.SelectData):
    """A click on a class of the top-5 makes it the target."""
    return gr.Dropdown(value=evt.value)


def wire(page) -> None:
    gr.on([page["method"].input, page["target"].input, page["contrast"].input, page["use_text"].input],
          **page.wire(explain, OUTPUTS), **page.model_work, trigger_mode="always_last")
    if_open = page.wire(explain_if_open, OUTPUTS)
    page["opacity"].release(**if_open, **page.model_work, trigger_mode="always_last")
    page["top5"].select(pick_class, None, page["target"], **page.instant).then(**if_open, **page.model_work)
    gr.on([page["score_texts"].click, page["texts"].submit], **page.wire(zero_shot, ["zero_shot"]),
          **page.model_work)
