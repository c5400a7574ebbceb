"""A loaded checkpoint's side of a comparison: its analysis of the photo (the model runs once, through
``viz.analysis``), its name and sha256, and the part of the photo it saw (``comparison`` takes it from there,
without the model)."""
from __future__ import annotations

import numpy as np
from PIL import Image

from vit.checkpoints.identity import fingerprint
from vit.preprocess import upright_rgb

from ..analysis.capture import analyze
from ..records import Analysis
from .comparison import Side


def compare_side(loaded, photo: Image.Image, analysis: Analysis | None = None,
                 attention_dtype=np.float32) -> Side:
    """``loaded`` (a ``vit.LoadedModel``) on ``photo`` -> Side. ``analysis``: one already made of this photo by this
    model (e.g. the app's cached one); otherwise the model runs once here. The checkpoint file is hashed once per
    (path, size, modification time)."""
    fp = fingerprint(loaded.source)
    a = analysis if analysis is not None else analyze(loaded, photo, attention_dtype)
    return Side(a, fp.name, fp.sha256, loaded.preprocess.crop_box(upright_rgb(photo).size),
                loaded.preprocess_record(), tuple(getattr(loaded, "assumptions", ())))
