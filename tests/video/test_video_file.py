"""Protects video in, frames out: frames are sampled as transformers' video processors sample them, prepared into the
very input tensor each family's processor makes from the same frames, and every bad video is refused with one
sentence by the guard meant for it, before any model runs (the header's guards before a frame is decoded; decoding
bounded in frames and seconds whatever the header says). PyAV missing: one sentence naming the extra."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest
import torch
import transformers
from transformers.video_utils import VideoMetadata, default_sample_indices_fn

import vit.video_file as video_file
from video_clips import audio_only, gradient_frames, huge_frame, no_frames, ten_hours, write_video
from vit.checkpoints.video_formats import huggingface_video_preprocess
from vit.video import VideoConfig
from vit.video_file import VideoFileError, VideoLimits, VideoPreprocess, decode_frames, probe_video, read_clip, \
    sample_indices

PROCESSORS = {"videomae": transformers.VideoMAEVideoProcessor, "timesformer": transformers.TimesformerVideoProcessor,
              "vivit": transformers.VivitVideoProcessor, "vjepa2": transformers.VJEPA2VideoProcessor}


@pytest.fixture(scope="module")
def clip_path(tmp_path_factory):
    return write_video(tmp_path_factory.mktemp("v") / "clip.mp4", gradient_frames(40, 90, 160), fps=10)


@pytest.mark.parametrize("total,n", [(40, 8), (300, 16), (17, 16), (16, 16), (101, 3)])
def test_uniform_sampling_is_the_processors(total, n):
    expected = default_sample_indices_fn(VideoMetadata(total_num_frames=total, fps=30.0), num_frames=n)
    assert sample_indices(total, n).tolist() == list(expected)
    processor = transformers.VideoMAEVideoProcessor()
    assert sample_indices(total, n).tolist() == list(processor.sample_frames(
        VideoMetadata(total_num_frames=total, fps=30.0), num_frames=n))


def test_strided_sampling():
    """The model cards' clip of n frames ``stride`` apart, from the middle; a short video repeats its last frame."""
    assert sample_indices(100, 4, "strided", 8).tolist() == [34, 44, 55, 65]
    assert sample_indices(10, 4, "strided", 4).tolist() == [0, 5, 9, 9]
    with pytest.raises(VideoFileError, match="fewer than the 16"):
        sample_indices(10, 16)


@pytest.mark.parametrize("shape", [(90, 160), (160, 90), (64, 64), (301, 203)])
@pytest.mark.parametrize("family", tuple(PROCESSORS))
def test_input_tensor_is_the_processors(family, shape):
    """The same frames through our preprocessing and through the family's video processor (its defaults) give the same
    input tensor: the same pixels after the resize and crop (uint8, equal), and the normalisation to float rounding."""
    frames = gradient_frames(6, *shape, seed=2)
    processor = PROCESSORS[family]()
    expected = processor(list(frames), return_tensors="pt")
    expected = expected["pixel_values_videos" if family == "vjepa2" else "pixel_values"]
    crop = processor.crop_size["height"]
    ours = huggingface_video_preprocess(None, family, VideoConfig(img_size=crop, patch_size=8, num_frames=6))
    got = ours(frames)
    assert got.shape == expected.shape == (1, 6, 3, crop, crop)
    assert torch.allclose(got, expected, rtol=0, atol=1e-5), (got - expected).abs().max()


def test_read_clip_frames_and_times(clip_path):
    """read_clip: the sampled frames as decoded, resized and cropped at once, their indices and times."""
    prep = VideoPreprocess(resize=48, crop=(48, 48), num_frames=8)
    clip = read_clip(clip_path, prep)
    assert clip.indices.tolist() == [0, 5, 10, 15, 20, 25, 30, 35]
    assert np.allclose(clip.times, clip.indices / 10)
    assert clip.info.frames == 40 and clip.info.width == 160 and clip.info.height == 90
    decoded = decode_frames(clip_path, clip.indices)
    assert decoded.shape == (8, 90, 160, 3)
    expected = prep.crop_frames(torch.from_numpy(decoded).permute(0, 3, 1, 2)).permute(0, 2, 3, 1).numpy()
    assert clip.frames.dtype == np.uint8 and np.array_equal(clip.frames, expected)
    assert torch.equal(prep(decoded), prep.clip_tensor(clip.frames))


