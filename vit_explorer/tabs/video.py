"""The Video tab: a visitor's clip through a video model (VideoMAE, TimeSformer, ViViT, V-JEPA 2): each sampled frame
with where the readout looks (its slice, ``viz.video``), a frame slider, the top-5 classes, the heads' attention
distance in time and in space. The clip comes only from the upload folder (``door.uploaded_photo``), the model only
through the models' guard (``state.model_source``); decoding passes ``state.video_limits`` (a public server reads a
short clip only) and every refusal is one sentence. The analysis is a heavy job of its own group; the slider draws
from the cached analysis, never runs the model. Below, a class map per frame (``viz.video.classmap``) for one of the
clip's top-5 classes, by a method of its table, a heavy job of the same group (its own block), and the deletion and
insertion check of the maps drawn for that class (``viz.video.faithfulness``, its own block at the end)."""
from __future__ import annotations

import math
from pathlib import Path

import gradio as gr
import numpy as np
import torch

from vit.explain.targets import ClassTarget
from viz.drawing.plots import figure_to_image
from viz.explorer import verified_text
from viz.i18n import t
from viz.trust.verdicts import ProtocolsReport
from viz.trust.view import verdict_kind, verdict_words
from viz.video.attention import attention_note, clip_strip, head_label, heads_picture, patch_at, patch_maps, \
    patch_token, readout_frames
from viz.video.classmap import VIDEO_METHODS, clip_maps, scale_clip
from viz.video.faithfulness import BATCH, ClipCheck, curves_figure
from viz.video.view import (captioned, distance_picture, frame_caption, frame_maps, frame_overlay, frame_overlays,
                            frames_strip)

from .. import state
from ..components import note, picture
from ..door import uploaded_photo

OUTPUTS = ("video_note", "video_top5", "video_frame", "video_picture", "video_strip", "video_distance")
FRAME_SIZE = 448          # the chosen frame's longer side on the page
STRIP_CELL = 112          # each frame's in the strip


def build(page) -> None:
    i18n = page.i18n
    gr.Markdown(i18n("about.video"))
    with gr.Row(equal_height=True):
        page.add("video_model", gr.Dropdown(list(state.video_models()), value=None, allow_custom_value=True, scale=3,
                                            label=i18n("video.model"), elem_id="video-model"))
        page.add("video_file", gr.File(label=i18n("video.upload"), file_types=["video"], type="filepath", scale=3,
                                       elem_id="video-file"))
        page.add("video_button", gr.Button(i18n("video.button"), variant="primary", scale=1, min_width=90,
                                           elem_id="video-button"))
    build_examples(page)
    page.add("video_note", gr.Markdown(elem_id="video-note", elem_classes=["note"]))
    with gr.Row():
        page.add("video_picture", picture(i18n, "picture.video_frame", enlarge=False, elem_id="video-picture"))
        page.add("video_top5", gr.Label(num_top_classes=5, label=i18n("video.top5")))
    page.add("video_frame", gr.Slider(0, 1, value=0, step=1, label=i18n("video.frame"), interactive=False,
                                      elem_id="video-frame"))
    page.add("video_strip", picture(i18n, "picture.video_strip", enlarge=False, elem_id="video-strip"))
    page.add("video_distance", picture(i18n, "picture.video_distance", enlarge=False, elem_id="video-distance"))
    build_attention(page)
    build_classmaps(page)
    build_check(page)


def video_key(video_model, video_file, lang: str) -> tuple[str, str]:
    """(the uploaded video's path, the model's source): the upload folder's and the models' guards first."""
    if not video_file:
        raise gr.Error(t("message.video_none", lang), print_exception=False)
    return uploaded_photo(video_file), state.model_source(video_model, lang, state.video_models())


