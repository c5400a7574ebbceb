"""What the server keeps between requests: its settings, the limits, the caches and the model's turn.

Every cache is one ``viz.cache.Cache`` bounded in bytes and shared by every visitor: loaded models, analyses of
(photo, model, preprocessing) (a ``AnalysisKey``), explanations of (photo, model, preprocessing,
target), guided walks, snapshot series, trust checks and the inside views. The preprocessing (own, crop, squash)
is part of every key: the same photo through another preprocessing is another input, never another visitor's
analysis. A value dropped to make room is computed again when someone needs it, so memory stays bounded however
many people are on the page. Each browser tab keeps only a light ``Session`` (which analysis, what was clicked) in
``gr.State``; ``vit_explorer.sessions`` keeps them within their bytes.

The model's turn (``MODEL_TURN``): every path that runs a model holds it while the model runs, one at a time,
and never for more than about one analysis: a whole analysis, explanation, guided walk, zero-shot scoring,
comparison side or model warm-up, one snapshot of a training run, one step of a trust check or of the inside
views. It is never held while waiting for a cache (a value being computed by someone else), so nobody deadlocks.

Handlers here raise ``gr.Error`` with a message for people: the API shows it as it is, the page as one warning.
"""
from __future__ import annotations

import dataclasses
import re
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

import gradio as gr
import torch

import vit
from vit.image_file import ImageFileError, open_image
from vit.preprocess import CHOICES as PREPROCESS_CHOICES
from vit.video_file import VideoLimits, read_clip
from viz.analysis import cost
from viz.explain.explainer import explain_tensor, resolve_target
from viz.learn.walkthrough import walk
from viz.analysis.cost import LOCAL_MAX_TOKENS
from viz.analysis import analyze
from viz.analysis.serve import ATTENTION_DTYPE, ServedModel, analyze_photo, serve
from viz.cache import Cache, nbytes
from viz.i18n import t
from viz.records import Analysis
from viz.analysis import peak
from viz.controls import AnalysisKey, Session
from viz.explain.methods import METHODS, methods_for
from viz.explain.view import Explained, explanations
from viz.records import cached_bytes
from viz.video.view import clip_rollout

from . import heavy, limits

REFUSED_KEPT = 100              # browser sessions whose last refused photo is remembered (``REFUSED``)
ANALYSES_MEMORY = 200 * 2**20   # bytes of analyses kept for re-rendering, shared by all sessions (ViT-B/16: 14 MB each)
MODELS_MEMORY = 800 * 2**20     # bytes of loaded checkpoints (ViT-B/16: 346 MB; the newest always stays)
EXPLANATIONS_MEMORY = 32 * 2**20  # every method's map per (photo, model, preprocessing, target): a few kB each
WALKS_MEMORY = 16 * 2**20       # the guided walk per (photo, model, preprocessing): a ViT-B walk holds ~2 MB of arrays
SERIES_MEMORY = 64 * 2**20      # a training run's snapshots on one photo: small arrays per snapshot
TRUST_MEMORY = 8 * 2**20        # trust checks per (photo, model, target, method): a few kB each
INSIDE_MEMORY = 16 * 2**20      # inside views per (photo, model, target, …): ViT-B/16's ~150 kB (its DLA source maps)
VIDEOS_MEMORY = 128 * 2**20     # analysed clips per (video, model): VideoMAE-B/16's 16 frames ~40 MB (q, k in float16)
CLASSMAPS_MEMORY = 16 * 2**20   # class maps of clips: a few kB each (VideoMAE-B/16's 16 frames: 8×14×14 float32)
CLIP_CHECKS_MEMORY = 8 * 2**20  # checks of clips' class maps: their maps and curves, a few kB each
# What a public server reads of a visitor's video (vit.video_file's guards, each refused in one sentence): a short clip
PUBLIC_VIDEO_LIMITS = VideoLimits(max_bytes=20 * 2**20, max_pixels=1920 * 1080, max_seconds=60.0, max_frames=3_600,
                                  max_decode_seconds=20.0)
