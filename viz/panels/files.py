"""The panels at the model's own size, for the CLI and the files it writes (``image_panels``, ``model_panels``,
the options ``MapOptions``): every map of one image (and Figure 7 left and centre of the checkpoint) as a PIL
image, from a cached ``Analysis`` (and ``ModelArrays``); the page reuses the checkpoint's panels and the distance
plot. No model and no torch here. The values drawn come from ``select``.

Layer, head and patch indices are 0-based (negative counts from the end); ``head=None`` is the mean of
heads. ``scale`` enlarges the photo (Lanczos) before overlaying, for display. ``lang`` ("en" or "zh-CN") is
the language of every text drawn (``viz.i18n``); ``mask_artifacts`` drops the high-norm artifact tokens
(``viz.maps.norms``) from every map of the query's attention.

Every caption names the analysis' query (``captions`` gives them as text).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image

from ..drawing import plots, render, screens
from ..drawing.grids import GridLayout, thumbnail_grid, tile_images
from ..i18n import language, t
from ..maps import attention, distance, embeddings, norms
from .select import (artifact_drop, artifact_flags, attention_caption, attention_of, default_query, heads_caption,
                     layer_readout_rows, mean_distance_of, position_similarity_of, query_maps, rollout_caption,
                     rollout_of, token_norm_maps_of, where_name)
from ..maps.layout import layer_index, patch_token, to_grid
from ..maps.rollout import FUSIONS
from ..records import Analysis, ModelArrays


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


def rollout_overlay(a: Analysis, values: np.ndarray, drop: np.ndarray | None, cmap: str = render.DEFAULT_CMAP,
                    alpha: float = 0.6, colorbar: bool = True, scale: int = 1, lang: str = "en") -> Image.Image:
    """Rollout map onto the photo; dropped patches are left out of the colour scale (they show its bottom)."""
    vmin = float(values[~drop].min()) if drop is not None and not drop.all() else None
    return render.overlay(photo(a, scale), values, cmap, alpha, vmin=vmin, colorbar=colorbar,
                          label=rollout_caption(a, lang), lang=lang)


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


def heads_panel(a: Analysis, cell: int = 56, cmap: str = render.DEFAULT_CMAP, with_photo: bool = False,
                selected: tuple[int, int] | None = None, lang: str = "en", mask_artifacts: bool = False,
                norm_ratio: float = 3.0, stage: int | None = None) -> tuple[Image.Image, GridLayout]:
    """The "model view": the query's attention in every layer (rows) and head (columns), each map scaled on
    its own (the CLS row, or for models without one the mean of the patch rows: ``heads_caption``). Returns
    the image and its layout; ``layout.cell_at(x, y)`` gives the (layer, head) clicked (rows: the layers shown).
    ``stage``: that stage's layers only, on its grid (a model of several stages has one such panel per stage)."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    layers = a.architecture.stages[stage] if stage is not None else tuple(range(a.depth))
    block = a.architecture.blocks[layers[0]]
    maps = to_grid(np.stack([layer_readout_rows(a, l, drop) for l in layers]), block.prefix, block.grid)
    return thumbnail_grid(maps, cell=cell, cmap=cmap, row_labels=[t("name.layer", lang, layer=l) for l in layers],
                          col_labels=[t("name.head", lang, head=h) for h in range(block.heads)],
                          background=a.image if with_photo else None, selected=selected, lang=lang)


def captions(a: Analysis, o: "MapOptions") -> dict[str, str]:
    """Every image-level panel's caption, naming its query: {"rollout", "attention", "threshold", "heads"}."""
    source = attention_caption(a, o.layer, o.head, o.lang) if o.mask_source == "attention" else \
        rollout_caption(a, o.lang)
    return {"rollout": rollout_caption(a, o.lang), "attention": attention_caption(a, o.layer, o.head, o.lang),
            "threshold": t("caption.threshold", o.lang, share=o.share, source=source),
            "heads": heads_caption(a, o.lang)}