@torch.inference_mode()
def analyse(video_model, video_file, lang, narrow=False):
    """The clip through the chosen video model (a photo model is refused, naming it): every output of the tab."""
    path, source = video_key(video_model, video_file, lang)
    served = state.served_source(source, lang, shown=str(video_model).strip())
    if not served.architecture.video:
        raise gr.Error(t("message.video_needs_model", lang, name=str(video_model).strip()), print_exception=False)
    try:
        a, rollout = state.VIDEOS.get((path, source))
    except gr.Error:                                  # heavy.Stopped: its visitor left (a gr.Error is a ValueError)
        raise
    except ValueError as err:                         # vit.video_file.VideoFileError: its one sentence
        raise gr.Error(t("message.video_refused", lang, reason=err), print_exception=False) from None
    last = len(a.clip.frames) - 1
    info = a.clip.info
    top = a.top_k(5)
    note = t("video.summary", lang, frames=last + 1, total=info.frames, seconds=info.seconds,
             top=top[0][0] if top else "") + " " + verified_text(served.loaded.verified, lang)   # the model line's check
    return dict(video_note=note, video_top5=dict(top),
                video_frame=gr.Slider(minimum=0, maximum=max(last, 1), value=0, interactive=last > 0),
                video_picture=_frame(a, rollout, 0, lang),
                video_strip=frames_strip(a, frame_overlays(a, rollout, cell=STRIP_CELL), lang,
                                         columns=4 if narrow else 8),
                video_distance=distance_picture(a.temporal_distance, a.mean_distance[False], lang, bool(narrow)))


def show_frame(video_model, video_file, video_frame, lang):
    """The slider moved: that frame with its rollout, from the cached analysis (nothing is decoded or run here)."""
    found = state.VIDEOS.find(video_key(video_model, video_file, lang))
    if found is None:
        raise gr.Error(t("message.video_none", lang), print_exception=False)
    return dict(video_picture=_frame(*found, video_frame, lang))


def _frame(a, rollout, frame, lang: str):
    frame = min(max(int(frame), 0), len(a.clip.frames) - 1)
    return captioned(frame_overlay(a, rollout, frame, cell=FRAME_SIZE), frame_caption(a, frame, lang), lang)


def wire(page) -> None:
    analysed = page["video_button"].click(**page.wire(analyse, list(OUTPUTS), heavy_group="video"))
    page["video_frame"].input(**page.wire(show_frame, ["video_picture"]), **page.render)
    wire_attention(page, analysed)
    wire_classmaps(page)
    wire_check(page)


# ---- one attention step's views: the readout per frame, the heads at the chosen frame, a clicked patch -------------
# (viz.video.attention draws them; every handler here draws from the cached analysis, ``state.VIDEOS``)

ATTENTION_OUTPUTS = ("video_step", "video_head", "video_patch", "video_readout", "video_heads", "video_patch_row",
                     "video_patch_column", "video_attention_note")
PATCH_OUTPUTS = ("video_patch_row", "video_patch_column", "video_attention_note")
STEP_OUTPUTS = ("video_readout", "video_heads", *PATCH_OUTPUTS)


# the moving squares' classes (``vit.train.moving_squares.DIRECTIONS``, not imported: the page never loads the
# trainer) as arrows, read in any language
ARROWS = {"down": "↓", "left": "←", "right": "→", "up": "↑"}


def example_label(clip: str) -> str:
    """"→ 1" for right/0000.mp4: the direction its square moves, as an arrow, and the clip's number."""
    direction = Path(clip).parent.name
    return f"{ARROWS.get(direction, direction)} {int(Path(clip).stem) + 1}"


def build_examples(page) -> None:
    """The bundled moving-squares clips with the toy model trained on them: one click fills both and analyses."""
    clips, toy = state.example_clips(), list(state.example_video_models())
    if not clips or not toy:
        return
    labels = [example_label(c) for c in clips]
    examples = gr.Examples([[toy[0], c] for c in clips], inputs=[page["video_model"], page["video_file"]],
                           cache_examples=False, api_visibility="private", example_labels=labels,
                           label=page.i18n("video.examples"), examples_per_page=8, elem_id="video-examples")
    page.add("video_examples", examples)


def build_attention(page) -> None:
    i18n = page.i18n
    gr.Markdown(i18n("about.video_attention"))
    page.add("video_patch", gr.State(None))            # (frame, row, col) of the clicked patch, or None
    with gr.Row():
        page.add("video_step", gr.Slider(0, 1, value=0, step=1, label=i18n("video.step"), interactive=False,
                                         min_width=200, scale=3, elem_id="video-step"))
        page.add("video_head", gr.Dropdown([], value=None, label=i18n("video.head"), interactive=False,
                                           min_width=160, scale=1, elem_id="video-head"))
    page.add("video_attention_note", note("video-attention-note"))
    page.add("video_readout", picture(i18n, "picture.video_readout", enlarge=False, elem_id="video-readout"))
    page.add("video_heads", picture(i18n, "picture.video_heads", enlarge=False, elem_id="video-heads"))
    page.add("video_patch_row", picture(i18n, "picture.video_patch_row", enlarge=False, elem_id="video-patch-row"))
    page.add("video_patch_column", picture(i18n, "picture.video_patch_column", enlarge=False,
                                           elem_id="video-patch-column"))