RENDER_CONCURRENCY = 4          # re-renders running at once (milliseconds of numpy each)
EXAMPLES_DIR = next((d for d in (Path(__file__).resolve().parent.parent / "examples",        # a clone
                                  Path(sys.prefix) / "share" / "vit-attention-explorer" / "examples")  # pip install
                     if d.is_dir()), None)   # the page's example photos; None: the page offers none


@dataclass
class Settings:
    """What ``python app.py`` decides at start-up (``vit_explorer.server``)."""
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))  # where the models run (--device)
    # Whether visitors may name any path or known model (in the Model box, Compare, the snapshots, the API), or only
    # the models listed. A public server (--public, --host 0.0.0.0, --share) must not let them read files by path or
    # download any model: launch() decides.
    any_model: bool = True
    # The models on offer as vit.load sources (paths, known names, Hub names: opaque strings); the first is the
    # server's own. The page names them by display_name, never by where they lie on the server.
    models: list[str] = field(default_factory=list)
    # The SAEs on offer (--sae): their folders, each named on the page by the folder's name (``listed_saes``). A public
    # server opens only these, through the models' guard (``sae_source``).
    saes: list[str] = field(default_factory=list)
    # The most tokens one analysis may have (the input size control's limit, --max-tokens); None: LOCAL_MAX_TOKENS on
    # a server for this machine alone, and on one others can reach as many as keep one analysis within a quarter of
    # ANALYSES_MEMORY (``token_budget``)
    max_tokens: int | None = None
    # Whether every model opened is checked against its own library's model of the same file (--no-verify: not; the
    # model line then says "unverified")
    verify: bool = True


SETTINGS = Settings()


class ModelTurn:
    """The model's turn: ``with MODEL_TURN:`` around a model run. Re-entrant (a handler holding it may call code
    that takes it again); ``taken`` counts how often it was taken (what a test of the promise reads). Every turn is a
    step at which a job whose visitor has gone stops (``heavy.Stopped``, before the model runs): while it waits for
    the turn, and when it gets it."""

    def __init__(self):
        self._lock = threading.RLock()
        self.taken = 0

    def __enter__(self):
        heavy.check()
        while not self._lock.acquire(timeout=1.0):
            heavy.check()
        try:
            heavy.check()
        except heavy.Stopped:
            self._lock.release()
            raise
        self.taken += 1
        return self

    def __exit__(self, *exc) -> None:
        self._lock.release()


MODEL_TURN = ModelTurn()


# ---- the caches -----------------------------------------------------------------------------------------------

def load_model(source: str) -> ServedModel:
    """Load and serve a checkpoint (its warm-up forward takes the model turn). Outside inference mode even when a
    page handler (which runs in it) asks: parameters made in inference mode could never take part in a backward
    pass, and the Explain tab needs one."""
    with torch.inference_mode(False):
        loaded = vit.load(source, verify=SETTINGS.verify)
        with MODEL_TURN:
            return serve(loaded, SETTINGS.device)


MODELS = Cache(load_model, MODELS_MEMORY, weigh=lambda served: served.nbytes)


def model_of(key: AnalysisKey) -> ServedModel:
    """The served checkpoint an analysis is of, turning photos into inputs as the key's preprocessing and size say
    (one loaded model per source whatever the preprocessing and size: ``ServedModel.with_preprocess`` and
    ``at_size`` share it)."""
    return MODELS.get(key.model).with_preprocess(key.preprocess).at_size(key.size)


def token_budget(cfg) -> int:
    """The most tokens one analysis may have on this server (``Settings.max_tokens``): on a server for this machine
    alone ``LOCAL_MAX_TOKENS``; on one others can reach, as many as keep what it keeps within a quarter of the
    analyses' memory and its peak (the forward pass and the first pictures, ``viz.analysis.peak``) within the memory
    budget. The heavier views say which sizes they accept (``vit_explorer.jobs``)."""
    if SETTINGS.max_tokens is not None:
        return SETTINGS.max_tokens
    if SETTINGS.any_model:                       # a server for this machine alone
        return LOCAL_MAX_TOKENS
    side = cfg.patch_size
    while cost.tokens_at(cfg, side + cfg.patch_size) <= LOCAL_MAX_TOKENS and \
            cost.kept_bytes(cfg, side + cfg.patch_size) <= ANALYSES_MEMORY // 4 and \
            peak.analysis(peak.Shape.of_config(cfg, side + cfg.patch_size, side + cfg.patch_size)) <= \
            limits.LIMITS.memory:
        side += cfg.patch_size
    return cost.tokens_at(cfg, side)


