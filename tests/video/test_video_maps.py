"""Protects the video maps' definitions on hand-built attention of known answer: the temporal attention distance
(mean |Δτ| weighted by attention, the time analogue of Figure 7) and the spatial one, equal to a direct loop over
queries and keys; each step's attention made a stream matrix as the model mixes its tokens (TimeSformer's CLS token
kept by a time step, averaged over the frames of a space step); the rollout through joint steps equal to the image
rollout over the flattened space-time tokens, and through divided steps equal to the dense product built by hand."""
from __future__ import annotations

import numpy as np
import pytest

from viz.maps.rollout import fuse_heads, rollout_map
from viz.maps.video import (dense_step, readout_row, rows_through_groups, spatial_distance, temporal_distance,
                            video_rollout)
from vit.architecture import Architecture, BlockLayout

GRID, FRAMES, PATCH = (2, 3), 4, 16


def layout(step: str, num_prefix: int = 1, tubelet: int = 1) -> BlockLayout:
    return BlockLayout(0, 0, 0, heads=3, grid=GRID, token_size=PATCH, prefix=num_prefix, frames=FRAMES,
                       tubelet=tubelet, attends="all" if step == "joint" else step)


def architecture(steps, num_prefix: int = 1, readout: str = "cls") -> Architecture:
    blocks = tuple(BlockLayout(i, 0, i, heads=3, grid=GRID, token_size=PATCH, prefix=num_prefix, frames=FRAMES,
                               attends="all" if s == "joint" else s) for i, s in enumerate(steps))
    return Architecture("test", blocks, readout, PATCH)


def token_places(token, num_prefix, grid):
    """(τ, row, column, is_patch) of one stream token, by hand."""
    if token < num_prefix:
        return 0, 0, 0, False
    tau, place = divmod(token - num_prefix, grid[0] * grid[1])
    return tau, place // grid[1], place % grid[1], True


def random_attention(G, H, n, seed=0):
    a = np.random.default_rng(seed).random((G, H, n, n)).astype(np.float32) ** 4
    return a / a.sum(-1, keepdims=True)


def direct(attn, index, num_prefix, what):
    """The definition, one query and key at a time."""
    G, H, n, _ = attn.shape
    out = np.zeros(H)
    queries = 0
    for g in range(G):
        for i in range(n):
            ti, ri, ci, pi = token_places(index[g, i], num_prefix, GRID)
            if not pi:
                continue
            queries += 1
            for j in range(n):
                tj, rj, cj, pj = token_places(index[g, j], num_prefix, GRID)
                if pj:
                    d = abs(ti - tj) if what == "time" else PATCH * np.hypot(ri - rj, ci - cj)
                    out += attn[g, :, i, j] * d
    return out / queries


@pytest.mark.parametrize("step", ["joint", "time", "space"])
def test_distances_equal_the_direct_computation(step):
    block = layout(step)
    index = block.groups()
    attn = random_attention(*index.shape[:1], 3, index.shape[1])
    assert np.allclose(temporal_distance(attn, block), direct(attn, index, 1, "time"), rtol=1e-5)
    assert np.allclose(spatial_distance(attn, block), direct(attn, index, 1, "space"), rtol=1e-5)
    if step == "joint":                                                # (H, T, T): the same step, its own layout
        assert np.allclose(temporal_distance(attn[0], block), direct(attn, index, 1, "time"), rtol=1e-5)


def test_known_answers():
    """Every patch attending to itself: 0 and 0. Every patch attending to the same place two time positions away (in
    a 4-position clip: τ ↔ τ ± 2): |Δτ| = 2, × the tubelet of 2 frames = 4 frames, spatial 0. Attention on the CLS
    token counts as distance 0. A time step reads 0 in space, a space step 0 in time."""
    joint = layout("joint")
    T, N = joint.num_tokens, GRID[0] * GRID[1]
    attn = np.zeros((1, 2, T, T), np.float32)
    attn[0, 0] = np.eye(T)
    for t in range(FRAMES):
        for p in range(N):
            attn[0, 1, 1 + t * N + p, 1 + ((t + 2) % FRAMES) * N + p] = 1.0
    attn[0, 1, 0, 0] = 1.0
    assert np.allclose(temporal_distance(attn, joint), [0, 2])
    assert np.allclose(temporal_distance(attn, layout("joint", tubelet=2)), [0, 4])
    assert np.allclose(spatial_distance(attn, joint), [0, 0])
    attn[0, 1] = 0
    attn[0, 1, :, 0] = 1.0                                             # everything on the CLS token
    assert np.allclose(temporal_distance(attn, joint), [0, 0])
    for step, zero in (("time", spatial_distance), ("space", temporal_distance)):
        block = layout(step)
        idx = block.groups()
        a = random_attention(idx.shape[0], 2, idx.shape[1], seed=3)
        assert np.allclose(zero(a, block), 0)


