"""ViT Attention Explorer: drop a photo, see the top-5 classes and what the Vision Transformer looked at.

    python app.py [--weights PATH | --model NAME] [--host 127.0.0.1] [--port 7860] [--share] [--device auto]

This file only wires Gradio components to functions: the model, checkpoints and upload decoding live in
vit/, the analysis, maps and rendering in viz/ (``viz.explorer`` and ``viz.tabs`` are what each tab shows).
Handlers first, then the layout, then the events. The model runs once per (photo, model), one run at a time
(event group "model"), and the analysis goes into a cache shared by every session and bounded in bytes; every
slider move or click re-renders from it (group "render", several at once), so the page stays responsive while
someone else's photo is analysed.

Two kinds of handlers. The API's (``analyze``, ``explain_api``, ``change_model``) raise ``gr.Error`` with a
plain message, as API clients expect. The page's (``page_*``) return a dict {output name: value} and are
wrapped by ``on_page``: a refused photo or model becomes one ``gr.Warning`` and an empty update, so every
result, slider and the model picker keep their last valid values. Every page text is in English and
Simplified Chinese (``gr.I18n`` for static texts, ``viz.i18n.t`` for texts made on the server, pictures
drawn in the visitor's language, held in the ``lang`` state).
"""
from __future__ import annotations

import argparse
import ctypes
import functools
import hashlib
import os
import sys
import tempfile
import threading
from dataclasses import replace
from pathlib import Path

import gradio as gr
import torch
from gradio import processing_utils
from PIL import Image

import vit
from vit.cache import LRUCache
from vit.clip import text_target
from vit.device import pick_device
from vit.explain import class_target
from vit.image_file import MAX_BYTES, ImageFileError, open_image
from viz import explorer, tabs
from viz.analysis import compare_side, explain_tensor, walk
from viz.analysis.trust import TrustCache, TrustJob
from viz.animate import depth_frames, save_gif
from viz.compare import compare, comparison_image
from viz.dynamics import DynamicsView
from viz.explain import METHODS
from viz.explorer import Controls, Session
from viz.i18n import LANGUAGES, language, language_from_header, t, translations
from viz.result import Analysis

EXAMPLES_DIR = Path(__file__).resolve().parent / "examples"
MAX_SESSIONS = 100           # browser sessions remembered (~100 KB each: Gradio copies the page config per session)
ANALYSES_MEMORY = 200 * 2**20  # bytes of analyses kept for re-rendering, shared by all sessions (ViT-B/16: 14 MB each)
MODELS_IN_MEMORY = 2         # checkpoints kept loaded at once
RENDER_CONCURRENCY = 4       # re-renders running at once (milliseconds of numpy each)
DEVICE = torch.device("cpu")  # where the models run (--device, set before the first model loads)


def _load_model(source: str) -> explorer.ServedModel:
    """Load and serve a checkpoint. Outside inference mode even when a page handler (which runs in it) asks:
    parameters made in inference mode could never take part in a backward pass, and the Explain tab needs one."""
    with torch.inference_mode(False):
        return explorer.serve(vit.load(source), DEVICE)


MODELS = LRUCache(_load_model, MODELS_IN_MEMORY)
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
# Whether the Model box (and /analyze's ``model``) may name any path or known model, or only those listed. A
# server reachable by others must not let them read files by path or download any model: launch() decides.
ANY_MODEL = True
I18N = gr.I18n(**translations())
TAB_IDS = ("rollout", "attention", "heads", "query", "learn", "explain", "compare", "position", "distance", "norms",
           "model", "trust")
TOP1 = "__top1__"             # the Explain tab's target "the top-1 class"
NO_CONTRAST = "__none__"
ANIMATIONS_DIR = Path(tempfile.gettempdir()) / "vit-explorer-animations"

from gradio.events import Dependency

class PhotoInput(gr.Image):
    """gr.Image that hands the handler the uploaded file unopened.

    gr.Image opens every upload with Pillow and may convert and re-save it before the handler runs, so a
    broken file or a decompression bomb would fail (or be decoded) there, without a message of ours.
    Decoding is ``vit.image_file.open_image``'s job; this only passes the file's path on.
    """
    is_template = True  # shown by the browser's ordinary Image component

    def preprocess(self, payload):
        if payload is None:
            return None
        if payload.url and payload.url.startswith("data:"):  # pasted images may arrive inline
            return processing_utils.save_base64_to_cache(payload.url, self.GRADIO_CACHE)  # bytes saved, not decoded
        return payload.path
    from typing import Callable, Literal, Sequence, Any, TYPE_CHECKING
    from gradio.blocks import Block
    if TYPE_CHECKING:
        from gradio.components import Timer
        from gradio.components.base import Component


# ---- the caches: one model run per (photo, model), one walk per (photo, model), one explanation per target -----

# The model's turn: a whole analysis or explanation, or one step of a trust check (see page_trust), holds it.
MODEL_TURN = threading.RLock()


def analyze_key(key: tuple[str, str]) -> Analysis:
    """(photo file, model source) -> its analysis: the one model call of a photo."""
    photo, source = key
    served = MODELS.get(source)
    with MODEL_TURN:
        return explorer.analyze_photo(photo, served)


# (photo file, model source) -> Analysis, shared by every session. An analysis dropped to make room is computed
# again when its session re-renders (one forward pass), so memory stays bounded however many people are on the page.
ANALYSES = LRUCache(analyze_key, ANALYSES_MEMORY, weigh=explorer.cached_bytes)


def _walk_key(key: tuple[str, str]):
    """(photo file, model source) -> the guided walk: the model's modules run one by one on the photo."""
    loaded = MODELS.get(key[1]).loaded
    with torch.inference_mode():
        return walk(loaded.model, loaded.preprocess, open_image(key[0]), loaded.labels)


WALKS = LRUCache(_walk_key, 4)   # a ViT-B walk holds ~2 MB of arrays


def _explain_key(key: tuple) -> tabs.Explained:
    """(photo, model source, target) -> every method's map for that target (each model pass once).

    target: ("top1",), ("class", name or index) or ("text", (texts...), chosen text)."""
    photo, source, target = key
    served = MODELS.get(source)
    loaded = served.loaded
    a = ANALYSES.get((photo, source))
    x = loaded.preprocess.to_tensor(a.image)
    if target[0] == "text":
        goal = text_target(loaded, target[2], list(target[1]))
    elif target[0] == "class":
        goal = class_target(loaded.labels, target[1])
    else:
        goal = None
    with MODEL_TURN:
        return tabs.explanations(explain_tensor, loaded.model, x, goal, loaded.labels)


EXPLANATIONS = LRUCache(_explain_key, 32 * 2**20, weigh=lambda e: e.nbytes)


# ---- handlers for API clients: plain gr.Error messages ------------------------------------------------------------

def _served(source: str, lang: str = "en") -> explorer.ServedModel:
    source = str(source).strip()
    if not ANY_MODEL and source not in model_choices():
        raise gr.Error(t("message.models_listed_only", lang), print_exception=False)
    try:
        return MODELS.get(source)
    except (ValueError, OSError) as err:  # vit.load: bad checkpoint (ValueError), nothing found (FileNotFoundError)
        raise gr.Error(t("message.model_failed", lang, model=source, error=err), print_exception=False) from None


def _controls(a: Analysis, fusion, discard_ratio, start_layer, opacity, mask_artifacts, layer, head, mean_of_heads,
              dino_mask, through_all_layers, shared_scale=False, patch_true=False) -> Controls:
    """The control values, in the order of the page's ``controls`` list, made valid for the analysis's model."""
    c = Controls(fusion=fusion, discard_ratio=float(discard_ratio), start_layer=int(start_layer),
                 opacity=float(opacity), mask_artifacts=bool(mask_artifacts), layer=int(layer),
                 head=None if mean_of_heads else int(head), dino_mask=bool(dino_mask), rolled=bool(through_all_layers),
                 shared_scale=bool(shared_scale), patch_true=bool(patch_true))
    return explorer.clamp_controls(c, a.depth, a.heads)