def analyze_key(key: AnalysisKey) -> Analysis:
    """(photo file, model source, preprocessing) -> its analysis: the one model call of a photo."""
    served = model_of(key)
    with MODEL_TURN:
        return analyze_photo(key.photo, served, MODEL_TURN)


ANALYSES = Cache(analyze_key, ANALYSES_MEMORY, weigh=cached_bytes)


def video_limits() -> VideoLimits:
    """The guards a visitor's video passes: a public server's (``PUBLIC_VIDEO_LIMITS``), or vit.video_file's own."""
    return VideoLimits() if SETTINGS.any_model else PUBLIC_VIDEO_LIMITS


def analyze_video(key: tuple[str, str]) -> tuple[Analysis, object]:
    """(uploaded video file, video model source) -> (its analysis, its readout's rollout (T', gh, gw) ndarray): the clip
    decoded under ``video_limits`` (a VideoFileError says why not), then the model's one call, its queries and keys
    kept in float16, each attention step a model turn."""
    path, source = key
    loaded = MODELS.get(source).loaded
    clip = read_clip(path, loaded.preprocess, limits=video_limits())
    with MODEL_TURN:
        a = analyze(loaded, clip, ATTENTION_DTYPE, turn=MODEL_TURN)     # each step a turn: a left job stops there
    return a, clip_rollout(a)


VIDEOS = Cache(analyze_video, VIDEOS_MEMORY, weigh=lambda found: cached_bytes(found[0]) + found[1].nbytes)
# a clip's class maps per (video, model source, method, class index): (T', gh, gw) each, computed by the Video tab
CLASSMAPS = Cache(None, CLASSMAPS_MEMORY)
# the deletion and insertion check of a clip's class maps per (video, model source, class index, methods): a
# viz.trust.TrustReport, run by the Video tab
CLIP_CHECKS = Cache(None, CLIP_CHECKS_MEMORY)


def walk_key(key: AnalysisKey):
    """(photo file, model source, preprocessing) -> the guided walk: the model's modules run one by one on the
    photo."""
    loaded = model_of(key).loaded
    image = open_image(key.photo)
    with MODEL_TURN, torch.inference_mode():
        return walk(loaded.model, loaded.preprocess, image, loaded.labels)


WALKS = Cache(walk_key, WALKS_MEMORY)


@dataclass(frozen=True)
class Pick:
    """What a visitor picked to explain, as typed (a cache key): a class name or index (None: the top-1), or with
    ``text`` one of the typed ``texts`` of a CLIP checkpoint. ``viz.analysis.resolve_target`` makes it a Target."""
    target: str | None = None
    texts: tuple[str, ...] = ()
    text: bool = False

    def resolve(self, loaded):
        """The ``Target`` (None: the top-1 class); ValueError for a class the model lacks, or texts without a
        text tower."""
        return resolve_target(loaded, self.target, self.texts, text=self.text)

    def require_classes(self, loaded, lang: str) -> None:
        """gr.Error in the visitor's language when the pick needs classes the model does not have: a backbone
        (DINOv3, DINO: features, no classifier head) has nothing to explain, check or look inside for, unless
        typed texts of a CLIP checkpoint are picked."""
        if not self.text and loaded.config.num_classes == 0:
            raise gr.Error(t("message.no_classes", lang), print_exception=False)