def query_panels(a: Analysis, row: int, col: int, layer: int = -1, head: int | None = None, rolled: bool = False,
                 fusion: str = "mean", discard_ratio: float = 0.0, start_layer: int = 0,
                 cmap: str = render.DEFAULT_CMAP, alpha: float = 0.6, colorbar: bool = True,
                 scale: int = 1, lang: str = "en", mask_artifacts: bool = False,
                 norm_ratio: float = 3.0) -> tuple[Image.Image, Image.Image]:
    """Overlays of where the patch attends and of who attends to it, the patch (or the layer's token covering it)
    framed in green, the layer's windows outlined when it has them."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    out_map, in_map = query_maps(a, row, col, layer, head, rolled, fusion, discard_ratio, start_layer, drop)
    base = photo(a, scale)
    where = t("name.rollout", lang) if rolled else where_name(a, layer, head, lang)
    block = a.architecture.block(0 if rolled else layer)
    token = a.architecture.token_of(row % a.grid[0], col % a.grid[1], block.index)
    images = []
    for values, kind in ((out_map, "colorbar.attends_to"), (in_map, "colorbar.attended_by")):
        image = render.outline_windows(render.overlay(base, values, cmap, alpha), block, base.size)
        image = render.mark_patch(image, *token, block.grid)
        if colorbar:
            image = render.add_colorbar(image, cmap, float(values.min()), float(values.max()),
                                        t(kind, lang, where=where), lang=lang)
        images.append(image)
    return images[0], images[1]


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


def token_norms_panel(a: Analysis, norm_ratio: float = 3.0, cell: int = 56,
                      cmap: str = "viridis", lang: str = "en") -> tuple[Image.Image, GridLayout]:
    """The L2 norm of every patch token after each layer (one thumbnail per layer, each scaled on its
    own between its min and its largest unflagged norm), high-norm patches outlined in cyan."""
    maps = token_norm_maps_of(a)
    flags = artifact_flags(a, norm_ratio)
    ordinary_max = np.where(flags, -np.inf, maps).max(axis=(1, 2), keepdims=True)
    maps = np.minimum(maps, ordinary_max)       # flagged patches saturate instead of washing out the rest
    return thumbnail_grid(maps[None], cell=cell, cmap=cmap,
                          col_labels=[t("name.layer", lang, layer=l) for l in range(a.depth)],
                          row_labels=[t("name.norm", lang)], marks=flags[None], lang=lang)


def token_norm_curves_panel(a: Analysis, norm_ratio: float = 3.0, lang: str = "en",
                            narrow: bool = False) -> Image.Image:
    """Token norms against depth (log scale), flagged patches in red; ``narrow``: for a phone."""
    return plots.token_norm_image(a.token_norms, a.num_prefix, artifact_flags(a, norm_ratio), lang=lang,
                                  narrow=narrow)


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


def position_panel(m: ModelArrays, lang: str = "en", narrow: bool = False) -> Image.Image:
    """Figure 7, centre: position-embedding similarity, one tile per patch (a full matplotlib draw, ~0.1 s:
    render it once per model and language); a rotary model without a table gets the similarity its rotation implies
    under a title that says so, a model with neither a panel that says why there is nothing to show."""
    return _position_image(position_similarity_of(m), m.native_grid, lang, narrow, m.rotary_kernel)


def _position_image(similarity: np.ndarray | None, grid: tuple[int, int], lang: str = "en", narrow: bool = False,
                    rotary: np.ndarray | None = None) -> Image.Image:
    if similarity is None and rotary is not None:
        return plots.figure_to_image(plots.position_similarity_plot(rotary, grid, t("title.rotary_kernel", lang),
                                                                    lang=lang, narrow=narrow))
    if similarity is None:
        width = screens.PHONE_WIDTH if narrow else 420
        return render.message_image(t("note.no_position_embeddings", lang), (width, 200), 14, lang)
    return plots.figure_to_image(plots.position_similarity_plot(similarity, grid, lang=lang, narrow=narrow))


def filters_panel(m: ModelArrays, count: int = 28) -> Image.Image:
    """Figure 7, left: principal components of the patch-embedding filters, 7 per row."""
    tiles, _ = embeddings.embedding_filter_components(m.patch_weight, count)
    return tile_images(tiles, cols=7, scale=max(1, 64 // m.patch_size))


def model_panels(m: ModelArrays, lang: str = "en") -> tuple[dict[str, Image.Image], dict[str, np.ndarray]]:
    """The panels that depend on the checkpoint only (Figure 7 left and centre), to render once per model
    -> ({name: image}, {name: array})."""
    similarity = position_similarity_of(m)
    arrays = {"pos_similarity": similarity} if similarity is not None else {}
    if similarity is None and m.rotary_kernel is not None:
        arrays["rotary_kernel"] = m.rotary_kernel
    return {"filters": filters_panel(m),
            "pos_similarity": _position_image(similarity, m.native_grid, lang, rotary=m.rotary_kernel)}, arrays


def image_panels(a: Analysis, o: MapOptions = MapOptions()) -> tuple[dict[str, Image.Image], dict[str, np.ndarray]]:
    """Every panel that depends on the image -> ({name: image}, {name: array} of the maps drawn). A model of several
    stages gets one heads panel per stage ("heads_stage<s>") instead of "heads"; the one-layer map's array is
    "cls_attention" (beside the whole attention of a model that keeps it) or "attention" (a model whose blocks' maps
    are kept per block)."""
    row, col = o.query if o.query is not None else default_query(a)
    patch_token(row, col, a.num_prefix, a.grid)  # validates the query patch
    rollout_options = dict(fusion=o.fusion, discard_ratio=o.discard_ratio, start_layer=o.start_layer)
    style = dict(cmap=o.cmap, alpha=o.alpha, colorbar=o.colorbar, scale=o.scale, lang=o.lang)
    masking = dict(mask_artifacts=o.mask_artifacts, norm_ratio=o.norm_ratio)
    drop = artifact_drop(a, o.mask_artifacts, o.norm_ratio)
    rollout = rollout_of(a, **rollout_options, **masking)
    query_out, query_in = query_maps(a, row, col, o.layer, o.head, o.query_rollout, **rollout_options, drop=drop)
    distance = mean_distance_of(a, o.distance_renormalise)
    images = {
        "input": photo(a, o.scale),
        "rollout": rollout_overlay(a, rollout, drop, o.cmap, o.alpha, o.colorbar, o.scale, o.lang),
        "attention": attention_panel(a, o.layer, o.head, None, **style, **masking),
        "threshold": threshold_panel(a, o.share, o.mask_source, o.layer, o.head, o.scale, **rollout_options,
                                     **masking),
        "mean_distance": distance_panel(distance, distance_grid(a), a.patch_size, lang=o.lang),
        "token_norms": token_norms_panel(a, o.norm_ratio, lang=o.lang)[0],
        "token_norm_curves": token_norm_curves_panel(a, o.norm_ratio, lang=o.lang),
    }
    stages = a.architecture.stages
    for s, _ in enumerate(stages):
        name = "heads" if len(stages) == 1 else f"heads_stage{s}"
        images[name] = heads_panel(a, cmap=o.cmap, lang=o.lang, stage=s if len(stages) > 1 else None, **masking)[0]
    images["query_row"], images["query_column"] = query_panels(a, row, col, o.layer, o.head, o.query_rollout,
                                                               **rollout_options, **style, **masking)
    one_map = "cls_attention" if a.attention is not None or a.architecture.one_sequence else "attention"
    arrays = {"rollout": rollout, one_map: attention_of(a, o.layer, o.head, drop),
              "query_row": query_out, "query_column": query_in, "query_patch": np.array([row, col]),
              "mean_distance": distance, "high_norm_flags": artifact_flags(a, o.norm_ratio)}
    return images, arrays