def _analysis(key: tuple[str, str], lang: str = "en") -> Analysis:
    """The cached analysis of (photo file, model source), computed if it is not (or no longer) cached."""
    try:
        return ANALYSES.get(key)
    except ImageFileError as err:
        raise gr.Error(str(err), print_exception=False) from None
    except (ValueError, OSError) as err:  # the model could not be loaded again, the photo file is gone
        raise gr.Error(t("message.analyse_again", lang, error=err), print_exception=False) from None


def _session_analysis(session: Session | None, lang: str = "en") -> Analysis | None:
    if session is None:
        gr.Warning(t("message.no_analysis", lang))
        return None
    return _analysis(session.key, lang)


@torch.inference_mode()
def analyze(photo, model, fusion="mean", discard_ratio=0.9, start_layer=0, opacity=0.6, mask_artifacts=False,
            layer=-1, head=0, mean_of_heads=True, dino_mask=False, through_all_layers=False,
            session: Session | None = None, shared_scale=False, patch_true=False, lang="en"):
    """Classify the photo and render every panel. The only required input is the photo file.

    Returns the top-5 classes, a summary, and the rollout, attention, all-heads, patch-query, position
    embedding, attention distance, token norm, architecture and filter panels. Layers and heads are 0-based;
    out-of-range values are clamped to the model. The maps are drawn at display size (640 pixels), the
    clickable photo at twice the model's input.
    """
    if not photo:  # the photo was cleared: so are the session and the 14 outputs
        return (None,) * 15
    served = _served(model, lang)
    key = (str(photo), str(model).strip())
    session = Session(key) if session is None or session.key != key else session
    a = _analysis(key, lang)
    c = _controls(a, fusion, discard_ratio, start_layer, opacity, mask_artifacts, layer, head, mean_of_heads,
                  dino_mask, through_all_layers, shared_scale, patch_true)
    v = _views(session, served, a, c, lang)
    return tuple(v[name] for name in API_OUTPUTS)


# /analyze's outputs, in order (API clients index them: keep the order, add at the end)
API_OUTPUTS = ("session", "top5", "summary", "rollout", "attention", "heads", "query_photo", "query_out", "query_in",
               "position", "distance", "norms", "norm_curves", "architecture", "filters")


def _views(session: Session, served: explorer.ServedModel, a: Analysis, c: Controls, lang: str) -> dict:
    """Every picture and text of the analysis, by output name."""
    lang = language(lang)
    return dict(explorer.pictures(session, a, c, lang), top5=explorer.top_classes(a),
                summary=explorer.summary(a, lang), position=served.position(lang),
                architecture=explorer.architecture(served, a), filters=served.filters)


@torch.inference_mode()
def change_model(model, head):
    """Load the picked model (or refuse it with gr.Error) and fit the sliders to its depth and heads."""
    served = _served(model)
    L, H = served.depth, served.heads
    return (model, gr.Dropdown(choices=model_choices(model), value=model),
            gr.Slider(maximum=L - 1, value=L - 1), gr.Slider(maximum=H - 1, value=min(int(head), H - 1)),
            gr.Slider(maximum=L - 1, value=0))


def explain_api(photo, method="gae", target="", contrast="", model=None):
    """Explain the photo for a class: the map of ``method`` (one of viz.explain.METHODS) for ``target`` (a class
    name or index; empty: the top-1 class), optionally minus ``contrast``'s map. ``model``: default the server's.

    Returns the picture of the map on the photo, and the numbers: {"method", "target": {"index", "name"},
    "contrast", "probability", "score", "readout", "grid": [gh, gw], "map": gh lists of gw values}."""
    if not photo:
        raise gr.Error("Give a photo to explain.", print_exception=False)
    source = str(model or _BASE_CHOICES[0]).strip()
    served = _served(source)
    if method not in METHODS:
        raise gr.Error(f"Unknown method {method!r}! Expected one of: {', '.join(METHODS)}.", print_exception=False)
    a = _analysis((str(photo), source))
    explained = [_explained(str(photo), source, served, spec) for spec in (_class_spec(target), _class_spec(contrast))
                 if spec is not None]
    e, other = explained[0], (explained[1] if len(explained) > 1 else None)
    picture, _ = tabs.explain_view(a, e, method, other)
    if picture is None:
        raise gr.Error(t("message.explain_failed", "en", error=e.failed.get(method, method)), print_exception=False)
    values = e.maps[method] - (other.maps[method] if other is not None and method in other.maps else 0)
    return picture, {"method": method, "target": {"index": e.target["index"], "name": e.target["name"]},
                     "contrast": None if other is None else {"index": other.target["index"],
                                                             "name": other.target["name"]},
                     "probability": e.probability, "score": e.score, "readout": e.readout, "grid": list(e.grid),
                     "map": values.round(6).tolist()}


def _class_spec(target) -> tuple | None:
    """A class name or index from the page or the API -> the explanation cache's target spec (None: no contrast)."""
    if target is None or str(target).strip() in ("", NO_CONTRAST):
        return None
    return ("top1",) if str(target).strip() == TOP1 else ("class", str(target).strip())


def _explained(photo: str, source: str, served: explorer.ServedModel, spec) -> tabs.Explained:
    """The cached explanation for (photo, model, target spec); a class the model lacks is a plain gr.Error."""
    if spec is None:
        spec = ("top1",)
    if spec[0] == "class":
        try:
            class_target(served.loaded.labels, spec[1])
        except ValueError as err:
            raise gr.Error(str(err), print_exception=False) from None
    try:
        return EXPLANATIONS.get((photo, source, spec))
    except ValueError as err:   # e.g. a text target on a checkpoint without a text tower
        raise gr.Error(str(err), print_exception=False) from None


# ---- re-renders as plain tuples (bench.run and API-style callers; the page uses the page_* handlers below) ---------

def rerender_rollout(session, *controls, lang="en"):
    """The rollout picture for the session's analysis and these controls (gr.skip() before any photo)."""
    if (a := _session_analysis(session, lang)) is None:
        return gr.skip()
    return explorer.rollout_view(a, _controls(a, *controls), lang)[0]


def rerender_layer(session, *controls, lang="en"):
    """Layer or head changed -> (session, attention, heads grid, where the patch attends, who attends to it)."""
    v = page_layer(session, *controls, lang)
    return tuple(v[k] for k in ("session", "attention", "heads", "query_out", "query_in")) if v else (gr.skip(),) * 5


def rerender_query(session, *controls, lang="en"):
    v = page_query(session, *controls, lang)
    return (v["query_out"], v["query_in"]) if v else (gr.skip(),) * 2


def pick_head(evt: gr.SelectData, session, *controls, lang="en"):
    """A click on the heads grid -> (session, layer, head, mean of heads, attention, heads grid, query row, query
    column, the line on the head), or gr.skip()s off the thumbnails."""
    v = page_pick_head(evt, session, *controls, lang)
    if not v:
        return (gr.skip(),) * 9
    return (v["session"], v["layer"], v["head"].value, v["mean_heads"], v["attention"], v["heads"], v["query_out"],
            v["query_in"], v["heads_info"])


def pick_patch(evt: gr.SelectData, session, *controls, lang="en"):
    """A click on the clickable photo -> (session, framed photo, where the patch attends, who attends to it)."""
    v = page_pick_patch(evt, session, *controls, lang)
    return tuple(v[k] for k in ("session", "query_photo", "query_out", "query_in")) if v else (gr.skip(),) * 4


