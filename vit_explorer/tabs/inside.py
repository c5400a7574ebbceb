"""The Inside tab: when in depth the model knows the answer and which parts write it, for the Explain tab's class
(and contrast): the logit lens as a strip and a patch map, direct logit attribution (layers × heads, with the MLP
column) with the patches a clicked head moved, head importance, the picked heads removed together, and patching
from a second photo (``viz.inside.job``, drawn by ``viz.inside.views``).

The heavy steps (the views, an ablation, patching) run ``InsideJob`` step by step with progress, each step in the
model's turn, as heavy jobs (``vit_explorer.heavy``: generators that yield after each step, so a cancelled job stops
at its next step), and their reports are cached per (photo, model, class, contrast, …) in ``state.INSIDE``; a click,
the layer slider or the language switch redraws from the cached report without the model. ``inside_state`` remembers
what is shown (``Shown``: the reports' keys, the chosen layer and head, where the pictures' cells lie).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import gradio as gr
import numpy as np

from vit.image_file import open_image
from vit.inside import parse_heads, why_not_linear
from viz.inside.job import InsideJob
from viz.i18n import language, t
from viz.inside import VIEWS
from viz.inside import views as draw
from viz.inside.pictures import Cells

from .. import state
from ..components import PhotoInput, note, picture
from ..state import Pick
from .explain import pick, typed

ID = "inside"
DRAWN = ("inside_line", "inside_lens", "inside_patch_lens", "inside_lens_line", "inside_lens_note", "inside_dla",
         "inside_sources", "inside_sources_note", "inside_dla_line", "inside_heads", "inside_heads_line")
OUTPUTS = ("inside_state", "inside_layer", *DRAWN, "inside_ablation", "inside_patch", "inside_patch_line")
SHOWS = (*OUTPUTS, "inside_ablate")     # a new photo or model: every view cleared, the sliders and heads fitted


@dataclass(frozen=True)
class Shown:
    """What the tab shows for one browser tab (``inside_state``): the cache keys of its reports, the layer of the
    patch lens, the head whose sources are drawn, the heads picked for removal, and the clickable cells of the
    strip, the DLA table and the head-importance table."""
    key: tuple                                   # ("views", the session's AnalysisKey, Pick, contrast Pick or None)
    layer: int = 0
    head: tuple[int, int] | None = None
    picked: tuple[tuple[int, int], ...] = ()
    lens: Cells | None = None
    dla: Cells | None = None
    heads: Cells | None = None
    ablated: tuple | None = None                 # the ablation's cache key, once run
    patched: tuple | None = None                 # the patching's cache key, once run


def build(page) -> None:
    i18n = page.i18n
    L, H = page.depth, page.heads
    page.add("inside_state", gr.State(None))
    gr.Markdown(i18n("about.inside"))
    page.add("inside_button", gr.Button(i18n("button.inside"), variant="primary", elem_id="inside-button"))
    page.add("inside_line", gr.Markdown(elem_id="inside-line"))
    with gr.Row():
        with gr.Column(scale=3, min_width=300):
            page.add("inside_lens", picture(i18n, "picture.inside_lens", enlarge=False, elem_id="inside-lens"))
        with gr.Column(scale=2, min_width=300):
            page.add("inside_patch_lens", picture(i18n, "picture.inside_patch_lens", elem_id="inside-patch-lens"))
            page.add("inside_layer", gr.Slider(0, L - 1, value=L - 1, step=1, label=i18n("control.inside_layer"),
                                               info=i18n("help.inside_layer"), elem_id="inside-layer"))
    page.add("inside_lens_line", gr.Markdown(elem_id="inside-lens-line"))
    page.add("inside_lens_note", note("inside-lens-note"))
    gr.Markdown(i18n("note.inside_lens"))
    with gr.Row():
        with gr.Column(scale=3, min_width=300):
            page.add("inside_dla", picture(i18n, "picture.inside_dla", enlarge=False, elem_id="inside-dla"))
        with gr.Column(scale=2, min_width=300):
            page.add("inside_sources", picture(i18n, "picture.inside_sources", elem_id="inside-sources"))
            page.add("inside_sources_note", note("inside-sources-note"))
    page.add("inside_dla_line", gr.Markdown(elem_id="inside-dla-line"))
    gr.Markdown(i18n("note.inside_dla"))
    with gr.Row():
        with gr.Column(scale=3, min_width=300):
            page.add("inside_heads", picture(i18n, "picture.inside_heads", enlarge=False, elem_id="inside-heads"))
        with gr.Column(scale=2, min_width=300):
            page.add("inside_ablate", gr.Dropdown(_head_choices(L, H), value=[], multiselect=True,
                                                  label=i18n("control.inside_ablate"), info=i18n("help.inside_ablate"),
                                                  elem_id="inside-ablate"))
            page.add("inside_ablate_button", gr.Button(i18n("button.inside_ablate"), elem_id="inside-ablate-button"))
            page.add("inside_ablation", gr.Markdown(elem_id="inside-ablation"))
    page.add("inside_heads_line", gr.Markdown(elem_id="inside-heads-line"))
    gr.Markdown(i18n("note.inside_heads"))
    with gr.Row():
        with gr.Column(scale=1, min_width=260):
            page.add("inside_other", PhotoInput(label=i18n("label.inside_other"), type="filepath", image_mode=None,
                                                sources=["upload", "clipboard"], height=220, elem_id="inside-other"))
        with gr.Column(scale=3, min_width=300):
            page.add("inside_patch", picture(i18n, "picture.inside_patch", elem_id="inside-patch"))
    page.add("inside_patch_line", gr.Markdown(elem_id="inside-patch-line"))
    gr.Markdown(i18n("note.inside_patch"))


def _head_choices(L: int, H: int) -> list[str]:
    return [f"{l}.{h}" for l in range(L) for h in range(H)]


def show(shown) -> dict:
    """A new photo or model: every view cleared (they belong to the last one), the layer slider and the heads to
    pick fitted to the model. A language switch keeps them (``relabel`` draws them again)."""
    if not shown.new:
        return {}
    L, H = shown.served.depth, shown.served.heads
    cleared = {name: None for name in ("inside_state", "inside_lens", "inside_patch_lens", "inside_dla",
                                       "inside_sources", "inside_heads", "inside_patch")}
    lines = {name: "" for name in ("inside_line", "inside_lens_line", "inside_lens_note", "inside_sources_note",
                                   "inside_dla_line", "inside_heads_line", "inside_ablation", "inside_patch_line")}
    if not shown.served.architecture.one_sequence:     # the sentence why, before anyone presses the button
        lines["inside_line"] = t("one_sequence.inside", shown.lang)
    return {**cleared, **lines, "inside_layer": gr.Slider(maximum=L - 1, value=L - 1),
            "inside_ablate": gr.Dropdown(choices=_head_choices(L, H), value=[], multiselect=True)}


# ---- the heavy steps: each model pass in the model's turn, the report cached ------------------------------------

def _key(session, target, contrast, texts, use_text) -> tuple:
    """(the analysis key: photo, model, preprocessing; what to look at; contrast) for the session and the Explain
    tab's choices (the same rule as the Trust tab's: a typed CLIP text when ticked, else the class, the top-1 by
    default)."""
    words = typed(texts)
    chosen = Pick(words[0], tuple(words), text=True) if use_text and words else (pick(target) or Pick())
    other = None if use_text else pick(contrast)
    return session.key, chosen, other


def _job(key: tuple, lang: str, **kw) -> InsideJob:
    """An ``InsideJob`` on the key's photo (the crop the analysis saw), for its class and contrast; patching (``other``
    in ``kw``) moves the same class, or the second photo's top-1 when none is picked (as the CLI's --target does)."""
    analysis_key, chosen, other = key
    loaded = state.model_of(analysis_key).loaded                 # turns photos into inputs as the key says
    chosen.require_classes(loaded, lang)
    a = state.analysis(analysis_key, lang)
    try:
        target = chosen.resolve(loaded)
        return InsideJob(loaded.model, loaded.preprocess.to_tensor(a.image), target,
                         None if other is None else other.resolve(loaded), labels=loaded.labels,
                         patch_target=target if "other" in kw else None, **kw)
    except ValueError as err:
        raise gr.Error(t("message.inside_failed", lang, error=err), print_exception=False) from None


def _run(key: tuple, job: Callable[[], InsideJob], progress, lang: str):
    """The report cached under ``key``, or the job's steps, each in the model's turn (another visitor's analysis
    waits for one step at most), with progress, yielding after each; the report is cached and returned."""
    report = state.INSIDE.get(key)
    if report is not None:
        return report
    job = job()
    steps = job.steps()
    for _ in range(job.total):
        with state.MODEL_TURN:
            done, total, _ = next(steps)
        progress(done / total, desc=f"{t('inside.progress', lang)} {done}/{total}")
        yield                                    # between steps: a cancelled job stops here
    report = job.result()                        # every step has run: the report is assembled, nothing runs
    state.INSIDE.put(key, report)
    return report


def _views(model) -> tuple[str, ...]:
    """The views this model has: all but DLA for a readout that is not linear (MAP pooling)."""
    return tuple(v for v in VIEWS if v != "dla" or not why_not_linear(model))


def look_inside(session, target, contrast, texts, use_text, lang, narrow=False, progress=gr.Progress()):
    """The lens, DLA and head importance for the Explain tab's class on the session's photo (cached)."""
    state.refuse_without_one_sequence(session, "one_sequence.inside", lang)
    if state.session_analysis(session, lang) is None:
        return {}
    key = _key(session, target, contrast, texts, use_text)
    model = state.model_of(session.key).loaded.model
    views = _views(model)
    report = yield from _run(("views", *key), lambda: _job(key, lang, views=views), progress, lang)
    L = model.cfg.depth
    shown = Shown(("views", *key), layer=draw.first_layer(report),
                  head=draw.default_head(report) if report.dla is not None else None)
    values = _draw_views(shown, report, session, lang, narrow)
    return {**values, "inside_layer": gr.Slider(maximum=L - 1, value=values["inside_state"].layer)}


def ablate_heads(session, inside_state, inside_ablate, lang, progress=gr.Progress()):
    """The picked heads removed together: the new top-5 beside the old and the target's Δ logit (cached)."""
    state.refuse_without_one_sequence(session, "one_sequence.inside", lang)
    if state.session_analysis(session, lang) is None:
        return {}
    shown = _shown(inside_state, session, lang)
    if not inside_ablate:
        raise gr.Error(t("message.inside_no_heads", lang), print_exception=False)
    model = state.model_of(session.key).loaded.model
    try:
        heads = tuple(sorted(parse_heads(inside_ablate, model.cfg.depth, model.cfg.num_heads)))
    except ValueError as err:
        raise gr.Error(t("message.inside_failed", lang, error=err), print_exception=False) from None
    base = shown.key[1:]
    key = ("ablated", *base, heads)
    report = yield from _run(key, lambda: _job(base, lang, views=(), ablate=list(heads)), progress, lang)
    return {"inside_state": replace(shown, ablated=key), "inside_ablation": draw.ablation_table(report, lang)}


