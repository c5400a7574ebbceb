"""Every panel of the explorer as a PIL image, from a cached ``Analysis`` (and ``ModelArrays`` for the
image-independent Figure 7 panels). No model and no torch here: moving a slider re-renders from arrays.

Layer, head and patch indices are 0-based (negative counts from the end); ``head=None`` is the mean of
heads. ``scale`` enlarges the photo (Lanczos) before overlaying, for display.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image

from .drawing import plots, render
from .maps import attention, figure7, norms
from .drawing.grids import GridLayout, thumbnail_grid, tile_images
from .maps.layout import layer_index, patch_token
from .result import Analysis, ModelArrays
from .maps.rollout import FUSIONS, fused_rollout_map


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
    mask_source: str = "attention"      # threshold mask of the CLS "attention" map or of the "rollout"
    distance_renormalise: bool = False  # mean distance: renormalise rows over patch tokens
    cmap: str = render.DEFAULT_CMAP
    alpha: float = 0.6
    colorbar: bool = True
    scale: int = 1


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
    if grid is not None and o.query is not None:
        patch_token(*o.query, 0, grid)


def photo(a: Analysis, scale: int = 1) -> Image.Image:
    """The pixels the model saw, enlarged ``scale``× for display."""
    if scale == 1:
        return a.image
    return a.image.resize((a.image.width * scale, a.image.height * scale), Image.Resampling.LANCZOS)


def _head_name(head: int | None) -> str:
    return "mean of heads" if head is None else f"head {head}"


def artifact_flags(a: Analysis, norm_ratio: float = 3.0) -> np.ndarray:
    """High-norm patches per block -> bool (L, gh, gw) (see ``viz.maps.norms``)."""
    return norms.flag_high_norm(a.token_norms, a.num_prefix, a.grid, norm_ratio)


def artifact_drop(a: Analysis, mask_artifacts: bool, norm_ratio: float = 3.0) -> np.ndarray | None:
    """The patches to drop before rollout: flagged high-norm in any block (gh, gw), or None when not masking."""
    return norms.artifact_mask(artifact_flags(a, norm_ratio)) if mask_artifacts else None


def rollout_of(a: Analysis, fusion: str = "mean", discard_ratio: float = 0.0, start_layer: int = 0,
               mask_artifacts: bool = False, norm_ratio: float = 3.0) -> np.ndarray:
    """CLS rollout over the patches (gh, gw), optionally without the high-norm tokens (they read 0)."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    return fused_rollout_map(a.fused_heads(fusion), a.num_prefix, a.grid, 0, discard_ratio, start_layer, drop)


def rollout_overlay(a: Analysis, values: np.ndarray, drop: np.ndarray | None, cmap: str = render.DEFAULT_CMAP,
                    alpha: float = 0.6, colorbar: bool = True, scale: int = 1) -> Image.Image:
    """Rollout map onto the photo; dropped patches are left out of the colour scale (they show its bottom)."""
    vmin = float(values[~drop].min()) if drop is not None and not drop.all() else None
    return render.overlay(photo(a, scale), values, cmap, alpha, vmin=vmin, colorbar=colorbar, label="rollout")


def rollout_panel(a: Analysis, fusion: str = "mean", discard_ratio: float = 0.0, start_layer: int = 0,
                  mask_artifacts: bool = False, norm_ratio: float = 3.0, cmap: str = render.DEFAULT_CMAP,
                  alpha: float = 0.6, colorbar: bool = True, scale: int = 1) -> Image.Image:
    """Attention rollout of the CLS token blended onto the photo."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    values = fused_rollout_map(a.fused_heads(fusion), a.num_prefix, a.grid, 0, discard_ratio, start_layer, drop)
    return rollout_overlay(a, values, drop, cmap, alpha, colorbar, scale)


def attention_panel(a: Analysis, layer: int = -1, head: int | None = None, share: float | None = None,
                    cmap: str = render.DEFAULT_CMAP, alpha: float = 0.6, colorbar: bool = True,
                    scale: int = 1) -> Image.Image:
    """The CLS token's attention over the patches in one block (one head or their mean); with ``share``,
    the outline of DINO's threshold mask on top."""
    values = attention.token_attention_map(a.attention, a.num_prefix, a.grid, layer, head)
    mask = attention.threshold_mask(values, share) if share else None
    return render.overlay(photo(a, scale), values, cmap, alpha, mask=mask, colorbar=colorbar,
                          label=f"block {layer_index(layer, a.depth)}, {_head_name(head)}")


