"""The Rollout tab: attention rollout (Abnar & Zuidema 2020) of the model's readout over the photo, through every
layer (and, in a model of stages, down through every merge): the page's picture at display size with its note
(``rollout_view``, ``rollout_map_panel``) and the command line's at the model's size (``rollout_overlay``). The
numbers are ``viz.panels.select.rollout_of``'s."""
from __future__ import annotations

import numpy as np
from PIL import Image

from ..controls import Controls, display
from ..drawing import render
from ..i18n import t
from ..panels.display import (Display, MapPanel, artifact_note, display_photo, draw_map, uniform_tokens,
                              value_range)
from ..panels.files import photo
from ..panels.select import artifact_drop, query_label, rollout_caption, rollout_of
from ..records import Analysis


def rollout_view(a: Analysis, c: Controls, lang: str = "en") -> tuple[Image.Image, str | None]:
    """(the query's rollout at display size, its note: artifacts masked or dominating, or how a model of windows or
    stages is rolled out; else None)."""
    p = rollout_map_panel(a, c.fusion, c.discard_ratio, c.start_layer, c.mask_artifacts,
                                 display=display(c, lang))
    if a.architecture.one_sequence:
        return p.image, p.note
    return p.image, t("note.rollout_through", lang, query=query_label(a.readout, lang))


def rollout_map_panel(a: Analysis, fusion: str = "mean", discard_ratio: float = 0.0, start_layer: int = 0,
                      mask_artifacts: bool = False, norm_ratio: float = 3.0,
                      display: Display = Display(), stop_layer: int | None = None) -> MapPanel:
    """The query's rollout (CLS, MAP probe or mean of patches) on the photo at display size, in multiples of
    uniform attention, with the artifact note; ``stop_layer``: of the layers up to that one only (an animation's
    frame)."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    tokens = uniform_tokens(a, drop)
    values = rollout_of(a, fusion, discard_ratio, start_layer, mask_artifacts, norm_ratio, stop_layer) * tokens
    vmin, vmax = value_range(values, drop)
    image = draw_map(display_photo(a, display.size), values, vmin, vmax, rollout_caption(a, display.lang), tokens,
                      display)
    return MapPanel(image, values, vmin, vmax, tokens, artifact_note(a, values, mask_artifacts, norm_ratio,
                                                                       display.lang))


def rollout_overlay(a: Analysis, values: np.ndarray, drop: np.ndarray | None, cmap: str = render.DEFAULT_CMAP,
                    alpha: float = 0.6, colorbar: bool = True, scale: int = 1, lang: str = "en") -> Image.Image:
    """Rollout map onto the photo; dropped patches are left out of the colour scale (they show its bottom)."""
    vmin = float(values[~drop].min()) if drop is not None and not drop.all() else None
    return render.overlay(photo(a, scale), values, cmap, alpha, vmin=vmin, colorbar=colorbar,
                          label=rollout_caption(a, lang), lang=lang)
