"""THE table of the jobs a visitor can start, and what each needs at its peak: every event of the page that runs
more than a few milliseconds of numpy is an entry of ``JOBS`` (its handler, by module and name), whose function
reads the handler's values (the session's analysis, the chosen size, method, depth…) and says the job's ``Need``:
its peak memory from ``viz.analysis.peak``, estimated from the shapes before anything runs, and the sentence naming
the smallest change that would fit (a smaller input size, the methods that fit, the fast check). The handlers in
``LIGHT`` run no job (they draw from what is cached, or change a control).

``events.Page.wire`` admits every wired handler through ``admitted`` (the memory budget, ``vit_explorer.budget``),
and the API's handlers are admitted the same way (``api_job``); a high-resolution redraw also takes the one slot of
large redraws (``LARGE_REDRAW``): at most one runs at a time, the others are told to try again, so the renderers
stay free for everyone's small redraws. ``tests/load`` checks that every handler the page wires is in one of the two
tables, and each estimate against the peak measured in a process of its own.
"""
from __future__ import annotations

import functools
import inspect
import threading
from contextlib import contextmanager
from typing import Callable

import gradio as gr

from viz.analysis import cost, peak
from viz.explain.methods import families_of, methods_for
from viz.i18n import t
from viz.video.classmap import VIDEO_METHODS
from viz.video.faithfulness import BATCH as CHECK_BATCH

from . import heavy, state
from .budget import BUDGET, Need
from .door import Refusal
from .tabs.trust import FAST, protocols_for
from .tabs.video import video_key

LARGE_REDRAW_TOKENS = 1200       # a redraw of an analysis with more tokens (a ViT-B/16 above 544 px) is a large one
LARGE_REDRAW = threading.Semaphore(1)


# ---- the shapes of what a job runs on ----------------------------------------------------------------------------

def shape_of(served, key=None) -> peak.Shape:
    """The shape of the served model's input (the analysis's own input, when it is cached: a NaFlex model's follows
    the photo), with its parameters' bytes."""
    a = state.ANALYSES.find(key) if key is not None else None
    height, width = a.input_size if a is not None else served.loaded.preprocess.crop
    return peak.Shape.of(served.loaded.model, height, width, params=served.nbytes)


def session_shape(values: dict) -> tuple[object, peak.Shape] | None:
    """(the served model, its input's shape) of the session's analysis, or None before any photo."""
    session = values.get("session")
    if session is None:
        return None
    served = state.model_of(session.key)
    return served, shape_of(served, session.key)


def one_sequence(served, shape: peak.Shape) -> bool:
    """Whether the model has one sequence of tokens through every block at this input (``Architecture.one_sequence``:
    what the inside views and the animation follow)."""
    return served.loaded.model.architecture(shape.height, shape.width).one_sequence


def sizes_advice(job: str, served, lang: str, budget: int, **options) -> str | None:
    """"Choose N px or less": the largest square input (in patches) at which ``job`` fits ``budget``, when the
    model can run at other sizes and one fits (None otherwise)."""
    if not cost.follows_size(served.loaded.config):          # windows, a relative position bias: its own size only
        return None
    side = peak.largest_side(job, served.loaded.model, budget, params=served.nbytes, **options)
    return None if side is None else t("advice.smaller_size", lang, side=side)


def need(job: str, served, shape: peak.Shape, lang: str, **options) -> Need:
    """The Need of ``job`` on ``shape``: its peak, its name, and its advice (a smaller size)."""
    def advice(lang: str, budget: int) -> str | None:
        return sizes_advice(job, served, lang, budget, **options)
    return Need(peak.of(job, shape, **options), f"job.{job}", (("side", max(shape.height, shape.width)),), advice)


# ---- each job's Need, from its handler's values -------------------------------------------------------------------

def analysis(values: dict) -> Need | None:
    """A new photo, model, preprocessing, size or language: one forward pass (when it is not cached) and every tab's
    first pictures."""
    lang = values.get("lang", "en")
    session = values.get("session")
    if "model" in values and (session is None or values.get("photo")):    # the photo or model chosen (or the API)
        size = int(values.get("input_size") or 0) if "input_size" in values else 0
        served = state.served(values["model"], lang, values.get("preprocess") or "own", size)
        return need("analysis", served, shape_of(served), lang)
    if session is None:
        return None
    key = session.key
    if "input_size" in values:
        served = state.served_source(key.model, lang, key.preprocess, values["input_size"])
    elif "preprocess" in values and isinstance(values["preprocess"], str):
        served = state.served_source(key.model, lang, values["preprocess"], key.size)
    else:
        served = state.model_of(key)
    return need("analysis", served, shape_of(served, key), lang)


