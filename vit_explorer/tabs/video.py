"""The Video tab: a visitor's clip through a video model (VideoMAE, TimeSformer, ViViT, V-JEPA 2): each sampled frame
with where the readout looks (its slice, ``viz.video``), a frame slider, the top-5 classes, the heads' attention
distance in time and in space. The clip comes only from the upload folder (``door.uploaded_photo``), the model only
through the models' guard (``state.model_source``); decoding passes ``state.video_limits`` (a public server reads a
short clip only) and every refusal is one sentence. The analysis is a heavy job of its own group; the slider draws
from the cached analysis, never runs the model. Below, a class map per frame (``viz.video.classmap``) for one of the
clip's top-5 classes, by a method of its table, a heavy job of the same group (its own block at the end)."""
from __future__ import annotations

import gradio as gr
import numpy as np
import torch

from vit.explain.targets import ClassTarget
from viz.i18n import t
from viz.video.classmap import VIDEO_METHODS, clip_maps, scale_clip
from viz.video.view import (captioned, distance_picture, frame_caption, frame_maps, frame_overlay, frame_overlays,
                            frames_strip)

from .. import state
from ..components import picture
from ..door import uploaded_photo

OUTPUTS = ("video_note", "video_top5", "video_frame", "video_picture", "video_strip", "video_distance")
FRAME_SIZE = 448          # the chosen frame's longer side on the page
STRIP_CELL = 112          # each frame's in the strip


def build(page) -> None:
    i18n = page.i18n
    gr.Markdown(i18n("about.video"))
    with gr.Row(equal_height=True):
        page.add("video_model", gr.Dropdown(state.model_choices(), value=None, allow_custom_value=True, scale=3,
                                            label=i18n("video.model"), elem_id="video-model"))
        page.add("video_file", gr.File(label=i18n("video.upload"), file_types=["video"], type="filepath", scale=3,
                                       elem_id="video-file"))
        page.add("video_button", gr.Button(i18n("video.button"), variant="primary", scale=1, min_width=90,
                                           elem_id="video-button"))
    page.add("video_note", gr.Markdown(elem_id="video-note", elem_classes=["note"]))
    with gr.Row():
        page.add("video_picture", picture(i18n, "picture.video_frame", enlarge=False, elem_id="video-picture"))
        page.add("video_top5", gr.Label(num_top_classes=5, label=i18n("video.top5")))
    page.add("video_frame", gr.Slider(0, 1, value=0, step=1, label=i18n("video.frame"), interactive=False,
                                      elem_id="video-frame"))
    page.add("video_strip", picture(i18n, "picture.video_strip", enlarge=False, elem_id="video-strip"))
    page.add("video_distance", picture(i18n, "picture.video_distance", enlarge=False, elem_id="video-distance"))
    build_classmaps(page)


def video_key(video_model, video_file, lang: str) -> tuple[str, str]:
    """(the uploaded video's path, the model's source): the upload folder's and the models' guards first."""
    if not video_file:
        raise gr.Error(t("message.video_none", lang), print_exception=False)
    return uploaded_photo(video_file), state.model_source(video_model, lang)


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
             top=top[0][0] if top else "")
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
    page["video_button"].click(**page.wire(analyse, list(OUTPUTS), heavy_group="video"))
    page["video_frame"].input(**page.wire(show_frame, ["video_picture"]), **page.render)
    wire_classmaps(page)


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
                                          value=next(iter(VIDEO_METHODS)), scale=2, min_width=160, label=i18n("video.method"),
                                          elem_id="video-method"))
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
