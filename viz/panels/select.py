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
    """"layer 11, mean of heads" / "layer 3, head 1" in ``lang`` (the caption of a one-layer map); a model of several
    stages names the layer's stage too: "layer 4 (stage 2), head 1"."""
    layer = layer_index(layer, a.depth)
    block = a.architecture.blocks[layer]
    staged = len(a.architecture.stages) > 1
    if head is None:
        return t("name.layer_stage_mean" if staged else "name.layer_mean", lang, layer=layer, stage=block.stage)
    return t("name.layer_stage_head" if staged else "name.layer_head", lang, layer=layer, stage=block.stage,
             head=head % block.heads)


def artifact_flags(a: Analysis, norm_ratio: float = 3.0) -> np.ndarray:
    """High-norm patches per block -> bool (L, gh, gw) (see ``viz.maps.norms``). The artifact tokens of Darcet et al.
    are tokens of one sequence that every other token attends to: a model whose blocks change grid or attend inside
    windows has none flagged."""
    if not a.architecture.one_sequence:
        return np.zeros((a.depth, *a.grid), dtype=bool)
    return norms.flag_high_norm(np.asarray(a.token_norms), a.num_prefix, a.grid, norm_ratio)


def artifact_drop(a: Analysis, mask_artifacts: bool, norm_ratio: float = 3.0) -> np.ndarray | None:
    """The patches to drop before rollout: flagged high-norm in any block (gh, gw), or None when not masking (or for
    a model whose tokens cannot be dropped from one sequence: ``Architecture.one_sequence``)."""
    if not (mask_artifacts and a.architecture.one_sequence):
        return None
    return norms.artifact_mask(artifact_flags(a, norm_ratio))


