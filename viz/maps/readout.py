"""Which query an image-level map reads: the readout of the model (``vit.readout``), the tokens its answer comes from.

The classic maps (attention of one layer, the heads grid, rollout, the threshold mask) show one query row of
the attention: whose view of the image is it? Each readout gives it as weights over the tokens
(``vit.readout.token_weights``), and every function here takes the readout explicitly:

- ``"cls"``: the CLS token's row (ViT, DeiT, CLIP, EVA-02 …): ``A[0, :]``.
- ``"mean"`` / ``"mean_all"``: mean-pooled models (BEiT, avg-pooled ViTs, DINOv3 in timm) classify from the mean of
  the patch tokens (of every token), so the query is the mean of those rows, ``(1/N) Σ_i A[i, :]`` (and
  ``(1/N) Σ_i R[i, :]`` in rollout): how much each token flows into the pooled vector.
- ``"cls_mean"`` (DINOv2's classifiers read the CLS token beside the mean of the patches) and ``"distilled"`` (DeiT
  averages the heads of the CLS and DIST tokens): half of each, ``½ A[0, :] + ½ (1/N) Σ_i A[i, :]`` and
  ``½ A[0, :] + ½ A[1, :]``.
- ``"map"`` / ``"map_all"``: SigLIP and PE have a learnt probe that attends over the tokens after the last block
  (multi-head attention pooling), and what it gathers is the image's embedding: the probe's attention ``probe``
  (H, T) is the natural "CLS attention". It exists once, after the last block, so the one-layer map ignores
  ``layer``; the rollout is the probe's head-fused row times the blocks' rollout matrix, ``p · R``. The blocks
  themselves have no probe: the heads grid uses the mean of the rows the probe reads (``heads_query``).

Every row sums to 1 over all tokens, so each map (prefix columns left out) is a distribution over the patches
up to the mass on prefix tokens. Arrays are (L, H, T, T) attention for one image as in ``viz.maps.attention``.
"""
from __future__ import annotations

import numpy as np

from vit.readout import READOUT_NAMES, kind, token_weights

from .attention import _layer_heads, all_heads_maps, token_attention_map, without_tokens
from .layout import check_attention, layer_index, to_grid
from .rollout import FUSIONS, fused_rollout_map, kept_tokens, rollout_rows

READOUTS = {"cls": "CLS", "map": "MAP probe", "map_all": "MAP probe", "mean": "mean of patches",   # readout -> the
            "mean_all": "mean of all tokens", "cls_mean": "CLS and mean of patches",            # query's name in
            "distilled": "CLS and DIST"}                                                          # captions


def check_readout(readout: str, probe: np.ndarray | None, num_prefix: int, grid: tuple[int, int]) -> None:
    """ValueError unless ``readout`` is known, its tokens exist and ``probe`` is given (H, T) exactly for a probe."""
    if readout not in READOUT_NAMES:
        raise ValueError(f"Unknown readout {readout!r}! Expected one of {list(READOUT_NAMES)}.")
    if kind(readout).class_token and num_prefix < (2 if readout == "distilled" else 1):
        raise ValueError(f"The {readout!r} readout reads {kind(readout).description}, but this layout has "
                         f"{num_prefix} prefix tokens! Use a readout of the patches ('mean').")
    T = num_prefix + grid[0] * grid[1]
    if kind(readout).probe and (probe is None or np.ndim(probe) != 2 or np.shape(probe)[1] != T):
        raise ValueError(f"The {readout!r} readout needs the probe's attention (heads, {T}) but got "
                         f"{None if probe is None else np.shape(probe)}.")


def query_name(readout: str) -> str:
    """The query's name for a caption: "CLS", "MAP probe", "mean of patches", …"""
    return READOUTS[readout]


def heads_query(readout: str) -> str:
    """The query of the per-block maps (heads grid): the readout itself, or the mean of the rows a probe reads (the
    probe only exists after the last block)."""
    return kind(readout).layer_query


