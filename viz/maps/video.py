"""Attention through space and time, for video transformers: how far back in time each head looks, how far in space,
and the rollout through the steps of any video model, as numpy.

A video model's stream holds ``num_prefix`` prefix tokens (CLS) then frames × gh × gw patch tokens, frame-major (token
``num_prefix + τ·gh·gw + r·gw + c`` is patch (r, c) of time position τ). Each attention step attends inside G groups
of n tokens (``vit.video.VideoLayout.token_index``: a joint step one group of every token, TimeSformer's time step one
group per patch place through its frames, its space step one group per frame with the CLS token), given here as
``attn`` (G, H, n, n) with ``index`` (G, n), the stream token of every slot.

Temporal attention distance (the time analogue of Figure 7's mean attention distance, Dosovitskiy et al. 2021):
for each query patch token i, Σ_j A_ij · |τ_i − τ_j| over the patch tokens j it attends to, then the mean over the
query patches (of every group the token is a query in); in time positions (× the tubelet for input frames). The
spatial distance is Figure 7's: Σ_j A_ij · ‖(r_i, c_i) − (r_j, c_j)‖ · patch size, in pixels, whatever the frames.
As in ``distance.mean_attention_distance``, attention given to a prefix token counts as distance 0.

Rollout (Abnar & Zuidema 2020) through the steps: each step's attention made a (T, T) matrix of the stream
(``dense_step``): a group's rows and columns put at its tokens' places; a token in no group of the step (the CLS token
in a time step) keeps itself (row e_t); a token that is a query in several groups (the CLS token in every frame of a
space step) gets the mean of its rows, as the model takes the mean of its outputs. Then heads fused, 0.5·A + 0.5·I,
rows renormalised (heads fused inside each group first), and the readout's row carried down through the steps (``rollout.rows_through``).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .rollout import discard_lowest, fuse_heads, rows_through, with_residual


def token_places(index: np.ndarray, num_prefix: int, grid: tuple[int, int]) -> tuple[np.ndarray, ...]:
    """Stream indices (any shape) -> (τ, row, column, is_patch), each of that shape (prefix tokens: 0, 0, 0, False)."""
    index = np.asarray(index)
    gh, gw = grid
    patch = index - num_prefix
    is_patch = patch >= 0
    patch = np.where(is_patch, patch, 0)
    tau, place = np.divmod(patch, gh * gw)
    row, col = np.divmod(place, gw)
    return tau, row, col, is_patch


def _check(attn: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    attn, index = np.asarray(attn), np.asarray(index)
    if attn.ndim != 4 or index.ndim != 2 or attn.shape[0] != index.shape[0] or attn.shape[2:] != (index.shape[1],) * 2:
        raise ValueError(f"Wrong attention step shape! Expected attention (G, H, n, n) and its token index (G, n) but "
                         f"got {attn.shape} and {index.shape}.")
    return attn, index


def _weighted_mean(attn: np.ndarray, index: np.ndarray, num_prefix: int, distance: np.ndarray) -> np.ndarray:
    """Σ_j A_ij · d_ij per query slot, averaged over every (group, slot) whose token is a patch -> (H,)."""
    _, _, _, is_patch = token_places(index, num_prefix, (1, 1))
    weighted = np.einsum("ghij,gij->ghi", attn.astype(np.float32, copy=False), distance)   # (G, H, n)
    queries = np.broadcast_to(is_patch[:, None, :], weighted.shape)
    if not queries.any():
        return np.zeros(attn.shape[1], dtype=np.float32)
    return (weighted * queries).sum(axis=(0, 2)) / queries[:, 0].sum()


def temporal_distance(attn: np.ndarray, index: np.ndarray, num_prefix: int, grid: tuple[int, int],
                      tubelet: int = 1) -> np.ndarray:
    """Mean temporal attention distance of one step's heads -> (H,): Σ_j A_ij·|τ_i − τ_j| over patch keys, averaged
    over the query patches, in time positions × ``tubelet`` (input frames)."""
    attn, index = _check(attn, index)
    tau, _, _, is_patch = token_places(index, num_prefix, grid)
    both = is_patch[:, :, None] & is_patch[:, None, :]
    dt = np.abs(tau[:, :, None] - tau[:, None, :]) * both * tubelet                   # (G, n, n)
    return _weighted_mean(attn, index, num_prefix, dt.astype(np.float32))


def spatial_distance(attn: np.ndarray, index: np.ndarray, num_prefix: int, grid: tuple[int, int],
                     patch_size: int) -> np.ndarray:
    """Mean spatial attention distance of one step's heads -> (H,): Σ_j A_ij·‖p_i − p_j‖ in pixels over patch keys
    (in any frame), averaged over the query patches."""
    attn, index = _check(attn, index)
    _, row, col, is_patch = token_places(index, num_prefix, grid)
    both = is_patch[:, :, None] & is_patch[:, None, :]
    ds = np.hypot(row[:, :, None] - row[:, None, :], col[:, :, None] - col[:, None, :]) * both * patch_size
    return _weighted_mean(attn, index, num_prefix, ds.astype(np.float32))


def per_block(values: Sequence[np.ndarray], blocks: Sequence[int]) -> np.ndarray:
    """Per-step values (S, H) and each step's block -> (L, H), the steps of a block summed (a divided block's time
    step has spatial distance 0 and its space step temporal distance 0, so each block keeps the one it has)."""
    blocks = np.asarray(blocks)
    out = np.zeros((int(blocks.max()) + 1, np.shape(values)[1]), dtype=np.float32)
    np.add.at(out, blocks, np.asarray(values, dtype=np.float32))
    return out


def dense_step(attn: np.ndarray, index: np.ndarray, num_tokens: int) -> np.ndarray:
    """One step's attention in groups (G, H, n, n) -> (H, T, T) over the stream: each group's rows and columns at its
    tokens' places; a token in no group attends to itself; a token that is a query in several groups gets the mean
    of its rows."""
    attn, index = _check(attn, index)
    G, H, n, _ = attn.shape
    out = np.zeros((H, num_tokens, num_tokens), dtype=np.float32)
    count = np.zeros(num_tokens, dtype=np.int64)
    for g in range(G):
        out[:, index[g][:, None], index[g][None, :]] += attn[g]
        np.add.at(count, index[g], 1)
    alone = np.flatnonzero(count == 0)
    out[:, alone, alone] = 1.0
    shared = np.flatnonzero(count > 1)
    out[:, shared] /= count[shared][None, :, None]
    return out


def step_matrices(attention: Sequence[np.ndarray], indices: Sequence[np.ndarray], num_tokens: int,
                  fusion: str = "mean", discard_ratio: float = 0.0, protect: Sequence[int] = ()) -> list[np.ndarray]:
    """Every step's Â = 0.5·A + 0.5·I (rows renormalised) over the stream, A its heads fused in each group, then made
    dense (and its lowest entries discarded, the ``protect`` tokens' rows and columns kept), first step first."""
    steps = []
    for attn, index in zip(attention, indices):
        fused = dense_step(fuse_heads(np.asarray(attn), fusion)[:, None], index, num_tokens)[0]
        steps.append(with_residual(discard_lowest(fused, discard_ratio, protect, overwrite=True), overwrite=True))
    return steps


def video_rollout(attention: Sequence[np.ndarray], indices: Sequence[np.ndarray], num_prefix: int, frames: int,
                  grid: tuple[int, int], readout: np.ndarray, fusion: str = "mean",
                  discard_ratio: float = 0.0) -> np.ndarray:
    """The readout's rolled-out attention over every frame's patches -> (frames, gh, gw).

    ``attention``/``indices``: every step's (G, H, n, n) and (G, n), first step first (a V-JEPA 2 probe's blocks
    after the encoder's); ``readout`` (T,): the weights of the row read out over the stream's tokens (``readout_row``).
    The readout's tokens are protected from the discard."""
    T = num_prefix + frames * grid[0] * grid[1]
    readout = np.asarray(readout, dtype=np.float32)
    if readout.shape != (T,):
        raise ValueError(f"Wrong readout shape! Expected weights over the {T} tokens but got {readout.shape}.")
    protect = np.flatnonzero(readout).tolist() if discard_ratio else []
    row = rows_through(step_matrices(attention, indices, T, fusion, discard_ratio, protect), readout)
    return row[num_prefix:].reshape(frames, *grid)


def readout_row(num_prefix: int, num_tokens: int, kind: str = "token", probe: np.ndarray | None = None) -> np.ndarray:
    """The row a video model reads out, (T,): "token" the CLS token (e_0); "avg" the mean of the patch tokens;
    "probe" V-JEPA 2's probe query's attention over the patches (``probe`` (H, N) or (N,), heads averaged)."""
    row = np.zeros(num_tokens, dtype=np.float32)
    if kind == "token":
        row[0] = 1.0
    elif kind == "avg":
        row[num_prefix:] = 1.0 / (num_tokens - num_prefix)
    elif kind == "probe":
        weights = np.asarray(probe, dtype=np.float32)
        row[num_prefix:] = weights.mean(axis=0) if weights.ndim == 2 else weights
    else:
        raise ValueError(f"Unknown readout {kind!r}! Expected 'token', 'avg' or 'probe'.")
    return row
