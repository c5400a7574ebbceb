"""Checkpoints kept during training (``--snapshot-every N``): the material for watching a model learn.

``--out weights/NAME.pt --snapshot-every N`` writes ``weights/NAME.snapshots/epoch-0000.pt`` before any training step
(the initialisation, validated), then ``epoch-00NN.pt`` after every N-th epoch and after the last one. Each is a normal
checkpoint of our own format (``vit.save_checkpoint``; ``vit.load`` opens it, so do the app and the CLI) whose
``extra`` holds ``{"name": "NAME epoch E", "epoch": E, "val_accuracy": A, "val_loss": V, "run": {...}}``.
``python -m viz.dynamics weights/NAME.snapshots IMAGE`` turns the folder into an animation.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from ..checkpoints.files import read_file, save_checkpoint
from ..preprocess import Preprocess

SNAPSHOT_SUFFIX = ".snapshots"


def snapshot_dir(out: str | Path) -> Path:
    """weights/NAME.pt -> weights/NAME.snapshots (next to the run's other files)."""
    out = Path(out)
    return out.with_name(out.stem + SNAPSHOT_SUFFIX)


def snapshot_path(folder: Path, epoch: int) -> Path:
    """The file of the snapshot after ``epoch`` epochs (0: before any step); zero-padded so names sort by epoch."""
    return Path(folder) / f"epoch-{epoch:04d}.pt"


def is_snapshot_epoch(epoch: int, every: int, last_epoch: int) -> bool:
    """Whether the snapshot after ``epoch`` (1-based count of finished epochs) is kept: every ``every``-th, and the
    last epoch of the run so the series always ends at the final model. ``every`` 0 keeps none."""
    return every > 0 and (epoch % every == 0 or epoch == last_epoch)


def save_snapshot(folder: Path, model: torch.nn.Module, labels: list[str], preprocess: Preprocess, epoch: int,
                  val_accuracy: float, val_loss: float, run_name: str, run: dict | None = None) -> Path:
    """Write one snapshot (see the module docstring); ``run`` is stored as ``extra["run"]`` (plain values only)."""
    extra = {"name": f"{run_name} epoch {epoch}", "epoch": int(epoch), "val_accuracy": float(val_accuracy),
             "val_loss": float(val_loss), "run": dict(run or {})}
    return save_checkpoint(snapshot_path(folder, epoch), model, labels, preprocess, extra=extra)


@dataclass(frozen=True)
class SnapshotInfo:
    """What a snapshot's ``extra`` says about it."""
    path: Path
    epoch: int
    val_accuracy: float


def list_snapshots(folder: str | Path) -> list[SnapshotInfo]:
    """The snapshots in ``folder``, sorted by epoch. Reads each file safely (weights only) for its ``extra``.

    Raises FileNotFoundError for a missing or empty folder, ValueError for a file that is not a snapshot (a
    checkpoint without ``epoch`` and ``val_accuracy`` in its ``extra``) or for two snapshots of the same epoch.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"No snapshot folder {str(folder)!r}! Expected the NAME{SNAPSHOT_SUFFIX}/ folder that "
                                f"python -m vit.train --out NAME.pt --snapshot-every N writes.")
    found = []
    for path in sorted(folder.glob("*.pt")):
        extra = read_file(path).get("extra") or {}
        if not isinstance(extra, dict) or "epoch" not in extra or "val_accuracy" not in extra:
            raise ValueError(f"{path} is not a training snapshot! Expected a checkpoint written by --snapshot-every, "
                             f"with epoch and val_accuracy in its extra.")
        found.append(SnapshotInfo(path, int(extra["epoch"]), float(extra["val_accuracy"])))
    if not found:
        raise FileNotFoundError(f"{folder} holds no snapshots (*.pt)! Train with --snapshot-every N to fill it.")
    found.sort(key=lambda s: s.epoch)
    epochs = [s.epoch for s in found]
    if len(set(epochs)) != len(epochs):
        raise ValueError(f"{folder} holds two snapshots of the same epoch ({epochs})! Expected one run's snapshots.")
    return found
