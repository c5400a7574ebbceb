"""The Attention tab: one layer's attention of the model's readout over the photo (the CLS row, SigLIP's probe, the
mean of the patch rows), one head or their mean, on the layer's own grid with its windows outlined when it has them:
the page's picture with its note (``attention_view``, ``attention_map_panel``), the command line's
(``attention_panel``) and DINO's threshold mask (``threshold_panel``). The numbers are
``viz.panels.select.attention_of``'s."""
from __future__ import annotations

import numpy as np
from PIL import Image

from ..controls import Controls, display
from ..drawing import render
from ..maps import attention
from ..maps.layout import layer_index
from ..panels.display import (Display, MapPanel, artifact_note, display_photo, draw_map, kept_range, uniform_tokens,
                              value_range)
from ..panels.files import photo
from ..panels.select import artifact_drop, attention_caption, attention_of, rollout_of, window_note
from ..records import Analysis


def attention_view(a: Analysis, c: Controls, lang: str = "en") -> tuple[Image.Image, str | None]:
    """(one layer's attention of the query at display size, DINO's outline when asked, its note: the layer's windows
    when it has them)."""
    p = attention_map_panel(a, c.layer, c.head, c.mask_artifacts, 0.6 if c.dino_mask else None,
                                   c.shared_scale, display=display(c, lang))
    return p.image, window_note(a, c.layer, lang) or p.note


def attention_layers(a: Analysis, head: int | None = None, mask_artifacts: bool = False,
                     norm_ratio: float = 3.0) -> list[np.ndarray]:
    """The query's attention over the patches in every layer (per layer (gh_l, gw_l) on its own grid), in multiples
    of uniform attention over the layer's tokens (the CLS row, or the mean of the patch rows for models without a
    CLS token), the artifact tokens dropped (and the rows renormalised) when masking: what ``attention_map_panel``
    draws for one layer."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    return [attention_of(a, layer, head, drop) * uniform_tokens(a, drop, layer) for layer in range(a.depth)]


def attention_map_panel(a: Analysis, layer: int = -1, head: int | None = None, mask_artifacts: bool = False,
                        outline_share: float | None = None, shared_scale: bool = False, norm_ratio: float = 3.0,
                        display: Display = Display()) -> MapPanel:
    """The query's attention of one layer (one head or their mean) at display size, in multiples of uniform
    attention: the CLS row, the mean of the patch rows (mean-pooled models), or the MAP probe's attention
    (SigLIP: it reads once, after the last layer, so ``layer`` does not apply); on the layer's own grid, with its
    windows outlined when it attends inside windows. ``outline_share``: DINO's threshold mask (e.g. 0.6) outlined;
    ``shared_scale``: one colour scale for every layer (the min and max over all layers), so layers can be compared
    colour for colour."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    if a.readout in ("map", "map_all"):
        layers = [attention_of(a, layer, head, drop) * uniform_tokens(a, drop)]
        values, tokens, block = layers[0], uniform_tokens(a, drop), a.architecture.blocks[-1]
    else:
        layer = layer_index(layer, a.depth)
        layers = attention_layers(a, head, mask_artifacts, norm_ratio) if shared_scale else None
        values = layers[layer] if layers else attention_of(a, layer, head, drop) * uniform_tokens(a, drop, layer)
        tokens, block = uniform_tokens(a, drop, layer), a.architecture.blocks[layer]
    vmin, vmax = kept_range(layers, drop) if shared_scale else value_range(values, drop)
    outline = attention.threshold_mask(values, outline_share) if outline_share else None
    base = display_photo(a, display.size)
    image = draw_map(base, values, vmin, vmax, attention_caption(a, layer, head, display.lang), tokens, display,
                     outline)
    return MapPanel(render.outline_windows(image, block, base.size), values, vmin, vmax, tokens,
                    artifact_note(a, values, mask_artifacts, norm_ratio, display.lang))


def attention_panel(a: Analysis, layer: int = -1, head: int | None = None, share: float | None = None,
                    cmap: str = render.DEFAULT_CMAP, alpha: float = 0.6, colorbar: bool = True,
                    scale: int = 1, lang: str = "en", mask_artifacts: bool = False,
                    norm_ratio: float = 3.0) -> Image.Image:
    """The query's attention over the patches in one layer (one head or their mean): the CLS token's, the MAP
    probe's or the mean patch row's; with ``share``, the outline of DINO's threshold mask on top; with
    ``mask_artifacts``, without the high-norm tokens."""
    values = attention_of(a, layer, head, artifact_drop(a, mask_artifacts, norm_ratio))
    mask = attention.threshold_mask(values, share) if share else None
    base = photo(a, scale)
    image = render.overlay(base, values, cmap, alpha, mask=mask, colorbar=colorbar,
                           label=attention_caption(a, layer, head, lang), lang=lang)
    return render.outline_windows(image, a.architecture.block(layer), base.size)


def threshold_panel(a: Analysis, share: float = 0.6, source: str = "attention", layer: int = -1,
                    head: int | None = None, scale: int = 1, **rollout_options) -> Image.Image:
    """DINO's threshold mask: the photo dimmed outside the smallest patch set holding ``share`` of the
    mass of the query's attention (``source="attention"``, layer ``layer``) or of its rollout; with
    ``mask_artifacts=True`` (a rollout option) either map is taken without the high-norm tokens."""
    if source == "attention":
        drop = artifact_drop(a, rollout_options.get("mask_artifacts", False), rollout_options.get("norm_ratio", 3.0))
        values = attention_of(a, layer, head, drop)
    elif source == "rollout":
        values = rollout_of(a, **rollout_options)
    else:
        raise ValueError(f"Unknown mask source {source!r}! Expected 'attention' or 'rollout'.")
    mask = attention.threshold_mask(values, share)
    base = render.as_rgb_array(photo(a, scale))
    H, W = base.shape[:2]
    keep = render.upsample(mask.astype(np.float32), (H, W))[:, :, None]
    dimmed = (base.astype(np.float32) * (0.25 + 0.75 * keep) + 0.5).astype(np.uint8)
    dimmed[render.mask_outline(mask, (H, W), width=max(1, round(min(H, W) / 150)))] = (0, 255, 255)
    return Image.fromarray(dimmed)
