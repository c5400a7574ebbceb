"""Run every snapshot of a training run on one photo, once, and keep only the small arrays ``viz.dynamics`` draws
(a slider over the snapshots then re-renders from arrays, never from the models)."""
from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

import numpy as np
from PIL import Image

import vit
from vit.train.snapshots import SNAPSHOT_SUFFIX, list_snapshots

from .. import panels
from ..maps.embeddings import neighbour_similarity, position_similarity
from ..records import SnapshotSeries
from ..analysis.capture import analyze, model_arrays


def load_series(folder: str | Path, photo: Image.Image, fusion: str = "mean", every: int = 1,
                preprocess: str = "own", turn: AbstractContextManager | None = None) -> SnapshotSeries:
    """Every snapshot in ``folder`` (``vit.train.snapshots``) on ``photo`` -> SnapshotSeries; with ``every`` k > 1
    only every k-th snapshot (in epoch order) and the last one (a shorter animation of a long run).

    Each snapshot is loaded with ``vit.load`` (``preprocess``: "own", "crop" or "squash"), run once on the photo,
    and dropped. ValueError when the snapshots are not one run (another architecture, grid or preprocessing
    part-way). ``turn``: a lock held while each snapshot runs (a server's model turn: one snapshot at a time,
    never the whole run, holds others back).
    """
    if every < 1:
        raise ValueError(f"every must be at least 1 but got {every}!")
    folder = Path(folder)
    infos = list_snapshots(folder)
    infos = [s for i, s in enumerate(infos) if i % every == 0 or i == len(infos) - 1]
    reference = None                      # (depth, heads, native grid, patch, pos_embed_kind, preprocessing)
    rollouts, sims, distances, neighbours, top1 = [], [], [], [], []
    for info in infos:
        loaded = vit.load(str(info.path), preprocess=preprocess)
        cfg = loaded.config
        shape = (cfg.depth, cfg.num_heads, cfg.grid, cfg.patch_size, cfg.pos_embed_kind, loaded.preprocess)
        if reference is None:
            reference = shape
        elif shape != reference:
            raise ValueError(f"{info.path} does not belong to the run of {infos[0].path}: its architecture or "
                             f"preprocessing differs ({shape[:5]} vs {reference[:5]})! Expected one run's snapshots.")
        with turn or nullcontext():
            a = analyze(loaded, photo)
        m = model_arrays(loaded.model, loaded.name)
        rollouts.append(panels.rollout_of(a, fusion))
        distances.append(panels.mean_distance_of(a))
        top1.append(a.top_k(1)[0])
        if m.has_position_embedding:
            sims.append(position_similarity(m.pos_embed, m.native_grid))
            neighbours.append(neighbour_similarity(sims[-1], m.native_grid))
        else:
            sims.append(np.zeros((0, 0), np.float32))
            neighbours.append(np.nan)
    _, _, native_grid, patch_size, kind, _ = reference
    return SnapshotSeries(name=folder.name.removesuffix(SNAPSHOT_SUFFIX),
                          epochs=np.array([s.epoch for s in infos], dtype=np.int64),
                          val_accuracy=np.array([s.val_accuracy for s in infos], dtype=np.float64), image=a.image,
                          rollout=np.stack(rollouts), pos_similarity=np.stack(sims), mean_distance=np.stack(distances),
                          pos_neighbour_similarity=np.array(neighbours, dtype=np.float64), top1=tuple(top1),
                          grid=tuple(a.grid), native_grid=tuple(native_grid), patch_size=patch_size,
                          pos_embed_kind=kind)
