"""Which map an analysis gives for the chosen options, and its caption: the values (numpy arrays over the patch
grid) that both the page's panels (``display``, ``heads``) and the CLI's (``files``) draw. Layer, head and patch
indices are 0-based (negative counts from the end); ``head=None`` is the mean of heads; ``mask_artifacts`` /
``drop`` leave out the high-norm artifact tokens (``viz.maps.norms``).

The image-level maps (rollout, attention, heads, threshold mask) read the analysis' own query, ``a.readout``
(see ``viz.maps.readout``): the CLS token, SigLIP's MAP probe or the mean of the patches; every caption names it
("CLS", "MAP probe", "mean of patches").

Every value comes from the analysis' attention source (``a.maps``, ``viz.maps.source``): the rows, columns and
head-fused matrices a view needs, one layer at a time, whether the whole array was kept or each layer is recomputed
on demand; the definitions in ``viz.maps`` applied to the whole array give the same numbers.
"""
from __future__ import annotations

import numpy as np

from ..i18n import t
from ..maps import distance, embeddings, norms, readout
from ..maps.attention import without_tokens
from ..maps.layout import layer_index, patch_token, to_grid
from ..maps.rollout import kept_tokens
from ..maps.source import check_head, kept_column, kept_rows, query_row_of, rollout_columns, rollout_rows
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


def _kept(a: Analysis, drop: np.ndarray | None) -> np.ndarray | None:
    return None if drop is None else kept_tokens(a.num_prefix, a.grid, drop)


def readout_rows_of(a: Analysis, head: int | None = None, drop: np.ndarray | None = None) -> np.ndarray:
    """Every layer's query row (``viz.maps.readout.heads_query``: the CLS row, the mean of the patch rows, …) of one
    head or the mean of heads -> (L, T) float32, renormalised over the kept tokens when ``drop`` (gh, gw) is given
    (the mean of the patch rows then reads only the kept patches)."""
    if head is not None:
        check_head(head, a.heads)
    keep = _kept(a, drop)
    query = readout.heads_query(a.readout)
    if keep is not None and query != "cls":
        return np.stack([query_row_of(a.maps, layer, head, query, keep) for layer in range(a.depth)])
    rows = a.maps.readout_rows()                                                    # (L, H, T)
    rows = rows.mean(axis=1) if head is None else rows[:, head]
    return rows if keep is None else without_tokens(rows, keep)


def readout_rows_all(a: Analysis, drop: np.ndarray | None = None) -> np.ndarray:
    """Every layer's and head's query row -> (L, H, T) float32, as ``readout_rows_of`` for each head."""
    keep = _kept(a, drop)
    if keep is not None and readout.heads_query(a.readout) != "cls":
        return np.stack([readout_rows_of(a, h, drop) for h in range(a.heads)], axis=1)
    rows = a.maps.readout_rows()
    return rows if keep is None else without_tokens(rows, keep)