def redraw(values: dict) -> Need | None:
    """A control or a click: the maps drawn again from the cached analysis (a rollout: every layer's head-fused
    matrix recomputed)."""
    found = session_shape(values)
    return None if found is None else need("render", *found, values.get("lang", "en"))


def explanation(values: dict) -> Need | None:
    """The Explain tab: every method's map for one class, one family of passes at a time (``state.explain_key``
    leaves out, with a sentence, the families that could never fit: the Need is the cheapest family's)."""
    found = session_shape(values)
    if found is None or (values.get("open_tab") not in (None, "explain")):
        return None
    served, shape = found
    return explaining(served, shape, values.get("lang", "en"))


def explaining(served, shape: peak.Shape, lang: str) -> Need:
    """Every method's map: the families of passes that fit the budget (or, when none does, the cheapest, refused
    with what would fit)."""
    families = families_of(methods_for(served.loaded.model.architecture(shape.height, shape.width)))
    fitting = tuple(f for f in families if peak.family(shape, f) <= BUDGET.capacity)
    return need("explain", served, shape, lang,
                families=fitting or (min(families, key=lambda f: peak.family(shape, f)),))


def trust(values: dict) -> Need | None:
    """The trust check: every method's map, then its curves; what would fit instead is the check without the sanity
    check, the fast one, or a smaller size."""
    found = session_shape(values)
    if found is None:
        return None
    served, shape = found
    lang = values.get("lang", "en")
    protocols = protocols_for(served.loaded.model, values.get("trust_depth") or FAST)
    sanity = bool(values.get("trust_sanity"))
    base = need("trust", served, shape, lang, protocols=protocols, sanity=sanity)
    cheaper = [(t("advice.without_sanity", lang), dict(protocols=protocols, sanity=False))] if sanity else []
    if len(protocols) > 1:
        cheaper.append((t("advice.fast_check", lang), dict(protocols=protocols_for(served.loaded.model, FAST),
                                                            sanity=False)))

    def advice(lang: str, budget: int) -> str | None:
        said = [text for text, options in cheaper if peak.of("trust", shape, **options) <= budget]
        size = base.advice(lang, budget) if base.advice is not None else None
        return " ".join([*said[:1], *([size] if size else [])]) or None
    return Need(base.bytes, base.what, base.values, advice)


def inside(part: str) -> Callable[[dict], Need | None]:
    """The Inside tab's ``part``: the views (a forward and a backward, then head importance a layer at a time), an
    ablation, or patching from a second photo."""
    def inside_need(values: dict) -> Need | None:
        found = session_shape(values)
        if found is None or not one_sequence(*found):          # the tab says why (no job runs)
            return None
        return need("inside", *found, values.get("lang", "en"), part=part)
    return inside_need


def comparison(values: dict) -> Need | None:
    """Compare: model B's analysis at its own size, and both models' maps on the photo."""
    found = session_shape(values)
    if found is None or not values.get("model_b"):
        return None
    served, shape = found
    lang = values.get("lang", "en")
    other = state.served(values["model_b"], lang)         # the models' guard: a gr.Error for what is not listed
    return need("compare", served, shape, lang, other=shape_of(other))


def animation(values: dict) -> Need | None:
    """The animation: a map per layer at the animation's size."""
    found = session_shape(values)
    if found is None or not one_sequence(*found):              # the tab says why (no job runs)
        return None
    return need("animation", *found, values.get("lang", "en"))


def features(values: dict) -> Need | None:
    """The Features tab (when it is open): one layer's patch features, and a second photo's forward pass."""
    found = session_shape(values)
    if found is None or values.get("open_tab") not in (None, "features"):
        return None
    second = bool(values.get("features_other")) or getattr(values.get("features_state"), "other", None) is not None
    return need("features", *found, values.get("lang", "en"), second=second)


def walk(values: dict) -> Need | None:
    """The Learn tab (when it is open): the guided walk, the model's modules one by one on the photo."""
    found = session_shape(values)
    if found is None or values.get("open_tab") not in (None, "learn"):
        return None
    return need("walk", *found, values.get("lang", "en"))


def open_tab(values: dict) -> Need | None:
    """The lazy tab that is open, drawn after a new analysis (Learn, Explain, Features)."""
    chosen = {"learn": walk, "explain": explanation, "features": features}.get(values.get("open_tab"))
    return None if chosen is None else chosen(values)


def snapshots(values: dict) -> Need | None:
    """A training run's snapshots on the photo, one model at a time (sized as the session's model)."""
    found = session_shape(values)
    if found is None or not values.get("snapshots"):
        return None
    return need("snapshots", *found, values.get("lang", "en"))