def patch_from(session, inside_state, inside_other, lang, narrow=False, progress=gr.Progress()):
    """A second photo: each head (exactly) and the stream at each (layer, token) (estimated) patched from it, as
    shares of the logit difference (cached)."""
    state.refuse_without_one_sequence(session, "one_sequence.inside", lang)
    if state.session_analysis(session, lang) is None or not inside_other:
        return {}
    shown = _shown(inside_state, session, lang)
    base = shown.key[1:]
    loaded = state.model_of(session.key).loaded
    key = ("patched", *base, str(inside_other))

    def job():
        try:
            other = loaded.preprocess.to_tensor(loaded.preprocess.crop_image(open_image(inside_other)))
        except ValueError as err:          # vit.image_file.ImageFileError: said as it is
            raise gr.Error(str(err), print_exception=False) from None
        return _job(base, lang, views=(), other=other, other_name=Path(inside_other).stem)

    report = yield from _run(key, job, progress, lang)
    return {"inside_state": replace(shown, patched=key), "inside_patch": draw.patch_view(report, lang, bool(narrow)),
            "inside_patch_line": draw.patch_line(report, lang)}


def _shown(inside_state: Shown | None, session, lang: str) -> Shown:
    """What the tab shows, when it is of the session's photo and model; else a gr.Error: look inside first."""
    if inside_state is None or inside_state.key[1] != session.key:
        raise gr.Error(t("message.inside_first", lang), print_exception=False)
    return inside_state