# ---- handlers of the page: {output name: value}; a refusal is one warning and no change ----------------------------

def on_page(fn, components: dict, names: list[str]):
    """Wrap a page handler for an event whose outputs are ``names``: its {name: value} becomes the outputs in
    order, gr.skip() for those it leaves alone; a gr.Error becomes one gr.Warning and no change at all, so every
    output keeps its last valid value (no "Error" pill on a result or a control). Returns (handler, outputs)."""
    @functools.wraps(fn)
    def handler(*args, **kwargs):
        try:
            values = fn(*args, **kwargs)
        except gr.Error as err:
            gr.Warning(str(err.message))
            values = {}
        unknown = set(values) - set(names)
        if unknown:
            raise RuntimeError(f"{fn.__name__} returned {sorted(unknown)}, which are not among its outputs {names}")
        out = tuple(values.get(name, gr.skip()) for name in names)
        return out[0] if len(out) == 1 else out
    return handler, [components[name] for name in names]


def _same_file(a: str, b: str) -> bool:
    """Whether two uploaded files hold the same bytes (Gradio may store one photo under two paths)."""
    if a == b:
        return True
    try:
        pa, pb = Path(a), Path(b)
        return pa.stat().st_size == pb.stat().st_size and pa.read_bytes() == pb.read_bytes()
    except OSError:
        return False


REFUSED: dict[str, str] = {}   # browser session -> the last photo refused in it (a refusal is said once)


@torch.inference_mode()
def page_analyze(request: gr.Request, photo, model, *args):
    """A new photo (or the Analyze button): every result, or — for a file that is no photo — one warning and the
    previous photo put back, everything else untouched. ``args``: the controls, the session, the language."""
    *controls, session, lang = args
    if not photo:
        return {}
    key = (str(photo), str(model).strip())
    if session is not None and session.key[1] == key[1] and _same_file(session.key[0], key[0]):
        return {}
    served = _served(model, lang)
    try:
        a = ANALYSES.get(key)
    except ImageFileError as err:
        who = getattr(request, "session_hash", None) or ""
        if REFUSED.get(who) != str(photo):                  # Gradio may report one upload twice: say it once
            if len(REFUSED) > MAX_SESSIONS:
                REFUSED.clear()
            REFUSED[who] = str(photo)
            gr.Warning(str(err))
        return {"photo": session.key[0] if session is not None else None}
    except (ValueError, OSError) as err:
        raise gr.Error(t("message.analyse_again", lang, error=err), print_exception=False) from None
    return _page_views(Session(key), served, a, _controls(a, *controls), lang, photo)


def _page_views(session: Session, served: explorer.ServedModel, a: Analysis, c: Controls, lang: str,
                photo: str) -> dict:
    """Everything the page shows for an analysis: the API's views, the crop outlined on the upload, the class
    lists of the Explain tab, and the CLIP box when the checkpoint has a text tower."""
    v = _views(session, served, a, c, lang)
    v["crop"], v["crop_note"] = explorer.crop_view(photo, served, lang)
    labels = list(served.loaded.labels)
    v["target"] = gr.Dropdown(choices=[(t("choice.top1", lang), TOP1), *[(n, n) for n in labels]], value=TOP1)
    v["contrast"] = gr.Dropdown(choices=[(t("choice.none", lang), NO_CONTRAST), *[(n, n) for n in labels]],
                                value=NO_CONTRAST)
    v["clip_box"] = gr.Group(visible=served.has_text_tower)
    return v


def page_rerender(session, *args):
    """A display option or rollout control changed: every map follows (same analysis, no model run)."""
    *controls, lang = args
    if (a := _session_analysis(session, lang)) is None:
        return {}
    c = _controls(a, *controls)
    v = _views(session, MODELS.get(session.key[1]), a, c, lang)
    return {k: v[k] for k in ("session", "rollout", "rollout_note", "attention", "attention_note", "heads",
                              "heads_note", "query_out", "query_in", "query_note")}


def page_layer(session, *args):
    """Layer, head, mean of heads or DINO's outline changed: attention, the framed thumbnail and the query follow;
    the Head slider is greyed out while the mean of heads is shown."""
    *controls, lang = args
    if (a := _session_analysis(session, lang)) is None:
        return {}
    c = _controls(a, *controls)
    session, heads, heads_note = explorer.heads_view(session, a, c, lang)
    attention, attention_note = explorer.attention_view(a, c, lang)
    query_out, query_in, query_note = explorer.query_views(session, a, c, lang)
    return dict(session=session, attention=attention, attention_note=attention_note or "", heads=heads,
                heads_note=heads_note, query_out=query_out, query_in=query_in, query_note=query_note or "")


def page_query(session, *args):
    *controls, lang = args
    if (a := _session_analysis(session, lang)) is None:
        return {}
    query_out, query_in, note = explorer.query_views(session, a, _controls(a, *controls), lang)
    return dict(query_out=query_out, query_in=query_in, query_note=note or "")


def page_pick_head(evt: gr.SelectData, session, *args):
    """A click on the heads grid: that layer and head in the sliders and the Attention tab, and one line on it."""
    *controls, lang = args
    if (a := _session_analysis(session, lang)) is None or (cell := explorer.head_at(session, *evt.index)) is None:
        return {}
    layer, head = cell
    c = replace(_controls(a, *controls), layer=layer, head=head)
    values = page_layer(session, *_control_values(c), lang)
    return {**values, "layer": layer, "head": gr.Slider(value=head, interactive=True), "mean_heads": False,
            "heads_info": explorer.head_info(a, layer, head, c.mask_artifacts, lang)}


def _control_values(c: Controls) -> list:
    """Controls -> the page's control values in order (the inverse of ``_controls``)."""
    return [c.fusion, c.discard_ratio, c.start_layer, c.opacity, c.mask_artifacts, c.layer,
            0 if c.head is None else c.head, c.head is None, c.dino_mask, c.rolled, c.shared_scale, c.patch_true]


def page_pick_patch(evt: gr.SelectData, session, *args):
    """A click on the photo of the Patch query tab queries the patch under it."""
    *controls, lang = args
    if (a := _session_analysis(session, lang)) is None:
        return {}
    session = explorer.select_patch(session, a, *evt.index)
    query_out, query_in, note = explorer.query_views(session, a, _controls(a, *controls), lang)
    return dict(session=session, query_photo=explorer.query_photo(session, a), query_out=query_out,
                query_in=query_in, query_note=note or "")


def page_mean_heads(mean_of_heads):
    """The Head slider is usable only when one head is shown."""
    return {"head": gr.Slider(interactive=not mean_of_heads)}


@torch.inference_mode()
def page_switch_model(model, current, photo, session, *args):
    """The model picker: load the model, fit the sliders, analyse the photo with it; a refused path is one
    warning, the picker goes back to the current model and nothing else changes."""
    *controls, lang = args
    try:
        served = _served(model, lang)
    except gr.Error as err:
        gr.Warning(str(err.message))
        return {"model": gr.Dropdown(choices=model_choices(current), value=current)}
    L, H = served.depth, served.heads
    head = min(int(controls[6]), H - 1)
    values = {"current_model": model, "model": gr.Dropdown(choices=model_choices(model), value=model),
              "layer": gr.Slider(maximum=L - 1, value=L - 1), "head": gr.Slider(maximum=H - 1, value=head),
              "start_layer": gr.Slider(maximum=L - 1, value=0), "learn_layer": gr.Slider(maximum=L - 1, value=L - 1)}
    if not photo:
        return values
    controls[5], controls[6], controls[2] = L - 1, head, 0
    key = (str(photo), str(model).strip())
    try:
        a = ANALYSES.get(key)
    except (ValueError, OSError) as err:
        gr.Warning(str(err))
        return values
    return {**values, **_page_views(Session(key), served, a, _controls(a, *controls), lang, photo)}