def zero_shot(values: dict) -> Need | None:
    """CLIP's scores of the typed texts."""
    found = session_shape(values)
    return None if found is None else need("zero_shot", *found, values.get("lang", "en"))


def concepts(values: dict) -> Need | None:
    """The Concepts tab: the photo's blocks up to the SAE's layer, or an edit's pass from there with every block's
    attention for the rollouts before and after; sized as an analysis of the photo (one forward pass that keeps every
    block's attention), which neither exceeds."""
    found = session_shape(values)
    return None if found is None else need("analysis", *found, values.get("lang", "en"))


def video_served(values: dict):
    """(the served video model, its clip's shape) the Video tab's values name, or None (no model or clip yet, or a
    photo model: the handler says so)."""
    lang = values.get("lang", "en")
    if not values.get("video_model") or not values.get("video_file"):
        return None
    served = state.served_source(state.model_source(values["video_model"], lang, state.video_models()), lang,
                                 shown=str(values["video_model"]).strip())
    if not served.architecture.video:
        return None
    return served, peak.ClipShape.of(served.loaded.model, params=served.nbytes)


def clip_values(shape: peak.ClipShape) -> tuple:
    return ("frames", shape.frames), ("side", max(shape.height, shape.width))


def video(values: dict) -> Need | None:
    """The Video tab's clip through a video model at its own size and frame count: one forward pass that reduces each
    step's attention in chunks as it comes and keeps the queries and keys in float16, the rollout, the first pictures
    (``peak.video``); the clip's decoding has its own bounds (``vit.video_file``). No smaller change fits: the model
    reads its own frame count and size."""
    found = video_served(values)
    if found is None:
        return None
    return Need(peak.of("video", found[1]), "job.video", clip_values(found[1]), None)


def video_classmap(values: dict) -> Need | None:
    """A class map of the analysed clip (``viz.video.classmap``): one forward pass whose every step autograd keeps and
    one backward (``peak.video_classmap``); what would fit instead: the other methods that do."""
    found = video_served(values)
    lang = values.get("lang", "en")
    if found is None or state.VIDEOS.find(video_key(values["video_model"], values["video_file"], lang)) is None:
        return None                                   # the handler says: analyse the clip first
    shape = found[1]
    method = values.get("video_method") if values.get("video_method") in VIDEO_METHODS else next(iter(VIDEO_METHODS))

    def advice(lang: str, budget: int) -> str | None:
        fitting = [t(f"video.method.{m}", lang) for m in VIDEO_METHODS
                   if m != method and peak.of("video_classmap", shape, method=m) <= budget]
        return t("advice.other_methods", lang, methods=", ".join(fitting)) if fitting else None
    return Need(peak.of("video_classmap", shape, method=method), "job.video_classmap", clip_values(shape), advice)


def video_check(values: dict) -> Need | None:
    """The deletion and insertion check of the analysed clip's class maps (``viz.video.faithfulness.ClipCheck``):
    ``CHECK_BATCH`` perturbed clips at a time through the plain model (``peak.video_check``). No smaller change fits:
    the model reads its own frame count and size, and the batch is the check's."""
    found = video_served(values)
    if found is None or state.VIDEOS.find(video_key(values["video_model"], values["video_file"],
                                                    values.get("lang", "en"))) is None:
        return None                                   # the handler says: analyse the clip first
    return Need(peak.of("video_check", found[1], batch=CHECK_BATCH), "job.video_check", clip_values(found[1]), None)


def api_analysis(values: dict) -> Need | None:
    return None if not values.get("photo") else analysis({**values, "session": None})


def api_explanation(values: dict) -> Need | None:
    if not values.get("photo"):
        return None
    served = state.served(values.get("model") or state.model_choices()[0], "en", values.get("preprocess") or "own")
    return explaining(served, shape_of(served), "en")