# ---- drawing from the cache: clicks, the layer slider, the language -----------------------------------------------

def _photo(session, lang: str) -> np.ndarray:
    return np.asarray(state.analysis(session.key, lang).image.convert("RGB"))


def _draw_views(shown: Shown, report, session, lang: str, narrow: bool = False) -> dict:
    """Every picture and line of the views' report (for a phone when ``narrow``), and ``shown`` with the pictures'
    cells."""
    narrow = bool(narrow)
    photo = _photo(session, lang)
    lens = draw.lens_view(report, shown.layer, lang, narrow)
    values = {"inside_line": t("inside.line.target", lang, target=draw.target_label(report)),
              "inside_lens": lens.image,
              "inside_patch_lens": draw.patch_lens_view(report, shown.layer, photo, lang, narrow),
              "inside_lens_line": draw.lens_line(report, lang),
              "inside_lens_note": t("note.inside_lens_approximate", lang) if report.lens.approximate else "",
              "inside_sources_note": ""}
    dla = None
    if report.dla is not None:
        drawn = draw.dla_view(report, shown.head, lang, narrow)
        dla = drawn.cells
        values.update(inside_dla=drawn.image,
                      inside_sources=draw.sources_view(report, *shown.head, photo, lang, narrow),
                      inside_dla_line=draw.dla_line(report, lang))
    else:
        values.update(inside_dla=None, inside_sources=None, inside_dla_line=t("inside.line.no_dla", lang))
    heads = draw.heads_view(report, shown.picked, lang, narrow)
    values.update(inside_heads=heads.image, inside_heads_line=draw.heads_line(report, lang))
    values["inside_state"] = replace(shown, lens=lens.cells, dla=dla, heads=heads.cells)
    return values


