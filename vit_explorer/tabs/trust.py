"""The Trust tab: can the maps be trusted: every method's deletion and insertion curves (and, ticked, the sanity
check) for the Explain tab's target, run step by step with progress. Each step (about one forward pass) takes the
model turn, so another visitor's analysis waits for at most one step, never for a whole check."""
from __future__ import annotations

import gradio as gr

from viz import tabs
from viz.analysis.trust import TrustJob
from viz.i18n import t

from .. import state
from ..components import picture
from ..state import Pick
from .explain import pick, typed

OUTPUTS = ("trust_table", "trust_picture")


def build(page) -> None:
    i18n = page.i18n
    gr.Markdown(i18n("about.trust"))
    with gr.Row(equal_height=True):
        page.add("trust_sanity", gr.Checkbox(False, label=i18n("control.trust_sanity"), info=i18n("help.trust_sanity"),
                                             scale=3))
        page.add("trust_button", gr.Button(i18n("button.trust"), variant="primary", scale=1, min_width=90,
                                           elem_id="trust-button"))
    page.add("trust_table", gr.Markdown(elem_id="trust-table"))
    page.add("trust_picture", picture(i18n, "picture.trust", enlarge=False, elem_id="trust-image"))


def check(session, target, texts, use_text, trust_sanity, lang, progress=gr.Progress()):
    """Every method's curves (and sanity) for the Explain tab's target on the session's photo, cached per (model
    input, model, target, method): the input's hash stands for the photo, so the same photo through another
    preprocessing is another key."""
    if session is None:
        return {}
    loaded = state.model_of(session.key).loaded
    a = state.analysis(session.key, lang)
    words = typed(texts)
    chosen = Pick(words[0], tuple(words), text=True) if use_text and words else (pick(target) or Pick())
    try:
        with state.MODEL_TURN:
            job = TrustJob(loaded.model, loaded.preprocess.to_tensor(a.image), chosen.resolve(loaded),
                           sanity=bool(trust_sanity), cache=state.TRUST, model_id=session.key.model,
                           labels=loaded.labels, rows_per_step=1)   # a step: one forward at most
        steps = job.steps()
        while True:
            with state.MODEL_TURN:
                step = next(steps, None)
            if step is None:
                break
            done, total, what = step
            progress(done / max(total, 1), desc=f"{t('trust.progress', lang)}: {what}")
        report = job.result()
    except ValueError as err:
        raise gr.Error(t("message.trust_failed", lang, error=err), print_exception=False) from None
    return dict(trust_table=tabs.trust_table(report, lang), trust_picture=tabs.trust_view(report, a, lang))


def wire(page) -> None:
    # callable by a client (the serving test), not listed in the API
    page["trust_button"].click(**page.wire(check, OUTPUTS), api_name="trust", api_visibility="undocumented",
                               concurrency_id="trust", concurrency_limit=1, trigger_mode="once")
