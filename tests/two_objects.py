"""The two-object photo of the explanation tests and docs/explain.md: Chelsea the cat (``skimage.data.chelsea()``)
on the left and the espresso (``skimage.data.coffee()``) on the right, each resized to 224 px high and cut to
its central 112×224 strip, side by side (224×224). Both photos are CC0 (see examples/README.md).

``python tests/two_objects.py PATH`` writes it (examples/two_objects/cat_and_coffee.png was made so).
"""
from __future__ import annotations

import sys

from PIL import Image
from skimage import data

SIDE = 224


def strip(pixels) -> Image.Image:
    """An RGB photo -> its central (SIDE / 2)×SIDE strip after a bicubic resize to SIDE pixels high."""
    photo = Image.fromarray(pixels)
    width = round(photo.width * SIDE / photo.height)
    photo = photo.resize((width, SIDE), Image.Resampling.BICUBIC)
    left = (width - SIDE // 2) // 2
    return photo.crop((left, 0, left + SIDE // 2, SIDE))


def halves() -> tuple[Image.Image, Image.Image]:
    """(the cat strip, the espresso strip), each 112×224."""
    return strip(data.chelsea()), strip(data.coffee())


def two_object_photo() -> Image.Image:
    """The cat strip on the left half, the espresso strip on the right half: 224×224 RGB."""
    photo = Image.new("RGB", (SIDE, SIDE))
    for i, half in enumerate(halves()):
        photo.paste(half, (i * SIDE // 2, 0))
    return photo


if __name__ == "__main__":
    two_object_photo().save(sys.argv[1])
