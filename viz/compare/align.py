"""Putting maps of two models on the same photo pixels, when their preprocessings saw different parts of it.

Each model sees a centre crop of the (upright) photo, the box (left, top, right, bottom) in photo pixels that
``vit.Preprocess.crop_box`` gives: 224/248 of the short side for the AugReg ViT-Ti at 224 (timm's crop_pct 0.9),
the whole short side for a 384 model cropped at 100 %, the whole photo for a squash. A map of that model — its
patch grid (gh, gw), or any (h, w) array over its input — covers exactly its box. Two maps are compared on the
overlap of the two boxes (both are centred, so the overlap is the common centre crop), each resampled bilinearly
from its own grid onto the same output pixels.
"""
from __future__ import annotations

import numpy as np
from PIL import Image

Box = tuple[float, float, float, float]  # (left, top, right, bottom) in photo pixels


def common_box(a: Box, b: Box) -> Box:
    """The overlap of two boxes; ValueError when they do not overlap."""
    box = (max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3]))
    if box[2] <= box[0] or box[3] <= box[1]:
        raise ValueError(f"The two crops {a} and {b} do not overlap: there is no common area to compare on!")
    return box


def same_box(a: Box, b: Box, tolerance: float = 0.5) -> bool:
    """Whether two boxes cover the same pixels, up to ``tolerance`` pixels on every side (rounding of the resize)."""
    return all(abs(x - y) <= tolerance for x, y in zip(a, b))


def output_size(box: Box, model_box: Box, model_size: tuple[int, int]) -> tuple[int, int]:
    """(height, width) in pixels of ``box`` drawn at the resolution of a model whose input of ``model_size`` =
    (H, W) pixels shows ``model_box``: the common area keeps that model's pixel size."""
    H, W = model_size
    scale_x = W / (model_box[2] - model_box[0])
    scale_y = H / (model_box[3] - model_box[1])
    return max(1, round((box[3] - box[1]) * scale_y)), max(1, round((box[2] - box[0]) * scale_x))


def resample_onto(values: np.ndarray, model_box: Box, box: Box, size: tuple[int, int]) -> np.ndarray:
    """A map (h, w) covering ``model_box`` of the photo -> its values over ``box``, (H, W) = ``size`` float32.

    Bilinear, with each map cell's value at its centre (Pillow's convention, the one ``render.upsample`` uses), so a
    map resampled onto its own box equals ``render.upsample(values, size)`` exactly.
    """
    values = np.ascontiguousarray(values, dtype=np.float32)
    if values.ndim != 2:
        raise ValueError(f"Wrong map shape! Expected a 2-D map (h, w) but got {values.shape}!")
    h, w = values.shape
    left, top, right, bottom = model_box
    sx, sy = w / (right - left), h / (bottom - top)     # map cells per photo pixel
    source = ((box[0] - left) * sx, (box[1] - top) * sy, (box[2] - left) * sx, (box[3] - top) * sy)
    H, W = size
    return np.asarray(Image.fromarray(values).resize((W, H), Image.Resampling.BILINEAR, box=source))


def relative_to_uniform(values: np.ndarray) -> np.ndarray:
    """Divide by the mean absolute value, so that maps of different grids and scales compare on the same pixels:
    1 is the share every pixel would get from a uniform map (2: twice that). For a non-negative map this is its
    distribution over the pixels times their number. An all-zero map stays zero."""
    values = np.asarray(values, dtype=np.float64)
    mean = np.abs(values).mean()
    return (values / mean if mean > 0 else values).astype(np.float32)