def explain_key(key: tuple[str, str, str, Pick]) -> Explained:
    """(photo, model source, preprocessing, pick) -> every method's map for that target (each family of model passes
    once, each in its own model turn: a job whose visitor has gone stops between them). A family whose peak memory
    could never fit the server's budget at this input is left out, its methods saying why and what would fit (a
    smaller size, the methods that do)."""
    *analysed, pick = key
    analysed = AnalysisKey(*analysed)
    served = model_of(analysed)
    loaded = served.loaded
    a = ANALYSES.get(analysed)
    x = loaded.preprocess.to_tensor(a.image)
    shape = peak.Shape.of(loaded.model, *x.shape[-2:], params=served.nbytes)

    def one_family(model, x, target, methods, labels):
        architecture = model.architecture(*x.shape[-2:])  # (a method without meaning here: explain_tensor says why)
        if any(peak.family(shape, METHODS[m].family) > limits.LIMITS.memory for m in methods
               if m in METHODS and METHODS[m].refusal(architecture) is None):
            raise ValueError(TOO_LARGE)                   # said in the visitor's language by ``explained``
        with MODEL_TURN:
            return explain_tensor(model, x, target, methods, labels)

    return explanations(one_family, loaded.model, x, pick.resolve(loaded), loaded.labels)


def method_name(method: str, lang: str) -> str:
    """A method's name as its title begins ("GAE" of "GAE: gradient × attention, over the layers")."""
    return re.split("[:：]", t(f"method_title.{method}", lang))[0]


TOO_LARGE = "\0too large"          # what an explanation records for a method left out for its memory


def said_in(e: Explained, key: AnalysisKey, lang: str) -> Explained:
    """The explanation with the methods left out for their memory saying why in ``lang`` (``too_large``)."""
    if TOO_LARGE not in e.failed.values():
        return e
    served = model_of(key)
    a = ANALYSES.get(key)
    shape = peak.Shape.of(served.loaded.model, *served.loaded.preprocess.to_tensor(a.image).shape[-2:],
                          params=served.nbytes)
    failed = {m: too_large(served, shape, m, peak.family(shape, METHODS[m].family), lang) if why == TOO_LARGE
              else why for m, why in e.failed.items()}
    return dataclasses.replace(e, failed=failed)


def too_large(served: ServedModel, shape, method: str, need: int, lang: str) -> str:
    """Why a method is left out at this input: its peak, the budget, and what would fit (a smaller size, the methods
    whose passes fit)."""
    family = METHODS[method].family
    budget = limits.LIMITS.memory
    side = peak.largest_side("explain", served.loaded.model, budget, params=served.nbytes, families=(family,))
    fits = [m for m in methods_for(served.loaded.model.architecture(shape.height, shape.width))
            if peak.family(shape, METHODS[m].family) <= budget]
    advice = [t("advice.smaller_size", lang, side=side)] if side is not None and cost.follows_size(
        served.loaded.config) else []
    if fits:
        advice.append(t("advice.other_methods", lang, methods="; ".join(method_name(m, lang) for m in fits)))
    return t("message.method_too_large", lang, method=method_name(method, lang),
             side=max(shape.height, shape.width), need=need / 2**30, budget=budget / 2**30,
             advice=" ".join(advice) or t("message.memory_no_advice", lang))


EXPLANATIONS = Cache(explain_key, EXPLANATIONS_MEMORY, weigh=lambda e: e.nbytes)


def series_key(key: tuple[str, str, str]):
    """(snapshot folder, photo, preprocessing) -> the run's frames on the photo (``viz.dynamics.DynamicsView``),
    each snapshot run in its own model turn. Imported here: reading snapshots needs the trainer's modules, which
    import torchvision (the server stays without it until someone opens a run)."""
    from viz.compare.snapshots import load_series
    from viz.compare.dynamics import DynamicsView
    folder, photo, preprocess = key
    return DynamicsView(load_series(folder, open_image(photo), preprocess=preprocess, turn=MODEL_TURN))


SERIES = Cache(series_key, SERIES_MEMORY, weigh=lambda view: nbytes(view.series))
TRUST = Cache(None, TRUST_MEMORY)   # MethodTrust per viz.trust.job.cache_key, filled by TrustJob
INSIDE = Cache(None, INSIDE_MEMORY)  # InsideReports per (view, photo, model, pick, contrast, …): vit_explorer.tabs.inside
REFUSED: dict[str, str] = {}        # browser session -> the last photo refused in it (a refusal is said once)


