"""What the explorer's map tabs show, from one cached analysis and the values of its controls. No Gradio here,
and no model: the page (``vit_explorer``) runs the model once per (photo, model) through
``viz.analysis.serve`` and caches the ``Analysis``; each browser tab keeps a light ``Session`` (which analysis,
which patch was clicked). Every slider move or click calls one of the ``*_view`` functions below, which only
re-render from the cached arrays (``viz.panels``). Layers, blocks and heads are 0-based everywhere, as in the
panels' own labels.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, NamedTuple, Sequence

from PIL import Image

from vit.image_file import open_image

from . import panels
from .drawing import render
from .architecture import family_summary, stages, to_markdown
from .maps.layout import pixel_to_patch
from .panels.heads import HeadsLayout
from .panels.windows import StagesLayout
from .i18n import language, t
from . import window_views
from .records import Analysis, WindowAnalysis

if TYPE_CHECKING:
    from .analysis.serve import ServedModel

QUERY_PHOTO_SCALE = 2         # the photo to click on in the Patch query tab is shown at twice the model's size,
QUERY_PHOTO_MAX = 1024        # but no larger than this (or the model's size, when that is larger)
DISPLAY_SIZE = 640            # longer side of the page's maps in pixels: sharp in a ~700 px panel, ~10 ms to draw
HEADS_WIDTH = 1100            # the heads grid's width in pixels, colour bar included
NARROW_SIZE = 448             # longer side of every map on a narrow screen (a phone shows it ~360 CSS pixels wide)
NARROW_HEADS_WIDTH = 560      # the heads grid's width on a narrow screen (bands of a few layers)
CROP_SIZE = 320               # longer side of the upload with the crop outlined


@dataclass(frozen=True)
class Controls:
    """The values of the app's controls, already 0-based. ``head`` None means the mean of heads."""
    fusion: str = "mean"
    discard_ratio: float = 0.9
    start_layer: int = 0
    opacity: float = 0.6
    mask_artifacts: bool = False
    layer: int = -1
    head: int | None = None
    dino_mask: bool = False
    rolled: bool = False
    shared_scale: bool = False     # one colour scale over all layers (attention and patch query)
    patch_true: bool = False       # one colour per patch, grid lines, no smoothing
    narrow: bool = False           # drawn for a phone-sized screen: larger text, fewer columns (viz.drawing.screens)


class AnalysisKey(NamedTuple):
    """What one analysis is of, and the key of every cache that follows from it: the same photo through another
    preprocessing, or at another input size, is another input, so another analysis (and explanation, walk,
    comparison)."""
    photo: str                                 # the photo file
    model: str                                 # the model source (vit.load)
    preprocess: str = "own"                    # how the photo became the input: vit.preprocess.CHOICES
    size: int = 0                              # the square input's side in pixels; 0: the checkpoint's own input


@dataclass(frozen=True)
class Session:
    """One browser tab: which analysis it shows and what was clicked on it. Light on purpose: the analysis
    itself (ViT-B/16: 14 MB of maps) lives in the server's cache of analyses, shared by every tab that shows
    the same photo with the same model and preprocessing and bounded in bytes (``cached_bytes``), found by
    ``key``."""
    key: AnalysisKey                           # (photo file, model source, preprocessing) the analysis is of
    query: tuple[int, int] | None = None       # patch (row, col) of the patch query; None: the default one
    heads_layout: HeadsLayout | StagesLayout | None = None   # geometry of the last heads grid, to map clicks to cells


def clamp_controls(c: Controls, depth: int, heads: int | tuple[int, ...]) -> Controls:
    """Controls valid for a model of ``depth`` blocks and ``heads`` heads (a Swin: per block; API callers may pass
    any numbers)."""
    def block(i: int) -> int:
        i = int(i)
        return min(max(depth + i if i < 0 else i, 0), depth - 1)
    if isinstance(heads, tuple):                      # a Swin: the chosen block's heads
        heads = heads[block(c.layer)]
    head = None if c.head is None else min(max(int(c.head), 0), heads - 1)
    discard = min(max(float(c.discard_ratio), 0.0), 0.99)
    opacity = min(max(float(c.opacity), 0.0), 1.0)
    return replace(c, layer=block(c.layer), start_layer=block(c.start_layer), head=head,
                   discard_ratio=discard, opacity=opacity)


def top_classes(a: Analysis, k: int = 5) -> dict[str, float]:
    """The k most probable classes as {label: probability} (what gr.Label shows)."""
    return dict(a.top_k(k))


