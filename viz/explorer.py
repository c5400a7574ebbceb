"""The page's Gradio-free side above the tabs' slices: the line on what the model did with a photo (``summary``, with
what the loader assumed), the photo with its crop outlined (``crop_view``), and every map tab's pictures of a new
analysis drawn at once, two at a time (``pictures``: the Rollout, Attention, All heads, Patch query, Attention
distance and Token norms slices). No Gradio and no model here: the page (``vit_explorer``) runs the model once per
(photo, model) through ``viz.analysis.serve`` and caches the ``Analysis``; each browser tab keeps a light
``viz.controls.Session``. Layers, blocks and heads are 0-based everywhere, as in the panels' own labels.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Sequence

from PIL import Image

from vit.image_file import open_image

from .attention.view import attention_view
from .controls import Controls, Session
from .distance.view import distance_view
from .heads.view import heads_view
from .i18n import language, t
from .norms.view import norms_views
from .panels.crop import crop_panel
from .query.view import query_photo, query_views
from .records import Analysis
from .rollout.view import rollout_view

if TYPE_CHECKING:
    from .analysis.serve import ServedModel

CROP_SIZE = 320               # longer side of the upload with the crop outlined


def top_classes(a: Analysis, k: int = 5) -> dict[str, float]:
    """The k most probable classes as {label: probability} (what gr.Label shows)."""
    return dict(a.top_k(k))


def summary(a: Analysis, lang: str = "en", preprocess=None, assumptions: Sequence[str] = (), verified=None) -> str:
    """One line on what the model did with this photo, in Markdown, in ``lang``. ``preprocess`` (the
    ``vit.Preprocess`` the analysis used) names what the input was: a crop, the squashed photo, or a crop of the
    stretched photo; None: a crop. ``assumptions`` (``vit.LoadedModel.assumptions``): what the loader assumed rather
    than read, listed below the line, each in ``lang``. A model of several stages or with windows is said in its
    stages' grids and its windows. ``verified`` (``vit.LoadedModel.verified``): whether the load was checked against
    its own library, said after the line."""
    H, W = a.input_size
    gh, gw = a.grid
    forward = a.timings.get("forward")
    took = t("summary.took", lang, ms=forward * 1000) if forward is not None else ""
    arch = a.architecture
    if arch.one_sequence:
        prefix = t("summary.prefix", lang, count=a.num_prefix) if a.num_prefix else ""
        line = t("summary.line", lang, model=a.model_name, width=W, height=H, input=t(input_kind(preprocess), lang),
                 grid=f"{gh}×{gw}", prefix=prefix, tokens=a.num_prefix + gh * gw, layers=a.depth, heads=a.heads,
                 took=took)
    else:
        grids = ", ".join("×".join(map(str, arch.blocks[blocks[0]].grid)) for blocks in arch.stages)
        window = next((b.window for b in arch.blocks if b.window is not None), None)
        line = t("summary.stages", lang, model=a.model_name, width=W, height=H, input=t(input_kind(preprocess), lang),
                 stages=grids, layers=a.depth, took=took,
                 windows="" if window is None else t("summary.windows", lang, window=f"{window[0]}×{window[1]}"))
    if verified is not None:
        line += f" {verified_text(verified, lang)}"
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
    if not key:
        return str(assumption)
    fields = dict(assumption.fields)
    if "readout" in fields and "description" in fields:       # the readout said in the page's language
        fields["description"] = t(f"readout.{fields['readout']}", lang)
    return t(f"assumption.{key}", lang, **fields)


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


def crop_view(photo: str, model: ServedModel, lang: str = "en") -> tuple[Image.Image, str]:
    """The upload with the crop the model saw outlined, and a note (enlarged tiny photo, else what the box is)."""
    loaded = model.loaded
    image = open_image(photo)
    picture, note = crop_panel(image, loaded.preprocess, CROP_SIZE, language(lang))
    crop_h, crop_w = loaded.preprocess.input_size(image.size)      # open_image: already upright
    return picture, note or t("note.crop", lang, crop=f"{crop_w}×{crop_h}")