def initial_language(request: gr.Request):
    """The visitor's language from the browser's Accept-Language header (the page's texts follow the browser)."""
    lang = language_from_header(request.headers.get("accept-language") if request is not None else None)
    return lang, lang


def page_language(new_lang, session, photo, *controls):
    """The language switch: every picture drawn again in the new language, from the same analysis."""
    lang = language(new_lang)
    # Gradio's frontend re-translates most labels when its locale changes, but not the tab names: set them here
    values = {"lang": lang, **{f"tab_{name}": gr.Tab(label=t(f"tab.{name}", lang)) for name in TAB_IDS}}
    if session is None:
        return values
    try:
        a = ANALYSES.get(session.key)
        served = MODELS.get(session.key[1])
    except (ValueError, OSError):
        return values
    views = _page_views(session, served, a, _controls(a, *controls), lang, session.key[0])
    for keep in ("target", "contrast", "clip_box"):   # the Explain tab keeps its choices; only labels follow
        views.pop(keep)
    return {**values, **views}


# The frontend's own language switch (what Gradio's settings panel calls): its core module exports changeLocale.
SET_LOCALE_JS = """
async (lang, ...rest) => {
  const urls = performance.getEntriesByType("resource").map((e) => e.name)
    .concat([...document.querySelectorAll("script[src], link[href]")].map((e) => e.src || e.href));
  const core = urls.find((u) => /\\/assets\\/core-[^/]*\\.js$/.test(u));
  if (core) { try { (await import(core)).changeLocale(lang); } catch (e) { console.warn(e); } }
  document.documentElement.lang = lang;
  return [lang, ...rest];
}
"""


# ---- Learn, Explain and Compare tabs ------------------------------------------------------------------------------

def page_learn(session, step, layer, lang):
    """The guided walk's step ``step`` (1–9) on the photo, the layer of step 7, and the table of real shapes."""
    if session is None:
        return {}
    try:
        w = WALKS.get(session.key)
    except (ValueError, OSError) as err:
        raise gr.Error(t("message.analyse_again", lang, error=err), print_exception=False) from None
    layer = min(int(layer), w.depth - 1)
    text, picture = tabs.learn_step(w, int(step), layer, lang)
    return dict(learn_text=text, learn_picture=picture, learn_table=tabs.learn_table(w, layer, lang))


def step_by(delta: int):
    def move(step):
        return min(max(int(step) + delta, 1), len(tabs.STEPS))
    return move


def page_explain(session, method, target, contrast, texts, use_text, opacity, lang):
    """The Explain tab: the method's map for the target (a class, the top-1, or a typed text for CLIP), minus the
    contrast class's map when one is chosen, the numbers, and every method side by side."""
    if session is None:
        return {}
    photo, source = session.key
    served = MODELS.get(source)
    a = _analysis(session.key, lang)
    typed = _texts(texts)
    if use_text and typed:
        if not served.has_text_tower:
            raise gr.Error(t("message.no_text_tower", lang), print_exception=False)
        spec = ("text", tuple(typed), typed[0])
    else:
        spec = _class_spec(target) or ("top1",)
    e = _explained(photo, source, served, spec)
    other = None if use_text else _class_spec(contrast)
    other = None if other is None else _explained(photo, source, served, other)
    picture, line = tabs.explain_view(a, e, method, other, float(opacity), lang)
    values = dict(explain_line=line, methods_row=tabs.methods_view(a, e, float(opacity)))
    if picture is not None:
        values["explain_picture"] = picture
    return values


def _texts(texts: str | None) -> list[str]:
    """The CLIP box's texts: one per line or separated by commas."""
    parts = (texts or "").replace("\n", ",").split(",")
    return [p.strip() for p in parts if p.strip()]


@torch.inference_mode()
def page_zero_shot(session, texts, lang):
    """CLIP zero-shot: softmax over the typed texts of exp(logit_scale) · cos(image, text)."""
    from vit.clip.zero_shot import zero_shot

    if session is None:
        return {}
    served = MODELS.get(session.key[1])
    if not served.has_text_tower:
        raise gr.Error(t("message.no_text_tower", lang), print_exception=False)
    typed = _texts(texts)
    if not typed:
        return {}
    a = _analysis(session.key, lang)
    probabilities = zero_shot(served.loaded, a.image, typed)[0].tolist()
    return {"zero_shot": dict(zip(typed, probabilities))}


def pick_class(evt: gr.SelectData):
    """A click on a class of the top-5 makes it the Explain tab's target."""
    return gr.Dropdown(value=evt.value)


@torch.inference_mode()
def page_compare(session, model_b, photo, lang, *controls):
    """The Compare tab: the session's model (A) against ``model_b`` on the same photo."""
    if session is None or not model_b:
        return {}
    served_a, served_b = MODELS.get(session.key[1]), _served(model_b, lang)
    a = _analysis(session.key, lang)
    c = _controls(a, *controls)
    try:
        image = open_image(session.key[0])
        side_a = compare_side(served_a.loaded, image, a)
        side_b = compare_side(served_b.loaded, image)
        comparison = compare(image, side_a, side_b, -1, None, c.fusion, c.discard_ratio, 5)
    except (ValueError, OSError) as err:
        raise gr.Error(t("message.compare_failed", lang, error=err), print_exception=False) from None

    def top(rows, own):
        return {f"{r.label} (Δ {r.change:+.1%})" if r.change is not None else r.label: getattr(r, own) or 0.0
                for r in rows}
    return dict(comparison=comparison_image(comparison), top5_a=top(comparison.top_a, "a"),
                top5_b=top(comparison.top_b, "b"))


def page_animate(session, what, lang, *controls):
    """A GIF of the CLS attention (or the rollout) layer by layer, one frame per layer, to download."""
    if session is None:
        return {}
    a = _analysis(session.key, lang)
    c = _controls(a, *controls)
    frames = depth_frames(a, what, c.head, c.fusion, c.discard_ratio, c.mask_artifacts, alpha=c.opacity, scale=2)
    name = hashlib.sha256(repr((session.key, what, c)).encode()).hexdigest()[:16]
    ANIMATIONS_DIR.mkdir(parents=True, exist_ok=True)
    path = save_gif(frames, ANIMATIONS_DIR / f"attention-{what}-{name}.gif")
    return dict(animation_file=str(path), animation=str(path))


def _series(key: tuple[str, str]) -> DynamicsView:
    """(snapshot folder, photo) -> the run's frames on the photo. Imported here: reading snapshots needs the
    trainer's modules, which import torchvision (the server stays without it until someone opens a run)."""
    from viz.analysis.snapshots import load_series
    return DynamicsView(load_series(key[0], open_image(key[1])))


SERIES = LRUCache(_series, 2)


def page_snapshots(session, folder, lang):
    """Open a training run's snapshot folder on the session's photo: the slider scrubs through it."""
    if session is None or not folder:
        return {}
    if not ANY_MODEL:
        raise gr.Error(t("message.models_listed_only", lang), print_exception=False)
    try:
        view = SERIES.get((str(folder).strip(), session.key[0]))
    except (ValueError, OSError) as err:
        raise gr.Error(t("message.snapshots_failed", lang, error=err), print_exception=False) from None
    last = len(view.series) - 1
    return dict(snapshot=gr.Slider(minimum=0, maximum=max(last, 1), value=last, interactive=last > 0),
                snapshot_picture=view.frame(last))