def summary(a: Analysis, lang: str = "en", preprocess=None, assumptions: Sequence[str] = (), verified=None) -> str:
    """One line on what the model did with this photo, in Markdown, in ``lang``. ``preprocess`` (the
    ``vit.Preprocess`` the analysis used) names what the input was: a crop, the squashed photo, or a crop of the
    stretched photo; None: a crop. ``assumptions`` (``vit.LoadedModel.assumptions``): what the loader assumed rather
    than read, listed below the line, each in ``lang``. ``verified`` (``vit.LoadedModel.verified``): whether the
    load was checked against its own library, said after the line."""
    checked = f" {verified_text(verified, lang)}" if verified is not None else ""
    if isinstance(a, WindowAnalysis):
        line = window_views.summary(a, lang, input_kind(preprocess)) + checked
        listed = "".join(f"\n- {assumed_text(x, lang)}" for x in assumptions)
        return f"{line}\n\n{t('summary.assumed', lang)}{listed}" if assumptions else line
    H, W = a.input_size
    gh, gw = a.grid
    prefix = t("summary.prefix", lang, count=a.num_prefix) if a.num_prefix else ""
    forward = a.timings.get("forward")
    took = t("summary.took", lang, ms=forward * 1000) if forward is not None else ""
    line = t("summary.line", lang, model=a.model_name, width=W, height=H, input=t(input_kind(preprocess), lang),
             grid=f"{gh}×{gw}", prefix=prefix, tokens=a.num_prefix + gh * gw, layers=a.depth, heads=a.heads,
             took=took) + checked
    if not assumptions:
        return line
    listed = "".join(f"\n- {assumed_text(x, lang)}" for x in assumptions)
    return f"{line}\n\n{t('summary.assumed', lang)}{listed}"


def verified_text(verified, lang: str = "en") -> str:
    """``vit.LoadedModel.verified`` in ``lang``: "Checked against timm 1.0.31: Δ 3e-07.", "Unverified.", "Not verified
    (timm is not installed).", and which tokens the maps read out."""
    if verified.status == "verified":
        return t("verified.checked", lang, library=verified.library, version=verified.version,
                 delta=verified.delta_text)
    if verified.status == "unverified":
        return t("verified.unverified", lang)
    return t("verified.not_verified", lang, reason=t(f"verified.reason.{verified.key}", lang, **verified.fields))


def assumed_text(assumption: str, lang: str = "en") -> str:
    """One of ``vit.LoadedModel.assumptions`` in ``lang`` (its catalogue key ``assumption.<key>``; a plain sentence
    without a key as it is)."""
    key = getattr(assumption, "key", None)
    return t(f"assumption.{key}", lang, **assumption.fields) if key else str(assumption)


def input_kind(preprocess) -> str:
    """The catalogue key naming a model input made by ``preprocess``: "summary.crop" (a crop of the photo, its
    aspect ratio kept), "summary.squashed" (the whole photo stretched to the input), "summary.stretched_crop"
    (the photo stretched, then its centre cut out) or "summary.aspect" (NaFlex: the whole photo at its own aspect
    ratio, the input's shape following it)."""
    if preprocess is not None and preprocess.varies:
        return "summary.aspect"
    if preprocess is None or not preprocess.stretches:
        return "summary.crop"
    return "summary.squashed" if tuple(preprocess.resize) == tuple(preprocess.crop) else "summary.stretched_crop"


def cached_bytes(a: Analysis) -> int:
    """Memory the server's cache spends on one analysis: what recomputes its attention (the residual stream, the
    readout rows and log-sum-exps, the head-fused copies while small) or the attention itself, the token norms, the
    mean distances and the cropped photo (what bounds the cache of analyses)."""
    if isinstance(a, WindowAnalysis):
        return window_views.cached_bytes(a)
    width, height = a.image.size
    if a.source is not None:
        attention = a.source.nbytes
    else:
        stream = 0 if a.stream is None else a.stream.nbytes
        attention = a.attention.nbytes + sum(f.nbytes for f in a.fused.values()) + stream
    return (attention + a.token_norms.nbytes + sum(d.nbytes for d in a.mean_distance.values())
            + width * height * len(a.image.getbands()))


def architecture(model: ServedModel, a: Analysis, lang: str = "en") -> str:
    """The Model tab: the family (tokens, pooling, position scheme), stages with this photo's tensor shapes and
    parameter counts, and the analysis's cache size, in ``lang`` (a Swin: its stages, windows and heads)."""
    if isinstance(a, WindowAnalysis):
        return window_views.architecture(model, a, lang)
    cfg = model.loaded.config
    T = a.num_prefix + a.grid[0] * a.grid[1]
    full = a.depth * a.heads * T * T * 4
    return (to_markdown(stages(cfg, a.input_size, lang), model.loaded.name, family_summary(cfg, lang), lang)
            + "\n\n" + t("arch.cached", lang, depth=a.depth, heads=a.heads, megabytes=cached_bytes(a) / 2**20,
                          full=full / 2**20))


