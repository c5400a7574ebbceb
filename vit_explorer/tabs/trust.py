"""The Trust tab: can the maps be trusted: every method's deletion and insertion curves (and, ticked, the sanity
check) for the Explain tab's target, under one way of removing patches (fast: dropped from the tokens) or all
four (thorough), with a verdict per method. Run step by step with progress; each step (about one forward pass,
or one ROAD image) takes the model turn, so another visitor's analysis waits for at most one step, never for a
whole check; a check is a heavy job (``vit_explorer.heavy``: one per visitor, stopped at its next step when
cancelled). Results are cached per (photo, model, target, method, protocol): fast ones are reused by thorough."""
from __future__ import annotations

import functools
import time

import gradio as gr

from vit.explain.perturb import token_dropping_refusal
from viz.i18n import t
from viz.trust import PROTOCOLS
from viz.trust.job import ProtocolsJob, check_steps
from viz.trust.view import auc_tables, cost_line, protocol_name, trust_table, trust_view

from .. import state
from ..components import picture
from ..state import Pick
from .explain import pick, typed

OUTPUTS = ("trust_table", "trust_aucs", "trust_more", "trust_picture")
SHOWS = ("trust_cost",)           # a new photo, model or language: what fast and thorough cost on it
FAST, THOROUGH = "fast", "thorough"
DEPTHS = {FAST: ("tokens",), THOROUGH: tuple(PROTOCOLS)}
PIXEL_FAST = ("mean_colour",)     # a Swin's fast check: its windows tile the grid, so no token is ever dropped


def protocols_for(model, depth: str) -> tuple[str, ...]:
    """The protocols of "fast" or "thorough" on this model: a Swin's without token dropping (its pixel protocols)."""
    protocols = DEPTHS.get(depth, DEPTHS[FAST])
    if token_dropping_refusal(model) is None:
        return protocols
    return tuple(p for p in protocols if p != "tokens") or PIXEL_FAST


def build(page) -> None:
    i18n = page.i18n
    gr.Markdown(i18n("about.trust"))
    with gr.Row(equal_height=True):
        page.add("trust_depth", gr.Radio([(i18n("choice.trust_fast"), FAST), (i18n("choice.trust_thorough"), THOROUGH)],
                                         value=FAST, label=i18n("control.trust_depth"), info=i18n("help.trust_depth"),
                                         elem_id="trust-depth", scale=3))
        with gr.Column(scale=1, min_width=160):
            page.add("trust_sanity", gr.Checkbox(False, label=i18n("control.trust_sanity"),
                                                 info=i18n("help.trust_sanity")))
            page.add("trust_button", gr.Button(i18n("button.trust"), variant="primary", min_width=90,
                                               elem_id="trust-button"))
    page.add("trust_cost", gr.Markdown(elem_id="trust-cost"))
    page.add("trust_table", gr.Markdown(elem_id="trust-table"))
    with gr.Accordion(i18n("label.trust_aucs"), open=False, visible=False, elem_id="trust-more") as more:
        page.add("trust_aucs", gr.Markdown(elem_id="trust-aucs"))
    page.add("trust_more", more)
    page.add("trust_picture", picture(i18n, "picture.trust", enlarge=False, elem_id="trust-image"))


def show(shown) -> dict:
    """What fast and thorough cost on this model at this photo's size (nothing runs)."""
    width, height = shown.analysis.image.size
    model = shown.served.loaded.model
    line = cost_line(dict(_steps(shown.session.key.model, height, width)), shown.lang, protocols_for(model, FAST)[0])
    if token_dropping_refusal(model) is not None:
        line = f"{line} {t('trust.pixels_only', shown.lang)}"
    return {"trust_cost": line}


@functools.lru_cache(maxsize=32)
def _steps(source: str, height: int, width: int) -> tuple:
    """``check_steps`` of a served model at an input size (~30 ms of planning, so once, not for every photo)."""
    model = state.MODELS.get(source).loaded.model
    return tuple(check_steps(model, (height, width), protocols_for(model, THOROUGH)).items())


def check(session, target, texts, use_text, trust_sanity, trust_depth, lang, narrow=False, progress=gr.Progress()):
    """Every method's curves (and sanity) for the Explain tab's target on the session's photo, under the chosen
    protocols, with each method's verdict; cached per (model input, model, target, method, protocol): the input's
    hash stands for the photo, so the same photo through another preprocessing is another key. A generator: it
    yields after each step and returns {output: value}."""
    if session is None:
        return {}
    loaded = state.model_of(session.key).loaded
    a = state.analysis(session.key, lang)
    words = typed(texts)
    chosen = Pick(words[0], tuple(words), text=True) if use_text and words else (pick(target) or Pick())
    chosen.require_classes(loaded, lang)
    started = time.perf_counter()
    try:
        with state.MODEL_TURN:
            job = ProtocolsJob(loaded.model, loaded.preprocess.to_tensor(a.image), chosen.resolve(loaded),
                               protocols=protocols_for(loaded.model, trust_depth), sanity=bool(trust_sanity),
                               cache=state.TRUST, model_id=session.key.model, labels=loaded.labels,
                               rows_per_step=1)   # a step: one forward, or one image, at most
        steps = job.steps()
        while True:
            with state.MODEL_TURN:
                step = next(steps, None)
            if step is None:
                break
            done, total, _ = step
            progress(done / max(total, 1), desc=f"{t('trust.progress', lang)} · {protocol_name(job.running, lang)} "
                                                f"· {done}/{total}")
            yield                                         # between steps: a cancelled check stops here
        report = job.result()
    except ValueError as err:
        raise gr.Error(t("message.trust_failed", lang, error=err), print_exception=False) from None
    thorough = len(report.protocols) > 1
    return dict(trust_table=trust_table(report, lang, time.perf_counter() - started),
                trust_aucs=auc_tables(report, lang) if thorough else "", trust_more=gr.Accordion(visible=thorough),
                trust_picture=trust_view(report, a, lang, bool(narrow)))


def wire(page) -> None:
    # callable by a client (the serving test), not listed in the API
    page["trust_button"].click(**{**page.wire(check, OUTPUTS, heavy_group="trust"), "api_name": "trust",
                                  "api_visibility": "undocumented"})
