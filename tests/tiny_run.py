"""Tiny checkpoints and folders of generated images for the data-set tests, and ``python -m viz`` in a subprocess.

The models are small enough that a folder of a hundred images runs in about a second on a CPU, yet have the real
structure: a ViT (CLS token, patch grid, several blocks and heads) and a Swin (windows, shifts, merges, stages with
different heads).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch
import vit
from PIL import Image

REPO = Path(__file__).resolve().parent.parent
COLOURS = ["red", "green", "blue", "cyan", "magenta", "yellow"]


def tiny_checkpoint(path: Path, size: int = 32, patch: int = 8, depth: int = 2, heads: int = 2) -> Path:
    """A random ViT (width 16, ``depth`` blocks × ``heads`` heads, 6 classes) at ``size`` px, saved as our format."""
    torch.manual_seed(0)
    cfg = vit.ViTConfig(img_size=size, patch_size=patch, embed_dim=16, depth=depth, num_heads=heads, mlp_dim=32,
                        num_classes=len(COLOURS))
    return vit.save_checkpoint(path, vit.VisionTransformer(cfg).eval(), COLOURS, vit.Preprocess.for_crop(size),
                               extra={"name": "tiny"})


def tiny_swin_checkpoint(path: Path) -> Path:
    """Our small three-stage Swin v1 (``swin_references.small_swin``: 32 px, 16×16 → 8×8 → 4×4 tokens in 4×4
    windows, 1, 2 and 2 heads, random and perturbed) with 6 classes, saved as our format."""
    from swin_references import small_swin

    return vit.save_checkpoint(path, small_swin(1, num_classes=len(COLOURS)), COLOURS, vit.Preprocess.for_crop(32),
                               extra={"name": "tiny swin"})


def noise_images(folder: Path, count: int, seed: int = 0, size: tuple[int, int] = (40, 48)) -> list[Path]:
    """``count`` PNG files of random colours (height × width ``size``), named 0000.png, 0001.png, …"""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    paths = []
    for i in range(count):
        paths.append(folder / f"{i:04d}.png")
        Image.fromarray(rng.integers(0, 256, (*size, 3), dtype=np.uint8)).save(paths[-1])
    return paths


def single_threaded_env() -> dict:
    """The environment for a subprocess: this repository importable, one torch thread (as torchrun gives each of
    its processes), so that every run computes each image's numbers with the same arithmetic."""
    return {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}


def viz(*args, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    """``python -m viz ARGS`` in a subprocess (single-threaded; see ``single_threaded_env``)."""
    result = subprocess.run([sys.executable, "-m", "viz", *map(str, args)], capture_output=True, text=True,
                            env=single_threaded_env(), cwd=REPO, **kwargs)
    if check and result.returncode != 0:
        raise AssertionError(f"python -m viz failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return result


def statistics(out: Path) -> dict:
    return json.loads((out / "summary" / "statistics.json").read_text())
