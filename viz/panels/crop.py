"""The uploaded photo with the crop the model saw outlined (and the rest dimmed), with a note for tiny uploads."""
from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw, ImageOps

from ..i18n import t

def crop_panel(original: Image.Image, preprocess, size: int | None = None, lang: str = "en",
               color: tuple[int, int, int] = (0, 255, 255)) -> tuple[Image.Image, str | None]:
    """The uploaded photo (upright, longer side ``size`` pixels) with the crop the model saw outlined and the
    rest dimmed -> (picture, note). The note (in ``lang``) says when a small photo was enlarged before the crop
    (its shorter side below ``preprocess.resize``), else it is None.

    ``preprocess``: a ``vit.Preprocess`` (anything with ``crop_box((w, h))``, ``resize`` and ``crop``)."""
    upright = ImageOps.exif_transpose(original).convert("RGB")
    w, h = upright.size
    left, top, right, bottom = preprocess.crop_box((w, h))
    scale = 1.0 if size is None else size / max(w, h)
    shown = upright if scale == 1.0 else upright.resize((max(1, round(w * scale)), max(1, round(h * scale))),
                                                        Image.Resampling.BICUBIC)
    pixels = np.asarray(shown).astype(np.float32)
    box = [round(v * scale) for v in (left, top, right, bottom)]
    inside = np.zeros(pixels.shape[:2], dtype=bool)
    inside[max(box[1], 0):box[3], max(box[0], 0):box[2]] = True
    pixels[~inside] *= 0.45                                            # what the model never sees, dimmed
    picture = Image.fromarray((pixels + 0.5).astype(np.uint8))
    line = max(2, round(max(picture.size) / 200))
    ImageDraw.Draw(picture).rectangle((box[0], box[1], box[2] - 1, box[3] - 1), outline=color, width=line)
    crop_h, crop_w = preprocess.crop
    factor = preprocess.resize / min(w, h)
    note = None
    if factor > 1.0:
        note = t("note.enlarged", lang, width=w, height=h, factor=factor, crop=f"{crop_w}×{crop_h}")
    return picture, note
