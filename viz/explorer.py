"""What the explorer app shows, from one cached analysis and the values of its controls. No Gradio here.

The app runs the model once per (photo, model) and caches the ``Analysis``; each browser tab keeps a light
``Session`` (which analysis, which patch was clicked). Every slider move or click calls one of the
``*_view`` functions below, which only re-render from the cached arrays (``viz.panels``). Layers, blocks and heads are 0-based everywhere, as in the panels' own labels.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from PIL import Image

from vit.image_file import open_image

from . import panels
from .drawing import render
from .analysis import analyze, model_arrays
from .architecture import family_summary, stages, to_markdown
from .drawing.grids import GridLayout
from .maps.layout import pixel_to_patch
from .result import Analysis, ModelArrays

ATTENTION_DTYPE = np.float16  # cached maps: ViT-B/16 at 224 needs 11 MB per image instead of 22 MB
QUERY_PHOTO_SCALE = 2         # the photo to click on in the Patch query tab is shown at twice the model's size


@dataclass(frozen=True)
class ServedModel:
    """A loaded checkpoint with what the app derives from it once: its arrays and its image-free panels."""
    loaded: object                  # vit.LoadedModel
    arrays: ModelArrays
    position: Image.Image           # Figure 7 centre: position-embedding similarity
    filters: Image.Image            # Figure 7 left: principal components of the patch-embedding filters

    @property
    def depth(self) -> int:
        return self.arrays.depth

    @property
    def heads(self) -> int:
        return self.arrays.heads


def serve(loaded, device=None) -> ServedModel:
    """vit.LoadedModel -> ServedModel: moves the model to ``device`` (when given), copies the embedding arrays,
    renders the two model-only panels, and runs the model once on a blank image, so that the first person's
    photo does not pay PyTorch's warm-up."""
    if device is not None:
        loaded.model.to(device)
    height, width = loaded.preprocess.crop
    analyze(loaded, Image.new("RGB", (width, height)), ATTENTION_DTYPE)
    arrays = model_arrays(loaded.model, loaded.name)
    return ServedModel(loaded, arrays, panels.position_panel(arrays), panels.filters_panel(arrays))


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


@dataclass(frozen=True)
class Session:
    """One browser tab: which analysis it shows and what was clicked on it. Light on purpose: the analysis
    itself (ViT-B/16: 14 MB of maps) lives in the server's cache of analyses, shared by every tab that shows
    the same photo with the same model and bounded in bytes (``cached_bytes``), found by ``key``."""
    key: tuple[str, str]                       # (photo file, model source) the analysis is of
    query: tuple[int, int] | None = None       # patch (row, col) of the patch query; None: the default one
    heads_layout: GridLayout | None = None     # geometry of the last heads grid, to map clicks to cells


def analyze_photo(photo: str, model: ServedModel) -> Analysis:
    """Decode the photo file and run the model once on it (vit.image_file.ImageFileError for a bad file)."""
    return analyze(model.loaded, open_image(photo), ATTENTION_DTYPE)


def clamp_controls(c: Controls, depth: int, heads: int) -> Controls:
    """Controls valid for a model of ``depth`` blocks and ``heads`` heads (API callers may pass any numbers)."""
    def block(i: int) -> int:
        i = int(i)
        return min(max(depth + i if i < 0 else i, 0), depth - 1)
    head = None if c.head is None else min(max(int(c.head), 0), heads - 1)
    discard = min(max(float(c.discard_ratio), 0.0), 0.99)
    opacity = min(max(float(c.opacity), 0.0), 1.0)
    return replace(c, layer=block(c.layer), start_layer=block(c.start_layer), head=head,
                   discard_ratio=discard, opacity=opacity)


def top_classes(a: Analysis, k: int = 5) -> dict[str, float]:
    """The k most probable classes as {label: probability} (what gr.Label shows)."""
    return dict(a.top_k(k))