def page_snapshot(session, folder, index, lang):
    if session is None or not folder:
        return {}
    try:
        view = SERIES.get((str(folder).strip(), session.key[0]))
    except (ValueError, OSError) as err:
        raise gr.Error(t("message.snapshots_failed", lang, error=err), print_exception=False) from None
    return dict(snapshot_picture=view.frame(min(int(index), len(view.series) - 1)))


# Trust checks: one job per (photo, model, target) at a time in their own queue group; every step (about one forward
# pass) takes the model turn, so another visitor's analysis waits for at most one step, never for a whole job.
TRUST = TrustCache()


def page_trust(session, target, texts, use_text, sanity, lang, progress=gr.Progress()):
    """The Trust tab: every method's deletion / insertion curves (and, ticked, the sanity check) for the Explain
    tab's target on the session's photo, run step by step with progress; cached per (photo, model, target, method)."""
    if session is None:
        return {}
    photo, source = session.key
    served = MODELS.get(source)
    loaded = served.loaded
    a = _analysis(session.key, lang)
    typed = _texts(texts)
    spec = _class_spec(target)
    try:
        if use_text and typed:
            goal = text_target(loaded, typed[0], typed)
        else:
            goal = None if spec is None or spec[0] == "top1" else class_target(loaded.labels, spec[1])
        with MODEL_TURN:
            job = TrustJob(loaded.model, loaded.preprocess.to_tensor(a.image), goal, sanity=bool(sanity), cache=TRUST,
                           model_id=source, labels=loaded.labels, rows_per_step=1)   # a step: one forward at most
        steps = job.steps()
        while True:
            with MODEL_TURN:
                step = next(steps, None)
            if step is None:
                break
            done, total, what = step
            progress(done / max(total, 1), desc=f"{t('trust.progress', lang)}: {what}")
        report = job.result()
    except ValueError as err:
        raise gr.Error(t("message.trust_failed", lang, error=err), print_exception=False) from None
    return dict(trust_table=tabs.trust_table(report, lang), trust_picture=tabs.trust_view(report, a, lang))


# ---- layout -----------------------------------------------------------------------------------------------

_BASE_CHOICES: list[str] = []


def model_choices(extra: str | None = None) -> list[str]:
    """The models on offer: the one the server started with, the files in weights/, and ``extra`` (a path)."""
    choices = list(dict.fromkeys(_BASE_CHOICES + vit.list_local_checkpoints()))
    return choices + [extra] if extra and extra not in choices else choices


def example_photos() -> list[str]:
    return sorted(str(p) for p in EXAMPLES_DIR.glob("*") if p.suffix.lower() in (".jpg", ".jpeg", ".png", ".webp"))


# Maps come at display size (explorer.DISPLAY_SIZE) and fill their panel; clickable images keep their natural size
# at most (Gradio maps a click to image pixels only up to a scale of 1). The tab bar wraps (every tab one tap away
# on a phone); tables scroll sideways instead of breaking words; on a phone every column takes the full width.
CSS = """
.enlarge img { width: 100%; height: auto; max-height: 85vh; object-fit: contain; }
#title, #title * { font-size: 1.5rem !important; font-weight: 700; }
#title p { margin: 0; }
.note, .note * { font-size: 0.95em; color: #b45309 !important; }
.prose table, .md table { display: block; overflow-x: auto; }
.prose table td, .prose table th, .md table td, .md table th { word-break: keep-all; overflow-wrap: normal;
  white-space: nowrap; }
.prose, .md, label, button { word-break: keep-all; overflow-wrap: break-word; hyphens: none; }
#tabs button[role=tab] { flex: 0 0 auto; max-width: none; }
#trust-image img, #methods-row img { padding-top: 2.4em; }  /* titles along their top edge stay clear of the label */
@media (max-width: 640px) {
  #tabs button[role=tab] { padding: 0 0.45em; }
  #title, #title * { font-size: 1.15rem !important; }
  .gradio-container { padding-left: 6px !important; padding-right: 6px !important; }
}
"""


class Picture(gr.Image):
    """Output gr.Image whose saved pictures are never rewritten in place.

    Gradio saves an output picture under a hash of its bytes and rewrites that file (truncate, then write)
    whenever the same picture is produced again: the model-only panels on every analysis, every panel when two
    people analyse the same example photo. Someone downloading it at that moment got a truncated file (seen
    with 16 simultaneous API clients). Here a picture already saved is reused, and a new one appears at once,
    written under a temporary name and renamed.
    """
    is_template = True  # shown by the browser's ordinary Image component

    def postprocess(self, value):
        if isinstance(value, Image.Image):
            value = _saved_once(value, self.GRADIO_CACHE, self.format)
        return super().postprocess(value)
    from typing import Callable, Literal, Sequence, Any, TYPE_CHECKING
    from gradio.blocks import Block
    if TYPE_CHECKING:
        from gradio.components import Timer
        from gradio.components.base import Component


def _saved_once(image: Image.Image, cache_dir: str, fmt: str) -> str:
    """Path of the picture in Gradio's cache, where Gradio itself would put it; written atomically, once."""
    data = processing_utils.encode_pil_to_bytes(image, fmt)
    folder = Path(cache_dir) / processing_utils.hash_bytes(data)
    path = folder / f"image.{fmt}"
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, suffix=".part", delete=False) as part:
            part.write(data)
        os.replace(part.name, path)
    return str(path)


def _picture(key: str, height: int | None = None, enlarge: bool = True, **kw) -> gr.Image:
    """An output image labelled in both languages: JPEG keeps encoding at a few ms (PNG takes tens of ms for a
    heads grid)."""
    return Picture(label=I18N(key), interactive=False, format="jpeg", buttons=["download", "fullscreen"],
                   height=height, elem_classes=["enlarge"] if enlarge else None, **kw)


def _note(elem_id: str | None = None) -> gr.Markdown:
    """A one-line note under a picture (artifacts, crop, selection), written on the server in the visitor's language."""
    return gr.Markdown("", elem_id=elem_id, elem_classes=["note"])