def query_row(matrix: np.ndarray, query: str, num_prefix: int, keep: np.ndarray | None = None) -> np.ndarray:
    """(..., T, T) -> (..., T): the rows a per-block query reads, weighted (``vit.readout.token_weights``): the CLS
    row, the mean of the patch rows, ….

    ``keep`` (token indices, the prefix tokens among them): only the kept tokens are queries, weighted as the
    readout weighs the tokens of the shorter sequence, and every row is renormalised over the kept keys first
    (``viz.maps.attention.without_tokens``), so dropped tokens neither ask nor answer."""
    matrix = np.asarray(matrix)
    T = matrix.shape[-1]
    queries = np.arange(T) if keep is None else keep
    weights = token_weights(query, queries.size, num_prefix)
    used = queries[np.flatnonzero(weights)]
    weights = weights[weights != 0]
    contiguous = used[-1] - used[0] + 1 == used.size                     # a slice, not a copy of the rows
    rows = matrix[..., used[0]:used[-1] + 1, :] if contiguous else matrix[..., used, :]
    rows = np.asarray(rows, dtype=np.float32)
    if keep is not None:
        rows = without_tokens(rows, keep)
    if np.all(weights == weights[0]):                                    # one weight: a mean (or one row)
        return rows.mean(axis=-2) if used.size > 1 else rows[..., 0, :] * weights[0]
    return np.tensordot(weights, rows, axes=([0], [-2]))


def mean_patch_row(matrix: np.ndarray, num_prefix: int, keep: np.ndarray | None = None) -> np.ndarray:
    """(..., T, T) -> (..., T): the mean of the patch rows, the query of a mean-pooled model (``query_row``)."""
    return query_row(matrix, "mean", num_prefix, keep)


def fuse_probe(probe: np.ndarray, fusion: str = "mean") -> np.ndarray:
    """The probe's attention (H, T) -> (T,), heads combined as rollout combines them (mean, max or min)."""
    if fusion not in FUSIONS:
        raise ValueError(f"Unknown head fusion {fusion!r}! Expected one of {FUSIONS}.")
    reduce = {"mean": np.mean, "max": np.max, "min": np.min}[fusion]
    return reduce(np.asarray(probe, dtype=np.float32), axis=0)


def _kept(num_prefix: int, grid: tuple[int, int], drop_patches: np.ndarray | None) -> np.ndarray | None:
    return None if drop_patches is None else kept_tokens(num_prefix, grid, drop_patches)


def readout_attention_map(attn: np.ndarray, num_prefix: int, grid: tuple[int, int], readout: str,
                          probe: np.ndarray | None, layer: int = -1, head: int | None = None,
                          drop_patches: np.ndarray | None = None) -> np.ndarray:
    """The readout query's attention over the patches in one layer (one head or their mean) -> (gh, gw).

    "cls": the CLS row of layer ``layer``; "mean": the mean of its patch rows (``query_row``: every readout's
    weighted rows); "map": the probe's attention after the last layer (``layer`` does not apply).
    ``drop_patches`` (gh, gw) bool: tokens removed as keys (and as queries of the mean), every row renormalised over
    the rest; they read 0.
    """
    attn = check_attention(attn, num_prefix, grid)
    check_readout(readout, probe, num_prefix, grid)
    if readout == "cls":
        return token_attention_map(attn, num_prefix, grid, layer, head, token=0, drop_patches=drop_patches)
    keep = _kept(num_prefix, grid, drop_patches)
    if not kind(readout).probe:
        return to_grid(query_row(_layer_heads(attn, layer, head), readout, num_prefix, keep), num_prefix, grid)
    probe = np.asarray(probe, dtype=np.float32)
    if head is not None and not -probe.shape[0] <= head < probe.shape[0]:
        raise ValueError(f"Head {head} does not exist! Expected 0 <= head < {probe.shape[0]}, or None for the mean.")
    row = probe.mean(axis=0) if head is None else probe[head]
    return to_grid(row if keep is None else without_tokens(row, keep), num_prefix, grid)


def readout_all_heads_maps(attn: np.ndarray, num_prefix: int, grid: tuple[int, int], readout: str,
                           drop_patches: np.ndarray | None = None) -> np.ndarray:
    """Every layer's and head's attention of the readout query over the patches -> (L, H, gh, gw).

    "cls": the CLS row; "mean" and "map": the mean of the patch rows (see ``heads_query``); the others their
    weighted rows; ``drop_patches`` as in ``readout_attention_map``.
    """
    attn = check_attention(attn, num_prefix, grid)
    if heads_query(readout) == "cls":
        return all_heads_maps(attn, num_prefix, grid, drop_patches=drop_patches)
    keep = _kept(num_prefix, grid, drop_patches)
    return to_grid(query_row(attn, heads_query(readout), num_prefix, keep), num_prefix, grid)


