"""The API's handlers, ``/analyze`` and ``/explain``: what API clients (gradio_client) call. Unlike the page's
handlers they raise ``gr.Error`` with a plain message, as API clients expect: the same sentence the page says for the
same mistake (every message is a catalogue text, ``viz.i18n``; the API speaks English). Their inputs and outputs
are a contract: keep their order, add at the end.
"""
from __future__ import annotations

import gradio as gr
import torch

from viz.explain import METHODS
from viz.explain.methods import DEFAULT_METHOD
from viz.i18n import t
from viz.maps.rollout import FUSIONS

from . import state
from .controls import ControlValues
from .state import Pick
from .tabs.explain import pick
from .views import views
from viz.controls import AnalysisKey, Session
from viz.explain.view import explain_view

# /analyze's inputs, by component name (the API's own parameter names are those of ``analyze``)
ANALYZE_INPUTS = ("photo", "model", "fusion", "discard_ratio", "start_layer", "opacity", "mask_artifacts", "layer",
                  "head", "mean_heads", "dino_mask", "rolled", "session", "shared_scale", "patch_true", "lang",
                  "preprocess")
# /analyze's outputs, in order (API clients index them: keep the order, add at the end)
API_OUTPUTS = ("session", "top5", "summary", "rollout", "attention", "heads", "query_photo", "query_out", "query_in",
               "position", "distance", "norms", "norm_curves", "architecture", "filters")
EXPLAIN_INPUTS = ("photo", "api_method", "api_target", "api_contrast", "api_model", "preprocess")
EXPLAIN_OUTPUTS = ("api_picture", "api_numbers")


@torch.inference_mode()
def analyze(photo, model, fusion=FUSIONS[0], discard_ratio=0.9, start_layer=0, opacity=0.6, mask_artifacts=True,
            layer=-1, head=0, mean_of_heads=True, dino_mask=False, through_all_layers=False,
            session: Session | None = None, shared_scale=False, patch_true=False, lang="en", preprocess="own"):
    """Classify the photo and render every panel. The only required input is the photo file.

    Returns the top-5 classes, a summary, and the rollout, attention, all-heads, patch-query, position
    embedding, attention distance, token norm, architecture and filter panels. The defaults are the page's (the
    high-norm artifact tokens masked, each layer of the heads grid on its own scale). Layers and heads are 0-based;
    out-of-range values are clamped to the model. The maps are drawn at display size (640 pixels), the
    clickable photo at twice the model's input. ``preprocess``: how the photo becomes the model's input, "own"
    (the checkpoint's own pipeline), "crop" or "squash".
    """
    if not photo:  # the photo was cleared: so are the session and the 14 outputs
        return (None,) * len(API_OUTPUTS)
    served = state.served(model, lang, preprocess)
    key = AnalysisKey(str(photo), state.model_source(model, lang), preprocess)
    session = Session(key) if session is None or session.key != key else session
    a = state.analysis(key, lang)
    controls = ControlValues(fusion=fusion, discard_ratio=discard_ratio, start_layer=start_layer, opacity=opacity,
                             mask_artifacts=mask_artifacts, layer=layer, head=head, mean_heads=mean_of_heads,
                             dino_mask=dino_mask, rolled=through_all_layers, shared_scale=shared_scale,
                             patch_true=patch_true)
    v = views(session, served, a, controls.for_analysis(a), lang, new=False)
    return tuple(v[name] for name in API_OUTPUTS)


def explain(photo, method=DEFAULT_METHOD, target="", contrast="", model=None, preprocess="own"):
    """Explain the photo for a class: the map of ``method`` (one of viz.explain.METHODS) for ``target`` (a class
    name or index; empty: the top-1 class), optionally minus ``contrast``'s map. ``model``: default the server's;
    ``preprocess``: how the photo becomes its input, "own", "crop" or "squash".

    Returns the picture of the map on the photo, and the numbers: {"method", "target": {"index", "name"},
    "contrast", "probability", "score", "readout", "grid": [gh, gw], "map": gh lists of gw values}."""
    if not photo:
        raise gr.Error(t("message.no_analysis", "en"), print_exception=False)
    name = model or state.model_choices()[0]          # default: the server's own model
    state.served(name, preprocess=preprocess)
    source = state.model_source(name)
    if method not in METHODS:
        raise gr.Error(t("message.unknown_method", "en", method=method, methods=", ".join(METHODS)),
                       print_exception=False)
    key = AnalysisKey(str(photo), source, preprocess)
    a = state.analysis(key)
    picks = [p for p in (pick(target) or Pick(), pick(contrast)) if p is not None]
    e, *others = [state.explained(key, p) for p in picks]
    other = others[0] if others else None
    picture, _ = explain_view(a, e, method, other)
    if picture is None:
        raise gr.Error(t("message.explain_failed", "en", error=e.failed.get(method, method)), print_exception=False)
    values = e.maps[method] - (other.maps[method] if other is not None and method in other.maps else 0)
    return picture, {"method": method, "target": {"index": e.target["index"], "name": e.target["name"]},
                     "contrast": None if other is None else {"index": other.target["index"],
                                                             "name": other.target["name"]},
                     "probability": e.probability, "score": e.score, "readout": e.readout, "grid": list(e.grid),
                     "map": values.round(6).tolist()}
