"""The uploaded photo with the part the model saw outlined (and the rest dimmed), with a note for tiny uploads and
for photos the model sees whole or stretched."""
from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw, ImageOps

from ..i18n import t


def crop_panel(original: Image.Image, preprocess, size: int | None = None, lang: str = "en",
               color: tuple[int, int, int] = (0, 255, 255)) -> tuple[Image.Image, str | None]:
    """The uploaded photo (upright, longer side ``size`` pixels) with the crop the model saw outlined and the
    rest dimmed -> (picture, note). The note (in ``lang``) says when a small photo was enlarged before the crop
    (the resize scales it up), when the photo was stretched (squashed) to the model's input, or when the model sees
    all of it; else (a crop of a large enough photo) it is None.

    ``preprocess``: a ``vit.Preprocess`` (anything with ``crop_box((w, h))``, ``scale((w, h))``, ``stretches``,
    ``resize`` and ``crop``). A squashed photo's box is the whole photo."""
    upright = ImageOps.exif_transpose(original).convert("RGB")
    w, h = upright.size
    left, top, right, bottom = preprocess.crop_box((w, h))
    scale = 1.0 if size is None else size / max(w, h)
    shown = upright if scale == 1.0 else upright.resize((max(1, round(w * scale)), max(1, round(h * scale))),
                                                        Image.Resampling.BICUBIC)
    pixels = np.asarray(shown).astype(np.float32)
    box = [round(v * scale) for v in (left, top, right, bottom)]
    box = [max(box[0], 0), max(box[1], 0), min(box[2], shown.width), min(box[3], shown.height)]  # padding: off-photo
    inside = np.zeros(pixels.shape[:2], dtype=bool)
    inside[box[1]:box[3], box[0]:box[2]] = True
    pixels[~inside] *= 0.45                                            # what the model never sees, dimmed
    picture = Image.fromarray((pixels + 0.5).astype(np.uint8))
    line = max(2, round(max(picture.size) / 200))
    ImageDraw.Draw(picture).rectangle((box[0], box[1], box[2] - 1, box[3] - 1), outline=color, width=line)
    crop_h, crop_w = preprocess.input_size((w, h))          # a NaFlex input follows the photo's shape
    crop = f"{crop_w}×{crop_h}"
    sx, sy = preprocess.scale((w, h))
    notes = []
    if max(sx, sy) > 1.0:
        notes.append(t("note.enlarged", lang, width=w, height=h, factor=max(sx, sy), crop=crop))
    whole = left <= 0.5 and top <= 0.5 and right >= w - 0.5 and bottom >= h - 0.5
    if preprocess.varies:
        notes.append(t("note.aspect", lang, crop=crop, most=preprocess.resize,
                       grid=f"{crop_h // preprocess.patch}×{crop_w // preprocess.patch}"))
    elif preprocess.stretches and abs(sx / sy - 1.0) > 0.01:
        notes.append(t("note.stretched", lang, crop=crop) if whole else
                     t("note.stretched_crop", lang, crop=crop, resize="×".join(map(str, preprocess.resize[::-1]))))
    elif whole:
        notes.append(t("note.whole", lang, crop=crop))
    return picture, " ".join(notes) or None