def rollout_of(a: Analysis, fusion: str = "mean", discard_ratio: float = 0.0, start_layer: int = 0,
               mask_artifacts: bool = False, norm_ratio: float = 3.0, stop_layer: int | None = None) -> np.ndarray:
    """Rollout of the analysis' query (CLS, MAP probe, mean of patches, …) over the patches (gh, gw), optionally
    without the high-norm tokens (they read 0): ``viz.maps.readout.readout_rollout_map``, one layer's head-fused
    matrix at a time. ``stop_layer``: roll out the layers up to this one only (inclusive; default: all)."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    readout.check_readout(a.readout, a.probe_attention, a.num_prefix, a.grid)
    keep = kept_tokens(a.num_prefix, a.grid, drop)
    if a.readout == "cls":
        weights, protect = np.zeros(keep.size, dtype=np.float32), (0,)
        weights[0] = 1.0
    else:
        p = readout.fuse_probe(a.probe_attention, fusion)[keep] if a.readout in ("map", "map_all") else None
        weights = readout.readout_weights(keep.size, a.num_prefix, a.readout,
                                          None if p is None else p / max(p.sum(), 1e-12))
        protect = readout.protected(weights, a.num_prefix, a.readout)
    T = a.num_prefix + a.grid[0] * a.grid[1]
    out = np.zeros(T, dtype=np.float32)
    out[keep] = rollout_rows(a.maps, weights, fusion, discard_ratio, start_layer, keep, protect, stop_layer)
    return to_grid(out, a.num_prefix, a.grid)


def attention_of(a: Analysis, layer: int = -1, head: int | None = None,
                 drop: np.ndarray | None = None) -> np.ndarray:
    """The analysis' query's attention over the patches in one layer (gh, gw); the MAP probe's after the last.
    ``drop`` (gh, gw) bool: tokens removed as keys (and as queries of the mean), rows renormalised."""
    readout.check_readout(a.readout, a.probe_attention, a.num_prefix, a.grid)
    if a.readout not in ("map", "map_all"):
        layer = layer_index(layer, a.depth)
        if head is not None:
            check_head(head, a.heads)
        keep = _kept(a, drop)
        if keep is not None and a.readout != "cls":
            return to_grid(query_row_of(a.maps, layer, head, a.readout, keep), a.num_prefix, a.grid)
        rows = a.maps.readout_rows()[layer]                                          # (H, T)
        row = rows.mean(axis=0) if head is None else rows[head]
        return to_grid(row if keep is None else without_tokens(row, keep), a.num_prefix, a.grid)
    probe = np.asarray(a.probe_attention, dtype=np.float32)
    if head is not None:
        check_head(head, probe.shape[0])
    row = probe.mean(axis=0) if head is None else probe[head]
    return to_grid(row if drop is None else without_tokens(row, _kept(a, drop)), a.num_prefix, a.grid)


def default_query(a: Analysis) -> tuple[int, int]:
    """The patch in the centre of the grid."""
    return a.grid[0] // 2, a.grid[1] // 2


def query_maps(a: Analysis, row: int, col: int, layer: int = -1, head: int | None = None, rolled: bool = False,
               fusion: str = "mean", discard_ratio: float = 0.0, start_layer: int = 0,
               drop: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(where patch (row, col) attends, who attends to it), each (gh, gw): one layer, or rolled out; ``drop``
    (gh, gw) bool: patches left out (``artifact_drop``). ``viz.maps.attention.patch_query_maps`` and
    ``rollout_query_maps`` from the rows and columns they read."""
    q = patch_token(row, col, a.num_prefix, a.grid)
    keep = kept_tokens(a.num_prefix, a.grid, drop)
    if not np.isin(q, keep):
        raise ValueError(f"Patch ({row}, {col}) is masked out (it is one of the dropped tokens), so it has no "
                         f"attention map! Expected a token that is kept; unmask the tokens to see it.")
    T = a.num_prefix + a.grid[0] * a.grid[1]
    if not rolled:
        if head is not None:
            check_head(head, a.heads)
        kept = None if drop is None else keep
        out_row = kept_rows(a.maps, layer, head, [q], kept)[0]
        in_col = kept_column(a.maps, layer, head, q, kept)
        return to_grid(out_row, a.num_prefix, a.grid), to_grid(in_col, a.num_prefix, a.grid)
    where = int(np.flatnonzero(keep == q)[0])
    one_hot = np.zeros(keep.size, dtype=np.float32)
    one_hot[where] = 1.0
    out_row, in_col = np.zeros(T, dtype=np.float32), np.zeros(T, dtype=np.float32)
    out_row[keep] = rollout_rows(a.maps, one_hot, fusion, discard_ratio, start_layer, keep, (where,))     # R[q]
    in_col[keep] = rollout_columns(a.maps, one_hot, fusion, discard_ratio, start_layer, keep, (where,))  # R[:, q]
    return to_grid(out_row, a.num_prefix, a.grid), to_grid(in_col, a.num_prefix, a.grid)


def mean_distance_of(a: Analysis, renormalise: bool = False) -> np.ndarray:
    """Mean attention distance in pixels (L, H): kept by ``analyze``; else computed once from the attention source
    (by its own ``mean_distance`` where it has one, layer by layer and head by head otherwise) and kept with the
    analysis."""
    if renormalise in a.mean_distance:
        return a.mean_distance[renormalise]
    own = getattr(a.maps, "mean_distance", None)
    if own is not None:
        a.mean_distance[renormalise] = own(a.patch_size, renormalise)
        return a.mean_distance[renormalise]
    T = a.num_prefix + a.grid[0] * a.grid[1]
    every = np.arange(T)
    return np.array([[distance.mean_attention_distance(a.maps.rows(layer, h, every)[None, None], a.num_prefix, a.grid,
                                                       a.patch_size, renormalise)[0, 0]
                      for h in range(a.heads)] for layer in range(a.depth)], dtype=np.float32)


def position_similarity_of(m: ModelArrays) -> np.ndarray | None:
    """Cosine similarity of the position embeddings on the checkpoint's native grid (N, N); None without them (a
    rotary model's counterpart is ``ModelArrays.rotary_kernel``)."""
    return embeddings.position_similarity(m.pos_embed, m.native_grid) if m.pos_embed is not None else None


def query_label(readout_kind: str, lang: str = "en") -> str:
    """The query's name in ``lang``: "CLS", "MAP probe" or "mean of patches"."""
    return t(f"query.{readout_kind}", lang)


def rollout_caption(a: Analysis, lang: str = "en") -> str:
    """E.g. "CLS rollout", "MAP probe rollout", "mean of patches rollout"."""
    return t("caption.rollout", lang, query=query_label(a.readout, lang))


def attention_caption(a: Analysis, layer: int = -1, head: int | None = None, lang: str = "en") -> str:
    """E.g. "CLS, layer 11, mean of heads"; the MAP probe reads after the last layer, whatever ``layer``."""
    if a.readout in ("map", "map_all"):
        return t("caption.probe", lang, layer=a.depth - 1,
                 heads=t("name.mean_heads", lang) if head is None else t("name.head", lang, head=head % a.heads))
    return t("caption.attention", lang, query=query_label(a.readout, lang), where=where_name(a, layer, head, lang))


def heads_caption(a: Analysis, lang: str = "en") -> str:
    """What the heads grid shows: the CLS row, or the mean of the patch rows (the probe is not in the layers)."""
    return t("caption.heads", lang, query=query_label(readout.heads_query(a.readout), lang))