def display(c: Controls, lang: str = "en", size: int = DISPLAY_SIZE) -> panels.Display:
    """How the page draws its maps for these controls: display size (``NARROW_SIZE`` on a narrow screen, where
    every map fills the phone's width), language, opacity, patch-true."""
    return panels.Display(size=NARROW_SIZE if c.narrow else size, lang=language(lang), alpha=c.opacity,
                          patch_true=c.patch_true, narrow=c.narrow)


def rollout_view(a: Analysis, c: Controls, lang: str = "en") -> tuple[Image.Image, str | None]:
    """(the query's rollout at display size, its note: artifacts masked or dominating, else None)."""
    if isinstance(a, WindowAnalysis):
        return window_views.rollout_view(a, c, lang)
    p = panels.rollout_map_panel(a, c.fusion, c.discard_ratio, c.start_layer, c.mask_artifacts,
                                 display=display(c, lang))
    return p.image, p.note


def attention_view(a: Analysis, c: Controls, lang: str = "en") -> tuple[Image.Image, str | None]:
    """(one layer's attention of the query at display size, DINO's outline when asked, its note)."""
    if isinstance(a, WindowAnalysis):
        return window_views.attention_view(a, c, lang)
    p = panels.attention_map_panel(a, c.layer, c.head, c.mask_artifacts, 0.6 if c.dino_mask else None,
                                   c.shared_scale, display=display(c, lang))
    return p.image, p.note


def heads_view(s: Session, a: Analysis, c: Controls, lang: str = "en") -> tuple[Session, Image.Image, str | None]:
    """The layers × heads grid over the photo, each layer on its own colour scale (or one for all with the shared
    scale), the current (layer, head) framed; the session remembers its geometry for clicks (a Swin: one grid per
    stage)."""
    if isinstance(a, WindowAnalysis):
        return window_views.heads_view(s, a, c, lang)
    selected = None if c.head is None else (c.layer, c.head)
    g = panels.heads_grid_panel(a, NARROW_HEADS_WIDTH if c.narrow else HEADS_WIDTH, c.mask_artifacts,
                                selected=selected, display=display(c, lang), shared_scale=c.shared_scale)
    scale = t("note.heads_scale" if c.shared_scale else "note.heads_layer_scale", lang, tokens=g.tokens)
    note = " ".join(n for n in (scale, g.note) if n)
    return replace(s, heads_layout=g.placement), g.image, note


# One helper thread draws half of a new photo's pictures while the caller draws the rest (``pictures``).
_HELPER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pictures")
_HELPER_FREE = threading.Semaphore(1)


def pictures(s: Session, a: Analysis, c: Controls, lang: str = "en") -> dict:
    """Every picture of an analysis and its notes, by the page's output names: "session" (with the heads grid's
    geometry), "rollout", "attention", "heads", "query_photo", "query_out", "query_in", "distance", "norms",
    "norm_curves", and the notes "rollout_note", "attention_note", "heads_note", "query_note" ("" for none).

    The rollout, attention, distance and token-norm panels are drawn on a helper thread while the caller draws
    the heads grid and the patch query: their heavy steps (Pillow's resizing, colouring and mixing, numpy) let go
    of the GIL, so on two cores a new photo's pictures take about 60 % of the time. While the helper draws for
    someone else, everything is drawn here, one after another: nobody waits in a queue."""
    if isinstance(a, WindowAnalysis):
        return window_views.pictures(s, a, c, lang, query_photo(s, a))
    def helper_part():
        return (rollout_view(a, c, lang), attention_view(a, c, lang), distance_view(a, lang, c.narrow),
                norms_views(a, lang, c.narrow))

    helper = _HELPER.submit(_releasing, helper_part) if _HELPER_FREE.acquire(blocking=False) else None
    s, heads, heads_note = heads_view(s, a, c, lang)
    query_out, query_in, query_note = query_views(s, a, c, lang)
    clickable = query_photo(s, a)
    (rollout, rollout_note), (attention, attention_note), distance, (norms, norm_curves) = \
        helper.result() if helper is not None else helper_part()
    return dict(session=s, rollout=rollout, rollout_note=rollout_note or "", attention=attention,
                attention_note=attention_note or "", heads=heads, heads_note=heads_note or "", query_photo=clickable,
                query_out=query_out, query_in=query_in, query_note=query_note or "", distance=distance, norms=norms,
                norm_curves=norm_curves)


