"""Protects attention rollout through a Swin's hierarchy (viz.maps.source.rollout_rows): inside a stage the blocks'
expanded matrices multiply as in Abnar & Zuidema (identity added, rows renormalised), at a patch merging each merged
token's value is shared equally by its 2×2 children (the merge's adjoint), and the map is the mean of the last
stage's rows carried down to stage 0's grid. A hand-built two-stage case whose answer is worked out below, and the
same definition computed densely (full matrices, merges as M) on a real network's attention."""
from __future__ import annotations

import numpy as np
import torch

from dense_swin import chain, dense_forward
from viz.maps.source import rollout_rows
from viz.maps.windows import Windows, WindowedAttention, mean_row


def rollout_map(attention, layouts, fusion: str = "mean"):
    """Rollout through windows and merges read by the mean of the last block's tokens, as the views compute it
    (``viz.maps.source.rollout_rows`` over a ``WindowedAttention``) -> (gh0, gw0)."""
    source = WindowedAttention(attention, layouts)
    return rollout_rows(source, mean_row(tuple(layouts[-1].grid)), fusion).reshape(tuple(layouts[0].grid))


def test_the_hand_built_two_stage_case():
    """Stage 0: a 4×4 grid, windows 2×2, block 0 unshifted, block 1 shifted by 1. Stage 1: the merged 2×2 grid, one
    window. One head everywhere; the attention is given in window form, each window's tokens row-major.

    Stage 1's block: every token attends merged token 0 only. Â = 0.5·A + 0.5·I; the mean of its rows is
    0.5·e0 + 0.125·1 = (0.625, 0.125, 0.125, 0.125). Shared by the 2×2 children: 0.15625 on the top-left 2×2 patches,
    0.03125 on the others.

    Block 1 (shifted by 1): its windows on the grid are the tiles displaced by (1, 1) and cut at the border: rows
    {0}, {1, 2}, {3} times columns {0}, {1, 2}, {3}; each token attends uniformly inside its tile, so a row r becomes
    0.5·(r's mean over the tile) + 0.5·r:
        0.15625  0.125     0.0625    0.03125
        0.125    0.109375  0.046875  0.03125
        0.0625   0.046875  0.046875  0.03125
        0.03125  0.03125   0.03125   0.03125
    Block 0 (unshifted 2×2 tiles): every token attends its tile's top-left token only, so each top-left token gets
    half of its own value plus half of its tile's sum, the other tokens half of their own:
        0.3359375  0.0625     0.1171875  0.015625
        0.0625     0.0546875  0.0234375  0.015625
        0.1171875  0.0234375  0.09375    0.015625
        0.015625   0.015625   0.015625   0.015625
    (which still sums to 1).
    """
    top_left = np.zeros((4, 4), np.float32)
    top_left[:, 0] = 1.0                                                     # every slot attends slot 0
    block0 = np.stack([top_left] * 4)[:, None]                               # (nW=4, H=1, 4, 4)
    half, third = np.float32(0.5), np.float32(0.25)
    pairs_0_2 = np.array([[half, 0, half, 0], [0, half, 0, half]] * 2, np.float32)   # slots {0, 2} and {1, 3}
    pairs_0_1 = np.array([[half, half, 0, 0]] * 2 + [[0, 0, half, half]] * 2, np.float32)  # slots {0, 1}, {2, 3}
    block1 = np.stack([
        np.full((4, 4), third, np.float32),   # window (0, 0) holds tokens (1,1) (1,2) (2,1) (2,2): one tile
        pairs_0_2,            # window (0, 1): (1,3) (1,0) (2,3) (2,0): tiles {(1,3),(2,3)}, {(1,0),(2,0)}
        pairs_0_1,            # window (1, 0): (3,1) (3,2) (0,1) (0,2): tiles {(3,1),(3,2)}, {(0,1),(0,2)}
        np.eye(4, dtype=np.float32),          # window (1, 1): (3,3) (3,0) (0,3) (0,0): four one-token tiles
    ])[:, None]
    stage1 = top_left[None, None]                                            # (1, 1, 4, 4)
    layouts = [Windows((4, 4), (2, 2), (0, 0)), Windows((4, 4), (2, 2), (1, 1)), Windows((2, 2), (2, 2), (0, 0))]
    got = rollout_map([block0, block1, stage1], layouts)
    want = np.array([[0.3359375, 0.0625, 0.1171875, 0.015625],
                     [0.0625, 0.0546875, 0.0234375, 0.015625],
                     [0.1171875, 0.0234375, 0.09375, 0.015625],
                     [0.015625, 0.015625, 0.015625, 0.015625]])
    np.testing.assert_allclose(got, want, rtol=1e-6)
    # each step on its own, as the docstring works it out
    row = rollout_map([stage1], layouts[2:])
    np.testing.assert_allclose(row.ravel(), [0.625, 0.125, 0.125, 0.125], rtol=1e-6)
    after_block1 = rollout_map([block1, stage1], layouts[1:])
    np.testing.assert_allclose(after_block1, [[0.15625, 0.125, 0.0625, 0.03125],
                                              [0.125, 0.109375, 0.046875, 0.03125],
                                              [0.0625, 0.046875, 0.046875, 0.03125],
                                              [0.03125] * 4], rtol=1e-6)


def test_rollout_of_a_network_is_the_dense_definition(swin, photo):
    """On a real network's attention: full (T, T) matrices of the dense network, Â = rownorm(0.5·mean_h A + 0.5·I)
    multiplied per stage, merges as M, the last stage's mean row (tests/dense_swin.chain)."""
    with torch.no_grad():
        capture = swin.forward_with_attention(photo)
        _, maps, geometry = dense_forward(swin, photo)
    got = rollout_map([a[0].numpy() for a in capture.attention], capture.layouts)
    stages, grids = [], []
    for dense, (grid, _, _), layout in zip(maps, geometry, capture.layouts):
        if layout.stage == len(stages):
            stages.append([])
            grids.append(grid)
        a = 0.5 * dense[0].double().mean(dim=0) + 0.5 * torch.eye(dense.shape[-1], dtype=torch.float64)
        stages[-1].append(a / a.sum(dim=-1, keepdim=True))
    want = chain(stages, grids).reshape(16, 16).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-7)     # float32 against float64 through six blocks
    assert np.isclose(got.sum(), 1.0, rtol=1e-5) and got.min() > 0
