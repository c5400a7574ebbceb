"""The Attention distance tab: the mean attention distance of every head against depth (the ViT paper's Figure 7,
right), in pixels of the input, with the distance uniform attention would give where every token can reach every
patch (``distance_view``, ``distance_panel``)."""
from __future__ import annotations

import numpy as np
from PIL import Image

from ..drawing import plots
from ..i18n import language
from ..maps import distance
from ..panels.select import mean_distance_of
from ..records import Analysis


def distance_view(a: Analysis, lang: str = "en", narrow: bool = False) -> Image.Image:
    return distance_panel(mean_distance_of(a), distance_grid(a), a.patch_size,
                          lang=language(lang), narrow=narrow)


def distance_panel(mean_distance: np.ndarray, grid: tuple[int, int] | None, patch_size: int,
                   title: str | None = None, lang: str = "en", narrow: bool = False) -> Image.Image:
    """Mean attention distance (L, H) of one image, or averaged over images, against depth (NaN: a block with fewer
    heads); with the distance of uniform attention over the ``grid`` (None: no such line, e.g. for a model whose
    tokens attend inside windows, where the whole grid is out of reach)."""
    uniform = None if grid is None else distance.uniform_distance(tuple(grid), patch_size)
    return plots.distance_image(mean_distance, title, uniform, lang=lang, narrow=narrow)


def distance_grid(a: Analysis) -> tuple[int, int] | None:
    """The grid of the distance plot's uniform line: the photo's, where every token can reach every patch (one
    sequence of tokens through the model); None otherwise."""
    return a.grid if a.architecture.one_sequence else None