def _views_report(inside_state: Shown | None, session, lang: str):
    """(what is shown, its cached report), or a gr.Error when there is none (never ran, or dropped from the cache:
    then it must run again)."""
    shown = _shown(inside_state, session, lang)
    report = state.INSIDE.get(shown.key)
    if report is None:
        raise gr.Error(t("message.inside_first", lang), print_exception=False)
    return shown, report


def pick_layer(inside_layer, inside_state, session, lang, narrow=False):
    """The layer slider: that layer shaded in the strip, and its patch lens."""
    if session is None or inside_state is None:
        return {}
    shown, report = _views_report(inside_state, session, lang)
    layer, narrow = int(inside_layer), bool(narrow)
    lens = draw.lens_view(report, layer, lang, narrow)
    return {"inside_state": replace(shown, layer=layer, lens=lens.cells), "inside_lens": lens.image,
            "inside_patch_lens": draw.patch_lens_view(report, layer, _photo(session, lang), lang, narrow)}


def click_lens(evt: gr.SelectData, inside_state, session, lang, narrow=False):
    """A click on the strip: that layer in the slider and its patch lens."""
    shown, report = _views_report(inside_state, session, lang)
    cell = shown.lens.at(*evt.index) if shown.lens is not None else None
    if cell is None:
        return {}
    return {"inside_layer": cell[1], **pick_layer(cell[1], shown, session, lang, narrow)}


