"""Each latent's strongest patches over the training folder: top_patches.npz, what the Concepts view shows beside a
latent's map (thumbnails of the photos with the patch framed).

Every photo of the folder is read as the model's own preprocessing shows it (view 0: its thumbnails can be cut from
the photo again); the random crops only train. Streamed: the codes of a few thousand tokens at a time, merged into
the running top ``TOP`` of every latent. ``top_patches.npz``: ``image_index``, ``row``, ``col`` (M, TOP) int32 and
``activation`` (M, TOP) float32, strongest first; ``images`` (P,) the photos' paths relative to FOLDER. A latent
that fired on fewer than ``TOP`` patches has activation 0 and image_index, row, col −1 in the rest.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from .activations import Activations
from .sae import SparseAutoencoder

TOP = 64
CHUNK = 4096
KEYS = ("image_index", "row", "col", "activation", "images")


@dataclass
class TopPatches:
    """top_patches.npz in memory."""
    image_index: np.ndarray     # (M, TOP) int32, -1 where empty
    row: np.ndarray             # (M, TOP) int32
    col: np.ndarray             # (M, TOP) int32
    activation: np.ndarray      # (M, TOP) float32, strongest first, 0 where empty
    images: np.ndarray          # (P,) str, relative to the folder

    def save(self, path: Path) -> None:
        np.savez(path, **{key: getattr(self, key) for key in KEYS})

    @classmethod
    def load(cls, path: Path) -> "TopPatches":
        with np.load(path, allow_pickle=False) as saved:
            return cls(*(saved[key] for key in KEYS))

    def of(self, latent: int) -> list[tuple[int, int, int, float]]:
        """The latent's top patches that exist: [(image index, row, col, activation)], strongest first."""
        keep = self.activation[latent] > 0
        return list(zip(self.image_index[latent][keep].tolist(), self.row[latent][keep].tolist(),
                        self.col[latent][keep].tolist(), self.activation[latent][keep].tolist()))


def top_patches(sae: SparseAutoencoder, acts: Activations, top: int = TOP, progress: bool = False) -> TopPatches:
    """Every latent's ``top`` strongest patches over view 0 of every photo of the cache (a progress bar over the
    shards with ``progress``)."""
    M = sae.latents
    best = torch.zeros(M, top)                                 # activations, strongest first
    where = torch.full((M, top, 3), -1, dtype=torch.int64)     # photo, row, col
    for part in tqdm(acts.chunks("all", views=[0]), total=len(acts.shards), desc="top patches", unit="shard",
                     dynamic_ncols=True, disable=not progress):
        place = torch.stack([part["photo"].long(), part["row"].long(), part["col"].long()], dim=1)   # (n, 3)
        for x, p in zip(part["tokens"].split(CHUNK), place.split(CHUNK)):
            codes = sae.encode(x.to(sae.W_enc.device)).cpu().T     # (M, n)
            k = min(top, codes.shape[1])
            values, index = torch.topk(codes, k, dim=1)        # (M, k)
            merged = torch.cat([best, values], dim=1)
            merged_where = torch.cat([where, p[index]], dim=1)
            best, order = torch.topk(merged, top, dim=1)
            where = torch.gather(merged_where, 1, order.unsqueeze(-1).expand(-1, -1, 3))
    empty = best <= 0
    where[empty] = -1
    best[empty] = 0
    return TopPatches(where[..., 0].int().numpy(), where[..., 1].int().numpy(), where[..., 2].int().numpy(),
                      best.float().numpy(), np.array(acts.photos))
