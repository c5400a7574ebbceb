"""What every view of the page reads besides the analysis: the values of its controls (``Controls``: 0-based, each
layer and head checked against the model once, by ``clamp_controls``, where the page turns its widgets into them),
which analysis a browser tab shows and what was clicked on it (``Session``, ``AnalysisKey``), and how the page draws
its maps for them (``display``). No Gradio here."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

from .i18n import language
from .panels.display import Display

DISPLAY_SIZE = 640            # longer side of the page's maps in pixels: sharp in a ~700 px panel, ~10 ms to draw
NARROW_SIZE = 448             # longer side of every map on a narrow screen (a phone shows it ~360 CSS pixels wide)


@dataclass(frozen=True)
class Controls:
    """The values of the app's controls, already 0-based. ``head`` None means the mean of heads."""
    fusion: str = "mean"
    discard_ratio: float = 0.9
    start_layer: int = 0
    opacity: float = 0.6
    mask_artifacts: bool = False
    layer: int = -1
    head: int | None = None
    dino_mask: bool = False
    rolled: bool = False
    shared_scale: bool = False     # one colour scale over all layers (attention and patch query)
    patch_true: bool = False       # one colour per patch, grid lines, no smoothing
    narrow: bool = False           # drawn for a phone-sized screen: larger text, fewer columns (viz.drawing.screens)


class AnalysisKey(NamedTuple):
    """What one analysis is of, and the key of every cache that follows from it: the same photo through another
    preprocessing, or at another input size, is another input, so another analysis (and explanation, walk,
    comparison)."""
    photo: str                                 # the photo file
    model: str                                 # the model source (vit.load)
    preprocess: str = "own"                    # how the photo became the input: vit.preprocess.CHOICES
    size: int = 0                              # the square input's side in pixels; 0: the checkpoint's own input


@dataclass(frozen=True)
class Session:
    """One browser tab: which analysis it shows and what was clicked on it. Light on purpose: the analysis
    itself (ViT-B/16: 14 MB of maps) lives in the server's cache of analyses, shared by every tab that shows
    the same photo with the same model and preprocessing and bounded in bytes (``cached_bytes``), found by
    ``key``."""
    key: AnalysisKey                           # (photo file, model source, preprocessing) the analysis is of
    query: tuple[int, int] | None = None       # patch (row, col) of the patch query; None: the default one
    heads_layout: object = None       # geometry of the last heads grid (viz.heads.grid.HeadsLayout or StagesLayout),
    #                                   to map clicks to (layer, head)


def clamp_controls(c: Controls, heads: tuple[int, ...]) -> Controls:
    """Controls valid for a model whose blocks have ``heads`` heads each (``Architecture.heads``; API callers may
    pass any numbers): the layer and first layer within the blocks, the head within the chosen block's."""
    depth = len(heads)

    def block(i: int) -> int:
        i = int(i)
        return min(max(depth + i if i < 0 else i, 0), depth - 1)
    heads = heads[block(c.layer)]
    head = None if c.head is None else min(max(int(c.head), 0), heads - 1)
    discard = min(max(float(c.discard_ratio), 0.0), 0.99)
    opacity = min(max(float(c.opacity), 0.0), 1.0)
    return replace(c, layer=block(c.layer), start_layer=block(c.start_layer), head=head,
                   discard_ratio=discard, opacity=opacity)


def display(c: Controls, lang: str = "en", size: int = DISPLAY_SIZE) -> Display:
    """How the page draws its maps for these controls: display size (``NARROW_SIZE`` on a narrow screen, where
    every map fills the phone's width), language, opacity, patch-true."""
    return Display(size=NARROW_SIZE if c.narrow else size, lang=language(lang), alpha=c.opacity,
                   patch_true=c.patch_true, narrow=c.narrow)