def refusal(path, limits=VideoLimits(), num_frames=8) -> str:
    with pytest.raises(VideoFileError) as caught:
        read_clip(path, VideoPreprocess(num_frames=num_frames), limits=limits)
    message = str(caught.value)
    assert message.count(". ") <= 1 and "\n" not in message and "Traceback" not in message
    return message


def test_hostile_videos_refused_by_their_header(tmp_path, monkeypatch):
    """No video stream, no frames, a 10-hour header, a huge frame: refused from the header, before a frame is decoded
    (decoding is made to fail, so a refusal that came later would say so)."""
    monkeypatch.setattr(video_file, "_frames_at", lambda *a: pytest.fail("a frame was decoded"))
    assert "no video stream (only audio streams)" in refusal(audio_only(tmp_path / "sound.wav"))
    assert "no frames" in refusal(no_frames(tmp_path / "empty.avi"))
    assert "too long: 10 h" in refusal(ten_hours(tmp_path / "long.mkv"))
    assert "4000×2400 pixels" in refusal(huge_frame(tmp_path / "huge.mkv"))


def test_damaged_and_wrong_files_refused(tmp_path, clip_path):
    data = clip_path.read_bytes()
    (tmp_path / "cut.mp4").write_bytes(data[: len(data) // 3])
    (tmp_path / "noise.mp4").write_bytes(np.random.default_rng(0).bytes(5000))
    (tmp_path / "text.mp4").write_text("this is not a video")
    (tmp_path / "empty.mp4").write_bytes(b"")
    for name in ("cut.mp4", "noise.mp4", "text.mp4"):
        assert "cannot be read as a video" in refusal(tmp_path / name)
    assert "empty (0 bytes)" in refusal(tmp_path / "empty.mp4")
    assert "does not exist" in refusal(tmp_path / "missing.mp4")
    assert "too large" in refusal(clip_path, VideoLimits(max_bytes=1000))
    assert "fewer than the 64" in refusal(clip_path, num_frames=64)


def test_decoding_is_bounded(clip_path):
    """Whatever the header says, decoding stops after max_frames frames and max_decode_seconds seconds."""
    assert "decoding stopped after 20 frames" in refusal(clip_path, VideoLimits(max_frames=20))
    assert "longer than 0 seconds" in refusal(clip_path, VideoLimits(max_decode_seconds=0))


def test_missing_pyav_is_one_sentence(monkeypatch, clip_path):
    """Without PyAV, the module still imports and opening a video names the extra to install."""
    monkeypatch.setitem(sys.modules, "av", None)
    with pytest.raises(video_file.VideoDecoderMissing, match=r"vit-attention-explorer\[video\]"):
        read_clip(clip_path, VideoPreprocess())
    assert isinstance(video_file.VideoDecoderMissing("x"), ImportError)


def test_a_video_given_for_a_photo_says_so(clip_path, monkeypatch):
    """A video where a photo is expected (the image views, python -m viz on a ViT) is named as a video, and PyAV named
    when it is missing, in one sentence."""
    from vit.image_file import ImageFileError, open_image
    with pytest.raises(ImageFileError, match=r"This file is a video \(MP4/MOV video\), not a photo: open it with a "
                                             r"video model"):
        open_image(clip_path)
    monkeypatch.setitem(sys.modules, "av", None)
    with pytest.raises(ImageFileError, match=r"reading videos needs PyAV, which is not installed \(pip install "
                                             r"\"vit-attention-explorer\[video\]\"\)"):
        open_image(clip_path)


@pytest.mark.slow
def test_the_app_and_cli_start_without_pyav():
    """Nothing the page or the CLI imports at start-up imports PyAV."""
    code = ("import sys; import vit, viz.cli, vit_explorer.server, vit.video_file, vit.video; "
            "sys.exit(1 if 'av' in sys.modules else 0)")
    assert os.system(f"{sys.executable} -c \"{code}\"") == 0
