"""The Video tab: a visitor's clip through a video model (VideoMAE, TimeSformer, ViViT, V-JEPA 2): each sampled frame
with where the readout looks (its slice, ``viz.video``), a frame slider, the top-5 classes, the heads' attention
distance in time and in space. The clip comes only from the upload folder (``door.uploaded_photo``), the model only
through the models' guard (``state.model_source``); decoding passes ``state.video_limits`` (a public server reads a
short clip only) and every refusal is one sentence. The analysis is a heavy job of its own group; the slider draws
from the cached analysis, never runs the model."""
from __future__ import annotations

import gradio as gr
import torch

from viz.explorer import verified_text
from viz.i18n import t
from viz.video.view import captioned, distance_picture, frame_caption, frame_overlay, frame_overlays, frames_strip

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
    page["video_button"].click(**page.wire(analyse, list(OUTPUTS), heavy_group="video"))
    page["video_frame"].input(**page.wire(show_frame, ["video_picture"]), **page.render)