def readout_rows(rows_source: np.ndarray, num_prefix: int, grid: tuple[int, int], readout: str,
                 drop_patches: np.ndarray | None = None) -> np.ndarray:
    """The per-layer query rows of (L, T, T) attention (one head or head-fused) -> (L, T) float32: the CLS row
    (``heads_query``), the mean of the patch rows, …, renormalised without ``drop_patches`` when given."""
    keep = _kept(num_prefix, grid, drop_patches)
    if heads_query(readout) == "cls":
        rows = np.asarray(rows_source[:, 0, :], dtype=np.float32)
        return rows if keep is None else without_tokens(rows, keep)
    return query_row(rows_source, heads_query(readout), num_prefix, keep)


def readout_rollout_map(fused: np.ndarray, num_prefix: int, grid: tuple[int, int], readout: str,
                        probe: np.ndarray | None = None, fusion: str = "mean", discard_ratio: float = 0.0,
                        start_layer: int = 0, drop_patches: np.ndarray | None = None) -> np.ndarray:
    """Rollout of the readout query over the patches -> (gh, gw), from head-fused attention (L, T, T).

    "cls": the CLS row of R (``viz.maps.rollout.fused_rollout_map``, token 0). "mean": the mean of R's patch
    rows (the other readouts: their weights' rows, ``readout_weights``). "map": p · R with p the probe's attention,
    heads fused by ``fusion`` (the same fusion the blocks' attention was fused with) and renormalised to sum to 1, as
    rollout renormalises its rows after a max or min fusion. The prefix tokens the readout reads (``protected``) are
    never discarded; a probe's and the mean's protect none. With ``drop_patches``, dropped tokens leave R and the probe
    row is renormalised over the kept tokens; dropped patches read 0.
    """
    check_readout(readout, probe, num_prefix, grid)
    if readout == "cls":
        return fused_rollout_map(fused, num_prefix, grid, 0, discard_ratio, start_layer, drop_patches)
    fused = np.asarray(fused)
    T = num_prefix + grid[0] * grid[1]
    if fused.ndim != 3 or fused.shape[1:] != (T, T):
        raise ValueError(f"Wrong fused attention shape! Expected (layers, {T}, {T}) for {num_prefix} prefix "
                         f"tokens and a {grid[0]}×{grid[1]} grid but got {fused.shape}!")
    keep = kept_tokens(num_prefix, grid, drop_patches)
    fused = fused[layer_index(start_layer, fused.shape[0]):]
    if keep.size < T:                                    # drop the tokens' rows and columns in every block
        fused = fused[:, keep][:, :, keep]
    p = fuse_probe(probe, fusion)[keep] if kind(readout).probe else None  # prefix tokens are always kept
    weights = readout_weights(keep.size, num_prefix, readout, None if p is None else p / max(p.sum(), 1e-12))
    out = np.zeros(T, dtype=np.float32)
    protect = protected(weights, num_prefix, readout)
    out[keep] = rollout_rows(fused, weights, discard_ratio, 0, protect=protect)   # weights · R over the kept tokens
    return to_grid(out, num_prefix, grid)


def protected(weights: np.ndarray, num_prefix: int, readout: str) -> tuple[int, ...]:
    """The prefix tokens a readout reads by name (CLS; CLS and DIST), which rollout's discard never drops; none for a
    probe or a mean, whose weights spread over many tokens."""
    if kind(readout).probe or kind(readout).pooled:
        return ()
    return tuple(int(t) for t in np.flatnonzero(weights[:num_prefix]))


def readout_weights(num_tokens: int, num_prefix: int, readout: str, probe_row: np.ndarray | None = None) -> np.ndarray:
    """The readout query as weights over the rows of a (T, T) matrix -> (T,) float32, so that its row of any
    token-mixing matrix M is ``weights · M`` (rollout reads it without forming M): ``vit.readout.token_weights``,
    one-hot on the CLS token, 1/N on each of the N patch rows for "mean", …, the probe's head-fused row for "map"."""
    return token_weights(readout, num_tokens, num_prefix, probe_row)
