"""Training data for a video model: a folder of videos, one sub-folder per class (``python -m vit.train.moving_squares``
writes one), split into train and validation sets as an image folder is (``data.holdout_split``).

Every dataset here yields ``(video path, class index)``; ``VideoTransform`` reads the clip the model sees through
``vit.video_file.read_clip`` (the guards of an upload, the frames sampled and prepared as at inference) and keeps the
decoded frames of small clips, so an epoch after the first decodes nothing.
"""
from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset, Subset
from torchvision.datasets.folder import find_classes, make_dataset

from ..video_file import VideoPreprocess, read_clip
from .data import TrainData, holdout_split

VIDEO_EXTENSIONS = (".mp4", ".mkv", ".avi", ".mov", ".webm")
CACHE_BYTES = 512 * 2**20          # decoded frames kept between epochs


class VideoFiles(Dataset):
    """``(path, class index)`` pairs, the paths as they are (``VideoTransform`` decodes them)."""

    def __init__(self, samples: list[tuple[str, int]]):
        self.samples = samples

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, i: int) -> tuple[str, int]:
        return self.samples[i]


class VideoTransform:
    """Video path -> the model input (T, 3, H, W) float32, as inference prepares it; with ``shuffle_seed`` the frames
    in a random order (fixed by the seed and the file's name), the control that their order is what the model reads."""

    def __init__(self, preprocess: VideoPreprocess, shuffle_seed: int | None = None):
        self.preprocess, self.shuffle_seed = preprocess, shuffle_seed
        self._cache: dict[str, np.ndarray] = {}
        self._bytes = 0

    def frames(self, path: str) -> np.ndarray:
        """(T, h, w, 3) uint8: the clip's sampled frames, resized and cropped (cached while within CACHE_BYTES)."""
        if path in self._cache:
            return self._cache[path]
        frames = read_clip(path, self.preprocess).frames
        if self._bytes + frames.nbytes <= CACHE_BYTES:
            self._cache[path] = frames
            self._bytes += frames.nbytes
        return frames

    def __call__(self, path: str) -> torch.Tensor:
        frames = self.frames(path)
        if self.shuffle_seed is not None:
            order = np.random.default_rng([self.shuffle_seed, zlib.crc32(Path(path).name.encode())]).permutation(
                len(frames))
            frames = frames[order]
        return self.preprocess.clip_tensor(frames)[0]


def scan_videos(root: Path) -> tuple[list[tuple[str, int]], list[str]]:
    """Videos under ``root/<class>/`` with their class indices."""
    classes, index = find_classes(str(root))
    samples = make_dataset(str(root), index, extensions=VIDEO_EXTENSIONS, allow_empty=False)
    return samples, classes


def open_video_data(path: str | Path, val_share: float, seed: int) -> TrainData:
    """``path/<class>/<video>``: a share ``val_share`` of each class held out for validation, chosen by ``seed``."""
    root = Path(path).expanduser()
    if not root.is_dir():
        raise FileNotFoundError(f"Training data not found: {str(root)!r} is not a folder! Expected a folder of videos "
                                f"with one sub-folder per class (python -m vit.train.moving_squares DIR writes one).")
    samples, classes = scan_videos(root)
    if len(classes) < 2:
        raise ValueError(f"{root} has {len(classes)} class folder(s) ({classes})! Expected at least 2 sub-folders, "
                         f"one per class, each holding that class's videos.")
    train_idx, val_idx = holdout_split([y for _, y in samples], val_share, seed)
    files = VideoFiles(samples)
    return TrainData(Subset(files, train_idx), Subset(files, val_idx), classes,
                     f"video folder {root} ({val_share:.0%} of each class held out, seed {seed}): {len(classes)} "
                     f"classes, {len(train_idx)} train, {len(val_idx)} val", "video")