def build_app(default_model: str) -> gr.Blocks:
    """The Blocks app; ``default_model`` (a source for vit.load) is loaded now to size the sliders."""
    served = _served_at_startup(default_model)
    _BASE_CHOICES[:] = [default_model]
    L, H = served.depth, served.heads
    i18n = I18N
    with gr.Blocks(title="ViT Attention Explorer", delete_cache=(600, 3600), analytics_enabled=False) as demo:
        session = gr.State(None)
        current_model = gr.State(default_model)
        lang = gr.State("en")
        open_tab = gr.State("rollout")
        with gr.Row(equal_height=True):
            gr.Markdown(i18n("page.title"), elem_id="title")
            language_switch = gr.Radio([("English", "en"), ("中文", "zh-CN")], value="en", show_label=False,
                                       container=False, elem_id="language", scale=0, min_width=180)
        gr.Markdown(i18n("page.intro"))
        with gr.Row():
            with gr.Column(scale=2, min_width=300):
                photo = PhotoInput(label=i18n("label.photo"), type="filepath", image_mode=None, elem_id="photo-input",
                                   sources=["upload", "webcam", "clipboard"], height=300)
            with gr.Column(scale=3, min_width=300):
                top5 = gr.Label(num_top_classes=5, label=i18n("label.top5"), elem_id="top5")
                summary = gr.Markdown(elem_id="summary")
        with gr.Tabs(overflow_behavior="wrap", elem_id="tabs"):
            with gr.Tab(i18n("tab.rollout"), id="rollout") as rollout_tab:
                with gr.Row():
                    with gr.Column(scale=3, min_width=300):
                        rollout_img = _picture("picture.rollout", elem_id="rollout-image")
                        rollout_note = _note("rollout-note")
                    with gr.Column(scale=2, min_width=260):
                        gr.Markdown(i18n("about.rollout"))
                        fusion = gr.Radio([(i18n("choice.mean"), "mean"), (i18n("choice.max"), "max"),
                                           (i18n("choice.min"), "min")], value="mean", label=i18n("control.fusion"),
                                          info=i18n("help.fusion"))
                        discard = gr.Slider(0.0, 0.99, value=0.9, step=0.01, label=i18n("control.discard"),
                                            info=i18n("help.discard"))
                        start_layer = gr.Slider(0, L - 1, value=0, step=1, label=i18n("control.start_layer"),
                                                info=i18n("help.start_layer"))
            with gr.Tab(i18n("tab.attention"), id="attention") as attention_tab:
                with gr.Row():
                    with gr.Column(scale=3, min_width=300):
                        attention_img = _picture("picture.attention", elem_id="attention-image")
                        attention_note = _note("attention-note")
                    with gr.Column(scale=2, min_width=260):
                        gr.Markdown(i18n("about.attention"))
                        layer = gr.Slider(0, L - 1, value=L - 1, step=1, label=i18n("control.layer"),
                                          info=i18n("help.layer"), elem_id="layer-slider")
                        head = gr.Slider(0, H - 1, value=0, step=1, label=i18n("control.head"), info=i18n("help.head"),
                                         interactive=False, elem_id="head-slider")
                        mean_heads = gr.Checkbox(True, label=i18n("control.mean_heads"), info=i18n("help.mean_heads"),
                                                 elem_id="mean-heads")
                        dino_mask = gr.Checkbox(False, label=i18n("control.dino_mask"), info=i18n("help.dino_mask"))
            with gr.Tab(i18n("tab.heads"), id="heads") as heads_tab:
                gr.Markdown(i18n("about.heads"))
                heads_info = gr.Markdown(i18n("help.heads_info"), elem_id="heads-info")
                heads_img = _picture("picture.heads", enlarge=False, elem_id="heads-image")
                heads_note = _note("heads-note")
            with gr.Tab(i18n("tab.query"), id="query") as query_tab:
                gr.Markdown(i18n("about.query"))
                rolled = gr.Checkbox(False, label=i18n("control.rolled"), info=i18n("help.rolled"))
                with gr.Row():
                    query_photo = _picture("picture.query_photo", enlarge=False, elem_id="query-photo", min_width=300)
                    query_out = _picture("picture.query_out", elem_id="query-out", min_width=300)
                    query_in = _picture("picture.query_in", elem_id="query-in", min_width=300)
                query_note = _note("query-note")
            with gr.Tab(i18n("tab.learn"), id="learn") as learn_tab:
                gr.Markdown(i18n("about.learn"))
                with gr.Row(equal_height=True):
                    back = gr.Button(i18n("button.back"), scale=0, min_width=90)
                    step = gr.Slider(1, len(tabs.STEPS), value=1, step=1, label=i18n("control.step"),
                                     info=i18n("help.step"), elem_id="learn-step", scale=3)
                    forward = gr.Button(i18n("button.next"), variant="primary", scale=0, min_width=90,
                                        elem_id="learn-next")
                with gr.Row():
                    with gr.Column(scale=3, min_width=300):
                        learn_picture = _picture("picture.step", elem_id="learn-picture")
                    with gr.Column(scale=2, min_width=260):
                        learn_text = gr.Markdown(elem_id="learn-text")
                        learn_layer = gr.Slider(0, L - 1, value=L - 1, step=1, label=i18n("control.layer"),
                                                info=i18n("help.layer"), elem_id="learn-layer")
                        learn_table = gr.Markdown(elem_id="learn-table")
            with gr.Tab(i18n("tab.explain"), id="explain") as explain_tab:
                gr.Markdown(i18n("about.explain"))
                with gr.Row():
                    method = gr.Dropdown([(f"{m.name} · {m.title}", m.name) for m in METHODS.values()], value="gae",
                                         label=i18n("control.method"), info=i18n("help.method"), elem_id="method")
                    target = gr.Dropdown([], value=None, filterable=True, allow_custom_value=True,
                                         label=i18n("control.target"), info=i18n("help.target"), elem_id="target")
                    contrast = gr.Dropdown([], value=None, filterable=True, allow_custom_value=True,
                                           label=i18n("control.contrast"), info=i18n("help.contrast"))
                with gr.Group(visible=served.has_text_tower) as clip_box:
                    with gr.Row(equal_height=True):
                        texts = gr.Textbox(label=i18n("control.texts"), info=i18n("help.texts"), lines=2, scale=3)
                        with gr.Column(scale=1, min_width=160):
                            score_texts = gr.Button(i18n("button.zero_shot"))
                            use_text = gr.Checkbox(False, label=i18n("control.explain_text"),
                                                   info=i18n("help.explain_text"))
                    zero_shot_label = gr.Label(label=i18n("label.zero_shot"))
                explain_line = _note("explain-line")
                explain_picture = _picture("picture.explanation", elem_id="explain-image")
                methods_img = _picture("picture.methods_row", elem_id="methods-row")
            with gr.Tab(i18n("tab.compare"), id="compare") as compare_tab:
                gr.Markdown(i18n("about.compare"))
                with gr.Row(equal_height=True):
                    model_b = gr.Dropdown(model_choices(), value=None, allow_custom_value=True, scale=4,
                                          label=i18n("control.compare_model"), info=i18n("help.compare_model"),
                                          elem_id="compare-model")
                    compare_button = gr.Button(i18n("button.compare"), variant="primary", scale=1, min_width=90)
                with gr.Row():
                    top5_a = gr.Label(num_top_classes=5, label=i18n("label.top5_a"))
                    top5_b = gr.Label(num_top_classes=5, label=i18n("label.top5_b"))
                comparison_img = _picture("picture.comparison", enlarge=False, elem_id="comparison-image")
                with gr.Row(equal_height=True):
                    animate_what = gr.Radio([(i18n("choice.attention"), "attention"), (i18n("choice.rollout"), "rollout")],
                                            value="attention", label=i18n("control.animate_what"),
                                            info=i18n("help.animate_what"))
                    animate_button = gr.Button(i18n("button.animate"))
                with gr.Row():
                    animation = gr.Image(label=i18n("label.animation"), type="filepath", interactive=False,
                                         height=320, elem_id="animation")
                    animation_file = gr.File(label=i18n("label.animation"), interactive=False)
                with gr.Row(equal_height=True):
                    snapshots = gr.Textbox(label=i18n("control.snapshots"), info=i18n("help.snapshots"), scale=3)
                    load_snapshots = gr.Button(i18n("button.load_snapshots"), scale=1)
                snapshot = gr.Slider(0, 1, value=0, step=1, label=i18n("control.snapshot"), info=i18n("help.snapshot"),
                                     interactive=False)
                snapshot_img = _picture("picture.snapshot", enlarge=False)
            with gr.Tab(i18n("tab.position"), id="position") as position_tab:
                gr.Markdown(i18n("about.position"))
                position_img = Picture(label=i18n("picture.position"), interactive=False, format="png")
            with gr.Tab(i18n("tab.distance"), id="distance") as distance_tab:
                gr.Markdown(i18n("about.distance"))
                distance_img = Picture(label=i18n("picture.distance"), interactive=False, format="png")
            with gr.Tab(i18n("tab.norms"), id="norms") as norms_tab:
                gr.Markdown(i18n("about.norms"))
                norms_img = _picture("picture.norms", height=None)
                norm_curves_img = Picture(label=i18n("picture.norm_curves"), interactive=False, format="png")
            with gr.Tab(i18n("tab.model"), id="model") as model_tab:
                architecture = gr.Markdown(elem_id="architecture")
                gr.Markdown(i18n("about.filters"))
                filters_img = Picture(label=i18n("picture.filters"), interactive=False, format="png")
            with gr.Tab(i18n("tab.trust"), id="trust") as trust_tab:
                gr.Markdown(i18n("about.trust"))
                with gr.Row(equal_height=True):
                    trust_sanity = gr.Checkbox(False, label=i18n("control.trust_sanity"),
                                               info=i18n("help.trust_sanity"), scale=3)
                    trust_button = gr.Button(i18n("button.trust"), variant="primary", scale=1, min_width=90,
                                             elem_id="trust-button")
                trust_table = gr.Markdown(elem_id="trust-table")
                trust_img = _picture("picture.trust", enlarge=False, elem_id="trust-image")
            # one more tab goes here: `with gr.Tab(i18n("tab.NAME"), id="NAME") as NAME_tab:` (add it to TAB_IDS)
        with gr.Accordion(i18n("label.display"), open=True):   # applies to every map of every tab
            with gr.Row():   # one column each, so that on a phone they stack instead of squeezing
                with gr.Column(min_width=220):
                    opacity = gr.Slider(0.0, 1.0, value=0.6, step=0.05, label=i18n("control.opacity"),
                                        info=i18n("help.opacity"))
                with gr.Column(min_width=220):
                    mask_artifacts = gr.Checkbox(False, label=i18n("control.mask_artifacts"),
                                                 info=i18n("help.mask_artifacts"), elem_id="mask-artifacts")
                with gr.Column(min_width=220):
                    shared_scale = gr.Checkbox(False, label=i18n("control.shared_scale"),
                                               info=i18n("help.shared_scale"))
                with gr.Column(min_width=220):
                    patch_true = gr.Checkbox(False, label=i18n("control.patch_true"), info=i18n("help.patch_true"))
        with gr.Row():
            with gr.Column(scale=3, min_width=300):
                with gr.Row(equal_height=True):
                    model = gr.Dropdown(model_choices(), value=default_model, allow_custom_value=True, scale=4,
                                        label=i18n("label.model"), elem_id="model-picker", info=i18n("help.model"))
                    rerun = gr.Button(i18n("button.analyze"), variant="primary", scale=1, min_width=90)
                photos = example_photos()
                if photos:
                    gr.Examples(photos, inputs=photo, cache_examples=False, api_visibility="private",
                                label=i18n("label.examples"), examples_per_page=8)
            with gr.Column(scale=2, min_width=300):
                crop = _picture("picture.crop", height=240, elem_id="crop-image")
                crop_note = _note("crop-note")
        with gr.Column(visible=False):   # the API's own endpoints: /analyze and /explain (raise plain gr.Error)
            api_analyze = gr.Button("analyze")
            api_explain = gr.Button("explain")
            api_method = gr.Textbox("gae")
            api_target = gr.Textbox("")
            api_contrast = gr.Textbox("")
            api_model = gr.Textbox("")
            api_picture = Picture(format="png")
            api_numbers = gr.JSON()

        # ---- events ---------------------------------------------------------------------------------------
        c = dict(session=session, current_model=current_model, lang=lang, photo=photo, top5=top5, summary=summary,
                 model=model, crop=crop, crop_note=crop_note, rollout=rollout_img, rollout_note=rollout_note,
                 attention=attention_img, attention_note=attention_note, heads=heads_img, heads_note=heads_note,
                 heads_info=heads_info, query_photo=query_photo, query_out=query_out, query_in=query_in,
                 query_note=query_note, position=position_img, distance=distance_img, norms=norms_img,
                 norm_curves=norm_curves_img, architecture=architecture, filters=filters_img, layer=layer, head=head,
                 mean_heads=mean_heads, start_layer=start_layer, learn_layer=learn_layer, target=target,
                 contrast=contrast, clip_box=clip_box, learn_text=learn_text, learn_picture=learn_picture,
                 learn_table=learn_table, explain_line=explain_line, explain_picture=explain_picture,
                 methods_row=methods_img, zero_shot=zero_shot_label, comparison=comparison_img, top5_a=top5_a,
                 top5_b=top5_b, animation=animation, animation_file=animation_file, snapshot=snapshot,
                 snapshot_picture=snapshot_img, trust_table=trust_table, trust_picture=trust_img,
                 **{f"tab_{name}": tab for name, tab in zip(TAB_IDS, (rollout_tab, attention_tab, heads_tab, query_tab,
                                                                      learn_tab, explain_tab, compare_tab, position_tab,
                                                                      distance_tab, norms_tab, model_tab,
                                                                      trust_tab))})

        controls = [fusion, discard, start_layer, opacity, mask_artifacts, layer, head, mean_heads, dino_mask, rolled,
                    shared_scale, patch_true]
        views = ["session", "top5", "summary", "rollout", "rollout_note", "attention", "attention_note", "heads",
                 "heads_note", "query_photo", "query_out", "query_in", "query_note", "position", "distance", "norms",
                 "norm_curves", "architecture", "filters", "crop", "crop_note", "target", "contrast", "clip_box"]
        maps = ["session", "rollout", "rollout_note", "attention", "attention_note", "heads", "heads_note",
                "query_out", "query_in", "query_note"]
        model_work = dict(concurrency_id="model", concurrency_limit=1)
        render = dict(concurrency_id="render", concurrency_limit=RENDER_CONCURRENCY, show_progress="minimal",
                      api_visibility="private", trigger_mode="always_last")
        private = dict(api_visibility="private")
        explain_inputs = [session, method, target, contrast, texts, use_text, opacity, lang]
        learn_inputs = [session, step, learn_layer, lang]

        # the API: /analyze (the page's first 15 outputs, in their historical order) and /explain
        api_analyze.click(analyze, [photo, model, *controls[:10], session, shared_scale, patch_true, lang],
                          [c[n] for n in API_OUTPUTS], api_name="analyze", **model_work)
        api_explain.click(explain_api, [photo, api_method, api_target, api_contrast, api_model],
                          [api_picture, api_numbers], api_name="explain", **model_work)

        # the page: every handler wrapped by on_page (a refusal is one warning and no change)
        def wire(fn, *names) -> dict:
            handler, outputs = on_page(fn, c, list(names))
            return dict(fn=handler, outputs=outputs)

        demo.load(initial_language, None, [lang, language_switch], **private)
        lazy = wire(_lazy_tabs, *LAZY_OUTPUTS)
        lazy_inputs = [open_tab, *learn_inputs, *explain_inputs[1:-1]]
        analysed = gr.on([photo.change, rerun.click], **wire(page_analyze, *views, "photo"),
                         inputs=[photo, model, *controls, session, lang], **private, **model_work)
        analysed.then(**lazy, inputs=lazy_inputs, **private, **model_work)
        switched = model.input(**wire(page_switch_model, *views, "current_model", "model", "layer", "head",
                                     "start_layer", "learn_layer"),
                               inputs=[model, current_model, photo, session, *controls, lang], **private, **model_work)
        switched.then(**lazy, inputs=lazy_inputs, **private, **model_work)
        relabelled = language_switch.input(**wire(page_language, "lang", *[f"tab_{n}" for n in TAB_IDS], *[v for v in views if v not in
                                                                        ("target", "contrast", "clip_box")]),
                                           inputs=[language_switch, session, photo, *controls], js=SET_LOCALE_JS,
                                           **private, **model_work)
        relabelled.then(**lazy, inputs=lazy_inputs, **private, **model_work)
        gr.on([x.input for x in (fusion, discard, start_layer, opacity, mask_artifacts, shared_scale, patch_true)],
              **wire(page_rerender, *maps), inputs=[session, *controls, lang], **render)
        gr.on([x.input for x in (layer, head, mean_heads, dino_mask)], **wire(page_layer, *maps),
              inputs=[session, *controls, lang], **render)
        mean_heads.change(**wire(page_mean_heads, "head"), inputs=mean_heads, **private, queue=False)
        rolled.input(**wire(page_query, "query_out", "query_in", "query_note"), inputs=[session, *controls, lang],
                     **render)
        heads_img.select(**wire(page_pick_head, *maps, "layer", "head", "mean_heads", "heads_info"),
                         inputs=[session, *controls, lang], **render)
        query_photo.select(**wire(page_pick_patch, "session", "query_photo", "query_out", "query_in", "query_note"),
                           inputs=[session, *controls, lang], **render)

        learn = wire(page_learn, "learn_text", "learn_picture", "learn_table")
        learn_tab.select(lambda: "learn", None, open_tab, **private, queue=False).then(
            **learn, inputs=learn_inputs, **private, **model_work)
        for tab, name in ((rollout_tab, "rollout"), (attention_tab, "attention"), (heads_tab, "heads"),
                          (query_tab, "query"), (compare_tab, "compare")):
            tab.select(lambda name=name: name, None, open_tab, **private, queue=False)
        back.click(step_by(-1), step, step, **private, queue=False).then(**learn, inputs=learn_inputs, **render)
        forward.click(step_by(1), step, step, **private, queue=False).then(**learn, inputs=learn_inputs,
                                                                            **render)
        gr.on([step.release, learn_layer.release], **learn, inputs=learn_inputs, **render)

        explain = wire(page_explain, "explain_line", "explain_picture", "methods_row")
        explain_tab.select(lambda: "explain", None, open_tab, **private, queue=False).then(
            **explain, inputs=explain_inputs, **private, **model_work)
        gr.on([method.input, target.input, contrast.input, use_text.input, opacity.release], **explain,
              inputs=explain_inputs, **private, **model_work, trigger_mode="always_last")
        top5.select(pick_class, None, target, **private, queue=False).then(
            **explain, inputs=explain_inputs, **private, **model_work)
        gr.on([score_texts.click, texts.submit], **wire(page_zero_shot, "zero_shot"), inputs=[session, texts, lang],
              **private, **model_work)

        compare_button.click(**wire(page_compare, "comparison", "top5_a", "top5_b"),
                             inputs=[session, model_b, photo, lang, *controls], **private, **model_work)
        animate_button.click(**wire(page_animate, "animation", "animation_file"),
                             inputs=[session, animate_what, lang, *controls], **private, **model_work)
        gr.on([load_snapshots.click, snapshots.submit], **wire(page_snapshots, "snapshot", "snapshot_picture"),
              inputs=[session, snapshots, lang], **private, **model_work)
        snapshot.input(**wire(page_snapshot, "snapshot_picture"), inputs=[session, snapshots, snapshot, lang], **render)
        trust_button.click(**wire(page_trust, "trust_table", "trust_picture"),
                           inputs=[session, target, texts, use_text, trust_sanity, lang], api_name="trust",
                           api_visibility="undocumented", concurrency_id="trust", concurrency_limit=1,
                           trigger_mode="once")   # callable by a client (the serving test), not listed in the API
    return demo