def _cached(video_model, video_file, lang):
    """(analysis, rollout) of the clip from the cache (nothing is decoded or run), or one sentence."""
    found = state.VIDEOS.find(video_key(video_model, video_file, lang))
    if found is None:
        raise gr.Error(t("message.video_none", lang), print_exception=False)
    return found


def _whole(value, lo: int, hi: int, message: str, lang: str) -> int:
    """An event's integer in [lo, hi], or the one sentence ``message`` (a float with a fraction, a string, NaN…)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value != int(value) or not lo <= int(value) <= hi:
        raise gr.Error(t(message, lang), print_exception=False)
    return int(value)


def _step_head(a, video_step, video_head, lang) -> tuple[int, int | None]:
    step = _whole(video_step, 0, a.depth - 1, "message.video_bad_step", lang)
    heads = a.architecture.block(step).heads
    head = None if video_head in (None, -1) else _whole(video_head, 0, heads - 1, "message.video_bad_head", lang)
    return step, head


def _patch(a, video_patch, lang) -> tuple[int, int, int] | None:
    if video_patch is None:
        return None
    if not isinstance(video_patch, (list, tuple)) or len(video_patch) != 3:
        raise gr.Error(t("message.video_bad_click", lang), print_exception=False)
    gh, gw = a.architecture.grid
    frame, row, col = (_whole(v, 0, top - 1, "message.video_bad_click", lang)
                       for v, top in zip(video_patch, (len(a.clip.frames), gh, gw)))
    return frame, row, col


def _step_views(a, step: int, head: int | None, frame: int, patch, lang: str, narrow) -> dict:
    where = t("video.where", lang, step=step, head=head_label(head, lang))
    return dict(video_readout=clip_strip(a, readout_frames(a, step, head), t("video.colorbar_readout", lang,
                                         where=where), lang, cell=STRIP_CELL, columns=4 if narrow else 8),
                video_heads=heads_picture(a, step, frame, lang, cell=STRIP_CELL, columns=4 if narrow else 6),
                **_patch_views(a, step, head, patch, lang, narrow))


def _patch_views(a, step: int, head: int | None, patch, lang: str, narrow) -> dict:
    """The clicked patch's row and column in the step (None without a click), and the step's note."""
    views = dict(video_attention_note=attention_note(a, step, head, lang, patch), video_patch_row=None,
                 video_patch_column=None)
    if patch is not None:
        where = t("video.where", lang, step=step, head=head_label(head, lang))
        row, column = patch_maps(a, step, head, patch_token(a, *patch))
        strip = dict(lang=lang, cell=STRIP_CELL, columns=4 if narrow else 8, patch=patch)
        views.update(video_patch_row=clip_strip(a, row, t("video.colorbar_row", lang, where=where), **strip),
                     video_patch_column=clip_strip(a, column, t("video.colorbar_column", lang, where=where), **strip))
    return views


def show_attention(video_model, video_file, lang, narrow=False):
    """After an analysis: the step slider over the model's attention steps (at the last), the head choice (the mean
    of heads), no clicked patch, and the last step's views."""
    a, _ = _cached(video_model, video_file, lang)
    last = a.depth - 1
    heads = [(t("video.mean_of_heads", lang), -1)] + [(t("name.head", lang, head=h), h) for h in range(a.heads)]
    return dict(video_step=gr.Slider(minimum=0, maximum=max(last, 1), value=last, interactive=last > 0),
                video_head=gr.Dropdown(choices=heads, value=-1, interactive=True), video_patch=None,
                **_step_views(a, last, None, 0, None, lang, narrow))


def show_step(video_model, video_file, video_frame, video_step, video_head, video_patch, lang, narrow=False):
    """The step slider, the head choice or the frame slider moved: the views of that step, head and frame."""
    a, _ = _cached(video_model, video_file, lang)
    step, head = _step_head(a, video_step, video_head, lang)
    frame = _whole(video_frame, 0, len(a.clip.frames) - 1, "message.video_bad_click", lang)
    return _step_views(a, step, head, frame, _patch(a, video_patch, lang), lang, narrow)


