"""Protects the page's Video tab (``vit_explorer.tabs.video``) through its handlers, on a public server listing a
video model trained on the moving squares: an uploaded clip gives the top-5, a frame slider over the sampled frames,
the chosen frame with its rollout (equal to the slice's drawing of the cached analysis), the strip and the distance
picture, in English and Chinese; the slider draws from the cache without running the model; a photo model, a clip
before any upload, and a photo model's name are each answered with one sentence."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import gradio as gr
import numpy as np
import pytest
from PIL import Image

import app_server  # noqa: F401  (gives this process its own GRADIO_TEMP_DIR before any app is built)
import vit
from tiny_models import tiny
from video_clips import moving_squares_toy
from vit_explorer import state, views
from vit_explorer.tabs import TAB_IDS
from vit_explorer.tabs import video as tab
from viz.i18n import t
from viz.video.view import captioned, frame_caption, frame_overlay


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    return moving_squares_toy(tmp_path_factory.mktemp("squares"))


@pytest.fixture
def server(toy, tmp_path, monkeypatch):
    """A public server listing the toy video model and a tiny photo model, with one clip uploaded."""
    weights, data = toy
    photo_model = vit.save_checkpoint(tmp_path / "photos.pt", tiny(), list("abcde"), vit.Preprocess(32, 32))
    uploads = tmp_path / "uploads"
    (uploads / "f00d").mkdir(parents=True)
    clip = Path(shutil.copy(data / "right" / "0000.mp4", uploads / "f00d" / "clip.mp4"))
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(uploads))
    monkeypatch.setenv("VIT_WEIGHTS_DIR", str(tmp_path / "no-weights"))
    monkeypatch.setattr(state.SETTINGS, "models", [str(Path(weights).resolve()), str(Path(photo_model).resolve())])
    monkeypatch.setattr(state.SETTINGS, "any_model", False)
    return SimpleServer(Path(weights).name, Path(photo_model).name, str(clip))


class SimpleServer:
    def __init__(self, video_model: str, photo_model: str, clip: str):
        self.video_model, self.photo_model, self.clip = video_model, photo_model, clip


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_a_clip_gives_every_output(server, lang):
    out = tab.analyse(server.video_model, server.clip, lang)
    assert set(out) == set(tab.OUTPUTS)
    slider = out["video_frame"]
    assert (slider.minimum, slider.maximum, slider.value, slider.interactive) == (0, 7, 0, True)
    assert set(out["video_top5"]) <= {"down", "left", "right", "up"} and len(out["video_top5"]) == 4
    assert out["video_note"] == t("video.summary", lang, frames=8, total=8, seconds=1.0,
                                  top=max(out["video_top5"], key=out["video_top5"].get)) + " " + t(
        "verified.not_verified", lang, reason=t("verified.reason.own_format", lang))   # the model line's check
    for name in ("video_picture", "video_strip", "video_distance"):
        assert isinstance(out[name], Image.Image) and min(out[name].size) > 100, name
    a, rollout = state.VIDEOS.find((os.path.realpath(server.clip), state.model_source(server.video_model)))
    assert rollout.shape == (4, 4, 4) and np.allclose(a.clip.indices, np.arange(8))
    frame = tab.show_frame(server.video_model, server.clip, 5, lang)["video_picture"]
    expected = captioned(frame_overlay(a, rollout, 5, cell=tab.FRAME_SIZE), frame_caption(a, 5, lang), lang)
    assert np.array_equal(np.asarray(frame), np.asarray(expected))
    assert np.array_equal(np.asarray(tab.show_frame(server.video_model, server.clip, 99, lang)["video_picture"]),
                          np.asarray(tab.show_frame(server.video_model, server.clip, 7, lang)["video_picture"]))


def test_the_slider_never_runs_the_model(server):
    tab.analyse(server.video_model, server.clip, "en")
    taken = state.MODEL_TURN.taken
    tab.show_frame(server.video_model, server.clip, 3, "en")
    assert state.MODEL_TURN.taken == taken
    state.VIDEOS.clear()
    with pytest.raises(gr.Error) as refused:
        tab.show_frame(server.video_model, server.clip, 3, "en")
    assert refused.value.message == t("message.video_none", "en") and state.MODEL_TURN.taken == taken


def test_what_is_refused_with_one_sentence(server):
    with pytest.raises(gr.Error) as refused:
        tab.analyse(server.photo_model, server.clip, "zh-CN")
    assert refused.value.message == t("message.video_needs_model", "zh-CN", name=server.photo_model)
    with pytest.raises(gr.Error) as refused:
        tab.analyse(server.video_model, None, "en")
    assert refused.value.message == t("message.video_none", "en")
    with pytest.raises(gr.Error) as refused:
        tab.analyse("/etc/passwd", server.clip, "en")
    assert refused.value.message == t("message.models_listed_only", "en")


def test_the_tab_is_in_the_table():
    assert "video" in TAB_IDS


def test_the_model_box_sends_a_video_model_to_its_tab(server, monkeypatch):
    """Chosen in the page's own Model box, a video model is not switched to (the photo tabs read photos): one warning
    naming the tab, and the box goes back to the model the page had."""
    warned = []
    monkeypatch.setattr(gr, "Warning", warned.append)
    out = views.switch_model(server.video_model, server.photo_model, None, None, None, "en")
    assert set(out) == {"model"} and out["model"].value == server.photo_model
    assert warned == [t("video.in_video_tab", "en", name=server.video_model)]