LAZY_OUTPUTS = ("learn_text", "learn_picture", "learn_table", "explain_line", "explain_picture", "methods_row")


def _lazy_tabs(open_tab, session, step, learn_layer, lang, method, target, contrast, texts, use_text, opacity):
    """After a new analysis, model or language: the Learn or Explain tab, when it is the open one, follows."""
    if open_tab == "learn":
        return page_learn(session, step, learn_layer, lang)
    if open_tab == "explain":
        return page_explain(session, method, target, contrast, texts, use_text, opacity, lang)
    return {}


def _served_at_startup(source: str) -> explorer.ServedModel:
    try:
        return MODELS.get(str(source).strip())
    except (ValueError, OSError) as err:
        sys.exit(startup_failure(source, err))


def startup_failure(source: str, err: Exception) -> str:
    """What ``python app.py`` prints when its model does not load (offline, a wrong path): why, then how to
    start with a checkpoint that is on this machine (``--weights``), in English and Chinese."""
    from vit.checkpoints.load import checkpoints_on_this_machine

    found = checkpoints_on_this_machine()
    lines = []
    for lang in LANGUAGES:
        lines += ["", t("message.cannot_start", lang, model=str(source))]
        if lang == "en":
            lines.append(str(err))
        if found:
            lines.append(t("message.start_with", lang))
            lines += [f"    python app.py --weights {_relative(path)}" for path in found]
        else:
            lines.append(t("message.no_checkpoint_here", lang, url="https://download.pytorch.org/models/"
                           "vit_b_16-c867db91.pth", folder=_relative(vit.weights_dir())))
    return "\n".join(lines[1:])