def click_dla(evt: gr.SelectData, inside_state, session, lang, narrow=False):
    """A click on the DLA table: the head's source map (an MLP column says why it has none), the head framed."""
    shown, report = _views_report(inside_state, session, lang)
    cell = shown.dla.at(*evt.index) if shown.dla is not None else None
    if cell is None:
        return {}
    layer, column = cell
    if column >= report.dla.heads.shape[1]:
        return {"inside_sources_note": t("note.inside_mlp", lang)}
    shown, narrow = replace(shown, head=(layer, column)), bool(narrow)
    drawn = draw.dla_view(report, shown.head, lang, narrow)
    return {"inside_state": replace(shown, dla=drawn.cells), "inside_dla": drawn.image, "inside_sources_note": "",
            "inside_sources": draw.sources_view(report, layer, column, _photo(session, lang), lang, narrow)}


def click_heads(evt: gr.SelectData, inside_state, inside_ablate, session, lang, narrow=False):
    """A click on the head-importance table: that head added to the heads to remove (or taken out again)."""
    shown, report = _views_report(inside_state, session, lang)
    cell = shown.heads.at(*evt.index) if shown.heads is not None else None
    if cell is None:
        return {}
    name = f"{cell[0]}.{cell[1]}"
    picked = [h for h in (inside_ablate or []) if h != name]
    if len(picked) == len(inside_ablate or []):
        picked.append(name)
    return {"inside_ablate": picked, **mark_heads(picked, shown, session, lang, narrow)}


def mark_heads(inside_ablate, inside_state, session, lang, narrow=False):
    """The heads picked for removal framed in the head-importance table."""
    if session is None or inside_state is None:
        return {}
    shown, report = _views_report(inside_state, session, lang)
    L, H = report.heads.delta_linear.shape
    try:
        picked = tuple(parse_heads(inside_ablate, L, H)) if inside_ablate else ()
    except ValueError as err:
        raise gr.Error(t("message.inside_failed", lang, error=err), print_exception=False) from None
    drawn = draw.heads_view(report, picked, lang, bool(narrow))
    return {"inside_state": replace(shown, picked=picked, heads=drawn.cells), "inside_heads": drawn.image}


def relabel(language_switch, inside_state, session, narrow=False):
    """The language switch: what is shown drawn again in the new language, from the cache (nothing if it is gone)."""
    lang = language(language_switch)
    if session is None or inside_state is None or inside_state.key[1] != session.key:
        return {}
    report = state.INSIDE.get(inside_state.key)
    if report is None:
        return {}
    values = _draw_views(inside_state, report, session, lang, narrow)
    if (ablated := inside_state.ablated and state.INSIDE.get(inside_state.ablated)) is not None:
        values["inside_ablation"] = draw.ablation_table(ablated, lang)
    if (patched := inside_state.patched and state.INSIDE.get(inside_state.patched)) is not None:
        values.update(inside_patch=draw.patch_view(patched, lang, bool(narrow)),
                      inside_patch_line=draw.patch_line(patched, lang))
    return values


def wire(page) -> None:
    page["inside_button"].click(**page.wire(look_inside, OUTPUTS, heavy_group="inside"))
    page["inside_ablate_button"].click(**page.wire(ablate_heads, ["inside_state", "inside_ablation"],
                                                   heavy_group="inside"))
    page["inside_other"].upload(**page.wire(patch_from, ["inside_state", "inside_patch", "inside_patch_line"],
                                            heavy_group="inside"))
    page["inside_layer"].release(**page.wire(pick_layer, ["inside_state", "inside_lens", "inside_patch_lens"]),
                                 **page.render)
    page["inside_lens"].select(**page.wire(click_lens, ["inside_state", "inside_layer", "inside_lens",
                                                        "inside_patch_lens"]), **page.render)
    page["inside_dla"].select(**page.wire(click_dla, ["inside_state", "inside_dla", "inside_sources",
                                                      "inside_sources_note"]), **page.render)
    page["inside_heads"].select(**page.wire(click_heads, ["inside_state", "inside_ablate", "inside_heads"]),
                                **page.render)
    page["inside_ablate"].input(**page.wire(mark_heads, ["inside_state", "inside_heads"]), **page.render)
    page["language_switch"].input(**page.wire(relabel, [*DRAWN, "inside_state", "inside_ablation", "inside_patch",
                                                        "inside_patch_line"]), **page.render)
