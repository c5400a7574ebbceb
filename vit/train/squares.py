"""A generated image folder where only *position* decides the class: a bright square on a dark noisy background,
labelled by the cell of a k×k grid its centre falls in. The demonstration task for watching a ViT learn its
position embeddings (``--snapshot-every``) and for the position-embedding ablation (``--pos-embed``).

    python -m vit.train.squares data/squares                      # 600 images of 32×32, 3×3 regions -> 9 classes
    python -m vit.train --data data/squares --out weights/squares.pt --img-size 32 --patch-size 4 --depth 4 \\
        --embed-dim 96 --heads 3 --lr 2e-3 --epochs 40 --augment none --snapshot-every 1

Use ``--augment none`` when training on it: a horizontal flip or a crop moves the square, so it would change the
true class while keeping the label.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from PIL import Image


def class_names(regions: int) -> list[str]:
    """Folder names of the k×k cells in row-major order: r0c0, r0c1, … (they sort in that order for k ≤ 10)."""
    return [f"r{r}c{c}" for r in range(regions) for c in range(regions)]


def square_image(rng: np.random.Generator, cell: tuple[int, int], regions: int = 3, size: int = 32) -> Image.Image:
    """One size×size RGB image whose bright square is centred inside grid cell ``cell`` = (row, col) of a
    ``regions``×``regions`` grid.

    Background: a random dark grey level (0–100) plus Gaussian noise (σ 15) per pixel and channel. Square: side
    size/8 to size/4 pixels (at most the cell's side), a random bright colour (each channel 170–255), placed
    uniformly where it lies wholly inside its cell, so that the label is never ambiguous.
    """
    row, col = cell
    if not (0 <= row < regions and 0 <= col < regions):
        raise ValueError(f"Cell {cell} is outside the {regions}×{regions} grid!")
    background = rng.uniform(0, 100)
    pixels = np.clip(background + rng.normal(0, 15, (size, size, 3)), 0, 255)
    step = size / regions                                   # cell side in pixels
    side = int(rng.integers(max(2, size // 8), max(2, min(size // 4, int(step))) + 1))
    top = int(rng.integers(int(np.ceil(row * step)), int((row + 1) * step) - side + 1))   # wholly inside the cell
    left = int(rng.integers(int(np.ceil(col * step)), int((col + 1) * step) - side + 1))
    pixels[top:top + side, left:left + side] = rng.uniform(170, 255, 3)
    return Image.fromarray(pixels.astype(np.uint8))


def make_squares_folder(root: str | Path, count: int = 600, size: int = 32, regions: int = 3, seed: int = 0) -> Path:
    """Write ``count`` images (as evenly over the classes as possible) to ``root/<class>/<i>.png``; returns ``root``.

    The same arguments always write the same pixels.
    """
    if regions < 2 or count < 2 * regions * regions:
        raise ValueError(f"Expected at least 2 regions a side and 2 images per class (count >= {2 * regions ** 2}) "
                         f"but got regions={regions}, count={count}!")
    if size < 3 * regions:
        raise ValueError(f"Images of {size} pixels are too small for {regions}×{regions} regions! Expected at least "
                         f"{3 * regions} pixels (cells of 3 pixels).")
    root = Path(root)
    rng = np.random.default_rng(seed)
    names = class_names(regions)
    for name in names:
        (root / name).mkdir(parents=True, exist_ok=True)
    for i in range(count):
        k = i % len(names)
        square_image(rng, divmod(k, regions), regions, size).save(root / names[k] / f"{i // len(names):04d}.png")
    return root


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m vit.train.squares",
                                description="Write the position demonstration data set: a bright square on a dark "
                                            "noisy background, the class being the grid cell it sits in.")
    p.add_argument("out", type=Path, help="folder to write (one sub-folder per class)")
    p.add_argument("--count", type=int, default=600, help="number of images [default: 600]")
    p.add_argument("--size", type=int, default=32, help="image side in pixels [default: 32]")
    p.add_argument("--regions", type=int, default=3, help="k: a k×k grid of cells, k² classes [default: 3]")
    p.add_argument("--seed", type=int, default=0, help="[default: 0]")
    args = p.parse_args(argv)
    try:
        make_squares_folder(args.out, args.count, args.size, args.regions, args.seed)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {args.count} images of {args.size}x{args.size} in {args.regions ** 2} classes to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