def _relative(path: Path) -> str:
    """A path as short as a student can type it: relative to the current folder when inside or beside it."""
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return str(path)


def return_freed_memory_to_the_os() -> None:
    """Tune glibc's malloc for a long-running server, as MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=524288 would.

    By default each Gradio worker thread gets its own malloc arena, and the mmap threshold rises to the largest
    buffer freed so far, so the attention maps and images of past analyses stayed resident in the arenas' heaps:
    the server's RSS climbed by ~250 MB over 300 analyses. With two arenas and every buffer of 512 KB or more
    mmapped (the cached maps included: one head-fused map of a 12-block ViT at 224 is 0.9 MB), a dropped
    analysis goes back to the OS at once instead of leaving holes in a heap: over 300 analyses of 60 photos the
    RSS grew by 14 MB after warm-up, against 40 MB with a 4 MB threshold. The price, fresh pages for large
    temporaries, is ~5 ms per re-render. No-op where the C library has no mallopt.
    """
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is not None:
        mallopt(-8, 2)            # M_ARENA_MAX: arenas created from now on are limited, so call it early
        mallopt(-3, 512 * 2**10)  # M_MMAP_THRESHOLD, fixed (no longer raised by large frees)


def only_this_machine(host: str, share: bool) -> bool:
    """Whether a server on ``host`` (with or without a share link) is reachable from this machine alone."""
    return host in LOCAL_HOSTS and not share


def launch(demo: gr.Blocks, host: str, port: int, share: bool = False, **kwargs):
    """Serve with the queue set up: model work one at a time, re-renders alongside; bounded session memory; a
    server others can reach loads only the models in its list."""
    global ANY_MODEL
    return_freed_memory_to_the_os()
    ANY_MODEL = only_this_machine(host, share)
    demo.queue(default_concurrency_limit=1)
    return demo.launch(server_name=host, server_port=port, share=share, state_session_capacity=MAX_SESSIONS,
                       max_file_size=MAX_BYTES, show_error=True, css=CSS, i18n=I18N, **kwargs)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="ViT Attention Explorer: a Gradio app to explore what a ViT attends to.")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--weights", help="checkpoint file or Hugging Face folder to start with")
    which.add_argument("--model", default="default",
                       help="known model name or file in weights/ (default: torchvision's ViT-B/16)")
    p.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                   help="address to serve on (default 127.0.0.1; 0.0.0.0 serves the network)")
    p.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", 7860)),
                   help="port to serve on (default 7860)")
    p.add_argument("--share", action="store_true", help="also serve through a temporary public gradio.live link")
    p.add_argument("--device", default="auto", metavar="{auto,cpu,cuda,mps}",
                   help="where the models run (default auto: CUDA when available, else the CPU; also cuda:N)")
    return p.parse_args(argv)


if __name__ == "__main__":
    args = parse_args()
    try:
        DEVICE = pick_device(args.device)
    except ValueError as err:
        sys.exit(f"Cannot start: {err}")
    launch(build_app(args.weights or args.model), args.host, args.port, args.share)