"""``python -m viz.dynamics SNAPSHOT_DIR IMAGE --out DIR``: a training run's snapshots on one photo, one frame per
snapshot (``viz.dynamics.DynamicsView``), as DIR/dynamics.gif (and .mp4 with ``--mp4``) and the arrays behind the
frames as DIR/dynamics.npz (``viz.dynamics.dynamics_arrays``).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from ..compare.animate import save_gif, save_mp4
from ..drawing import render
from ..compare.dynamics import FRAME_MS, DynamicsView, dynamics_arrays
from ..maps.rollout import FUSIONS
from .options import PREPROCESS_CHOICES


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m viz.dynamics",
                                description="Animate a training run's snapshots on one photo: rollout, position-"
                                            "embedding similarity, mean attention distance, and the run's accuracy "
                                            "and pos_neighbour_similarity, one frame per snapshot.")
    p.add_argument("snapshots", type=Path, metavar="SNAPSHOT_DIR",
                   help="NAME.snapshots/ written by python -m vit.train --out NAME.pt --snapshot-every N")
    p.add_argument("image", type=Path, metavar="IMAGE", help="the photo to follow through training")
    p.add_argument("--out", type=Path, default=Path("out"), metavar="DIR",
                   help="output folder: dynamics.gif and dynamics.npz (default: out)")
    p.add_argument("--preprocess", choices=PREPROCESS_CHOICES, default="own",
                   help="how the photo becomes the model's input: own (default: the run's own preprocessing), crop "
                        "(keep the aspect ratio, cut out the centre) or squash (the whole photo stretched)")
    p.add_argument("--fusion", choices=FUSIONS, default=FUSIONS[0], help="rollout head fusion")
    p.add_argument("--cmap", default=render.DEFAULT_CMAP, help="colormap of the rollout (default: inferno)")
    p.add_argument("--frame-ms", type=int, default=FRAME_MS, help=f"milliseconds per frame (default: {FRAME_MS})")
    p.add_argument("--every", type=int, default=1, metavar="K",
                   help="use every K-th snapshot and the last one (a smaller GIF of a long run; default: 1, all)")
    p.add_argument("--mp4", action="store_true",
                   help="also write dynamics.mp4 (needs the optional packages imageio and imageio-ffmpeg)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from vit.image_file import open_image

    from ..compare.snapshots import load_series

    try:
        render.colormap_lut(args.cmap)
        if args.frame_ms < 10:
            raise ValueError(f"--frame-ms must be at least 10 but got {args.frame_ms}.")
        photo = open_image(args.image)
        series = load_series(args.snapshots, photo, args.fusion, args.every, args.preprocess)
        frames = DynamicsView(series, args.cmap).frames()
        args.out.mkdir(parents=True, exist_ok=True)
        save_gif(frames, args.out / "dynamics.gif", args.frame_ms)
        np.savez(args.out / "dynamics.npz", **dynamics_arrays(series))
        if args.mp4:
            save_mp4(frames, args.out / "dynamics.mp4", args.frame_ms)
    except (ValueError, FileNotFoundError, RuntimeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    n = series.pos_neighbour_similarity
    print(f"wrote {len(frames)} frames (epochs {int(series.epochs[0])}-{int(series.epochs[-1])}) to "
          f"{args.out / 'dynamics.gif'}; pos_neighbour_similarity {n[0]:+.3f} -> {n[-1]:+.3f}, validation accuracy "
          f"{series.val_accuracy[0]:.3f} -> {series.val_accuracy[-1]:.3f}", file=sys.stderr)
    return 0
