"""Attention through depth (viz.compare.animate, python -m viz IMAGE --animate).

Protects: one frame per block; each frame is exactly the single-block panel under its caption (the CLS attention
of that block, or the rollout of blocks 0…l, whose last frame is the full rollout panel); the GIF holds those frames;
MP4 is optional and says what it needs.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image, ImageSequence

import vit
import oracles
from viz.compare import animate
from viz.analysis import analyze
from viz.cli import main
from viz.drawing.render import caption_strip_height
from viz.maps.rollout import rollout_map
from viz.attention.view import attention_panel

AUGREG = "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors"
STRIP = caption_strip_height()


@pytest.fixture(scope="module")
def analysis(real_weights_dir, cat):
    return analyze(vit.load(str(real_weights_dir / AUGREG)), cat)


def below_caption(frame: Image.Image) -> np.ndarray:
    return np.asarray(frame)[STRIP:]


def test_attention_frames_are_the_single_block_panels(analysis):
    frames = animate.depth_frames(analysis, "attention", head=2)
    assert len(frames) == analysis.depth == 12
    for layer, frame in enumerate(frames):
        np.testing.assert_array_equal(below_caption(frame), np.asarray(attention_panel(analysis, layer, 2)))
    assert animate.frame_caption(analysis, 4, "attention", 2) == "block 4 (of 0-11): CLS attention, head 2"


def test_rollout_frames_roll_out_up_to_their_block(analysis):
    frames = animate.depth_frames(analysis, "rollout", discard_ratio=0.5)
    assert len(frames) == 12
    for layer in (0, 6):
        np.testing.assert_array_equal(below_caption(frames[layer]),
                                      np.asarray(animate.rollout_panel_through(analysis, layer, discard_ratio=0.5)))
    np.testing.assert_array_equal(below_caption(frames[-1]), np.asarray(oracles.rollout_panel(analysis, discard_ratio=0.5)))
    # rollout through block l is the rollout of the first l + 1 blocks of attention
    np.testing.assert_allclose(animate.rollout_through(analysis, 3),
                               rollout_map(analysis.attention[:4], 1, (14, 14)), rtol=1e-5, atol=1e-8)
    assert not np.allclose(animate.rollout_through(analysis, 3), animate.rollout_through(analysis, 11))


def test_gif_holds_one_frame_per_block(analysis, tmp_path):
    frames = animate.depth_frames(analysis, "attention")
    path = animate.save_gif(frames, tmp_path / "a.gif", frame_ms=250)
    with Image.open(path) as gif:
        assert gif.n_frames == 12 and gif.info["duration"] == 250 and gif.info["loop"] == 0
        for frame, original in zip(ImageSequence.Iterator(gif), animate.padded(frames)):
            pixels = np.asarray(frame.convert("RGB"), dtype=np.int16)
            assert np.abs(pixels - np.asarray(original, dtype=np.int16)).mean() < 4   # 256-colour palette per frame
    with pytest.raises(ValueError, match="No frames"):
        animate.save_gif([], tmp_path / "none.gif")


def test_mp4_is_optional_and_says_what_it_needs(analysis, tmp_path, monkeypatch):
    monkeypatch.setattr(animate, "mp4_available", lambda: False)
    with pytest.raises(RuntimeError, match="pip install imageio imageio-ffmpeg"):
        animate.save_mp4(animate.depth_frames(analysis)[:2], tmp_path / "a.mp4")


def test_mp4_frames_go_to_imageio_padded_to_macroblocks(analysis, tmp_path, monkeypatch):
    """Where imageio-ffmpeg is installed, frames go to imageio's FFMPEG writer as H.264, padded to multiples of 16,
    at 1000 / frame_ms frames per second (checked here with a recording stand-in for the writer; the real encoder
    was run by hand with imageio-ffmpeg 0.8.1)."""
    import imageio.v2 as imageio

    written, opened = [], {}

    class Recorder:
        def __init__(self, path, **kwargs):
            opened.update(kwargs, path=path)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def append_data(self, array):
            written.append(array)

    monkeypatch.setattr(animate, "mp4_available", lambda: True)
    monkeypatch.setattr(imageio, "get_writer", Recorder)
    frames = animate.depth_frames(analysis)[:3]
    animate.save_mp4(frames, tmp_path / "a.mp4", frame_ms=500)
    assert opened["format"] == "FFMPEG" and opened["codec"] == "libx264" and opened["fps"] == 2.0
    assert len(written) == 3 and all(a.shape[0] % 16 == 0 and a.shape[1] % 16 == 0 for a in written)
    np.testing.assert_array_equal(written[1][:frames[1].height, :frames[1].width], np.asarray(frames[1]))


@pytest.mark.slow
def test_cli_animate_writes_one_frame_per_block(real_weights_dir, cat, tmp_path, capsys):
    cat.save(tmp_path / "chelsea.png")
    out = tmp_path / "out"
    argv = [str(tmp_path / "chelsea.png"), "--weights", str(real_weights_dir / AUGREG), "--out", str(out), "--animate",
            "--animate-map", "rollout", "--frame-ms", "300", "--quiet"]
    assert main(argv) == 0
    folder = out / "chelsea"
    result = json.loads((folder / "result.json").read_text())
    assert "animation.gif" in result["files"] and sorted(p.name for p in folder.iterdir()) == result["files"]
    with Image.open(folder / "animation.gif") as gif:
        assert gif.n_frames == 12 and gif.info["duration"] == 300
    assert main(argv[:5] + ["--mp4"]) == 2
    assert "--mp4 writes the animation as MP4 too: add --animate" in capsys.readouterr().err
