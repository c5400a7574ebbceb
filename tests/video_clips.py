"""Small videos written with PyAV for the tests: ordinary clips, and the hostile ones a visitor may send (no video
stream, no frames, a 10-hour header, a huge frame, a damaged container)."""
from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import numpy as np


def write_video(path, frames: np.ndarray, fps: int = 10, codec: str = "libx264", pts_step: int = 1) -> Path:
    """RGB frames (T, H, W, 3) uint8 -> a video file at ``path`` (frame i at pts i·pts_step in 1/fps seconds)."""
    path = Path(path)
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream(codec, rate=fps)
        stream.width, stream.height = frames.shape[2], frames.shape[1]
        stream.pix_fmt = "yuv420p"
        stream.time_base = Fraction(1, fps)
        if codec == "libx264":
            stream.options = {"qp": "0"}
        for i, rgb in enumerate(frames):
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
            frame.pts = i * pts_step
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


def gradient_frames(n: int, height: int, width: int, seed: int = 0) -> np.ndarray:
    """(n, H, W, 3) uint8: smooth colour gradients that move from frame to frame, with some noise."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float64)
    out = []
    for t in range(n):
        rgb = np.stack([np.sin((xx + 3 * t) / 7) * 100 + 128, np.cos((yy - 2 * t) / 5) * 100 + 128,
                        (xx + yy + 10 * t) % 256], -1)
        out.append(np.clip(rgb + rng.normal(0, 8, rgb.shape), 0, 255))
    return np.stack(out).astype(np.uint8)


def audio_only(path) -> Path:
    """A WAV file: one audio stream, no video."""
    path = Path(path)
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("pcm_s16le", rate=8000)
        frame = av.AudioFrame.from_ndarray(np.zeros((1, 800), np.int16), format="s16", layout="mono")
        frame.sample_rate = 8000
        for packet in stream.encode(frame):
            container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


def no_frames(path) -> Path:
    """An AVI container with a video stream and not one frame in it."""
    path = Path(path)
    with av.open(str(path), mode="w", format="avi") as container:
        stream = container.add_stream("mpeg4", rate=10)
        stream.width = stream.height = 32
        stream.pix_fmt = "yuv420p"
        container.start_encoding()                 # the header, with no packet after it
    return path


def ten_hours(path) -> Path:
    """Two small frames ten hours apart: a header that says 10 hours in a file of a few hundred bytes."""
    frames = np.zeros((2, 32, 32, 3), np.uint8)
    return write_video(path, frames, fps=1, codec="ffv1", pts_step=36_000)


def huge_frame(path) -> Path:
    """One black frame of 4000×2400 pixels (9.6 megapixels, more than 4K's 8.3), compressed to a few kilobytes."""
    return write_video(path, np.zeros((1, 2400, 4000, 3), np.uint8), fps=1, codec="ffv1")


def moving_squares_toy(root) -> tuple[Path, Path]:
    """The moving squares (8 clips of 8 frames of 32×32, one folder per direction) and a small ViViT-like model
    trained on them for one epoch (joint attention, tubelets of 2, a CLS token): (its checkpoint, the data folder).
    What it predicts does not matter to the tests that use it; it is a video model as ``python -m vit.train --arch
    video`` writes one."""
    from vit.train import TrainOptions, fit
    from vit.train.moving_squares import make_moving_squares_folder

    root = Path(root)
    data = make_moving_squares_folder(root / "data", count=8)
    result = fit(TrainOptions(data=str(data), out=str(root / "w" / "toy.pt"), arch="video", img_size=(32, 32),
                              patch_size=8, frames=8, tubelet=2, depth=2, embed_dim=32, num_heads=2, epochs=1,
                              batch_size=8, workers=0))
    return result.files.best, data
