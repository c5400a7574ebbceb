"""A small image-classification folder made on the fly: each class is one shape in one colour on a noisy background.

Position, size, colour shade and background vary per image (seeded), so a model has to find the shape, while the
classes stay distinct enough for a tiny ViT to learn them in seconds on a CPU.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

CLASSES = {  # folder name -> (RGB colour, shape)
    "blue_triangle": ((40, 80, 220), "triangle"),
    "green_circle": ((40, 190, 60), "circle"),
    "red_square": ((220, 40, 40), "square"),
    "yellow_cross": ((230, 200, 30), "cross"),
}


def draw_shape(shape: str, colour: tuple[int, int, int], rng: np.random.Generator, size: int = 32) -> Image.Image:
    """One size×size RGB image: a filled ``shape`` near the centre, its colour jittered, on a grey noisy background."""
    background = rng.integers(60, 140, size=3)
    pixels = np.clip(background + rng.normal(0, 12, (size, size, 3)), 0, 255).astype(np.uint8)
    img = Image.fromarray(pixels)
    draw = ImageDraw.Draw(img)
    r = rng.uniform(0.22, 0.34) * size
    cx, cy = rng.uniform(0.38, 0.62, 2) * size
    fill = tuple(int(np.clip(c + rng.integers(-25, 26), 0, 255)) for c in colour)
    if shape == "square":
        draw.rectangle([cx - r, cy - r, cx + r, cy + r], fill=fill)
    elif shape == "circle":
        draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=fill)
    elif shape == "triangle":
        draw.polygon([(cx, cy - r), (cx - r, cy + r), (cx + r, cy + r)], fill=fill)
    else:  # cross
        w = r / 2.5
        draw.rectangle([cx - r, cy - w, cx + r, cy + w], fill=fill)
        draw.rectangle([cx - w, cy - r, cx + w, cy + r], fill=fill)
    return img


def make_shapes_folder(root: Path, per_class: int, seed: int = 0, size: int = 32,
                       classes: dict = CLASSES) -> Path:
    """Write ``root/<class>/<i>.png`` for every class; returns ``root``."""
    rng = np.random.default_rng(seed)
    for name, (colour, shape) in classes.items():
        (root / name).mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            draw_shape(shape, colour, rng, size).save(root / name / f"{i:03d}.png")
    return root