CONTROLS = "vit_explorer.views.on_control.<locals>.control_changed"
JOBS: dict[str, Callable[[dict], Need | None]] = {
    "vit_explorer.api.analyze": api_analysis,
    "vit_explorer.api.explain": api_explanation,
    "vit_explorer.views.page_analyze": analysis,
    "vit_explorer.views.switch_model": analysis,
    "vit_explorer.views.switch_preprocess": analysis,
    "vit_explorer.views.switch_size": analysis,
    "vit_explorer.views.switch_language": analysis,
    "vit_explorer.events.lazy_renderer.<locals>.show_open_tab": open_tab,
    CONTROLS: redraw,
    "vit_explorer.tabs.heads.pick_head": redraw,
    "vit_explorer.tabs.query.pick_patch": redraw,
    "vit_explorer.tabs.features.show": features,
    "vit_explorer.tabs.features.redraw": features,
    "vit_explorer.tabs.features.pick_patch": features,
    "vit_explorer.tabs.features.add_other": features,
    "vit_explorer.tabs.learn.show": walk,
    "vit_explorer.tabs.explain.explain": explanation,
    "vit_explorer.tabs.explain.explain_if_open": explanation,
    "vit_explorer.tabs.explain.zero_shot": zero_shot,
    "vit_explorer.tabs.compare.compare": comparison,
    "vit_explorer.tabs.compare.animate": animation,
    "vit_explorer.tabs.compare.open_snapshots": snapshots,
    "vit_explorer.tabs.trust.check": trust,
    "vit_explorer.tabs.inside.look_inside": inside("views"),
    "vit_explorer.tabs.inside.ablate_heads": inside("ablation"),
    "vit_explorer.tabs.inside.patch_from": inside("patching"),
    "vit_explorer.tabs.concepts.show": concepts,
    "vit_explorer.tabs.concepts.pick_sae": concepts,
    "vit_explorer.tabs.concepts.switch_latent": concepts,
    "vit_explorer.tabs.concepts.concepts_redraw": concepts,
    "vit_explorer.tabs.video.analyse": video,
    "vit_explorer.tabs.video.explain_clip": video_classmap,
    "vit_explorer.tabs.video.check_clip": video_check,
}
# handlers that run no job: a cost said before anything runs, a control's look, what a cached report redraws
LIGHT = frozenset({
    "vit_explorer.views.size_cost", "vit_explorer.tabs.attention.rest_head", "vit_explorer.tabs.compare.offer_second",
    "vit_explorer.tabs.compare.show_snapshot", "vit_explorer.tabs.inside.pick_layer",
    "vit_explorer.tabs.inside.click_lens", "vit_explorer.tabs.inside.click_dla", "vit_explorer.tabs.inside.click_heads",
    "vit_explorer.tabs.inside.mark_heads", "vit_explorer.tabs.inside.relabel",
    "vit_explorer.tabs.concepts.pick_latent", "vit_explorer.tabs.concepts.click_concept",
    "vit_explorer.tabs.concepts.click_patch", "vit_explorer.tabs.video.show_frame",
    "vit_explorer.tabs.video.offer_classes", "vit_explorer.tabs.video.show_classmap_frame",
    "vit_explorer.tabs.video.show_attention", "vit_explorer.tabs.video.show_step", "vit_explorer.tabs.video.show_heads",
    "vit_explorer.tabs.video.pick_patch", "vit_explorer.tabs.video.forget_check",
})


def name_of(fn: Callable) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


@contextmanager
def admitted(fn: Callable, values: dict):
    """Run a handler's job within the memory budget (its ``JOBS`` entry's Need; nothing for ``LIGHT`` ones), and a
    large redraw in the one slot of large redraws; ``Refusal`` when it does not fit, or when its visitor has gone."""
    name = name_of(fn)
    if name not in JOBS:                  # LIGHT, or a handler wired outside the page (tests/load: none of the page's)
        yield
        return
    heavy.check()
    try:
        found = JOBS[name](values)
    except gr.Error:                      # what the handler itself meets first, and says its own way (a bad model)
        found = None
    lang = values.get("lang", "en") if isinstance(values.get("lang"), str) else "en"
    if found is None:
        yield
        return
    large = found.what == "job.render" and session_tokens(values) > LARGE_REDRAW_TOKENS
    if large and not LARGE_REDRAW.acquire(blocking=False):
        raise Refusal("message.large_redraw_busy", lang)
    try:
        with BUDGET.reserve(found, lang):
            yield
    finally:
        if large:
            LARGE_REDRAW.release()


def session_tokens(values: dict) -> int:
    found = session_shape(values)
    return 0 if found is None else found[1].tokens


def api_job(fn: Callable) -> Callable:
    """An API handler admitted like the page's (its errors reach the client as they are)."""
    names = list(inspect.signature(fn).parameters)

    @functools.wraps(fn)
    def admitted_call(*args, **kwargs):
        values = {**dict(zip(names, args)), **kwargs}
        with admitted(fn, values):
            return fn(*args, **kwargs)
    return admitted_call


def unknown_handlers(fns) -> list[str]:
    """The handlers among ``fns`` (a page's wired handlers) that are in neither table."""
    return sorted(n for n in map(name_of, fns) if n not in JOBS and n not in LIGHT)