def test_uniform_joint_attention():
    """Uniform attention over every patch: the mean |Δτ| over all pairs of time positions, Σ|t − s| / T'² = 1.25 for
    4 positions."""
    block = layout("joint", 0)
    n = block.num_tokens
    attn = np.full((1, 1, n, n), 1 / n, np.float32)
    assert np.allclose(temporal_distance(attn, block), [1.25])


def test_dense_steps():
    """A time step leaves the CLS token alone (it attends to itself); a space step's CLS row is the mean of its rows
    in every frame; every row sums to 1."""
    for step in ("time", "space"):
        lay = layout(step)
        index = lay.groups()
        attn = random_attention(index.shape[0], 2, index.shape[1], seed=1)
        dense = dense_step(attn, lay)
        assert np.allclose(dense.sum(-1), 1, atol=1e-6)
        if step == "time":
            assert np.array_equal(dense[:, 0], np.eye(lay.num_tokens)[[0, 0]])
        else:
            mean = np.zeros((2, lay.num_tokens))
            for g in range(FRAMES):
                mean[:, index[g]] += attn[g, :, 0] / FRAMES
            assert np.allclose(dense[:, 0], mean, atol=1e-7)
            t, N = 2, GRID[0] * GRID[1]
            assert np.allclose(dense[:, 1 + t * N + 1, index[t]], attn[t, :, 2])
        rows = np.random.default_rng(2).random((3, lay.num_tokens)).astype(np.float32)
        fused = fuse_heads(attn)                                       # (G, n, n): rows through the groups
        assert np.allclose(rows_through_groups(rows, fused, lay), rows @ dense.mean(0), atol=1e-6)


def test_joint_rollout_is_the_image_rollout_of_the_flattened_tokens():
    lay = layout("joint")
    steps = [random_attention(1, 3, lay.num_tokens, seed=s) for s in range(3)]
    arch = architecture(["joint"] * 3)
    ours = video_rollout(steps, arch, readout_row(arch), discard_ratio=0.5)
    flat = rollout_map(np.stack([s[0] for s in steps]), 1, (FRAMES * GRID[0], GRID[1]), discard_ratio=0.5)
    assert np.allclose(ours, flat.reshape(FRAMES, *GRID), atol=1e-6)


def test_divided_rollout_equals_the_dense_product():
    """Through time and space steps: the CLS row of Â_S·…·Â_1, each Â built by hand from the groups."""
    steps, indices = [], []
    for s, step in enumerate(["time", "space", "time", "space"]):
        idx = layout(step).groups()
        steps.append(random_attention(idx.shape[0], 2, idx.shape[1], seed=s))
        indices.append(idx)
    arch = architecture(["time", "space", "time", "space"])
    T = layout("joint").num_tokens
    R = np.eye(T)
    for attn, idx in zip(steps, indices):
        A = np.zeros((T, T))
        seen = np.zeros(T)
        for g in range(idx.shape[0]):
            for i in range(idx.shape[1]):
                A[idx[g, i], idx[g]] += attn[g, :, i].mean(0)
                seen[idx[g, i]] += 1
        A[seen == 0, seen == 0] = 1
        A /= np.maximum(seen, 1)[:, None]
        R = (0.5 * A + 0.5 * np.eye(T)) @ R
    ours = video_rollout(steps, arch, readout_row(arch))
    assert np.allclose(ours, R[0, 1:].reshape(FRAMES, *GRID), atol=1e-6)
    mean = architecture(["time", "space", "time", "space"], readout="mean")
    mean_row = readout_row(mean)
    assert mean_row[0] == 0 and np.isclose(mean_row.sum(), 1)
    assert np.allclose(video_rollout(steps, mean, mean_row).ravel(), (mean_row @ R)[1:], atol=1e-6)
