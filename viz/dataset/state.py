"""What an interrupted data-set run leaves behind, so that ``--resume`` continues where it stopped.

After every batch each process saves, atomically (a temporary file renamed over the old one), which images it has
finished and its statistics so far: ``DIR/summary/partial/session-<s>-rank-<r>.npz``, a few KB plus one bit per
image. A resumed run reads every file of every earlier session, adds their statistics up (exactly: see
``viz.dataset.statistics``), skips the images they finished, and saves its own progress as a new session, so no
file is ever rewritten by a session that did not make it: whatever the moment of the kill, the files on disk
describe disjoint sets of finished images. The number of processes, the batch size, the workers and the device may
change between sessions; the images, the weights and what the statistics depend on may not (the run says which
differ). Files are read with ``allow_pickle=False``.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .statistics import Statistics

_FILE = re.compile(r"session-(\d+)-rank-(\d+)\.npz")


def partial_folder(out: Path) -> Path:
    return Path(out) / "summary" / "partial"


@dataclass
class Progress:
    """Finished images and their statistics: one process's own, or every earlier session's added together."""
    count: int                                        # images in the run
    done: np.ndarray = None                           # (count,) bool: finished, counted in ``statistics``
    statistics: Statistics = field(default_factory=Statistics)
    session: int = 0                                  # sessions found before this one
    scores: dict = field(default_factory=dict)        # image index -> its row of AUCs (viz.trust.dataset), kept
                                                      # per image: the bootstrap resamples images, not sums

    def __post_init__(self):
        if self.done is None:
            self.done = np.zeros(self.count, dtype=bool)


def clear(out: Path) -> None:
    """Forget an earlier run's progress (a run without --resume starts over)."""
    shutil.rmtree(partial_folder(out), ignore_errors=True)


def load(out: Path, fingerprint: dict, count: int) -> Progress:
    """Every earlier session's progress, added up; ``session`` is the number the new session takes.

    ValueError when a saved file was made for other images or other settings (naming them), or when two saved
    files claim the same image (two runs writing into the same folder at once).
    """
    total = Progress(count)
    files = sorted(partial_folder(out).glob("session-*-rank-*.npz"))
    for path in files:
        match = _FILE.fullmatch(path.name)
        if not match:
            continue
        with np.load(path, allow_pickle=False) as saved:
            theirs = json.loads(str(saved["fingerprint"]))
            if theirs != fingerprint:
                changed = sorted(k for k in fingerprint.keys() | theirs.keys() if theirs.get(k) != fingerprint.get(k))
                raise ValueError(f"Cannot resume: the run saved in {path.parent} was made with other settings "
                                 f"({', '.join(changed)} differ). Run again without --resume to start over, or "
                                 f"pass the same images and options.")
            done = np.unpackbits(saved["done"], count=count).astype(bool)
            if (done & total.done).any():
                raise ValueError(f"Cannot resume: {path.name} repeats images that another saved file already counts. "
                                 f"Were two runs writing into {out} at once? Run again without --resume.")
            total.done |= done
            total.statistics.merge(Statistics.from_arrays({k: saved[k] for k in saved.files if "|" in k}))
            if "scores_index" in saved.files:
                total.scores.update(zip(saved["scores_index"].tolist(), saved["scores"]))
        total.session = max(total.session, int(match.group(1)) + 1)
    return total


def save(out: Path, session: int, rank: int, fingerprint: dict, mine: Progress) -> None:
    """Write this process's progress of this session (atomically: a kill leaves the old file or the new one)."""
    folder = partial_folder(out)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"session-{session:03d}-rank-{rank:05d}.npz"
    temporary = path.with_name(f".{path.stem}.tmp.npz")
    index = sorted(mine.scores)
    scores = {"scores_index": np.array(index, dtype=np.int64), "scores": np.array([mine.scores[i] for i in index])}
    np.savez(temporary, fingerprint=np.array(json.dumps(fingerprint, sort_keys=True)),
             done=np.packbits(mine.done), **mine.statistics.to_arrays(), **(scores if index else {}))
    os.replace(temporary, path)