def show_heads(video_model, video_file, video_frame, video_step, video_head, lang, narrow=False):
    """The frame slider moved: each head of the step at that frame."""
    a, _ = _cached(video_model, video_file, lang)
    step, _ = _step_head(a, video_step, video_head, lang)
    frame = _whole(video_frame, 0, len(a.clip.frames) - 1, "message.video_bad_click", lang)
    return dict(video_heads=heads_picture(a, step, frame, lang, cell=STRIP_CELL, columns=4 if narrow else 6))


def pick_patch(evt: gr.SelectData, video_model, video_file, video_frame, video_step, video_head, lang,
               narrow=False):
    """A click on the chosen frame: that patch's row and column in the chosen step, over every frame."""
    a, _ = _cached(video_model, video_file, lang)
    step, head = _step_head(a, video_step, video_head, lang)
    frame = _whole(video_frame, 0, len(a.clip.frames) - 1, "message.video_bad_click", lang)
    index = getattr(evt, "index", None)
    if not isinstance(index, (list, tuple)) or len(index) != 2:
        raise gr.Error(t("message.video_bad_click", lang), print_exception=False)
    x, y = (_whole(v, 0, 2**16, "message.video_bad_click", lang) for v in index)
    try:
        row, col = patch_at(a, x, y, FRAME_SIZE)
    except ValueError:
        raise gr.Error(t("message.video_bad_click", lang), print_exception=False) from None
    patch = (frame, row, col)
    return dict(video_patch=patch, **_patch_views(a, step, head, patch, lang, narrow))


def wire_attention(page, analysed) -> None:
    """The step views after every analysis (the button's, an example's), and their controls' and clicks' events."""
    follow = page.wire(show_attention, list(ATTENTION_OUTPUTS))
    analysed.success(**follow, **page.render)
    if "video_examples" in page.components:
        example = page["video_examples"].load_input_event
        example.success(**page.wire(analyse, list(OUTPUTS), heavy_group="video")).success(**follow, **page.render)
    step = page.wire(show_step, list(STEP_OUTPUTS))
    page["video_step"].input(**step, **page.render)
    page["video_head"].input(**step, **page.render)
    page["video_frame"].input(**page.wire(show_heads, ["video_heads"]), **page.render)
    page["video_picture"].select(**page.wire(pick_patch, ["video_patch", *PATCH_OUTPUTS]), **page.render)


# ---- class maps per frame: one of viz.video.classmap's VIDEO_METHODS for one of the clip's top-5 classes ----------
# A heavy job of the video group (a forward and a backward pass of the clip, ``jobs.video_classmap``), cached per
# (clip, model, method, class) in ``state.CLASSMAPS``; drawn as every sampled frame on one scale, and the frame the
# slider chose. A method is a choice because it is an entry of VIDEO_METHODS, named by its texts (``video.method.*``,
# ``video.method_about.*``).

CLASSMAP_OUTPUTS = ("video_classmap_note", "video_classmap_frame", "video_classmap_strip")


def build_classmaps(page) -> None:
    i18n = page.i18n
    gr.Markdown(i18n("about.video_classmap"), elem_id="video-classmap-about")
    with gr.Row(equal_height=True):
        page.add("video_class", gr.Dropdown([], value=None, allow_custom_value=False, scale=3, min_width=160,
                                            label=i18n("video.class"), elem_id="video-class"))
        page.add("video_method", gr.Radio([(i18n(f"video.method.{m}"), m) for m in VIDEO_METHODS],
                                          value=next(iter(VIDEO_METHODS)), scale=2, min_width=160,
                                          label=i18n("video.method"), elem_id="video-method"))
        page.add("video_classmap_button", gr.Button(i18n("video.classmap_button"), variant="primary", scale=1,
                                                    min_width=90, elem_id="video-classmap-button"))
    page.add("video_classmap_note", gr.Markdown(elem_id="video-classmap-note", elem_classes=["note"]))
    page.add("video_classmap_frame", picture(i18n, "picture.video_classmap_frame", enlarge=False,
                                             elem_id="video-classmap-frame"))
    page.add("video_classmap_strip", picture(i18n, "picture.video_classmap_strip", enlarge=False,
                                             elem_id="video-classmap-strip"))


def offer_classes(video_model, video_file, lang):
    """A clip was analysed (its top-5 shown): its five classes to explain, the top-1 chosen, the last class maps
    cleared (they were another clip's). Nothing runs: the classes come from the cached analysis."""
    found = state.VIDEOS.find(video_key(video_model, video_file, lang)) if video_file else None
    names = [name for name, _ in found[0].top_k(5)] if found is not None else []
    return dict(video_class=gr.Dropdown(choices=names, value=names[0] if names else None),
                **dict.fromkeys(CLASSMAP_OUTPUTS))


