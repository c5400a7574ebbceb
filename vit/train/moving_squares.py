"""A generated video folder where only *motion* decides the class: a bright square on a dark noisy background moving
up, down, left or right. The square wraps around the frame's borders (it leaves on one side and comes back on the
other) from a start drawn uniformly over the frame, so in every frame, first, last or any other, the square is
anywhere with the same chance whatever the direction: a single frame cannot tell the class, only frames compared
through time can. The demonstration task for a video transformer learning to see motion.

    python -m vit.train.moving_squares data/moving_squares     # 480 clips of 8 frames of 32×32 -> 4 classes
    python -m vit.train --arch video --data data/moving_squares --out weights/moving_squares.pt --img-size 32 \\
        --patch-size 8 --frames 8 --tubelet 2 --depth 3 --embed-dim 64 --heads 4 --lr 1e-3 --epochs 10 \\
        --warmup-epochs 1 --drop-path 0 --batch-size 16 --workers 0

Clips are MP4 files (H.264 at quantiser 0, lossless in brightness), written and read with PyAV (the ``[video]``
extra).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

DIRECTIONS = {"down": (1, 0), "left": (0, -1), "right": (0, 1), "up": (-1, 0)}   # class -> (Δrow, Δcol) per step


def square_clip(rng: np.random.Generator, direction: str, frames: int = 8, size: int = 32, speed: int = 4,
                side: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """One clip (frames, size, size, 3) uint8 of a square moving ``speed`` pixels a frame in ``direction``, wrapping
    around the borders, and where its top-left corner is in every frame, (frames, 2) as (row, column).

    Background: a random dark grey level (0–80) plus Gaussian noise (σ 12) per pixel, channel and frame. Square:
    ``side`` pixels, one random bright colour (each channel 170–255); its first top-left corner uniform over the
    frame."""
    dr, dc = DIRECTIONS[direction]
    start = rng.integers(0, size, 2)
    corners = np.stack([(start + t * speed * np.array([dr, dc])) % size for t in range(frames)])
    background = rng.uniform(0, 80)
    clip = np.clip(background + rng.normal(0, 12, (frames, size, size, 3)), 0, 255)
    colour = rng.uniform(170, 255, 3)
    span = np.arange(side)
    for t, (r, c) in enumerate(corners):
        rows, cols = (r + span) % size, (c + span) % size
        clip[t][np.ix_(rows, cols)] = colour
    return clip.astype(np.uint8), corners


def square_mask(corners: np.ndarray, size: int = 32, side: int = 8) -> np.ndarray:
    """(frames, size, size) bool: where the square is in every frame."""
    mask = np.zeros((len(corners), size, size), dtype=bool)
    span = np.arange(side)
    for t, (r, c) in enumerate(corners):
        mask[t][np.ix_((r + span) % size, (c + span) % size)] = True
    return mask


def write_clip(path: str | Path, clip: np.ndarray, fps: int = 8) -> Path:
    """RGB frames (T, H, W, 3) uint8 -> an MP4 file (H.264, quantiser 0)."""
    from fractions import Fraction

    from ..video_file import require_av
    av = require_av()
    path = Path(path)
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("libx264", rate=fps)
        stream.width, stream.height = clip.shape[2], clip.shape[1]
        stream.pix_fmt = "yuv420p"
        stream.time_base = Fraction(1, fps)
        stream.options = {"qp": "0"}
        for i, rgb in enumerate(clip):
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
            frame.pts = i
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


def make_moving_squares_folder(root: str | Path, count: int = 480, frames: int = 8, size: int = 32, speed: int = 3,
                               seed: int = 0) -> Path:
    """Write ``count`` clips (as evenly over the four directions as possible) to ``root/<direction>/<i>.mp4``, and
    beside each the square's top-left corner in every frame (``<i>.npy``, (frames, 2)); returns ``root``. The same
    arguments always write the same clips."""
    if count < 2 * len(DIRECTIONS):
        raise ValueError(f"Expected at least 2 clips per direction (count >= {2 * len(DIRECTIONS)}) but got {count}!")
    if frames < 2 or size < 16 or size % 2:
        raise ValueError(f"Expected at least 2 frames and an even frame side of at least 16 pixels but got "
                         f"frames={frames}, size={size}!")
    root = Path(root)
    rng = np.random.default_rng(seed)
    names = sorted(DIRECTIONS)
    for name in names:
        (root / name).mkdir(parents=True, exist_ok=True)
    for i in range(count):
        name = names[i % len(names)]
        clip, corners = square_clip(rng, name, frames, size, speed, side=size // 4)
        stem = root / name / f"{i // len(names):04d}"
        write_clip(stem.with_suffix(".mp4"), clip)
        np.save(stem.with_suffix(".npy"), corners)
    return root


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m vit.train.moving_squares",
                                description="Write the motion demonstration data set: a bright square moving up, "
                                            "down, left or right, the class being its direction.")
    p.add_argument("out", type=Path, help="folder to write (one sub-folder per direction)")
    p.add_argument("--count", type=int, default=480, help="number of clips [default: 480]")
    p.add_argument("--frames", type=int, default=8, help="frames per clip [default: 8]")
    p.add_argument("--size", type=int, default=32, help="frame side in pixels [default: 32]")
    p.add_argument("--speed", type=int, default=3, help="pixels the square moves per frame [default: 3]")
    p.add_argument("--seed", type=int, default=0, help="[default: 0]")
    args = p.parse_args(argv)
    try:
        make_moving_squares_folder(args.out, args.count, args.frames, args.size, args.speed, args.seed)
    except ValueError as e:          # a VideoDecoderMissing too: PyAV writes the clips
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {args.count} clips of {args.frames} frames of {args.size}x{args.size} in {len(DIRECTIONS)} "
          f"classes to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
