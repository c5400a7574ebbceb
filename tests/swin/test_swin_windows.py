"""Protects the window attention as the views read it: the capture's windows, expanded onto their stage
(viz.maps.windows.expand), are exactly the attention of a dense re-implementation of the same network (every token
attends over its whole stage, masked to its displaced window: tests/dense_swin.py), block by block, v1 and v2, with
the same logits; rows go through windows as through the expanded matrix; the merge's adjoint is r·M; attention
distance in pixels and token norms are those of the dense computation."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from dense_swin import dense_forward, merge_matrix
from vit.architecture import share_down, sum_up
from viz.maps import windows as hierarchy
from viz.maps.distance import patch_distances


@pytest.fixture(scope="module")
def captured(swin):
    x = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        capture = swin.forward_with_attention(x, return_token_norms=True)
        dense_logits, dense_maps, geometry = dense_forward(swin, x)
    return x, capture, dense_logits, dense_maps, geometry


def test_the_dense_network_is_the_same_network(swin, captured):
    x, capture, dense_logits, _, geometry = captured
    torch.testing.assert_close(dense_logits, capture.output, rtol=1e-5, atol=1e-5)
    # the layouts are the papers' rule, written out independently in dense_swin
    assert [(lay.grid, lay.window, lay.shift) for lay in capture.layouts] == geometry
    assert [lay.shift for lay in capture.layouts] == [(0, 0), (2, 2), (0, 0), (2, 2), (0, 0), (0, 0)]


def test_expanded_windows_are_the_dense_attention(captured):
    _, capture, _, dense_maps, _ = captured
    for block, (windows, layout, dense) in enumerate(zip(capture.attention, capture.layouts, dense_maps)):
        expanded = hierarchy.expand(windows[0].numpy(), layout)                # (H, T, T)
        T = layout.grid[0] * layout.grid[1]
        assert expanded.shape == (windows.shape[2], T, T)
        np.testing.assert_allclose(expanded, dense[0].numpy(), atol=1e-5, err_msg=f"block {block}")  # as the parity
        np.testing.assert_allclose(expanded.sum(axis=-1), 1.0, atol=1e-5)    # every row a distribution
        outside = dense[0].numpy() == 0          # other windows; a pair the roll brought together keeps its e^-100
        assert np.abs(expanded[outside]).max(initial=0.0) < 1e-30


def test_rows_go_through_windows_as_through_the_expanded_matrix(captured):
    _, capture, _, _, _ = captured
    rng = np.random.default_rng(0)
    for windows, layout in zip(capture.attention, capture.layouts):
        fused = hierarchy.fuse_windows(windows[0].numpy())
        rows = rng.random((3, layout.grid[0] * layout.grid[1]), dtype=np.float32)
        np.testing.assert_allclose(hierarchy.rows_through(rows, fused, layout),
                                   rows @ hierarchy.expand(fused, layout), rtol=1e-5, atol=1e-6)


def test_window_index_reads_the_roll():
    """Window (0, 1) of a 4×4 grid with 2×2 windows shifted by 1 holds the tokens the roll brought to rolled rows
    0-1 and columns 2-3: rows 1, 2 and columns 3, 0 of the grid."""
    index = hierarchy.window_index((4, 4), (2, 2), (1, 1))
    assert index.tolist()[1] == [1 * 4 + 3, 1 * 4 + 0, 2 * 4 + 3, 2 * 4 + 0]
    assert sorted(index.reshape(-1).tolist()) == list(range(16))            # every token in exactly one window


def test_the_merge_adjoint_is_r_times_M():
    rng = np.random.default_rng(1)
    for grid in [(4, 4), (2, 6)]:
        parent = (grid[0] // 2, grid[1] // 2)
        r = rng.random((2, parent[0] * parent[1]), dtype=np.float32)
        c = rng.random(grid[0] * grid[1], dtype=np.float32)
        M = merge_matrix(grid).numpy()
        np.testing.assert_allclose(share_down(r, parent, grid), r @ M, atol=1e-7)
        np.testing.assert_allclose(share_down(r, parent, grid).sum(-1), r.sum(-1), rtol=1e-6)  # mass kept
        assert np.isclose(share_down(r[0], parent, grid) @ c, r[0] @ (M @ c), rtol=1e-5)  # <rM, c> = <r, Mc>
        np.testing.assert_allclose(sum_up(share_down(r, parent, grid), grid, parent), r, rtol=1e-6)


def test_attention_distance_in_pixels_and_token_norms_are_the_dense_ones(swin, captured):
    x, capture, _, dense_maps, _ = captured
    for windows, layout, dense in zip(capture.attention, capture.layouts, dense_maps):
        got = hierarchy.attention_distance(windows[0].numpy(), layout, layout.token_size)
        pixels = patch_distances(layout.grid, layout.token_size)               # (T, T) between token centres
        want = np.einsum("hij,ij->hi", dense[0].numpy(), pixels).mean(axis=1)
        np.testing.assert_allclose(got, want, rtol=1e-5)
        assert layout.token_size == 2 * 2 ** layout.stage                       # patch 2, doubled per merge
    assert [n.shape for n in capture.token_norms] == [(1,) + lay.grid for lay in capture.layouts]
    with torch.no_grad():
        tokens = [t for t, _, _ in swin.blocks_with_attention(x)]
    for norms, t in zip(capture.token_norms, tokens):
        torch.testing.assert_close(norms, t.norm(dim=-1))


def test_a_wrong_window_shape_is_refused():
    with pytest.raises(ValueError, match=r"Expected \(4, …, 4, 4\) for 2×2 windows on a 4×4 grid"):
        hierarchy.expand(np.zeros((3, 4, 4)), hierarchy.Windows((4, 4), (2, 2), (0, 0)))