# ---- what the handlers ask for -----------------------------------------------------------------------------------

def display_name(source: str) -> str:
    """How the page names a model source: a file or folder on this machine by its own name (never where it lies),
    anything else (a known model, a Hub name, a file in weights/) as it is."""
    path = Path(source).expanduser()
    return path.name if (path.is_absolute() or source != path.name) and path.exists() else source


def listed_models() -> dict[str, str]:
    """The models on offer, {display name: source}: the one the server started with, then the files in weights/."""
    listed: dict[str, str] = {}
    for source in [*SETTINGS.models, *vit.list_local_checkpoints()]:
        listed.setdefault(display_name(source), source)
    return listed


def model_choices(extra: str | None = None) -> list[str]:
    """The Model box's choices: the display names of the models on offer, and ``extra`` (a path a visitor typed)."""
    choices = list(listed_models())
    return choices + [extra] if extra and extra not in choices else choices


def model_source(name, lang: str = "en", listed: dict[str, str] | None = None,
                 refusal: str = "message.models_listed_only") -> str:
    """THE models' guard: every handler that opens a checkpoint (the analysis, the Model box, Compare, the snapshots
    and their slider, the API) asks it for the source to load, and the Concepts tab for an SAE's folder
    (``sae_source``: ``listed`` the SAEs on offer, ``refusal`` their message). A listed display name gives its source
    (compared exactly, as a string); on a server only this machine reaches, anything else is a path or name to try
    as it is; on a public server, a gr.Error that is the same whatever was typed (nothing is looked up)."""
    name = "" if name is None else str(name).strip()
    listed = listed_models() if listed is None else listed
    if name in listed:
        return listed[name]
    if SETTINGS.any_model and name:
        return name
    raise gr.Error(t(refusal, lang), print_exception=False)


def listed_saes() -> dict[str, str]:
    """The SAEs on offer, {display name: folder}: each folder of ``Settings.saes`` by its own name (never where it
    lies), a second folder of the same name with a number after it."""
    listed: dict[str, str] = {}
    for folder in dict.fromkeys(SETTINGS.saes):
        name, n = Path(folder).name, 1
        while name in listed:
            n += 1
            name = f"{Path(folder).name} ({n})"
        listed[name] = folder
    return listed


def example_video_models() -> dict[str, str]:
    """The video models bundled with the examples (``examples/video/*.pt``: the moving-squares toy), {display name:
    file}: offered in the Video tab only (the photo tabs read photos)."""
    if EXAMPLES_DIR is None:
        return {}
    return {p.name: str(p) for p in sorted((EXAMPLES_DIR / "video").glob("*.pt"))}


def video_models() -> dict[str, str]:
    """The Video tab's models on offer: the listed models, then the bundled example video models."""
    return {**example_video_models(), **listed_models()}


def example_clips() -> list[str]:
    """The bundled moving-squares clips (``examples/video/clips/<direction>/*.mp4``), the Video tab's examples."""
    if EXAMPLES_DIR is None:
        return []
    return sorted(str(p) for p in (EXAMPLES_DIR / "video" / "clips").glob("*/*.mp4"))


def sae_source(name, lang: str = "en") -> str:
    """The folder of the SAE a visitor named, through the models' guard (``model_source``): a listed SAE's display
    name, or on a server only this machine reaches a folder typed as it is."""
    return model_source(name, lang, listed_saes(), "message.saes_listed_only")


def example_photos() -> list[str]:
    if EXAMPLES_DIR is None:
        return []
    return sorted(str(p) for p in EXAMPLES_DIR.glob("*") if p.suffix.lower() in (".jpg", ".jpeg", ".png", ".webp"))


