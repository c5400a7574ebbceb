"""Protects the page's video example (examples/video, made as examples/README.md says): the bundled checkpoint is
the moving-squares toy in the project's own format, loads as a video transformer and classifies every bundled clip as
the direction its folder names, with its rollout on the square; the documented generator command writes the same
clips again (the same classes and shapes, the squares on the same paths, the frames
within one grey level on average: the encoder's colour conversion may round differently on another CPU)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import vit
from vit.train.moving_squares import DIRECTIONS, square_mask
from vit.video_file import read_clip
from viz.analysis import analyze
from viz.video.view import clip_rollout

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "video"
CLIPS = sorted((EXAMPLES / "clips").glob("*/*.mp4"))


def test_the_bundled_toy_reads_every_bundled_clip():
    loaded = vit.load(EXAMPLES / "moving_squares_toy.pt")
    assert isinstance(loaded.model, vit.VideoTransformer) and loaded.labels == sorted(DIRECTIONS)
    assert (EXAMPLES / "moving_squares_toy.pt").stat().st_size < 500_000
    assert sorted({p.parent.name for p in CLIPS}) == sorted(DIRECTIONS) and len(CLIPS) == 8
    hits = total = 0
    for path in CLIPS:
        clip = read_clip(path, loaded.preprocess)
        with torch.no_grad():
            logits = loaded.model(loaded.preprocess.clip_tensor(clip.frames))
        assert loaded.labels[int(logits.argmax())] == path.parent.name, path
        rollout = clip_rollout(analyze(loaded, clip))                                    # (T', gh, gw)
        mask = square_mask(np.load(path.with_suffix(".npy")))
        for tau in range(rollout.shape[0]):
            patches = mask[2 * tau:2 * tau + 2].any(axis=0).reshape(4, 8, 4, 8).any(axis=(1, 3))
            hits += bool(patches.ravel()[rollout[tau].argmax()])
            total += 1
    assert hits / total >= 0.8, hits / total


@pytest.mark.slow
def test_the_documented_generator_writes_the_same_clips(tmp_path):
    made = subprocess.run([sys.executable, "-m", "vit.train.moving_squares", str(tmp_path / "clips"), "--count", "8",
                           "--seed", "1"], capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    again = sorted((tmp_path / "clips").glob("*/*.mp4"))
    assert [p.relative_to(tmp_path / "clips") for p in again] == [p.relative_to(EXAMPLES / "clips") for p in CLIPS]
    preprocess = vit.load(EXAMPLES / "moving_squares_toy.pt").preprocess
    for ours, theirs in zip(CLIPS, again):          # the squares' paths exactly; the pixels through another encoder
        assert np.array_equal(np.load(ours.with_suffix(".npy")), np.load(theirs.with_suffix(".npy")))
        a, b = read_clip(ours, preprocess).frames, read_clip(theirs, preprocess).frames
        assert a.shape == b.shape == (8, 32, 32, 3) and np.abs(a.astype(int) - b).mean() < 1.0


def test_the_examples_arrows_point_the_way_their_squares_move():
    """The page labels each example clip by an arrow (``ARROWS``, kept beside the page: it never loads the trainer)."""
    from vit_explorer.tabs.video import ARROWS, example_label

    way = {"↓": (1, 0), "←": (0, -1), "→": (0, 1), "↑": (-1, 0)}                 # (Δrow, Δcol) on the screen
    assert {direction: way[arrow] for direction, arrow in ARROWS.items()} == DIRECTIONS
    assert [example_label(str(p)) for p in CLIPS if p.parent.name == "right"] == ["→ 1", "→ 2"]
