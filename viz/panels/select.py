"""Which map an analysis gives for the chosen options, and its caption: the values (numpy arrays over the patch
grid) that both the page's panels (``display``, ``heads``) and the CLI's (``files``) draw. Layer, head and patch
indices are 0-based (negative counts from the end); ``head=None`` is the mean of heads; ``mask_artifacts`` /
``drop`` leave out the high-norm artifact tokens (``viz.maps.norms``).

The image-level maps (rollout, attention, heads, threshold mask) read the analysis' own query, ``a.readout``
(see ``viz.maps.readout``): the CLS token, SigLIP's MAP probe or the mean of the patches; every caption names it
("CLS", "MAP probe", "mean of patches").
"""
from __future__ import annotations

import numpy as np

from ..i18n import t
from ..maps import attention, distance, embeddings, norms, readout
from ..maps.layout import layer_index
from ..records import Analysis, ModelArrays


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
               mask_artifacts: bool = False, norm_ratio: float = 3.0, through: int | None = None) -> np.ndarray:
    """Rollout of the analysis' query (CLS, MAP probe or mean of patches) over the patches (gh, gw), optionally
    without the high-norm tokens (they read 0); ``through``: of the layers up to that one only (an animation's
    frame; the probe still reads as after the last layer)."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    fused = a.fused_heads(fusion)
    if through is not None:
        fused = fused[:layer_index(through, a.depth) + 1]
    return readout.readout_rollout_map(fused, a.num_prefix, a.grid, a.readout, a.probe_attention,
                                       fusion, discard_ratio, start_layer, drop)


def attention_of(a: Analysis, layer: int = -1, head: int | None = None,
                 drop: np.ndarray | None = None) -> np.ndarray:
    """The analysis' query's attention over the patches in one layer (gh, gw); the MAP probe's after the last.
    ``drop`` (gh, gw) bool: tokens removed as keys (and as queries of the mean), rows renormalised."""
    return readout.readout_attention_map(a.attention, a.num_prefix, a.grid, a.readout, a.probe_attention, layer,
                                         head, drop_patches=drop)


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


def mean_distance_of(a: Analysis, renormalise: bool = False) -> np.ndarray:
    """Mean attention distance in pixels (L, H) (cached by ``analyze``)."""
    if renormalise in a.mean_distance:
        return a.mean_distance[renormalise]
    return distance.mean_attention_distance(a.attention, a.num_prefix, a.grid, a.patch_size, renormalise)


def position_similarity_of(m: ModelArrays) -> np.ndarray | None:
    """Cosine similarity of the position embeddings on the checkpoint's native grid (N, N); None without them."""
    return embeddings.position_similarity(m.pos_embed, m.native_grid) if m.pos_embed is not None else None


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
