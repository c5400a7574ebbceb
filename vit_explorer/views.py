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
from viz.analysis.serve import ServedModel
from viz.explorer import AnalysisKey, Controls, Session
from viz.i18n import language, language_from_header, t
from viz.records import Analysis

from . import state
from .controls import ControlValues
from .tabs import TABS
from .texts import font_note

PAGE_OUTPUTS = ("session", "top5", "summary", "crop", "crop_note")   # above and below the tabs
ANALYSIS_OUTPUTS = (*PAGE_OUTPUTS, *(name for tab in TABS for name in tab.shows))
TAB_LABELS = tuple(f"tab_{tab.id}" for tab in TABS)                  # the gr.Tab components, by "tab_<id>"


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
                  summary=explorer.summary(a, lang, served.loaded.preprocess, served.loaded.assumptions))
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
def page_analyze(request: gr.Request, photo, model, controls: ControlValues, session, lang, preprocess="own"):
    """A new photo (or the Analyze button): every result, or — for a file that is no photo — one warning and the
    previous photo put back, everything else untouched."""
    if not photo:
        return {}
    key = AnalysisKey(str(photo), str(model).strip(), preprocess)
    if session is not None and session.key[1:] == key[1:] and _same_file(session.key.photo, key.photo):
        return {}
    served = state.served(model, lang, preprocess)
    try:
        a = state.ANALYSES.get(key)
    except ImageFileError as err:
        who = getattr(request, "session_hash", None) or ""
        if state.REFUSED.get(who) != str(photo):                  # Gradio may report one upload twice: say it once
            if len(state.REFUSED) > state.MAX_SESSIONS:
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
    L, H = served.depth, served.heads
    head = min(int(controls.head), H - 1)
    values = {"current_model": model, "model": gr.Dropdown(choices=state.model_choices(model), value=model),
              "layer": gr.Slider(maximum=L - 1, value=L - 1), "head": gr.Slider(maximum=H - 1, value=head),
              "start_layer": gr.Slider(maximum=L - 1, value=0), "learn_layer": gr.Slider(maximum=L - 1, value=L - 1)}
    if not photo:
        return values
    key = AnalysisKey(str(photo), str(model).strip(), preprocess)
    try:
        a = state.ANALYSES.get(key)
    except (ValueError, OSError) as err:
        gr.Warning(str(err))
        return values
    c = controls.but(layer=L - 1, head=head, start_layer=0).for_analysis(a)
    return {**values, **page_views(Session(key), served, a, c, lang, photo)}


SWITCHED_MODEL = ("current_model", "model", "layer", "head", "start_layer", "learn_layer")   # switch_model's own


@torch.inference_mode()
def switch_preprocess(preprocess, session, controls: ControlValues, lang):
    """The preprocessing control (own, crop, squash): the photo the page shows, through the same model, with its
    input made the chosen way; every tab, the summary and the outline of what the model saw follow."""
    if session is None:
        return {}
    key = session.key._replace(preprocess=preprocess)
    served = state.served(key.model, lang, preprocess)
    a = state.analysis(key, lang)
    return page_views(Session(key), served, a, controls.for_analysis(a), lang, key.photo)


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
