"""Every panel of the explorer as a PIL image, from a cached ``Analysis`` (and ``ModelArrays`` for the
image-independent Figure 7 panels). No model and no torch here: moving a slider re-renders from arrays.

Layer, head and patch indices are 0-based (negative counts from the end); ``head=None`` is the mean of
heads. ``scale`` enlarges the photo (Lanczos) before overlaying, for display. ``lang`` ("en" or "zh-CN") is
the language of every text drawn (``viz.i18n``); ``mask_artifacts`` drops the high-norm artifact tokens
(``viz.maps.norms``) from every map of the query's attention.

The image-level maps (rollout, attention, heads, threshold mask) read the analysis' own query,
``a.readout`` (see ``viz.maps.readout``): the CLS token, SigLIP's MAP probe or the mean of the patches; every
caption names it ("CLS", "MAP probe", "mean of patches"), and ``captions`` gives them as text.

The map panels for the page (``*_map_panel``, ``heads_grid_panel``, ``crop_panel``) draw at display size
(``Display``), read in multiples of uniform attention (1 = 1/T), can share one colour scale across layers
and draw patch-true, and return the numbers behind the picture with a note when artifacts dominate.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw, ImageOps

from .drawing import plots, render
from .i18n import language, t
from .maps import attention, figure7, norms, readout
from .drawing.grids import GridLayout, thumbnail_grid, tile_images
from .maps.layout import layer_index, patch_token
from .result import Analysis, ModelArrays
from .maps.rollout import FUSIONS, kept_tokens


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


def where_name(a: Analysis, layer: int, head: int | None, lang: str = "en") -> str:
    """"layer 11, mean of heads" / "layer 3, head 1" in ``lang`` (the caption of a one-layer map)."""
    layer = layer_index(layer, a.depth)
    if head is None:
        return t("name.layer_mean", lang, layer=layer)
    return t("name.layer_head", lang, layer=layer, head=head % a.heads)


def artifact_flags(a: Analysis, norm_ratio: float = 3.0) -> np.ndarray:
    """High-norm patches per block -> bool (L, gh, gw) (see ``viz.maps.norms``)."""
    return norms.flag_high_norm(a.token_norms, a.num_prefix, a.grid, norm_ratio)


def artifact_drop(a: Analysis, mask_artifacts: bool, norm_ratio: float = 3.0) -> np.ndarray | None:
    """The patches to drop before rollout: flagged high-norm in any block (gh, gw), or None when not masking."""
    return norms.artifact_mask(artifact_flags(a, norm_ratio)) if mask_artifacts else None


def rollout_of(a: Analysis, fusion: str = "mean", discard_ratio: float = 0.0, start_layer: int = 0,
               mask_artifacts: bool = False, norm_ratio: float = 3.0) -> np.ndarray:
    """Rollout of the analysis' query (CLS, MAP probe or mean of patches) over the patches (gh, gw), optionally
    without the high-norm tokens (they read 0)."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    return readout.readout_rollout_map(a.fused_heads(fusion), a.num_prefix, a.grid, a.readout, a.probe_attention,
                                       fusion, discard_ratio, start_layer, drop)


def rollout_overlay(a: Analysis, values: np.ndarray, drop: np.ndarray | None, cmap: str = render.DEFAULT_CMAP,
                    alpha: float = 0.6, colorbar: bool = True, scale: int = 1, lang: str = "en") -> Image.Image:
    """Rollout map onto the photo; dropped patches are left out of the colour scale (they show its bottom)."""
    vmin = float(values[~drop].min()) if drop is not None and not drop.all() else None
    return render.overlay(photo(a, scale), values, cmap, alpha, vmin=vmin, colorbar=colorbar,
                          label=rollout_caption(a, lang), lang=lang)