def explain_clip(video_model, video_file, video_class, video_method, video_frame, lang, narrow=False):
    """The chosen class's map by the chosen method on every sampled frame, and on the slider's frame."""
    a, key, method, index = _classmap_request(video_model, video_file, video_class, video_method, lang)
    served = state.MODELS.get(key[1])
    loaded = served.loaded

    def compute():
        x = loaded.preprocess.clip_tensor(a.clip.frames).to(next(loaded.model.parameters()).device)
        with state.MODEL_TURN:
            maps = clip_maps(loaded.model, x, [method], ClassTarget(index), turn=state.MODEL_TURN)
        values = maps.maps[method]                         # drawn on one scale over the clip
        return values if VIDEO_METHODS[method].scaled else scale_clip(values)

    cam = state.CLASSMAPS.get(key, compute)
    name = a.labels[index]
    title = t(f"video.method.{method}", lang)
    strongest = int(np.argmax(frame_maps(a, cam).reshape(len(a.clip.frames), -1).max(axis=1)))
    note = " ".join([t("video.classmap_summary", lang, method=title, name=name,
                       probability=float(a.probabilities[index]), index=int(a.clip.indices[strongest]),
                       seconds=float(a.clip.times[strongest])), t(f"video.method_about.{method}", lang)])
    strip = frames_strip(a, frame_overlays(a, cam, cell=STRIP_CELL), lang, columns=4 if narrow else 8)
    return dict(video_classmap_note=note, video_classmap_frame=_frame(a, cam, video_frame, lang),
                video_classmap_strip=captioned(strip, t("picture.video_classmap", lang, method=title, name=name),
                                               lang))


def show_classmap_frame(video_model, video_file, video_class, video_method, video_frame, lang):
    """The slider moved: that frame's class map, when the chosen class's map was drawn (from the cache)."""
    if not video_file or not video_class:
        return {}
    a, key, _, _ = _classmap_request(video_model, video_file, video_class, video_method, lang)
    cam = state.CLASSMAPS.find(key)
    return {} if cam is None else dict(video_classmap_frame=_frame(a, cam, video_frame, lang))


def _classmap_request(video_model, video_file, video_class, video_method, lang):
    """(the cached analysis, the class map's cache key, the method, the class index) of what the visitor chose: the
    clip analysed first, a method of the table, one of the clip's top-5 classes (empty: the top-1); gr.Error else."""
    path, source = video_key(video_model, video_file, lang)
    found = state.VIDEOS.find((path, source))
    if found is None:
        raise gr.Error(t("message.video_classmap_first", lang), print_exception=False)
    a = found[0]
    if video_method not in VIDEO_METHODS:
        raise gr.Error(t("message.video_method_unknown", lang,
                         methods=", ".join(t(f"video.method.{m}", lang) for m in VIDEO_METHODS)),
                       print_exception=False)
    top = [int(i) for i in np.argsort(-a.probabilities, kind="stable")[:5]]
    chosen = top[0] if not video_class else next((i for i in top if a.labels[i] == video_class), None)
    if chosen is None:
        raise gr.Error(t("message.video_class_unknown", lang, name=str(video_class)), print_exception=False)
    return a, (path, source, video_method, chosen), video_method, chosen


def wire_classmaps(page) -> None:
    page["video_top5"].change(**page.wire(offer_classes, ["video_class", *CLASSMAP_OUTPUTS]), **page.render)
    page["video_classmap_button"].click(**page.wire(explain_clip, list(CLASSMAP_OUTPUTS), heavy_group="video"))
    page["video_frame"].input(**page.wire(show_classmap_frame, ["video_classmap_frame"]), **page.render)


# ---- does the map say what the model uses? deletion and insertion over the clip's tubelets -------------------------
# ``viz.video.faithfulness.ClipCheck`` on the class maps drawn for the chosen class (the methods of VIDEO_METHODS whose
# map ``state.CLASSMAPS`` holds for this clip, model and class), the random order its reference, the library's
# baseline. A heavy job of the video group (``jobs.video_check``), run a forward batch at a time, each batch in the
# model's turn (a visitor who leaves or cancels stops it at the next batch), with progress; the report cached per
# (clip, model, class, methods) in ``state.CLIP_CHECKS``. The verdicts are the Trust tab's (``viz.trust``).

