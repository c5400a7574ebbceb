"""Protects a public server from hostile videos sent to the Video tab (``vit_explorer.tabs.video``): an audio file, a
container with no frame, a header claiming ten hours, a frame larger than 4K, a cut file, random bytes, and what a
public server bounds more tightly than a local one (``state.PUBLIC_VIDEO_LIMITS``: a file over 20 MB, two minutes, a
frame over 1920×1080) are each refused in one sentence (the visitor's language around the decoder's reason), within
a few seconds, before the model runs and without anything cached; a video outside the upload folder is refused
before it is opened. The same two-minute clip and large frame pass on a local server."""
from __future__ import annotations

import shutil
import time
from pathlib import Path

import gradio as gr
import numpy as np
import pytest

import app_server  # noqa: F401  (gives this process its own GRADIO_TEMP_DIR before any app is built)
from video_clips import audio_only, huge_frame, moving_squares_toy, no_frames, ten_hours, write_video
from vit_explorer import state
from vit_explorer.door import Refusal
from vit_explorer.tabs import video as tab
from viz.i18n import t

BOUND_S = 10.0      # seconds a refusal may take on a loaded 2-core machine (each is milliseconds on a quiet one)


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    return moving_squares_toy(tmp_path_factory.mktemp("squares"))


@pytest.fixture
def public(toy, tmp_path, monkeypatch):
    """A public server listing the toy video model; its upload folder."""
    uploads = tmp_path / "uploads" / "beef"
    uploads.mkdir(parents=True)
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(uploads.parent))
    monkeypatch.setenv("VIT_WEIGHTS_DIR", str(tmp_path / "no-weights"))
    monkeypatch.setattr(state.SETTINGS, "models", [str(Path(toy[0]).resolve())])
    monkeypatch.setattr(state.SETTINGS, "any_model", False)
    state.MODELS.get(str(Path(toy[0]).resolve()))            # loaded before the clock starts
    return uploads


def hostile(folder: Path, good: Path) -> dict[str, Path]:
    cut = folder / "cut.mp4"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    noise = folder / "noise.mp4"
    noise.write_bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    large = folder / "large.mp4"
    with open(large, "wb") as f:                              # 21 MB: over the public limit, refused by its size
        f.write(good.read_bytes())
        f.truncate(21 * 2**20)
    return {"audio": audio_only(folder / "sound.wav"), "no frames": no_frames(folder / "empty.avi"),
            "ten hours": ten_hours(folder / "long.mkv"), "huge frame": huge_frame(folder / "huge.mkv"),
            "cut": cut, "noise": noise, "over 20 MB": large, **public_only(folder)}


def public_only(folder: Path) -> dict[str, Path]:
    """What only a public server refuses, 8 frames each (the toy's count): two minutes (a frame every 17 s), frames of
    2000×1200."""
    return {"two minutes": write_video(folder / "minutes.mkv", np.zeros((8, 32, 32, 3), np.uint8), fps=1, codec="ffv1",
                                       pts_step=17),
            "2000×1200": write_video(folder / "wide.mkv", np.zeros((8, 1200, 2000, 3), np.uint8), fps=1, codec="ffv1")}


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_every_hostile_video_is_refused_in_one_sentence(public, toy, lang):
    model = Path(toy[0]).name
    prefix = t("message.video_refused", lang, reason="")
    for name, path in hostile(public, toy[1] / "up" / "0000.mp4").items():
        taken, cached = state.MODEL_TURN.taken, len(state.VIDEOS)
        start = time.perf_counter()
        with pytest.raises(gr.Error) as refused:
            tab.analyse(model, str(path), lang)
        seconds = time.perf_counter() - start
        message = refused.value.message
        assert message.startswith(prefix) and len(message) > len(prefix) + 10 and "\n" not in message, (name, message)
        assert "Traceback" not in message and str(public) not in message, (name, message)
        assert seconds < BOUND_S, (name, seconds)
        assert state.MODEL_TURN.taken == taken and len(state.VIDEOS) == cached, name


def test_a_local_server_reads_what_a_public_one_bounds(public, toy, monkeypatch):
    monkeypatch.setattr(state.SETTINGS, "any_model", True)
    model = str(Path(toy[0]).resolve())
    for name, path in public_only(public).items():
        out = tab.analyse(model, str(path), "en")
        assert out["video_frame"].maximum >= 1, name


def test_a_video_outside_the_upload_folder_is_never_opened(public, toy, tmp_path):
    outside = Path(shutil.copy(toy[1] / "up" / "0000.mp4", tmp_path / "elsewhere.mp4"))
    for path in (str(outside), "/etc/passwd", "/dev/zero", str(public / ".." / ".." / "elsewhere.mp4")):
        with pytest.raises(Refusal) as refused:
            tab.analyse(Path(toy[0]).name, path, "en")
        assert str(refused.value) == t("message.photo_not_uploaded", "en")
