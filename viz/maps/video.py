"""Attention through space and time, for video transformers: how far back in time each head looks, how far in space,
and the rollout through the steps of any video model, as numpy, read from the model's description.

A video model's stream holds ``prefix`` tokens (CLS) then frames × gh × gw patch tokens, frame-major (token
``prefix + τ·gh·gw + r·gw + c`` is patch (r, c) of time position τ). Each attention step is one block of the model's
description (``vit.architecture.BlockLayout``) and its attention is given on the block's layout: (H, T, T) when
every token attends to every token (``attends`` "all"), (G, H, n, n) inside the step's G groups of n tokens
("time", "space": ``BlockLayout.groups`` gives the stream token of every slot).

Temporal attention distance (the time analogue of Figure 7's mean attention distance, Dosovitskiy et al. 2021):
for each query patch token i, Σ_j A_ij · |τ_i − τ_j| over the patch tokens j it attends to, then the mean over the
query patches (of every group the token is a query in); in time positions (× the tubelet for input frames). The
spatial distance is Figure 7's: Σ_j A_ij · ‖(r_i, c_i) − (r_j, c_j)‖ · patch size, in pixels, whatever the frames.
As in ``distance.mean_attention_distance``, attention given to a prefix token counts as distance 0. One row per
step: a TimeSformer's time step has spatial distance 0 and its space step temporal distance 0.

Rollout (Abnar & Zuidema 2020) through the steps: each step's attention made a (T, T) matrix of the stream
(``dense_step``): a group's rows and columns put at its tokens' places; a token in no group of the step (the CLS token
in a time step) keeps itself (row e_t); a token that is a query in several groups (the CLS token in every frame of a
space step) gets the mean of its rows, as the model takes the mean of its outputs. Then heads fused, 0.5·A + 0.5·I,
rows renormalised, and the readout's row carried down through the steps (``rollout.rows_through``). The same
matrices without forming them: ``rows_through_groups`` carries rows through a step's group matrices.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from vit.architecture import Architecture, BlockLayout

from .rollout import discard_lowest, fuse_heads, rows_through, with_residual


def grouped(attn: np.ndarray, block: BlockLayout) -> np.ndarray:
    """A step's attention on its layout ((H, T, T), or (G, H, n, n)) -> (G, H, n, n) inside its groups; ValueError for
    another shape."""
    attn = np.asarray(attn)
    G, n = block.groups().shape
    if attn.ndim == 3 and G == 1:
        attn = attn[None]
    if attn.shape[:1] + attn.shape[2:] != (G, n, n) or attn.ndim != 4:
        raise ValueError(f"Wrong attention step shape! Expected {'(H, T, T) or ' if G == 1 else ''}({G}, H, {n}, {n}) "
                         f"for a step that attends {block.attends!r} but got {attn.shape}.")
    return attn


def _places(block: BlockLayout, index: np.ndarray) -> tuple[np.ndarray, ...]:
    """Stream indices (any shape) -> (τ, row, column, is_patch), each of that shape (prefix tokens: 0, 0, 0, False)."""
    tau, row, col = block.places()
    patch = index - block.prefix
    is_patch = patch >= 0
    at = np.where(is_patch, patch, 0)
    return tau[at], row[at], col[at], is_patch


def _weighted_mean(attn: np.ndarray, is_patch: np.ndarray, distance: np.ndarray) -> np.ndarray:
    """Σ_j A_ij · d_ij per query slot, averaged over every (group, slot) whose token is a patch -> (H,)."""
    weighted = np.einsum("ghij,gij->ghi", attn.astype(np.float32, copy=False), distance)     # (G, H, n)
    queries = np.broadcast_to(is_patch[:, None, :], weighted.shape)
    if not queries.any():
        return np.zeros(attn.shape[1], dtype=np.float32)
    return (weighted * queries).sum(axis=(0, 2)) / queries[:, 0].sum()


def temporal_distance(attn: np.ndarray, block: BlockLayout) -> np.ndarray:
    """Mean temporal attention distance of one step's heads -> (H,): Σ_j A_ij·|τ_i − τ_j| over patch keys, averaged
    over the query patches, in input frames (time positions × the block's tubelet)."""
    attn, index = grouped(attn, block), block.groups()
    tau, _, _, is_patch = _places(block, index)
    both = is_patch[:, :, None] & is_patch[:, None, :]
    dt = np.abs(tau[:, :, None] - tau[:, None, :]) * both * block.tubelet                  # (G, n, n)
    return _weighted_mean(attn, is_patch, dt.astype(np.float32))


def spatial_distance(attn: np.ndarray, block: BlockLayout) -> np.ndarray:
    """Mean spatial attention distance of one step's heads -> (H,): Σ_j A_ij·‖p_i − p_j‖ in pixels over patch keys
    (in any frame), averaged over the query patches (tokens ``token_size`` pixels apart)."""
    attn, index = grouped(attn, block), block.groups()
    _, row, col, is_patch = _places(block, index)
    both = is_patch[:, :, None] & is_patch[:, None, :]
    ds = np.hypot(row[:, :, None] - row[:, None, :], col[:, :, None] - col[:, None, :]) * both * block.token_size
    return _weighted_mean(attn, is_patch, ds.astype(np.float32))


def distances(attention: Sequence[np.ndarray], architecture: Architecture) -> tuple[np.ndarray, np.ndarray]:
    """Every step's attention (first first) -> (temporal (L, H) in frames, spatial (L, H) in pixels)."""
    blocks = architecture.blocks
    return (np.stack([temporal_distance(a, b) for a, b in zip(attention, blocks)]),
            np.stack([spatial_distance(a, b) for a, b in zip(attention, blocks)]))


def _counts(block: BlockLayout) -> np.ndarray:
    """(T,) how many of the step's groups each token is in."""
    return np.bincount(block.groups().ravel(), minlength=block.num_tokens)


def dense_step(attn: np.ndarray, block: BlockLayout) -> np.ndarray:
    """One step's attention on its layout -> (H, T, T) over the stream: each group's rows and columns at its tokens'
    places; a token in no group attends to itself; a token that is a query in several groups gets the mean of its
    rows."""
    attn, index = grouped(attn, block), block.groups()
    G, H = attn.shape[:2]
    T = block.num_tokens
    if G == 1 and index.shape[1] == T:
        return np.array(attn[0], dtype=np.float32)
    out = np.zeros((H, T, T), dtype=np.float32)
    for g in range(G):
        out[:, index[g][:, None], index[g][None, :]] += attn[g]
    count = _counts(block)
    alone = np.flatnonzero(count == 0)
    out[:, alone, alone] = 1.0
    shared = np.flatnonzero(count > 1)
    out[:, shared] /= count[shared][None, :, None]
    return out


def rows_through_groups(rows: np.ndarray, matrices: np.ndarray, block: BlockLayout) -> np.ndarray:
    """``rows @ dense`` for a step's (G, n, n) group matrices (one per group, heads fused), without forming the (T, T)
    matrix ``dense_step`` would: rows (…, T) -> (…, T). A token in no group keeps its value; a token in several groups
    shares its row equally among them (the mean of its rows)."""
    rows = np.asarray(rows, dtype=np.float32)
    index = block.groups()
    flat = rows.reshape(-1, rows.shape[-1])
    count = _counts(block)
    weights = flat / np.maximum(count, 1)                                                  # each group's share
    per_group = np.einsum("kgi,gij->kgj", weights[:, index], np.asarray(matrices, dtype=np.float32))
    out = np.zeros_like(flat)
    np.add.at(out, (slice(None), index.ravel()), per_group.reshape(flat.shape[0], -1))
    alone = count == 0
    out[:, alone] += flat[:, alone]
    return out.reshape(rows.shape)


def step_matrices(attention: Sequence[np.ndarray], architecture: Architecture, fusion: str = "mean",
                  discard_ratio: float = 0.0, protect: Sequence[int] = ()) -> list[np.ndarray]:
    """Every step's Â = 0.5·A + 0.5·I (rows renormalised) over the stream, A its heads fused in each group, then made
    dense (and its lowest entries discarded, the ``protect`` tokens' rows and columns kept), first step first."""
    steps = []
    for attn, block in zip(attention, architecture.blocks):
        fused = fuse_heads(grouped(attn, block), fusion)[:, None]                          # (G, 1, n, n)
        dense = dense_step(fused, block)[0]
        steps.append(with_residual(discard_lowest(dense, discard_ratio, protect, overwrite=True), overwrite=True))
    return steps


def video_rollout(attention: Sequence[np.ndarray], architecture: Architecture, readout: np.ndarray,
                  fusion: str = "mean", discard_ratio: float = 0.0) -> np.ndarray:
    """The readout's rolled-out attention over every frame's patches -> (frames, gh, gw).

    ``attention``: every step's attention on its layout, first step first (a V-JEPA 2 probe's blocks after the
    encoder's); ``readout`` (T,): the weights of the row read out over the stream's tokens (``readout_row``). The
    readout's tokens are protected from the discard."""
    first = architecture.blocks[0]
    T = first.num_tokens
    readout = np.asarray(readout, dtype=np.float32)
    if readout.shape != (T,):
        raise ValueError(f"Wrong readout shape! Expected weights over the {T} tokens but got {readout.shape}.")
    protect = np.flatnonzero(readout).tolist() if discard_ratio else []
    row = rows_through(step_matrices(attention, architecture, fusion, discard_ratio, protect), readout)
    return row[first.prefix:].reshape(architecture.patch_shape)


def readout_row(architecture: Architecture, probe: np.ndarray | None = None) -> np.ndarray:
    """The row a video model reads out, (T,) over the last step's tokens, as its description's readout says: "cls"
    the CLS token (e_0); "mean" the mean of the patch tokens; "map" V-JEPA 2's probe query's attention over the
    patches (``probe`` (H, N) or (N,), heads averaged)."""
    last = architecture.blocks[-1]
    row = np.zeros(last.num_tokens, dtype=np.float32)
    if architecture.readout == "cls":
        row[0] = 1.0
    elif architecture.readout == "mean":
        row[last.prefix:] = 1.0 / last.num_patches
    else:
        if probe is None:
            raise ValueError("The 'map' readout needs the probe's attention over the patches.")
        weights = np.asarray(probe, dtype=np.float32)
        row[last.prefix:] = weights.mean(axis=0) if weights.ndim == 2 else weights
    return row
