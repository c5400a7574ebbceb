"""Everything the page shows for an analysis, and the handlers that show it: a new photo (or the Analyze button),
another model, another preprocessing (how the photo becomes the model's input), another language, and a display
or map control that changed.

A new analysis draws every tab's pictures at once (``viz.explorer.pictures``: half of them on a helper thread),
then each tab of ``vit_explorer.tabs.TABS`` takes what it shows (its ``show``). A control change redraws only the
maps whose tab ``uses`` that control with the current values: a rollout control the rollout (and the patch
query when it is rolled out), the layer the attention, the framed grid and the patch query, the opacity every
map, nothing else.

Page handlers return {output name: value}; ``vit_explorer.events.Page.wire`` turns that into the event's outputs
(gr.skip() for the others) and a gr.Error into one warning that changes nothing.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gradio as gr
import torch

from vit.image_file import ImageFileError
from viz import explorer
from viz.analysis import cost
from viz.analysis.serve import ServedModel
from viz.i18n import language, language_from_header, t
from viz.records import Analysis

from . import state
from .controls import ControlValues
from .tabs import SECTIONS, TABS, learn
from .texts import font_note
from viz.controls import AnalysisKey, Controls, Session

PAGE_OUTPUTS = ("session", "top5", "summary", "crop", "crop_note")   # above and below the tabs
ANALYSIS_OUTPUTS = (*PAGE_OUTPUTS, *(name for tab in TABS for name in tab.shows))
TAB_LABELS = (*(f"section_{section}" for section in SECTIONS),       # the gr.Tab components: "section_<id>",
              *(f"tab_{tab.id}" for tab in TABS))                      # "tab_<id>"


@dataclass(frozen=True)
class Shown:
    """What a tab's ``show`` draws from: the analysis with its model, the controls and language, and the pictures
    ``viz.explorer.pictures`` drew for it. ``new``: a new photo or model (False: the same one in a new language)."""
    session: Session
    served: ServedModel
    analysis: Analysis
    controls: Controls
    lang: str
    pictures: dict
    new: bool = True


def views(session: Session, served: ServedModel, a: Analysis, c: Controls, lang: str, new: bool = True) -> dict:
    """Every picture and text of the analysis, by output name: the top-5 and the summary, and what each tab shows."""
    lang = language(lang)
    pictures = explorer.pictures(session, a, c, lang)
    shown = Shown(pictures["session"], served, a, c, lang, pictures, new)
    values = dict(session=shown.session, top5=explorer.top_classes(a),
                  summary=explorer.summary(a, lang, served.loaded.preprocess, served.loaded.assumptions,
                                           served.loaded.verified))
    for tab in TABS:
        if tab.show is not None:
            values.update(tab.show(shown))
    return values


def page_views(session: Session, served: ServedModel, a: Analysis, c: Controls, lang: str, photo: str,
               new: bool = True) -> dict:
    """Everything the page shows for an analysis: ``views`` and what the model saw outlined on the upload (the
    crop, or the whole photo when it is squashed, with a note that says which)."""
    values = views(session, served, a, c, lang, new)
    values["crop"], values["crop_note"] = explorer.crop_view(photo, served, lang)
    return values


def _same_file(a: str, b: str) -> bool:
    """Whether two uploaded files hold the same bytes (Gradio may store one photo under two paths)."""
    if a == b:
        return True
    try:
        pa, pb = Path(a), Path(b)
        return pa.stat().st_size == pb.stat().st_size and pa.read_bytes() == pb.read_bytes()
    except OSError:
        return False


@torch.inference_mode()
def page_analyze(request: gr.Request, photo, model, controls: ControlValues, session, lang, preprocess="own",
                 input_size=0):
    """A new photo (or the Analyze button): every result, or — for a file that is no photo — one warning and the
    previous photo put back, everything else untouched."""
    if not photo:
        return {}
    served = state.served(model, lang, preprocess, input_size)
    key = AnalysisKey(str(photo), state.model_source(model, lang), preprocess, size_key(served, input_size))
    if session is not None and session.key[1:] == key[1:] and _same_file(session.key.photo, key.photo):
        return {}
    try:
        a = state.ANALYSES.get(key)
    except ImageFileError as err:
        who = getattr(request, "session_hash", None) or ""
        if state.REFUSED.get(who) != str(photo):                  # Gradio may report one upload twice: say it once
            if len(state.REFUSED) > state.REFUSED_KEPT:
                state.REFUSED.clear()
            state.REFUSED[who] = str(photo)
            gr.Warning(str(err))
        return {"photo": session.key.photo if session is not None else None}
    except (ValueError, OSError) as err:
        raise gr.Error(t("message.analyse_again", lang, error=err), print_exception=False) from None
    return page_views(Session(key), served, a, controls.for_analysis(a), lang, photo)


@torch.inference_mode()
def switch_model(model, current_model, photo, session, controls: ControlValues, lang, preprocess="own"):
    """The model picker: load the model, fit the sliders, analyse the photo with it; a refused path is one
    warning, the picker goes back to the current model and nothing else changes."""
    try:
        served = state.served(model, lang, preprocess)
    except gr.Error as err:
        gr.Warning(str(err.message))
        return {"model": gr.Dropdown(choices=state.model_choices(current_model), value=current_model)}
    if served.architecture.video:                 # it reads clips: the Video tab is where it runs
        gr.Warning(t("video.in_video_tab", lang, name=str(model).strip()))
        return {"model": gr.Dropdown(choices=state.model_choices(current_model), value=current_model)}
    L, H = served.depth, served.heads
    head = min(int(controls.head), H - 1)
    values = {"current_model": model, "model": gr.Dropdown(choices=state.model_choices(model), value=model),
              "layer": gr.Slider(maximum=L - 1, value=L - 1), "head": gr.Slider(maximum=H - 1, value=head),
              "start_layer": gr.Slider(maximum=L - 1, value=0), **learn.fit(served), **size_control(served, lang)}
    if not photo:
        return values
    key = AnalysisKey(str(photo), state.model_source(model, lang), preprocess)
    try:
        a = state.ANALYSES.get(key)
    except (ValueError, OSError) as err:
        gr.Warning(str(err))
        return values
    c = controls.but(layer=L - 1, head=head, start_layer=0).for_analysis(a)
    return {**values, **page_views(Session(key), served, a, c, lang, photo)}


SWITCHED_MODEL = ("current_model", "model", "layer", "head", "start_layer", *learn.FITTED, "input_size",
                  "input_cost")   # switch_model's own


@torch.inference_mode()
def switch_preprocess(preprocess, session, controls: ControlValues, lang):
    """The preprocessing control (own, crop, squash): the photo the page shows, through the same model, with its
    input made the chosen way; every tab, the summary and the outline of what the model saw follow."""
    if session is None:
        return {}
    key = session.key._replace(preprocess=preprocess)
    served = state.served_source(key.model, lang, preprocess, key.size)
    a = state.analysis(key, lang)
    return page_views(Session(key), served, a, controls.for_analysis(a), lang, key.photo)


def size_key(served: ServedModel, input_size) -> int:
    """The key's size for the control's value: 0 for the model's own input (one cache entry whether the size was
    chosen or not)."""
    side = int(input_size or 0)
    return 0 if side in (0, served.native_side) else side


def size_range(served: ServedModel) -> dict:
    """The input size control's range for a model: from its own side up to the server's token budget in steps of a
    patch; fixed at its own side when its position information cannot follow the size."""
    cfg = served.loaded.config
    native = served.native_side
    follows = cost.follows_size(cfg)
    largest = max(native, cost.largest_side(cfg, state.token_budget(cfg))) if follows else native
    lowest = native if largest > native else native - cfg.patch_size     # a slider needs a range, even a fixed one
    return dict(minimum=lowest, maximum=largest, value=native, step=cfg.patch_size, interactive=follows)


def size_control(served: ServedModel, lang: str) -> dict:
    """The input size control fitted to a model, and its line: the cost at its own size, or why it is fixed."""
    fixed = not cost.follows_size(served.loaded.config)
    return {"input_size": gr.Slider(**size_range(served)),
            "input_cost": t(fixed_note(served), lang, side=served.native_side) if fixed else
            cost_line(served, served.native_side, None, lang)}


def fixed_note(served: ServedModel) -> str:
    """The catalogue key saying why a model's input size is fixed (its config's ``fixed_size``: windows, or a relative
    position bias learnt for its own grid)."""
    return state.FIXED_SIZE[served.loaded.config.fixed_size][0]


def cost_line(served: ServedModel, side: int, a: Analysis | None, lang: str) -> str:
    """What an analysis at side×side costs, said before it runs: tokens, about how long (scaled from the shown
    analysis' forward pass, when there is one) and what the server keeps."""
    cfg = served.loaded.config
    side = int(side)
    if a is None or "forward" not in a.timings:
        c = cost.analysis_cost(cfg, side, side, 0.0)
        return t("note.input_cost", lang, side=side, tokens=c.tokens, budget=state.token_budget(cfg),
                 mb=c.bytes / 2**20)
    c = cost.analysis_cost(cfg, side, max(a.input_size), a.timings["forward"])
    return t("note.input_cost_timed", lang, side=side, tokens=c.tokens, budget=state.token_budget(cfg),
             mb=c.bytes / 2**20, seconds=c.seconds)


def size_cost(input_size, session, current_model, lang):
    """The input size slider moving: the cost of that size, before anything runs (the model the page shows, through
    the models' guard, before any photo)."""
    if session is None:
        served = state.served(current_model, language(lang))
        state.sized(served, input_size, language(lang))       # a size the model cannot take is said, not costed
        return {"input_cost": cost_line(served, input_size, None, language(lang))}
    served = state.model_of(session.key._replace(size=0))
    state.sized(served, input_size, language(lang))
    a = state.ANALYSES.get(session.key) if session.key in state.ANALYSES else None    # never a model run here
    return {"input_cost": cost_line(served, input_size, a, language(lang))}


@torch.inference_mode()
def switch_size(input_size, session, controls: ControlValues, lang):
    """The input size control released: the photo analysed at that size (its cost was said while moving); every
    tab, the summary and the outline follow."""
    if session is None:
        return {}
    served = state.served_source(session.key.model, lang, session.key.preprocess, input_size)
    key = session.key._replace(size=size_key(served, input_size))
    a = state.analysis(key, lang)
    return {**page_views(Session(key), served, a, controls.for_analysis(a), lang, key.photo),
            "input_cost": cost_line(served, input_size, a, lang)}


def initial_language(request: gr.Request):
    """The visitor's language from the browser's Accept-Language header (the page's texts follow the browser),
    and the line that tells a Chinese visitor when pictures come with English labels."""
    lang = language_from_header(request.headers.get("accept-language") if request is not None else None)
    return lang, lang, font_note(lang)


def switch_language(language_switch, session, photo, controls: ControlValues):
    """The language switch: every picture drawn again in the new language, from the same analysis."""
    lang = language(language_switch)
    # Gradio's frontend re-translates most labels when its locale changes, but not the tab names: set them here
    values = {"lang": lang, "font_note": font_note(lang),
              **{f"section_{section}": gr.Tab(label=t(f"section.{section}", lang)) for section in SECTIONS},
              **{f"tab_{tab.id}": gr.Tab(label=t(f"tab.{tab.id}", lang)) for tab in TABS}}
    if session is None:
        return values
    try:
        a = state.ANALYSES.get(session.key)
        served = state.model_of(session.key)
    except (ValueError, OSError):
        return values
    return {**values, **page_views(session, served, a, controls.for_analysis(a), lang, session.key.photo, new=False)}


def redraw(session, controls: ControlValues, lang, changed: str) -> dict:
    """A display or map control changed: the maps whose tab uses it are drawn again (same analysis, no model)."""
    if (a := state.session_analysis(session, lang)) is None:
        return {}
    c = controls.for_analysis(a)
    values = {}
    for tab in TABS:
        if tab.draw is not None and changed in tab.uses(controls):
            values.update(tab.draw(values.get("session", session), a, c, lang))
    return values


def redrawn_by(changed: str) -> list[str]:
    """Every output a change of the control ``changed`` may redraw, whatever the other controls' values."""
    names = ["session"]
    for tab in TABS:
        if tab.draw is not None and any(changed in tab.uses(ControlValues(rolled=rolled, mean_heads=mean))
                                        for rolled in (False, True) for mean in (False, True)):
            names += tab.outputs
    return names


def on_control(changed: str):
    """The handler of one control's change (``redraw`` for that control)."""
    def control_changed(session, controls: ControlValues, lang):
        return redraw(session, controls, lang, changed)
    control_changed.__name__ = f"{changed}_changed"
    return control_changed