def rollout_panel(a: Analysis, fusion: str = "mean", discard_ratio: float = 0.0, start_layer: int = 0,
                  mask_artifacts: bool = False, norm_ratio: float = 3.0, cmap: str = render.DEFAULT_CMAP,
                  alpha: float = 0.6, colorbar: bool = True, scale: int = 1, lang: str = "en") -> Image.Image:
    """Attention rollout of the analysis' query blended onto the photo."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    values = rollout_of(a, fusion, discard_ratio, start_layer, mask_artifacts, norm_ratio)
    return rollout_overlay(a, values, drop, cmap, alpha, colorbar, scale, lang)


def attention_of(a: Analysis, layer: int = -1, head: int | None = None,
                 drop: np.ndarray | None = None) -> np.ndarray:
    """The analysis' query's attention over the patches in one layer (gh, gw); the MAP probe's after the last.
    ``drop`` (gh, gw) bool: tokens removed as keys (and as queries of the mean), rows renormalised."""
    return readout.readout_attention_map(a.attention, a.num_prefix, a.grid, a.readout, a.probe_attention, layer,
                                         head, drop_patches=drop)


def attention_panel(a: Analysis, layer: int = -1, head: int | None = None, share: float | None = None,
                    cmap: str = render.DEFAULT_CMAP, alpha: float = 0.6, colorbar: bool = True,
                    scale: int = 1, lang: str = "en", mask_artifacts: bool = False,
                    norm_ratio: float = 3.0) -> Image.Image:
    """The query's attention over the patches in one layer (one head or their mean): the CLS token's, the MAP
    probe's or the mean patch row's; with ``share``, the outline of DINO's threshold mask on top; with
    ``mask_artifacts``, without the high-norm tokens."""
    values = attention_of(a, layer, head, artifact_drop(a, mask_artifacts, norm_ratio))
    mask = attention.threshold_mask(values, share) if share else None
    return render.overlay(photo(a, scale), values, cmap, alpha, mask=mask, colorbar=colorbar,
                          label=attention_caption(a, layer, head, lang), lang=lang)


def heads_panel(a: Analysis, cell: int = 56, cmap: str = render.DEFAULT_CMAP, with_photo: bool = False,
                selected: tuple[int, int] | None = None, lang: str = "en", mask_artifacts: bool = False,
                norm_ratio: float = 3.0) -> tuple[Image.Image, GridLayout]:
    """The "model view": the query's attention in every layer (rows) and head (columns), each map scaled on
    its own (the CLS row, or for models without one the mean of the patch rows: ``heads_caption``). Returns
    the image and its layout; ``layout.cell_at(x, y)`` gives the (layer, head) clicked."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    maps = readout.readout_all_heads_maps(a.attention, a.num_prefix, a.grid, a.readout, drop_patches=drop)
    return thumbnail_grid(maps, cell=cell, cmap=cmap, row_labels=[t("name.layer", lang, layer=l) for l in range(a.depth)],
                          col_labels=[t("name.head", lang, head=h) for h in range(a.heads)],
                          background=a.image if with_photo else None, selected=selected, lang=lang)


def query_label(readout_kind: str, lang: str = "en") -> str:
    """The query's name in ``lang``: "CLS", "MAP probe" or "mean of patches"."""
    return t(f"query.{readout_kind}", lang)


def rollout_caption(a: Analysis, lang: str = "en") -> str:
    """E.g. "CLS rollout", "MAP probe rollout", "mean of patches rollout"."""
    return t("caption.rollout", lang, query=query_label(a.readout, lang))


def attention_caption(a: Analysis, layer: int = -1, head: int | None = None, lang: str = "en") -> str:
    """E.g. "CLS, layer 11, mean of heads"; the MAP probe reads after the last layer, whatever ``layer``."""
    if a.readout == "map":
        return t("caption.probe", lang, layer=a.depth - 1,
                 heads=t("name.mean_heads", lang) if head is None else t("name.head", lang, head=head % a.heads))
    return t("caption.attention", lang, query=query_label(a.readout, lang), where=where_name(a, layer, head, lang))


def heads_caption(a: Analysis, lang: str = "en") -> str:
    """What the heads grid shows: the CLS row, or the mean of the patch rows (the probe is not in the layers)."""
    return t("caption.heads", lang, query=query_label(readout.heads_query(a.readout), lang))


def captions(a: Analysis, o: "MapOptions") -> dict[str, str]:
    """Every image-level panel's caption, naming its query: {"rollout", "attention", "threshold", "heads"}."""
    source = attention_caption(a, o.layer, o.head, o.lang) if o.mask_source == "attention" else \
        rollout_caption(a, o.lang)
    return {"rollout": rollout_caption(a, o.lang), "attention": attention_caption(a, o.layer, o.head, o.lang),
            "threshold": t("caption.threshold", o.lang, share=o.share, source=source),
            "heads": heads_caption(a, o.lang)}


def default_query(a: Analysis) -> tuple[int, int]:
    """The patch in the centre of the grid."""
    return a.grid[0] // 2, a.grid[1] // 2