def heads_panel(a: Analysis, cell: int = 56, cmap: str = render.DEFAULT_CMAP, with_photo: bool = False,
                selected: tuple[int, int] | None = None) -> tuple[Image.Image, GridLayout]:
    """The "model view": the CLS attention of every block (rows) and head (columns), each map scaled on
    its own. Returns the image and its layout; ``layout.cell_at(x, y)`` gives the (layer, head) clicked."""
    maps = attention.all_heads_maps(a.attention, a.num_prefix, a.grid)
    return thumbnail_grid(maps, cell=cell, cmap=cmap, row_labels=[f"L{l}" for l in range(a.depth)],
                          col_labels=[f"H{h}" for h in range(a.heads)],
                          background=a.image if with_photo else None, selected=selected)


def default_query(a: Analysis) -> tuple[int, int]:
    """The patch in the centre of the grid."""
    return a.grid[0] // 2, a.grid[1] // 2


def query_maps(a: Analysis, row: int, col: int, layer: int = -1, head: int | None = None, rolled: bool = False,
               fusion: str = "mean", discard_ratio: float = 0.0, start_layer: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(where patch (row, col) attends, who attends to it), each (gh, gw): one block, or rolled out."""
    if rolled:
        return attention.rollout_query_maps(a.fused_heads(fusion), a.num_prefix, a.grid, row, col, discard_ratio,
                                            start_layer)
    return attention.patch_query_maps(a.attention, a.num_prefix, a.grid, row, col, layer, head)


def query_panels(a: Analysis, row: int, col: int, layer: int = -1, head: int | None = None, rolled: bool = False,
                 fusion: str = "mean", discard_ratio: float = 0.0, start_layer: int = 0,
                 cmap: str = render.DEFAULT_CMAP, alpha: float = 0.6, colorbar: bool = True,
                 scale: int = 1) -> tuple[Image.Image, Image.Image]:
    """Overlays of where the patch attends and of who attends to it, the patch framed in green."""
    out_map, in_map = query_maps(a, row, col, layer, head, rolled, fusion, discard_ratio, start_layer)
    base = photo(a, scale)
    where = "rollout" if rolled else f"block {layer_index(layer, a.depth)}, {_head_name(head)}"
    images = []
    for values, kind in ((out_map, "attends to"), (in_map, "attended by")):
        image = render.mark_patch(render.overlay(base, values, cmap, alpha), row, col, a.grid)
        if colorbar:
            image = render.add_colorbar(image, cmap, float(values.min()), float(values.max()), f"{kind}, {where}")
        images.append(image)
    return images[0], images[1]


def threshold_panel(a: Analysis, share: float = 0.6, source: str = "attention", layer: int = -1,
                    head: int | None = None, scale: int = 1, **rollout_options) -> Image.Image:
    """DINO's threshold mask: the photo dimmed outside the smallest patch set holding ``share`` of the
    mass of the CLS attention (``source="attention"``, block ``layer``) or of the rollout."""
    if source == "attention":
        values = attention.token_attention_map(a.attention, a.num_prefix, a.grid, layer, head)
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


def token_norms_panel(a: Analysis, norm_ratio: float = 3.0, cell: int = 56,
                      cmap: str = "viridis") -> tuple[Image.Image, GridLayout]:
    """The L2 norm of every patch token after each block (one thumbnail per block, each scaled on its
    own between its min and its largest unflagged norm), high-norm patches outlined in cyan."""
    maps = norms.token_norm_maps(a.token_norms, a.num_prefix, a.grid)
    flags = artifact_flags(a, norm_ratio)
    ordinary_max = np.where(flags, -np.inf, maps).max(axis=(1, 2), keepdims=True)
    maps = np.minimum(maps, ordinary_max)       # flagged patches saturate instead of washing out the rest
    return thumbnail_grid(maps[None], cell=cell, cmap=cmap, col_labels=[f"B{l}" for l in range(a.depth)],
                          row_labels=["norm"], marks=flags[None])


def token_norm_curves_panel(a: Analysis, norm_ratio: float = 3.0) -> Image.Image:
    """Token norms against depth (log scale), flagged patches in red."""
    return plots.token_norm_image(a.token_norms, a.num_prefix, artifact_flags(a, norm_ratio))


def mean_distance_of(a: Analysis, renormalise: bool = False) -> np.ndarray:
    """Mean attention distance in pixels (L, H) (cached by ``analyze``)."""
    if renormalise in a.mean_distance:
        return a.mean_distance[renormalise]
    return figure7.mean_attention_distance(a.attention, a.num_prefix, a.grid, a.patch_size, renormalise)


def distance_panel(mean_distance: np.ndarray, grid: tuple[int, int], patch_size: int,
                   title: str | None = None) -> Image.Image:
    """Mean attention distance (L, H) of one image, or averaged over images, against depth."""
    uniform = float(figure7.patch_distances(grid, patch_size).mean())
    return plots.distance_image(mean_distance, title, uniform)


def position_similarity_of(m: ModelArrays) -> np.ndarray:
    """Cosine similarity of the position embeddings on the checkpoint's native grid (N, N)."""
    return figure7.position_similarity(m.pos_embed, m.native_grid)


NO_POSITION_EMBEDDING = ("This model has no position embedding (pos_embed_kind \"none\"): there is no "
                         "position similarity to show. Its tokens know where they are only through what they see.")


def position_panel(m: ModelArrays) -> Image.Image:
    """Figure 7, centre: position-embedding similarity, one tile per patch (a full matplotlib draw, ~0.1 s:
    render it once per model). A model without position embedding gets a panel that says so."""
    if not m.has_position_embedding:
        return render.message_image(NO_POSITION_EMBEDDING)
    return plots.figure_to_image(plots.position_similarity_plot(position_similarity_of(m), m.native_grid))


def filters_panel(m: ModelArrays, count: int = 28) -> Image.Image:
    """Figure 7, left: principal components of the patch-embedding filters, 7 per row."""
    tiles, _ = figure7.embedding_filter_components(m.patch_weight, count)
    return tile_images(tiles, cols=7, scale=max(1, 64 // m.patch_size))


def model_panels(m: ModelArrays) -> tuple[dict[str, Image.Image], dict[str, np.ndarray]]:
    """The panels that depend on the checkpoint only (Figure 7 left and centre), to render once per model
    -> ({name: image}, {name: array})."""
    if not m.has_position_embedding:
        similarity = np.zeros((0, 0), np.float32)
        return {"filters": filters_panel(m), "pos_similarity": position_panel(m)}, {"pos_similarity": similarity}
    similarity = position_similarity_of(m)
    image = plots.figure_to_image(plots.position_similarity_plot(similarity, m.native_grid))
    return {"filters": filters_panel(m), "pos_similarity": image}, {"pos_similarity": similarity}


def image_panels(a: Analysis, o: MapOptions = MapOptions()) -> tuple[dict[str, Image.Image], dict[str, np.ndarray]]:
    """Every panel that depends on the image -> ({name: image}, {name: array} of the maps drawn)."""
    row, col = o.query if o.query is not None else default_query(a)
    patch_token(row, col, a.num_prefix, a.grid)  # validates the query patch
    rollout_options = dict(fusion=o.fusion, discard_ratio=o.discard_ratio, start_layer=o.start_layer)
    style = dict(cmap=o.cmap, alpha=o.alpha, colorbar=o.colorbar, scale=o.scale)
    rollout = rollout_of(a, **rollout_options, mask_artifacts=o.mask_artifacts, norm_ratio=o.norm_ratio)
    query_out, query_in = query_maps(a, row, col, o.layer, o.head, o.query_rollout, **rollout_options)
    distance = mean_distance_of(a, o.distance_renormalise)
    images = {
        "input": photo(a, o.scale),
        "rollout": rollout_overlay(a, rollout, artifact_drop(a, o.mask_artifacts, o.norm_ratio), o.cmap, o.alpha,
                                   o.colorbar, o.scale),
        "attention": attention_panel(a, o.layer, o.head, None, **style),
        "threshold": threshold_panel(a, o.share, o.mask_source, o.layer, o.head, o.scale, **rollout_options,
                                     mask_artifacts=o.mask_artifacts, norm_ratio=o.norm_ratio),
        "heads": heads_panel(a, cmap=o.cmap)[0],
        "mean_distance": distance_panel(distance, a.grid, a.patch_size),
        "token_norms": token_norms_panel(a, o.norm_ratio)[0],
        "token_norm_curves": token_norm_curves_panel(a, o.norm_ratio),
    }
    images["query_row"], images["query_column"] = query_panels(a, row, col, o.layer, o.head, o.query_rollout,
                                                               **rollout_options, **style)
    arrays = {"rollout": rollout,
              "cls_attention": attention.token_attention_map(a.attention, a.num_prefix, a.grid, o.layer, o.head),
              "query_row": query_out, "query_column": query_in, "query_patch": np.array([row, col]),
              "mean_distance": distance, "high_norm_flags": artifact_flags(a, o.norm_ratio)}
    return images, arrays


def render_all(a: Analysis, m: ModelArrays, o: MapOptions = MapOptions()) -> tuple[dict[str, Image.Image], dict[str, np.ndarray]]:
    """Every panel for one image, the model's own included -> ({name: image}, {name: array})."""
    images, arrays = image_panels(a, o)
    model_images, model_maps = model_panels(m)
    return {**images, **model_images}, {**arrays, **model_maps}