def served(name: str, lang: str = "en", preprocess: str = "own", size: int = 0) -> ServedModel:
    """The loaded model a visitor named (``model_source``) with the ``preprocess`` choice (own, crop, squash) at the
    input ``size`` (0: its own), or a gr.Error saying why not (not on offer, not a checkpoint, not found, no such
    preprocessing, a size its positions cannot follow or beyond the server's token budget)."""
    return served_source(model_source(name, lang), lang, preprocess, size, shown=str(name).strip())


def served_source(source: str, lang: str = "en", preprocess: str = "own", size: int = 0,
                  shown: str | None = None) -> ServedModel:
    """``served`` for a source the models' guard already gave (a session's ``key.model``, never a visitor's text);
    ``shown`` is how a message names the model (its display name by default, never where it lies)."""
    if preprocess not in PREPROCESS_CHOICES:
        raise gr.Error(t("message.preprocess_unknown", lang, choice=preprocess, choices=", ".join(PREPROCESS_CHOICES)),
                       print_exception=False)
    try:
        model = MODELS.get(source).with_preprocess(preprocess)
    except (ValueError, OSError) as err:  # vit.load: bad checkpoint (ValueError), nothing found (FileNotFoundError)
        raise gr.Error(t("message.model_failed", lang, model=shown or display_name(source), error=err),
                       print_exception=False) from None
    return sized(model, size, lang)


# Why a model runs at its own size only (its config's ``fixed_size``) -> (the note beside the size control, the message
# when a visitor asks for another size)
FIXED_SIZE = {"relative_bias": ("note.input_size_fixed", "message.input_size_fixed"),
              "windows": ("note.input_size_windows", "note.input_size_windows")}


def sized(model: ServedModel, size: int, lang: str = "en") -> ServedModel:
    """``model`` at the input ``size`` (0: its own), or a gr.Error: a size its positions cannot follow, not a multiple
    of its patch size, or beyond the server's token budget."""
    size = int(size or 0)
    if not size or size == model.native_side:
        return model
    cfg = model.loaded.config
    if not cost.follows_size(cfg):
        raise gr.Error(t(FIXED_SIZE[cfg.fixed_size][1], lang, side=model.native_side), print_exception=False)
    budget = token_budget(cfg)
    if size % cfg.patch_size or cost.tokens_at(cfg, size) > budget:
        raise gr.Error(t("message.input_size_refused", lang, side=size, patch=cfg.patch_size, budget=budget,
                         largest=cost.largest_side(cfg, budget)), print_exception=False)
    return model.at_size(size)


def analysis(key: AnalysisKey, lang: str = "en") -> Analysis:
    """The cached analysis of (photo file, model source, preprocessing), computed if it is not (or no longer)
    cached."""
    try:
        return ANALYSES.get(key)
    except ImageFileError as err:
        raise gr.Error(str(err), print_exception=False) from None
    except (ValueError, OSError) as err:  # the model could not be loaded again, the photo file is gone
        raise gr.Error(t("message.analyse_again", lang, error=err), print_exception=False) from None


def refuse_without_one_sequence(session: Session | None, message: str, lang: str = "en") -> None:
    """A gr.Error saying the catalogue's ``message`` (why, in one sentence) when the session's model has no one sequence
    of tokens through every layer (``vit.architecture.Architecture.one_sequence``: its blocks change grid or attend
    inside windows): for the views that read one."""
    if session is not None and not analysis(session.key, lang).architecture.one_sequence:
        raise gr.Error(t(message, lang), print_exception=False)


def session_analysis(session: Session | None, lang: str = "en") -> Analysis | None:
    """The analysis a browser tab shows, or None (and one warning) before any photo."""
    if session is None:
        gr.Warning(t("message.no_analysis", lang))
        return None
    return analysis(session.key, lang)


def explained(key: AnalysisKey, pick: Pick, lang: str = "en") -> Explained:
    """The cached explanation for (photo, model, preprocessing) and pick; a class the model lacks, or texts on a
    checkpoint without a text tower, is a gr.Error in the visitor's language."""
    try:
        return said_in(EXPLANATIONS.get((*key, pick)), key, lang)
    except ValueError as err:
        raise gr.Error(t("message.target_failed", lang, error=err), print_exception=False) from None