def summary(a: Analysis) -> str:
    """One line on what the model did with this photo, in Markdown."""
    H, W = a.input_size
    gh, gw = a.grid
    prefix = f" + {a.num_prefix} prefix" if a.num_prefix else ""
    forward = a.timings.get("forward")
    took = f" · forward pass {forward * 1000:.0f} ms" if forward is not None else ""
    return (f"**{a.model_name}** saw a {W}×{H} crop as {gh}×{gw} patches{prefix} = "
            f"{a.num_prefix + gh * gw} tokens, {a.depth} blocks × {a.heads} heads{took}.")


def cached_bytes(a: Analysis) -> int:
    """Memory the server's cache spends on one analysis: the attention, its head-fused copies, the token
    norms and the cropped photo (what bounds the cache of analyses)."""
    width, height = a.image.size
    return (a.attention.nbytes + sum(f.nbytes for f in a.fused.values()) + a.token_norms.nbytes
            + width * height * len(a.image.getbands()))


def architecture(model: ServedModel, a: Analysis) -> str:
    """The Model tab: stages with this photo's tensor shapes, parameter counts and the analysis's cache size."""
    cfg = model.loaded.config
    return (to_markdown(stages(cfg, a.input_size), model.loaded.name, family_summary(cfg))
            + f"\n\nAll {a.depth}×{a.heads} attention maps of this photo are cached as {a.attention.dtype} "
            f"({cached_bytes(a) / 2**20:.1f} MB with their head-fused copies), so every control re-renders "
            f"without running the model again (unless the server needed the room: then it runs once more).")


def rollout_view(a: Analysis, c: Controls) -> Image.Image:
    return panels.rollout_panel(a, c.fusion, c.discard_ratio, c.start_layer, c.mask_artifacts, alpha=c.opacity)


def attention_view(a: Analysis, c: Controls) -> Image.Image:
    return panels.attention_panel(a, c.layer, c.head, share=0.6 if c.dino_mask else None, alpha=c.opacity)


def heads_view(s: Session, a: Analysis, c: Controls) -> tuple[Session, Image.Image]:
    """The layers × heads grid, the current (layer, head) framed; the session remembers its geometry."""
    selected = None if c.head is None else (c.layer, c.head)
    image, layout = panels.heads_panel(a, selected=selected)
    return replace(s, heads_layout=layout), image


def head_at(s: Session, x: float, y: float) -> tuple[int, int] | None:
    """(layer, head) of the heads-grid thumbnail under pixel (x, y), or None (labels, gaps, no grid yet)."""
    return s.heads_layout.cell_at(x, y) if s.heads_layout is not None else None


def query_photo(s: Session, a: Analysis) -> Image.Image:
    """The photo to click on, enlarged ``QUERY_PHOTO_SCALE``× so patches are easy to hit, the queried one framed."""
    row, col = s.query or panels.default_query(a)
    return render.mark_patch(panels.photo(a, QUERY_PHOTO_SCALE), row, col, a.grid)


def select_patch(s: Session, a: Analysis, x: float, y: float) -> Session:
    """Pixel (x, y) clicked on ``query_photo`` -> session whose query is the patch under it."""
    w, h = a.image.size
    size = (w * QUERY_PHOTO_SCALE, h * QUERY_PHOTO_SCALE)
    return replace(s, query=pixel_to_patch(x, y, size, a.grid))


def query_views(s: Session, a: Analysis, c: Controls) -> tuple[Image.Image, Image.Image]:
    """(where the queried patch attends, who attends to it) in the control's layer and head, or rolled out."""
    row, col = s.query or panels.default_query(a)
    return panels.query_panels(a, row, col, c.layer, c.head, c.rolled, c.fusion, c.discard_ratio,
                               c.start_layer, alpha=c.opacity)


def distance_view(a: Analysis) -> Image.Image:
    return panels.distance_panel(panels.mean_distance_of(a), a.grid, a.patch_size)


def norms_views(a: Analysis) -> tuple[Image.Image, Image.Image]:
    """(token norms per block as thumbnails, norms against depth as curves)."""
    return panels.token_norms_panel(a)[0], panels.token_norm_curves_panel(a)
