"""The map options of the command line and the library (``MapOptions``, checked by ``check_options`` before any
image runs), and the photo at the model's own size (``photo``): what every slice's panel for files draws on.

Layer, head and patch indices are 0-based (negative counts from the end); ``head=None`` is the mean of
heads. ``scale`` enlarges the photo (Lanczos) before overlaying, for display. ``lang`` ("en" or "zh-CN") is
the language of every text drawn (``viz.i18n``); ``mask_artifacts`` drops the high-norm artifact tokens
(``viz.maps.norms``) from every map of the query's attention.
"""
from __future__ import annotations

from dataclasses import dataclass

from PIL import Image

from ..drawing import render
from ..i18n import language
from ..maps.layout import layer_index, patch_token
from ..maps.rollout import FUSIONS
from ..records import Analysis


@dataclass(frozen=True)
class MapOptions:
    """Every map parameter in one place (the CLI's options; the app's sliders)."""
    layer: int = -1                     # block for raw attention, patch queries and the threshold mask
    head: int | None = None             # head, or None for the mean of heads
    fusion: str = "mean"                # rollout head fusion: mean, max or min
    discard_ratio: float = 0.0          # rollout: lowest fraction of each fused matrix set to 0
    start_layer: int = 0                # rollout: first block of the product
    mask_artifacts: bool = False        # rollout: drop high-norm tokens first
    norm_ratio: float = 3.0             # high-norm flag: norm > ratio × block median
    query: tuple[int, int] | None = None  # patch (row, col) for the query panels; None: grid centre
    query_rollout: bool = False         # query panels from the rollout matrix instead of one block
    share: float = 0.6                  # threshold mask: share of the attention mass kept
    mask_source: str = "attention"      # threshold mask of the readout's "attention" map or of the "rollout"
    distance_renormalise: bool = False  # mean distance: renormalise rows over patch tokens
    cmap: str = render.DEFAULT_CMAP
    alpha: float = 0.6
    colorbar: bool = True
    scale: int = 1
    lang: str = "en"                    # language of the texts drawn into the panels ("en" or "zh-CN")


def check_options(o: MapOptions, depth: int, heads: int, grid: tuple[int, int] | None = None) -> None:
    """Raise ValueError, saying what is allowed, for options that do not fit a model of ``depth`` blocks and
    ``heads`` heads (and, when given, a ``grid`` of patches) — before any image is analysed."""
    layer_index(o.layer, depth)
    layer_index(o.start_layer, depth)
    if o.head is not None and not -heads <= o.head < heads:
        raise ValueError(f"Head {o.head} does not exist! Expected 0 <= head < {heads}, or the mean of heads.")
    if o.fusion not in FUSIONS:
        raise ValueError(f"Unknown head fusion {o.fusion!r}! Expected one of {FUSIONS}.")
    if not 0.0 <= o.discard_ratio < 1.0:
        raise ValueError(f"discard_ratio must be in [0, 1) but got {o.discard_ratio}!")
    if not 0.0 < o.share <= 1.0:
        raise ValueError(f"share must be in (0, 1] but got {o.share}!")
    if o.norm_ratio <= 1.0:
        raise ValueError(f"norm_ratio must be greater than 1 but got {o.norm_ratio}!")
    if o.mask_source not in ("attention", "rollout"):
        raise ValueError(f"Unknown mask source {o.mask_source!r}! Expected 'attention' or 'rollout'.")
    if not 0.0 <= o.alpha <= 1.0 or o.scale < 1:
        raise ValueError(f"alpha must be in [0, 1] and scale at least 1 but got {o.alpha} and {o.scale}!")
    render.colormap_lut(o.cmap)
    language(o.lang)
    if grid is not None and o.query is not None:
        patch_token(*o.query, 0, grid)


def photo(a: Analysis, scale: int = 1) -> Image.Image:
    """The pixels the model saw, enlarged ``scale``× for display."""
    if scale == 1:
        return a.image
    return a.image.resize((a.image.width * scale, a.image.height * scale), Image.Resampling.LANCZOS)
