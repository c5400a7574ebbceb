"""Decoding images in worker processes (torch's ``DataLoader``) and each process's share of them under torchrun.

Workers decode and crop (``vit.image_file.open_image``, ``Preprocess.crop_image``) and hand over the crop as
uint8 pixels; the model process normalises them on its device (``viz.analysis.model_input``), so a batch
crosses to a GPU in a quarter of the bytes. A file that cannot be read does not stop the batch: it comes back
with its message instead of pixels.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

from vit.image_file import open_image

from .files import ImageEntry


@dataclass
class Batch:
    """What the loader yields: the readable images of a batch and the messages of the unreadable ones."""
    indices: list[int]            # run indices (into the entry list) of the readable images, in order
    pixels: torch.Tensor          # (B, H, W, 3) uint8 crops of those images (B may be 0)
    decode_s: list[float]         # seconds each took to decode and crop, in its worker
    failed: list[tuple[int, str]]  # (run index, message) of the files that could not be read

    def pin_memory(self) -> "Batch":
        """Called by the DataLoader's pinning thread (``pin_memory=True``, CUDA): page-locked pixels copy faster."""
        self.pixels = self.pixels.pin_memory()
        return self


class CroppedImages(Dataset):
    """Entry i -> (i, its crop (H, W, 3) uint8 or None, seconds, error message or None)."""

    def __init__(self, entries: Sequence[ImageEntry], preprocess):
        self.entries, self.preprocess = entries, preprocess

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, i: int):
        t0 = time.perf_counter()
        try:
            crop = self.preprocess.crop_image(open_image(self.entries[i].path))
        except (ValueError, OSError) as error:   # ImageFileError (a ValueError): missing, damaged, unsupported
            return i, None, time.perf_counter() - t0, str(error)
        return i, torch.from_numpy(np.array(crop)), time.perf_counter() - t0, None


def collate(items) -> Batch:
    ok = [item for item in items if item[1] is not None]
    height, width = ok[0][1].shape[:2] if ok else (0, 0)
    pixels = torch.stack([item[1] for item in ok]) if ok else torch.empty(0, height, width, 3, dtype=torch.uint8)
    return Batch([item[0] for item in ok], pixels, [item[2] for item in ok],
                 [(item[0], item[3]) for item in items if item[1] is None])


def shard(count: int, rank: int, world: int) -> list[int]:
    """This process's share of ``count`` images: ``DistributedSampler``'s split (rank, rank + world, …) without
    the samples it repeats to make every share equally long.

    The sampler pads the index list to a multiple of ``world`` by repeating its first indices, so that every
    process takes the same number of steps (what data-parallel training needs). Here the processes only meet
    once, at the end, so shares may differ by one image, and an image counted twice would bias the statistics.
    Position p of the padded list is a repeat exactly when p >= count.
    """
    sampler = DistributedSampler(range(count), num_replicas=world, rank=rank, shuffle=False) if world > 1 else None
    if sampler is None:
        return list(range(count))
    positions = range(rank, sampler.total_size, world)              # where this rank's samples sit in the padded list
    return [index for position, index in zip(positions, sampler) if position < count]


def image_loader(entries: Sequence[ImageEntry], preprocess, indices: Sequence[int], batch_size: int,
                 workers: int, pin_memory: bool = False) -> DataLoader:
    """Batches of the entries at ``indices`` (in that order), decoded by ``workers`` processes (0: in this one)."""
    return DataLoader(CroppedImages(entries, preprocess), batch_size=batch_size, sampler=list(indices),
                      num_workers=workers, collate_fn=collate, pin_memory=pin_memory,
                      persistent_workers=False)