def query_maps(a: Analysis, row: int, col: int, layer: int = -1, head: int | None = None, rolled: bool = False,
               fusion: str = "mean", discard_ratio: float = 0.0, start_layer: int = 0,
               drop: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(where patch (row, col) attends, who attends to it), each (gh, gw): one layer, or rolled out; ``drop``
    (gh, gw) bool: patches left out (``artifact_drop``)."""
    if rolled:
        return attention.rollout_query_maps(a.fused_heads(fusion), a.num_prefix, a.grid, row, col, discard_ratio,
                                            start_layer, drop_patches=drop)
    return attention.patch_query_maps(a.attention, a.num_prefix, a.grid, row, col, layer, head, drop_patches=drop)


def query_panels(a: Analysis, row: int, col: int, layer: int = -1, head: int | None = None, rolled: bool = False,
                 fusion: str = "mean", discard_ratio: float = 0.0, start_layer: int = 0,
                 cmap: str = render.DEFAULT_CMAP, alpha: float = 0.6, colorbar: bool = True,
                 scale: int = 1, lang: str = "en", mask_artifacts: bool = False,
                 norm_ratio: float = 3.0) -> tuple[Image.Image, Image.Image]:
    """Overlays of where the patch attends and of who attends to it, the patch framed in green."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    out_map, in_map = query_maps(a, row, col, layer, head, rolled, fusion, discard_ratio, start_layer, drop)
    base = photo(a, scale)
    where = t("name.rollout", lang) if rolled else where_name(a, layer, head, lang)
    images = []
    for values, kind in ((out_map, "colorbar.attends_to"), (in_map, "colorbar.attended_by")):
        image = render.mark_patch(render.overlay(base, values, cmap, alpha), row, col, a.grid)
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
    maps = norms.token_norm_maps(a.token_norms, a.num_prefix, a.grid)
    flags = artifact_flags(a, norm_ratio)
    ordinary_max = np.where(flags, -np.inf, maps).max(axis=(1, 2), keepdims=True)
    maps = np.minimum(maps, ordinary_max)       # flagged patches saturate instead of washing out the rest
    return thumbnail_grid(maps[None], cell=cell, cmap=cmap,
                          col_labels=[t("name.layer", lang, layer=l) for l in range(a.depth)],
                          row_labels=[t("name.norm", lang)], marks=flags[None], lang=lang)


def token_norm_curves_panel(a: Analysis, norm_ratio: float = 3.0, lang: str = "en") -> Image.Image:
    """Token norms against depth (log scale), flagged patches in red."""
    return plots.token_norm_image(a.token_norms, a.num_prefix, artifact_flags(a, norm_ratio), lang=lang)


def mean_distance_of(a: Analysis, renormalise: bool = False) -> np.ndarray:
    """Mean attention distance in pixels (L, H) (cached by ``analyze``)."""
    if renormalise in a.mean_distance:
        return a.mean_distance[renormalise]
    return figure7.mean_attention_distance(a.attention, a.num_prefix, a.grid, a.patch_size, renormalise)


def distance_panel(mean_distance: np.ndarray, grid: tuple[int, int], patch_size: int,
                   title: str | None = None, lang: str = "en") -> Image.Image:
    """Mean attention distance (L, H) of one image, or averaged over images, against depth."""
    uniform = float(figure7.patch_distances(grid, patch_size).mean())
    return plots.distance_image(mean_distance, title, uniform, lang=lang)


def position_similarity_of(m: ModelArrays) -> np.ndarray | None:
    """Cosine similarity of the position embeddings on the checkpoint's native grid (N, N); None without them."""
    return figure7.position_similarity(m.pos_embed, m.native_grid) if m.pos_embed is not None else None


def position_panel(m: ModelArrays, lang: str = "en") -> Image.Image:
    """Figure 7, centre: position-embedding similarity, one tile per patch (a full matplotlib draw, ~0.1 s:
    render it once per model and language); a model without position embeddings gets a panel that says so."""
    return _position_image(position_similarity_of(m), m.native_grid, lang)


def _position_image(similarity: np.ndarray | None, grid: tuple[int, int], lang: str = "en") -> Image.Image:
    if similarity is None:
        return render.message_image(t("note.no_position_embeddings", lang), lang=lang)
    return plots.figure_to_image(plots.position_similarity_plot(similarity, grid, lang=lang))


def filters_panel(m: ModelArrays, count: int = 28) -> Image.Image:
    """Figure 7, left: principal components of the patch-embedding filters, 7 per row."""
    tiles, _ = figure7.embedding_filter_components(m.patch_weight, count)
    return tile_images(tiles, cols=7, scale=max(1, 64 // m.patch_size))


def model_panels(m: ModelArrays, lang: str = "en") -> tuple[dict[str, Image.Image], dict[str, np.ndarray]]:
    """The panels that depend on the checkpoint only (Figure 7 left and centre), to render once per model
    -> ({name: image}, {name: array})."""
    similarity = position_similarity_of(m)
    arrays = {"pos_similarity": similarity} if similarity is not None else {}
    return {"filters": filters_panel(m), "pos_similarity": _position_image(similarity, m.native_grid, lang)}, arrays


def image_panels(a: Analysis, o: MapOptions = MapOptions()) -> tuple[dict[str, Image.Image], dict[str, np.ndarray]]:
    """Every panel that depends on the image -> ({name: image}, {name: array} of the maps drawn)."""
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
        "heads": heads_panel(a, cmap=o.cmap, lang=o.lang, **masking)[0],
        "mean_distance": distance_panel(distance, a.grid, a.patch_size, lang=o.lang),
        "token_norms": token_norms_panel(a, o.norm_ratio, lang=o.lang)[0],
        "token_norm_curves": token_norm_curves_panel(a, o.norm_ratio, lang=o.lang),
    }
    images["query_row"], images["query_column"] = query_panels(a, row, col, o.layer, o.head, o.query_rollout,
                                                               **rollout_options, **style, **masking)
    arrays = {"rollout": rollout, "cls_attention": attention_of(a, o.layer, o.head, drop),
              "query_row": query_out, "query_column": query_in, "query_patch": np.array([row, col]),
              "mean_distance": distance, "high_norm_flags": artifact_flags(a, o.norm_ratio)}
    return images, arrays


def render_all(a: Analysis, m: ModelArrays, o: MapOptions = MapOptions()) -> tuple[dict[str, Image.Image], dict[str, np.ndarray]]:
    """Every panel for one image, the model's own included -> ({name: image}, {name: array})."""
    images, arrays = image_panels(a, o)
    model_images, model_maps = model_panels(m, o.lang)
    return {**images, **model_images}, {**arrays, **model_maps}


# --- map panels for the page: display size, multiples of uniform attention, shared scales, notes ------------

@dataclass(frozen=True)
class Display:
    """How the page draws a map: at its panel's pixel size, in one language, smooth or patch-true."""
    size: int | None = None          # longer side of the photo and map in pixels (e.g. 448–768); None: the model's
    lang: str = "en"                 # language of every text drawn ("en" or "zh-CN")
    cmap: str = render.DEFAULT_CMAP
    alpha: float = 0.6               # opacity of the map over the photo
    colorbar: bool = True
    patch_true: bool = False         # one colour per patch (nearest), thin lines at the patch borders

    @property
    def font_size(self) -> int:
        """Colour-bar text size: about 1/32 of the picture, never below 12 pixels."""
        return max(12, round((self.size or 224) / 32))


@dataclass(frozen=True)
class MapPanel:
    """A drawn map with the numbers behind it, so the page can show values, ranges and the note."""
    image: Image.Image
    values: np.ndarray               # (gh, gw) the map as drawn, in multiples of uniform attention (1 = 1/tokens)
    vmin: float                      # colour-scale range, same unit (over all layers with a shared scale)
    vmax: float
    tokens: int                      # T: the tokens the attention is spread over (kept ones when masking)
    note: str | None = None          # one line for under the picture, in the display's language, or None


_DISPLAY_PHOTOS: OrderedDict = OrderedDict()   # (id of the photo, size) -> (photo, enlarged photo), newest last
_DISPLAY_PHOTOS_KEPT = 8                         # 8 photos at 768 px: 14 MB
_DISPLAY_LOCK = threading.Lock()


def display_photo(a: Analysis, size: int | None = None) -> Image.Image:
    """The pixels the model saw, resized so that the longer side is ``size`` pixels (bicubic; None: as is).

    The last few enlargements are kept (a slider move re-renders the same photo at the same size), keyed by
    the photo object itself, so a new analysis never gets another photo's pixels."""
    if size is None or max(a.image.size) == size:
        return a.image
    key = (id(a.image), size)
    with _DISPLAY_LOCK:
        kept = _DISPLAY_PHOTOS.get(key)
        if kept is not None and kept[0] is a.image:
            _DISPLAY_PHOTOS.move_to_end(key)
            return kept[1]
    w, h = a.image.size
    scale = size / max(w, h)
    enlarged = a.image.resize((max(1, round(w * scale)), max(1, round(h * scale))), Image.Resampling.BICUBIC)
    with _DISPLAY_LOCK:
        _DISPLAY_PHOTOS[key] = (a.image, enlarged)
        while len(_DISPLAY_PHOTOS) > _DISPLAY_PHOTOS_KEPT:
            _DISPLAY_PHOTOS.popitem(last=False)
    return enlarged


def uniform_tokens(a: Analysis, drop: np.ndarray | None) -> int:
    """T, the tokens an attention row is spread over (uniform attention gives each 1/T): all tokens, or the
    ones left after dropping ``drop`` (gh, gw)."""
    return a.num_prefix + a.grid[0] * a.grid[1] - (0 if drop is None else int(np.count_nonzero(drop)))


def _uniform_ticks(vmin: float, vmax: float) -> list[float]:
    """Colour-bar ticks for maps in multiples of uniform: the top, 1 (uniform) when inside, the bottom."""
    if not vmax > vmin:
        return [vmax]
    ticks = [vmax, (vmin + vmax) / 2, vmin]
    if vmin < 1.0 < vmax:   # mark uniform attention instead of the middle when it is on the bar
        ticks[1] = 1.0
    return ticks


def _artifact_note(a: Analysis, values: np.ndarray, mask_artifacts: bool, norm_ratio: float,
                   lang: str) -> str | None:
    """The note for a map of the CLS attention: artifacts masked, or dominating the unmasked map, or None."""
    flagged = artifact_drop(a, True, norm_ratio)
    if mask_artifacts:
        count = int(flagged.sum())
        return t("note.artifacts_masked", lang, count=count) if count else None
    share = norms.artifact_share(values, flagged)
    return t("note.artifacts_dominate", lang, share=share.share, count=share.count) if share.dominates else None


def _draw_map(base: Image.Image, values: np.ndarray, vmin: float, vmax: float, label: str, tokens: int,
              display: Display, outline: np.ndarray | None = None) -> Image.Image:
    return render.overlay(base, values, display.cmap, display.alpha, vmin=vmin, vmax=vmax, mask=outline,
                          colorbar=display.colorbar,
                          label=f"{label}\n{t('colorbar.uniform', display.lang, tokens=tokens)}",
                          lang=display.lang, smooth=not display.patch_true, ticks=_uniform_ticks(vmin, vmax),
                          font_size=display.font_size)


def _range(values: np.ndarray, drop: np.ndarray | None) -> tuple[float, float]:
    """(min, max) of a map over its kept patches (dropped ones read 0 and stay out of the scale)."""
    kept = values if drop is None or drop.all() else values[~drop]
    return float(kept.min()), float(kept.max())


def _layer_rows(a: Analysis, head: int | None, query: int = 0) -> np.ndarray:
    """Attention rows of token ``query`` in every layer (L, T) float32: one head, or the mean of heads (the
    cached head-fused mean, so that a shared scale over all layers costs only L rows)."""
    if head is None:
        return a.fused_heads("mean")[:, query, :].astype(np.float32)
    if not -a.heads <= head < a.heads:
        raise ValueError(f"Head {head} does not exist! Expected 0 <= head < {a.heads}, or the mean of heads.")
    return a.attention[:, head, query, :].astype(np.float32)


def _layer_columns(a: Analysis, head: int | None, key: int, keep: np.ndarray) -> np.ndarray:
    """How much every kept query attends to token ``key``, every layer (L, T) float32, each query row
    renormalised over the kept keys (its mass on the dropped keys removed; rows sum to 1 before)."""
    source = a.fused_heads("mean") if head is None else a.attention[:, head]
    columns = source[:, :, key].astype(np.float32)                               # (L, T)
    T = columns.shape[1]
    if keep.size == T:
        return columns
    dropped = np.setdiff1d(np.arange(T), keep)
    kept_mass = 1.0 - source[:, :, dropped].astype(np.float32).sum(axis=-1)      # (L, T)
    out = np.zeros_like(columns)
    out[:, keep] = columns[:, keep] / np.maximum(kept_mass[:, keep], 1e-12)
    return out


def rollout_map_panel(a: Analysis, fusion: str = "mean", discard_ratio: float = 0.0, start_layer: int = 0,
                      mask_artifacts: bool = False, norm_ratio: float = 3.0,
                      display: Display = Display()) -> MapPanel:
    """The query's rollout (CLS, MAP probe or mean of patches) on the photo at display size, in multiples of
    uniform attention, with the artifact note."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    tokens = uniform_tokens(a, drop)
    values = rollout_of(a, fusion, discard_ratio, start_layer, mask_artifacts, norm_ratio) * tokens
    vmin, vmax = _range(values, drop)
    image = _draw_map(display_photo(a, display.size), values, vmin, vmax, rollout_caption(a, display.lang), tokens,
                      display)
    return MapPanel(image, values, vmin, vmax, tokens, _artifact_note(a, values, mask_artifacts, norm_ratio,
                                                                        display.lang))


def attention_layers(a: Analysis, head: int | None = None, mask_artifacts: bool = False,
                     norm_ratio: float = 3.0) -> np.ndarray:
    """The query's attention over the patches in every layer (L, gh, gw), in multiples of uniform attention
    (the CLS row, or the mean of the patch rows for models without a CLS token), the artifact tokens dropped
    (and the rows renormalised) when masking: what ``attention_map_panel`` draws for one layer."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    if head is not None and not -a.heads <= head < a.heads:
        raise ValueError(f"Head {head} does not exist! Expected 0 <= head < {a.heads}, or the mean of heads.")
    source = a.fused_heads("mean") if head is None else a.attention[:, head]          # (L, T, T)
    rows = readout.readout_rows(source, a.num_prefix, a.grid, a.readout, drop)
    return rows[:, a.num_prefix:].reshape(a.depth, *a.grid) * uniform_tokens(a, drop)


def attention_map_panel(a: Analysis, layer: int = -1, head: int | None = None, mask_artifacts: bool = False,
                        outline_share: float | None = None, shared_scale: bool = False, norm_ratio: float = 3.0,
                        display: Display = Display()) -> MapPanel:
    """The query's attention of one layer (one head or their mean) at display size, in multiples of uniform
    attention: the CLS row, the mean of the patch rows (mean-pooled models), or the MAP probe's attention
    (SigLIP: it reads once, after the last layer, so ``layer`` does not apply). ``outline_share``: DINO's
    threshold mask (e.g. 0.6) outlined; ``shared_scale``: one colour scale for every layer (the min and max
    over all layers), so layers can be compared colour for colour."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    if a.readout == "map":
        layers = (attention_of(a, layer, head, drop) * uniform_tokens(a, drop))[None]
        values = layers[0]
    else:
        layers = attention_layers(a, head, mask_artifacts, norm_ratio)
        values = layers[layer_index(layer, a.depth)]
    if shared_scale:
        kept = layers if drop is None or drop.all() else layers[:, ~drop]
        vmin, vmax = float(kept.min()), float(kept.max())
    else:
        vmin, vmax = _range(values, drop)
    outline = attention.threshold_mask(values, outline_share) if outline_share else None
    tokens = uniform_tokens(a, drop)
    image = _draw_map(display_photo(a, display.size), values, vmin, vmax,
                      attention_caption(a, layer, head, display.lang), tokens, display, outline)
    return MapPanel(image, values, vmin, vmax, tokens, _artifact_note(a, values, mask_artifacts, norm_ratio,
                                                                        display.lang))


def query_map_panels(a: Analysis, row: int, col: int, layer: int = -1, head: int | None = None,
                     rolled: bool = False, fusion: str = "mean", discard_ratio: float = 0.0, start_layer: int = 0,
                     mask_artifacts: bool = False, shared_scale: bool = False, norm_ratio: float = 3.0,
                     display: Display = Display()) -> tuple[MapPanel, MapPanel]:
    """(where patch (row, col) attends, which patches attend to it) at display size, in multiples of uniform
    attention, the patch framed. ``shared_scale`` (one layer only): each map's range over all layers.
    Querying a masked artifact patch raises ValueError (its text is ``t("note.query_masked", ...)``)."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    tokens = uniform_tokens(a, drop)
    q = patch_token(row, col, a.num_prefix, a.grid)
    if drop is not None and drop[row % a.grid[0], col % a.grid[1]]:
        raise ValueError(t("note.query_masked", "en", row=row % a.grid[0], col=col % a.grid[1]))
    out_map, in_map = query_maps(a, row, col, layer, head, rolled, fusion, discard_ratio, start_layer, drop)
    ranges = [_range(out_map * tokens, drop), _range(in_map * tokens, drop)]
    if shared_scale and not rolled:
        keep = kept_tokens(a.num_prefix, a.grid, drop)
        rows = _layer_rows(a, head, q)
        if drop is not None:
            rows = attention.without_tokens(rows, keep)
        for i, every in enumerate((rows, _layer_columns(a, head, q, keep))):
            patches = every[:, a.num_prefix:].reshape(a.depth, *a.grid) * tokens
            kept = patches if drop is None or drop.all() else patches[:, ~drop]
            ranges[i] = (float(kept.min()), float(kept.max()))
    where = t("name.rollout", display.lang) if rolled else where_name(a, layer, head, display.lang)
    base = display_photo(a, display.size)
    panels = []
    for values, (vmin, vmax), kind in ((out_map * tokens, ranges[0], "colorbar.attends_to"),
                                       (in_map * tokens, ranges[1], "colorbar.attended_by")):
        image = _draw_map(base, values, vmin, vmax, t(kind, display.lang, where=where), tokens, display)
        framed = render.mark_patch(image.crop((0, 0, *base.size)), row % a.grid[0], col % a.grid[1], a.grid,
                                   width=max(2, round(base.width / 150)))
        image.paste(framed, (0, 0))
        panels.append(MapPanel(image, values, vmin, vmax, tokens,
                               _artifact_note(a, values, mask_artifacts, norm_ratio, display.lang)))
    return panels[0], panels[1]


# --- the heads grid -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class HeadStats:
    """Numbers per (layer, head) for hover and click: how far and how spread out each head attends."""
    mean_distance: np.ndarray        # (L, H) mean attention distance in pixels (ViT paper, Figure 7)
    entropy_bits: np.ndarray         # (L, H) entropy of the CLS attention row, in bits
    max_bits: float                  # log2(T): the entropy of uniform attention over the T (kept) tokens

    @property
    def entropy_share(self) -> np.ndarray:
        """(L, H) entropy as a share of its maximum: 1 = uniform, near 0 = one token takes everything."""
        return self.entropy_bits / self.max_bits if self.max_bits > 0 else np.zeros_like(self.entropy_bits)


def head_stats(a: Analysis, mask_artifacts: bool = False, norm_ratio: float = 3.0) -> HeadStats:
    """Mean attention distance (L, H) and the entropy of every head's query row (the CLS row, or the mean of
    the patch rows for models without a CLS token; over all tokens, or over the kept ones, renormalised, when
    masking)."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    rows = np.stack([readout.readout_rows(a.attention[:, h], a.num_prefix, a.grid, a.readout, drop)
                     for h in range(a.heads)], axis=1).astype(np.float64)          # (L, H, T)
    logs = np.log2(np.where(rows > 0, rows, 1.0))
    entropy = -(rows * logs).sum(axis=-1)
    return HeadStats(mean_distance_of(a), entropy.astype(np.float32), float(np.log2(uniform_tokens(a, drop))))


@dataclass(frozen=True)
class HeadsGrid:
    """The layers × heads grid as drawn, and how to read it back."""
    image: Image.Image
    layout: GridLayout               # the thumbnails' geometry (grid rows and columns, see ``layers_across``)
    layers_across: bool              # True: layers are the columns and heads the rows; False: the other way
    stats: HeadStats
    vmin: float                      # the one colour scale of every thumbnail, in multiples of uniform attention
    vmax: float
    tokens: int
    note: str | None = None
    lang: str = "en"

    def head_at(self, x: float, y: float) -> tuple[int, int] | None:
        """Pixel (x, y) of ``image`` -> (layer, head) of the thumbnail under it, or None (labels, bar, outside)."""
        cell = self.layout.cell_at(x, y)
        if cell is None:
            return None
        return (cell[1], cell[0]) if self.layers_across else cell

    def box(self, layer: int, head: int) -> tuple[int, int, int, int]:
        """Pixel box (x0, y0, x1, y1) of the thumbnail of (layer, head), e.g. to place a tooltip."""
        return self.layout.box(head, layer) if self.layers_across else self.layout.box(layer, head)

    def info(self, layer: int, head: int, lang: str | None = None) -> str:
        """One line on a head for hover or click, e.g. "layer 3, head 1: mean attention distance 52 pixels,
        entropy 5.10 bits (67% of the maximum 7.62)"."""
        s = self.stats
        return t("note.head_info", lang or self.lang, layer=layer, head=head,
                 distance=float(s.mean_distance[layer, head]), entropy=float(s.entropy_bits[layer, head]),
                 share=float(s.entropy_share[layer, head]), maximum=s.max_bits)


def heads_grid_panel(a: Analysis, width: int = 1024, mask_artifacts: bool = False, norm_ratio: float = 3.0,
                     selected: tuple[int, int] | None = None, display: Display = Display(),
                     max_cell: int = 160) -> HeadsGrid:
    """Every layer's and head's CLS attention as thumbnails over the photo, filling ``width`` pixels (colour
    bar included), all on one colour scale in multiples of uniform attention with one shared colour bar.

    The longer of (layers, heads) runs across, so a 12×3 ViT-Ti fills the width as well as a 12×12 ViT-B;
    thumbnails are at most ``max_cell`` pixels high. ``selected`` (layer, head) is framed. ``display``: the
    language, colours, opacity and patch-true drawing (its ``size`` is not used: ``width`` is)."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    tokens = uniform_tokens(a, drop)
    maps = readout.readout_all_heads_maps(a.attention, a.num_prefix, a.grid, a.readout,
                                          drop_patches=drop) * tokens                 # (L, H, gh, gw)
    kept = maps if drop is None or drop.all() else maps[:, :, ~drop]
    vmin, vmax = float(kept.min()), float(kept.max())
    layers_across = a.depth >= a.heads
    if layers_across:
        maps = maps.transpose(1, 0, 2, 3)                                     # (H, L, gh, gw): heads are rows
        if selected is not None:
            selected = (selected[1], selected[0])
    rows, cols = maps.shape[:2]
    lang = display.lang
    font_size = 12
    row_names = [t("name.head", lang, head=h) for h in range(rows)] if layers_across else \
        [t("name.layer", lang, layer=l) for l in range(rows)]
    col_names = [str(i) for i in range(cols)]
    f = render.font(font_size, lang)
    left = int(max(f.getlength(n) for n in row_names)) + 6
    bar = _colorbar_width(vmin, vmax, t("colorbar.uniform", lang, tokens=tokens), lang, font_size)
    gap = 2
    gh, gw = a.grid
    cell_w = max(8, (width - left - bar - gap * (cols - 1)) // cols)
    cell_h = min(max_cell, max(8, round(cell_w * gh / gw)))
    image, layout = thumbnail_grid(maps, cell=cell_h, cmap=display.cmap, row_labels=row_names,
                                   col_labels=col_names, background=a.image, alpha=display.alpha,
                                   selected=selected, gap=gap, lang=lang, value_range=(vmin, vmax),
                                   smooth=not display.patch_true, font_size=font_size)
    # name what the columns count: "layer" (or "head") over the column numbers
    axis = t("axis.layer" if layers_across else "axis.head", lang)
    header = Image.new("RGB", (image.width, font_size + 6), "white")
    ImageDraw.Draw(header).text((left + (image.width - left) // 2, font_size // 2 + 3), axis, fill="black",
                                font=f, anchor="mm")
    stacked = Image.new("RGB", (image.width, image.height + header.height), "white")
    stacked.paste(header, (0, 0))
    stacked.paste(image, (0, header.height))
    layout = GridLayout(layout.rows, layout.cols, layout.cell, layout.gap, layout.left, layout.top + header.height)
    if display.colorbar:
        stacked = render.add_colorbar(stacked, display.cmap, vmin, vmax, t("colorbar.uniform", lang, tokens=tokens),
                                      lang=lang, ticks=_uniform_ticks(vmin, vmax), font_size=font_size)
    note = t("note.artifacts_masked", lang, count=int(drop.sum())) if drop is not None and drop.any() else None
    if note is None and not mask_artifacts:
        flagged = artifact_drop(a, True, norm_ratio)
        last = maps[:, -1] if layers_across else maps[-1]                   # the last layer's heads
        if any(norms.artifacts_dominate(m, flagged) for m in last):
            share = norms.artifact_share(last.mean(axis=0), flagged)
            note = t("note.artifacts_dominate", lang, share=share.share, count=share.count)
    return HeadsGrid(stacked, layout, layers_across, head_stats(a, mask_artifacts, norm_ratio), vmin, vmax, tokens,
                     note, lang)


def _colorbar_width(vmin: float, vmax: float, label: str, lang: str, font_size: int, bar_width: int = 14) -> int:
    """Pixels ``render.add_colorbar`` adds on the right for these ticks and label."""
    f = render.font(font_size, lang)
    text_w = max(int(f.getlength(render.tick_text(v))) for v in _uniform_ticks(vmin, vmax))
    return 6 + bar_width + 4 + text_w + int(f.size * 1.3) * len(label.split("\n")) + 6


# --- the crop the model saw ---------------------------------------------------------------------------------

def crop_panel(original: Image.Image, preprocess, size: int | None = None, lang: str = "en",
               color: tuple[int, int, int] = (0, 255, 255)) -> tuple[Image.Image, str | None]:
    """The uploaded photo (upright, longer side ``size`` pixels) with the crop the model saw outlined and the
    rest dimmed -> (picture, note). The note (in ``lang``) says when a small photo was enlarged before the crop
    (its shorter side below ``preprocess.resize``), else it is None.

    ``preprocess``: a ``vit.Preprocess`` (anything with ``crop_box((w, h))``, ``resize`` and ``crop``)."""
    upright = ImageOps.exif_transpose(original).convert("RGB")
    w, h = upright.size
    left, top, right, bottom = preprocess.crop_box((w, h))
    scale = 1.0 if size is None else size / max(w, h)
    shown = upright if scale == 1.0 else upright.resize((max(1, round(w * scale)), max(1, round(h * scale))),
                                                        Image.Resampling.BICUBIC)
    pixels = np.asarray(shown).astype(np.float32)
    box = [round(v * scale) for v in (left, top, right, bottom)]
    inside = np.zeros(pixels.shape[:2], dtype=bool)
    inside[max(box[1], 0):box[3], max(box[0], 0):box[2]] = True
    pixels[~inside] *= 0.45                                            # what the model never sees, dimmed
    picture = Image.fromarray((pixels + 0.5).astype(np.uint8))
    line = max(2, round(max(picture.size) / 200))
    ImageDraw.Draw(picture).rectangle((box[0], box[1], box[2] - 1, box[3] - 1), outline=color, width=line)
    crop_h, crop_w = preprocess.crop
    factor = preprocess.resize / min(w, h)
    note = None
    if factor > 1.0:
        note = t("note.enlarged", lang, width=w, height=h, factor=factor, crop=f"{crop_w}×{crop_h}")
    return picture, note