CHECK_OUTPUTS = ("video_check_note", "video_check_picture")
BLUR_COMMAND = f"`python -m viz VIDEO --explain {','.join(VIDEO_METHODS)} --faithfulness --perturbation blur`"


def build_check(page) -> None:
    i18n = page.i18n
    gr.Markdown(i18n("about.video_check"), elem_id="video-check-about")
    page.add("video_check_button", gr.Button(i18n("video.check_button"), elem_id="video-check-button"))
    page.add("video_check_note", gr.Markdown(elem_id="video-check-note"))      # body text: a reading, not a note
    page.add("video_check_picture", picture(i18n, "picture.video_check", enlarge=False,
                                            elem_id="video-check-picture"))


def drawn_maps(video_model, video_file, video_class, video_method, lang):
    """(the cached analysis, the check's cache key (clip, model, class, methods), {method: its map}) for the class the
    visitor chose: the class maps of VIDEO_METHODS drawn for it (``state.CLASSMAPS``); the request is the class
    map's (``_classmap_request``: refused the same way), and without a drawn map one sentence asks for one."""
    a, (path, source, _, index), _, _ = _classmap_request(video_model, video_file, video_class, video_method, lang)
    maps = {m: cam for m in VIDEO_METHODS if (cam := state.CLASSMAPS.find((path, source, m, index))) is not None}
    if not maps:
        raise gr.Error(t("message.video_check_first", lang, name=a.labels[index]), print_exception=False)
    return a, (path, source, index, tuple(maps)), maps


def check_clip(video_model, video_file, video_class, video_method, lang, narrow=False, progress=gr.Progress()):
    """The deletion and insertion curves of the maps drawn for the chosen class, and what they say. A generator: it
    yields after each forward batch and returns {output: value}; a check already run is drawn from the cache."""
    a, key, maps = drawn_maps(video_model, video_file, video_class, video_method, lang)
    report = state.CLIP_CHECKS.find(key)
    if report is None:
        loaded = state.MODELS.get(key[1]).loaded
        check = ClipCheck(loaded.model, loaded.preprocess.clip_tensor(a.clip.frames), key[2], maps, batch=BATCH,
                          name=a.labels[key[2]])
        steps = check.steps()
        while True:
            with state.MODEL_TURN:
                step = next(steps, None)
            if step is None:
                break
            done, total = step
            progress(done / total, desc=f"{t('video.check_progress', lang)} · {done}/{total}")
            yield                                         # between batches: a cancelled check stops here
        report = check.result()
        state.CLIP_CHECKS.put(key, report)
    return dict(video_check_note=check_note(report, lang),
                video_check_picture=figure_to_image(curves_figure(report, lang, bool(narrow))))


def check_note(report, lang: str) -> str:
    """What the curves mean, then each method's verdict (the Trust tab's rule and words, one way of removing), most
    faithful first, with its areas against the random order's, its gains, and what its verdict means for the clip."""
    verdicts = ProtocolsReport({report.protocol: report}).verdicts()
    r = report.random
    lines = [t("video.check_head", lang, name=report.target["name"], probability=report.probability,
               variant=t(f"video.trust.{report.protocol}", lang), points=len(report.fractions)), "",
             t("video.check_read", lang), ""]
    for name in report.ranking():
        f, gains, v = report.methods[name].faithfulness, report.gains(name), verdicts[name]
        numbers = t("video.check_numbers", lang, deletion=f.deletion_auc, random_deletion=r.deletion_auc,
                    insertion=f.insertion_auc, random_insertion=r.insertion_auc, gain=v.abpc_gain[report.protocol],
                    margin=v.margin[report.protocol], **gains)
        lines.append("- " + t("video.check_bullet", lang, method=t(f"video.method.{name}", lang),
                              verdict=verdict_words(v, lang), numbers=numbers,
                              meaning=t(f"video.check_meaning.{verdict_kind(v)}", lang)))
    return "\n".join(lines + ["", t("video.check_legend", lang, points=len(report.fractions)), "",
                              t("video.check_one_way", lang, command=BLUR_COMMAND)])


def forget_check():
    """Another clip analysed: the last check's curves and note go (they were another clip's)."""
    return dict.fromkeys(CHECK_OUTPUTS)


def wire_check(page) -> None:
    page["video_top5"].change(**page.wire(forget_check, list(CHECK_OUTPUTS)), **page.render)
    page["video_check_button"].click(**page.wire(check_clip, list(CHECK_OUTPUTS), heavy_group="video"))