def token_norm_maps_of(a: Analysis) -> np.ndarray:
    """Every block's patch-token norms on the photo's patch grid -> (L, gh, gw) float32: a token of a coarser block
    (after a merge) repeated over the patches it covers."""
    gh, gw = a.grid
    maps = []
    for block, n in zip(a.architecture.blocks, a.token_norms):
        m = norms.token_norm_maps(np.asarray(n)[None], block.prefix, block.grid)[0]
        maps.append(np.repeat(np.repeat(m, gh // block.grid[0], axis=0), gw // block.grid[1], axis=1))
    return np.stack(maps)


def _kept(a: Analysis, drop: np.ndarray | None) -> np.ndarray | None:
    return None if drop is None else kept_tokens(a.num_prefix, a.grid, drop)


def check_head_of(a: Analysis, layer: int, head: int | None) -> None:
    """ValueError unless ``head`` is None or a head of block ``layer``."""
    if head is not None:
        check_head(head, a.architecture.block(layer).heads)


def layer_readout_rows(a: Analysis, layer: int, drop: np.ndarray | None = None) -> np.ndarray:
    """Every head's query row of one layer (``viz.maps.readout.heads_query``: the CLS row, the mean of the patch
    rows, …) -> (H_l, T_l) float32, renormalised over the kept tokens when ``drop`` (gh, gw) is given (the mean of the
    patch rows then reads only the kept patches)."""
    keep = _kept(a, drop)
    query = readout.heads_query(a.readout)
    if keep is not None and query != "cls":
        return np.stack([query_row_of(a.maps, layer, h, query, keep) for h in range(a.architecture.block(layer).heads)])
    rows = a.maps.readout_rows(layer)
    return rows if keep is None else without_tokens(rows, keep)


def readout_rows_of(a: Analysis, head: int | None = None, drop: np.ndarray | None = None) -> np.ndarray:
    """Every layer's query row (``viz.maps.readout.heads_query``: the CLS row, the mean of the patch rows, …) of one
    head or the mean of heads -> (L, T) float32 (a model whose blocks all hold the same tokens), renormalised over
    the kept tokens when ``drop`` (gh, gw) is given (the mean of the patch rows then reads only the kept patches)."""
    if head is not None:
        check_head(head, a.heads)
    keep = _kept(a, drop)
    query = readout.heads_query(a.readout)
    if keep is not None and query != "cls":
        return np.stack([query_row_of(a.maps, layer, head, query, keep) for layer in range(a.depth)])
    rows = np.stack([a.maps.readout_rows(layer) for layer in range(a.depth)])          # (L, H, T)
    rows = rows.mean(axis=1) if head is None else rows[:, head]
    return rows if keep is None else without_tokens(rows, keep)


def readout_rows_all(a: Analysis, drop: np.ndarray | None = None) -> np.ndarray:
    """Every layer's and head's query row -> (L, H, T) float32, as ``readout_rows_of`` for each head."""
    return np.stack([layer_readout_rows(a, layer, drop) for layer in range(a.depth)])


def rollout_of(a: Analysis, fusion: str = "mean", discard_ratio: float = 0.0, start_layer: int = 0,
               mask_artifacts: bool = False, norm_ratio: float = 3.0, stop_layer: int | None = None) -> np.ndarray:
    """Rollout of the analysis' query (CLS, MAP probe, mean of patches, …) over the photo's patches (gh, gw),
    optionally without the high-norm tokens (they read 0): ``viz.maps.readout.readout_rollout_map``, one layer's
    step at a time, down through every merge of a model with stages (``viz.maps.source.rollout_rows``).
    ``stop_layer``: roll out the layers up to this one only (inclusive; default: all)."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    readout.check_readout(a.readout, a.probe_attention, a.num_prefix, a.grid)
    top = a.architecture.block(a.depth - 1 if stop_layer is None else stop_layer)
    keep = kept_tokens(top.prefix, top.grid, drop)
    if a.readout == "cls":
        weights, protect = np.zeros(keep.size, dtype=np.float32), (0,)
        weights[0] = 1.0
    else:
        p = readout.fuse_probe(a.probe_attention, fusion)[keep] if a.readout in ("map", "map_all") else None
        weights = readout.readout_weights(keep.size, top.prefix, a.readout,
                                          None if p is None else p / max(p.sum(), 1e-12))
        protect = readout.protected(weights, top.prefix, a.readout)
    out = np.zeros(a.num_prefix + a.grid[0] * a.grid[1], dtype=np.float32)
    rows = rollout_rows(a.maps, weights, fusion, discard_ratio, start_layer, None if drop is None else keep, protect,
                        stop_layer)
    out[keep if drop is not None else slice(None)] = rows
    return to_grid(out, a.num_prefix, a.grid)


def attention_of(a: Analysis, layer: int = -1, head: int | None = None,
                 drop: np.ndarray | None = None) -> np.ndarray:
    """The analysis' query's attention over the patches in one layer (gh_l, gw_l), on that layer's grid; the MAP
    probe's after the last. ``drop`` (gh, gw) bool: tokens removed as keys (and as queries of the mean), rows
    renormalised."""
    readout.check_readout(a.readout, a.probe_attention, a.num_prefix, a.grid)
    if a.readout not in ("map", "map_all"):
        layer = layer_index(layer, a.depth)
        block = a.architecture.blocks[layer]
        check_head_of(a, layer, head)
        keep = _kept(a, drop)
        if keep is not None and a.readout != "cls":
            return to_grid(query_row_of(a.maps, layer, head, a.readout, keep), block.prefix, block.grid)
        rows = a.maps.readout_rows(layer)                                            # (H, T)
        row = rows.mean(axis=0) if head is None else rows[head]
        return to_grid(row if keep is None else without_tokens(row, keep), block.prefix, block.grid)
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
    """(where patch (row, col) attends, who attends to it): one layer, each (gh_l, gw_l) on that layer's grid, read
    for the layer's token that covers the patch (``Architecture.token_of``); or rolled out (gh, gw) through every
    layer, for a model whose blocks hold one sequence of tokens. ``drop`` (gh, gw) bool: patches left out
    (``artifact_drop``). ``viz.maps.attention.patch_query_maps`` and ``rollout_query_maps`` from the rows and
    columns they read."""
    gh, gw = a.grid
    if not (-gh <= row < gh and -gw <= col < gw):
        patch_token(row, col, a.num_prefix, a.grid)                                 # says which patches exist
    row, col = row % gh, col % gw
    q = patch_token(row, col, a.num_prefix, a.grid)
    keep = kept_tokens(a.num_prefix, a.grid, drop)
    if not np.isin(q, keep):
        raise ValueError(f"Patch ({row}, {col}) is masked out (it is one of the dropped tokens), so it has no "
                         f"attention map! Expected a token that is kept; unmask the tokens to see it.")
    if not rolled:
        layer = layer_index(layer, a.depth)
        block = a.architecture.blocks[layer]
        check_head_of(a, layer, head)
        token = patch_token(*a.architecture.token_of(row, col, layer), block.prefix, block.grid)
        kept = None if drop is None else keep
        out_row = kept_rows(a.maps, layer, head, [token], kept)[0]
        in_col = kept_column(a.maps, layer, head, token, kept)
        return to_grid(out_row, block.prefix, block.grid), to_grid(in_col, block.prefix, block.grid)
    if not a.architecture.one_sequence:
        raise ValueError("A patch's rolled-out row needs one sequence of tokens through every layer; this model's "
                         "blocks change grid or attend inside windows, so a patch has no own row after its first "
                         "merge (the image-level rollout is defined).")
    T = a.num_prefix + gh * gw
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


def window_note(a: Analysis, layer: int, lang: str = "en") -> str | None:
    """What a layer with windows, or on a stage's coarser grid, attends over; None for a layer of global attention on
    the photo's grid."""
    block = a.architecture.block(layer)
    if block.window is None and block.grid == a.grid:
        return None
    if block.window is None:
        return t("note.layer_grid", lang, stage=block.stage, grid=f"{block.grid[0]}×{block.grid[1]}",
                 pixels=block.token_size)
    return t("note.layer_windows", lang, stage=block.stage, grid=f"{block.grid[0]}×{block.grid[1]}",
             window=f"{block.window[0]}×{block.window[1]}", shift=block.shift[0], pixels=block.token_size)
