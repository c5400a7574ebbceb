"""The Features tab: what the model has made of each patch (``viz.features``): one layer's patch features as the
colours of their first three principal components (DINOv2's foreground option), a clicked patch's cosine similarity
to every patch, and its matches on a second photo.

Drawn only while it is open (a lazy tab: opening it, a new photo, model or language), from the cached analyses: the
second photo is analysed like the first (``state.analysis``, in the model's turn) and cached the same way. What is
shown is remembered in ``features_state`` (``Shown``): the analysis, the clicked patch and the second photo.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import gradio as gr

from viz import panels
from viz.features import view
from viz.i18n import language, t

from .. import state
from ..components import PhotoInput, note, picture
from viz.controls import AnalysisKey

ID = "features"
DRAWN = ("features_pca", "features_pca_note", "features_photo", "features_similarity", "features_match",
         "features_match_note")
OUTPUTS = ("features_state", "features_layer", *DRAWN)


@dataclass(frozen=True)
class Shown:
    """What the tab shows for one browser tab: of which analysis, the clicked patch and the second photo's file."""
    key: AnalysisKey
    query: tuple[int, int]
    other: str | None = None


def build(page) -> None:
    i18n = page.i18n
    L = page.depth
    page.add("features_state", gr.State(None))
    gr.Markdown(i18n("about.features"))
    with gr.Row():   # one column each, so that on a phone they stack instead of squeezing
        with gr.Column(scale=3, min_width=260):
            page.add("features_layer", gr.Slider(0, L - 1, value=L - 1, step=1, label=i18n("control.features_layer"),
                                                 info=i18n("help.features_layer"), elem_id="features-layer"))
        with gr.Column(scale=2, min_width=260):
            page.add("features_foreground", gr.Checkbox(False, label=i18n("control.features_foreground"),
                                                        info=i18n("help.features_foreground"),
                                                        elem_id="features-foreground"))
    with gr.Row():
        with gr.Column(min_width=300):
            page.add("features_pca", picture(i18n, "picture.features_pca", elem_id="features-pca"))
            page.add("features_pca_note", note("features-pca-note"))
        with gr.Column(min_width=300):
            page.add("features_photo", picture(i18n, "picture.features_photo", enlarge=False,
                                               elem_id="features-photo"))
        with gr.Column(min_width=300):
            page.add("features_similarity", picture(i18n, "picture.features_similarity",
                                                    elem_id="features-similarity"))
    with gr.Row():
        with gr.Column(scale=1, min_width=260):
            page.add("features_other", PhotoInput(label=i18n("label.features_other"), type="filepath", image_mode=None,
                                                  sources=["upload", "clipboard"], height=220,
                                                  elem_id="features-other"))
        with gr.Column(scale=2, min_width=300):
            page.add("features_match", picture(i18n, "picture.features_match", elem_id="features-match"))
            page.add("features_match_note", note("features-match-note"))


def _draw(shown: Shown, layer, foreground, opacity, patch_true, lang: str) -> dict:
    """Every picture and line of the tab for what is shown (the analyses from the cache)."""
    a = state.analysis(shown.key, lang)
    layer = min(max(int(layer), 0), a.depth - 1)
    try:
        pca, pca_note = view.pca_view(a, layer, bool(foreground), smooth=not patch_true, lang=lang)
    except ValueError as err:                      # too few patches for three components
        raise gr.Error(str(err), print_exception=False) from None
    smooth, alpha = not patch_true, float(opacity)
    values = {"features_state": shown, "features_pca": pca, "features_pca_note": pca_note,
              "features_photo": view.photo_view(a, shown.query),
              "features_similarity": view.similarity_view(a, layer, shown.query, alpha, smooth, lang),
              "features_match": None, "features_match_note": t("note.features_other_first", lang)}
    if shown.other is not None:
        other = state.analysis(shown.key._replace(photo=shown.other), lang)
        values["features_match"], values["features_match_note"] = view.match_view(a, other, layer, shown.query, alpha,
                                                                                  smooth, lang)
    return values


def show(session, features_state, features_layer, features_foreground, opacity, patch_true, lang):
    """Opening the tab, or a new photo, model or language while it is open: everything drawn; a new analysis starts
    at its centre patch and the last layer (the slider fitted to the model), keeping the second photo; a model whose
    tokens change grid: the sentence why it has no dense features of one grid, in place of them."""
    if session is not None and not state.model_of(session.key).architecture.one_sequence:
        return {name: None for name in DRAWN} | {"features_pca_note": t("one_sequence.features", lang)}
    if (a := state.session_analysis(session, lang)) is None:
        return {}
    new = features_state is None or features_state.key != session.key
    layer = a.depth - 1 if new else min(int(features_layer), a.depth - 1)
    other = None if features_state is None else features_state.other
    shown = Shown(session.key, panels.default_query(a), other) if new else features_state
    return {"features_layer": gr.Slider(maximum=a.depth - 1, value=layer),
            **_draw(shown, layer, features_foreground, opacity, patch_true, language(lang))}


def _current(features_state, session) -> Shown | None:
    """What is shown, when it is of the session's analysis (else the tab is drawn afresh when opened)."""
    if session is None or features_state is None or features_state.key != session.key:
        return None
    return features_state


def redraw(features_state, session, features_layer, features_foreground, opacity, patch_true, lang):
    """The layer, the foreground option, the opacity or patch-true drawing: the tab drawn again (when it shows this
    analysis)."""
    state.refuse_without_one_sequence(session, "one_sequence.features", lang)
    if (shown := _current(features_state, session)) is None:
        return {}
    return _draw(shown, features_layer, features_foreground, opacity, patch_true, language(lang))


def pick_patch(evt: gr.SelectData, features_state, session, features_layer, features_foreground, opacity,
               patch_true, lang):
    """A click on the photo: that patch's similarity maps."""
    state.refuse_without_one_sequence(session, "one_sequence.features", lang)
    if (shown := _current(features_state, session)) is None:
        return {}
    a = state.analysis(shown.key, lang)
    shown = replace(shown, query=view.patch_at(a, *evt.index))
    return _draw(shown, features_layer, features_foreground, opacity, patch_true, language(lang))


def add_other(features_other, features_state, session, features_layer, features_foreground, opacity, patch_true,
              lang):
    """A second photo: analysed by the same model and preprocessing (cached like the first), the clicked patch
    matched on it."""
    state.refuse_without_one_sequence(session, "one_sequence.features", lang)
    if not features_other or (shown := _current(features_state, session)) is None:
        return {}
    return _draw(replace(shown, other=str(features_other)), features_layer, features_foreground, opacity, patch_true,
                 language(lang))


def wire(page) -> None:
    controls = [*DRAWN, "features_state"]
    page["features_layer"].release(**page.wire(redraw, controls), **page.render)
    for name in ("features_foreground", "opacity", "patch_true"):
        page[name].input(**page.wire(redraw, controls), **page.render)
    page["features_photo"].select(**page.wire(pick_patch, controls), **page.render)
    page["features_other"].upload(**page.wire(add_other, controls), **page.model_work)