def _releasing(part):
    try:
        return part()
    finally:
        _HELPER_FREE.release()


def head_at(s: Session, x: float, y: float) -> tuple[int, int] | None:
    """(layer, head) of the heads-grid thumbnail under pixel (x, y), or None (labels, gaps, no grid yet)."""
    return s.heads_layout.cell_at(x, y) if s.heads_layout is not None else None


def head_info(a: Analysis, layer: int, head: int, mask_artifacts: bool = False, lang: str = "en") -> str:
    """One line on a head: its layer, head, mean attention distance and entropy (a Swin: of the average pool's
    attention, ``window_views.head_info``)."""
    if isinstance(a, WindowAnalysis):
        return window_views.head_info(a, layer, head, lang)
    stats = panels.head_stats(a, mask_artifacts)
    return t("note.head_info", lang, layer=layer, head=head, distance=float(stats.mean_distance[layer, head]),
             entropy=float(stats.entropy_bits[layer, head]), share=float(stats.entropy_share[layer, head]),
             maximum=stats.max_bits)


def query_photo_side(a: Analysis) -> int:
    """The longer side of the photo to click on: ``QUERY_PHOTO_SCALE``× the model's input, at most
    ``QUERY_PHOTO_MAX`` (a large input is shown at its own size)."""
    side = max(a.image.size)
    return min(QUERY_PHOTO_SCALE * side, max(QUERY_PHOTO_MAX, side))


def query_photo(s: Session, a: Analysis) -> Image.Image:
    """The photo to click on, enlarged so patches are easy to hit (``query_photo_side``), the queried one framed."""
    row, col = s.query or panels.default_query(a)
    enlarged = panels.display_photo(a, query_photo_side(a), Image.Resampling.LANCZOS)  # = photo()'s at 2×
    return render.mark_patch(enlarged, row, col, a.grid)


def select_patch(s: Session, a: Analysis, x: float, y: float) -> Session:
    """Pixel (x, y) clicked on ``query_photo`` -> session whose query is the patch under it."""
    w, h = a.image.size
    scale = query_photo_side(a) / max(w, h)
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    return replace(s, query=pixel_to_patch(x, y, size, a.grid))


def query_views(s: Session, a: Analysis, c: Controls, lang: str = "en") -> tuple[Image.Image, Image.Image, str | None]:
    """(where the queried patch attends, who attends to it, a note) in the control's layer and head, or rolled
    out. A masked artifact patch is shown unmasked, and the note says why."""
    if isinstance(a, WindowAnalysis):
        return window_views.query_views(s, a, c, lang)
    row, col = s.query or panels.default_query(a)
    options = dict(layer=c.layer, head=c.head, rolled=c.rolled, fusion=c.fusion, discard_ratio=c.discard_ratio,
                   start_layer=c.start_layer, shared_scale=c.shared_scale, display=display(c, lang, DISPLAY_SIZE // 2))
    try:
        out, into = panels.query_map_panels(a, row, col, mask_artifacts=c.mask_artifacts, **options)
        note = out.note
    except ValueError:               # the queried patch is one of the masked artifact tokens
        out, into = panels.query_map_panels(a, row, col, mask_artifacts=False, **options)
        note = t("note.query_masked", lang, row=row, col=col)
    return out.image, into.image, note


def crop_view(photo: str, model: ServedModel, lang: str = "en") -> tuple[Image.Image, str]:
    """The upload with the crop the model saw outlined, and a note (enlarged tiny photo, else what the box is)."""
    loaded = model.loaded
    image = open_image(photo)
    picture, note = panels.crop_panel(image, loaded.preprocess, CROP_SIZE, language(lang))
    crop_h, crop_w = loaded.preprocess.input_size(image.size)      # open_image: already upright
    return picture, note or t("note.crop", lang, crop=f"{crop_w}×{crop_h}")


def distance_view(a: Analysis, lang: str = "en", narrow: bool = False) -> Image.Image:
    if isinstance(a, WindowAnalysis):
        return window_views.distance_view(a, lang, narrow)
    return panels.distance_panel(panels.mean_distance_of(a), a.grid, a.patch_size, lang=language(lang), narrow=narrow)


def norms_views(a: Analysis, lang: str = "en", narrow: bool = False) -> tuple[Image.Image, Image.Image]:
    """(token norms per layer as thumbnails with their colour bar, norms against depth as curves)."""
    if isinstance(a, WindowAnalysis):
        return window_views.norms_views(a, lang, narrow)
    lang = language(lang)
    return (panels.norms_grid_panel(a, lang=lang, narrow=narrow),
            panels.token_norm_curves_panel(a, lang=lang, narrow=narrow))
