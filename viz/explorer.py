"""What the explorer app shows, from one cached analysis and the values of its controls. No Gradio here.

The app runs the model once per (photo, model) and keeps a ``Session`` per browser tab; every slider move
or click calls one of the ``*_view`` functions below, which only re-render from the cached arrays
(``viz.panels``). Layers, blocks and heads are 0-based everywhere, as in the panels' own labels.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from PIL import Image

from . import panels, render
from .analysis import analyze, model_arrays
from .architecture import stages, to_markdown
from .grids import GridLayout
from .layout import pixel_to_patch
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


def serve(loaded) -> ServedModel:
    """vit.LoadedModel -> ServedModel: copies the embedding arrays, renders the two model-only panels, and runs
    the model once on a blank image, so that the first person's photo does not pay PyTorch's warm-up."""
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
    """One browser tab's cache: the analysis of its current photo and what was clicked on it."""
    key: tuple[str, str]                       # (photo file, model source) the analysis is of
    analysis: Analysis
    model: ServedModel
    query: tuple[int, int] | None = None       # patch (row, col) of the patch query
    heads_layout: GridLayout | None = None     # geometry of the last heads grid, to map clicks to cells


def new_session(key: tuple[str, str], photo: Image.Image, model: ServedModel) -> Session:
    """Run the model once on the photo (the only model call of a session's photo)."""
    a = analyze(model.loaded, photo, ATTENTION_DTYPE)
    return Session(key, a, model, query=panels.default_query(a))


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


def summary(s: Session) -> str:
    """One line on what the model did with this photo, in Markdown."""
    a = s.analysis
    H, W = a.input_size
    gh, gw = a.grid
    prefix = f" + {a.num_prefix} prefix" if a.num_prefix else ""
    forward = a.timings.get("forward")
    took = f" · forward pass {forward * 1000:.0f} ms" if forward is not None else ""
    return (f"**{s.model.loaded.name}** saw a {W}×{H} crop as {gh}×{gw} patches{prefix} = "
            f"{a.num_prefix + gh * gw} tokens, {a.depth} blocks × {a.heads} heads{took}.")


def cached_bytes(a: Analysis) -> int:
    """Memory a session spends on its photo's maps: the attention and its head-fused copies."""
    return a.attention.nbytes + sum(f.nbytes for f in a.fused.values())


def architecture(s: Session) -> str:
    """The Model tab: stages with this photo's tensor shapes, parameter counts and the session's cache size."""
    cfg, a = s.model.loaded.config, s.analysis
    return (to_markdown(stages(cfg, a.input_size), s.model.loaded.name)
            + f"\n\nAll {a.depth}×{a.heads} attention maps of this photo are cached as {a.attention.dtype} "
            f"({cached_bytes(a) / 2**20:.1f} MB with their head-fused copies), so every control re-renders "
            f"without running the model again.")


def rollout_view(s: Session, c: Controls) -> Image.Image:
    return panels.rollout_panel(s.analysis, c.fusion, c.discard_ratio, c.start_layer, c.mask_artifacts,
                                alpha=c.opacity)


def attention_view(s: Session, c: Controls) -> Image.Image:
    return panels.attention_panel(s.analysis, c.layer, c.head, share=0.6 if c.dino_mask else None, alpha=c.opacity)


def heads_view(s: Session, c: Controls) -> tuple[Session, Image.Image]:
    """The layers × heads grid, the current (layer, head) framed; the session remembers its geometry."""
    selected = None if c.head is None else (c.layer, c.head)
    image, layout = panels.heads_panel(s.analysis, selected=selected)
    return replace(s, heads_layout=layout), image


def head_at(s: Session, x: float, y: float) -> tuple[int, int] | None:
    """(layer, head) of the heads-grid thumbnail under pixel (x, y), or None (labels, gaps, no grid yet)."""
    return s.heads_layout.cell_at(x, y) if s.heads_layout is not None else None


def query_photo(s: Session) -> Image.Image:
    """The photo to click on, enlarged ``QUERY_PHOTO_SCALE``× so patches are easy to hit, the queried one framed."""
    row, col = s.query or panels.default_query(s.analysis)
    return render.mark_patch(panels.photo(s.analysis, QUERY_PHOTO_SCALE), row, col, s.analysis.grid)


def select_patch(s: Session, x: float, y: float) -> Session:
    """Pixel (x, y) clicked on ``query_photo`` -> session whose query is the patch under it."""
    w, h = s.analysis.image.size
    size = (w * QUERY_PHOTO_SCALE, h * QUERY_PHOTO_SCALE)
    return replace(s, query=pixel_to_patch(x, y, size, s.analysis.grid))


def query_views(s: Session, c: Controls) -> tuple[Image.Image, Image.Image]:
    """(where the queried patch attends, who attends to it) in the control's layer and head, or rolled out."""
    row, col = s.query or panels.default_query(s.analysis)
    return panels.query_panels(s.analysis, row, col, c.layer, c.head, c.rolled, c.fusion, c.discard_ratio,
                               c.start_layer, alpha=c.opacity)


def distance_view(s: Session) -> Image.Image:
    return panels.distance_panel(panels.mean_distance_of(s.analysis), s.analysis.grid, s.analysis.patch_size)


def norms_views(s: Session) -> tuple[Image.Image, Image.Image]:
    """(token norms per block as thumbnails, norms against depth as curves)."""
    return panels.token_norms_panel(s.analysis)[0], panels.token_norm_curves_panel(s.analysis)
