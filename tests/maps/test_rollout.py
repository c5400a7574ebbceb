"""Attention rollout follows Abnar & Zuidema's formula: known answers, row sums, and an independent reference."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from viz.maps.layout import patch_token
from oracles import rollout_matrix
from viz.maps.rollout import (columns_through, discard_lowest, fuse_heads, fused_rollout_map, residual_steps,
                               rollout_map, rollout_product, rollout_rows, rows_through, with_residual)


def random_attention(L=4, H=3, T=10, seed=0) -> np.ndarray:
    """(L, H, T, T) softmax rows, like captured attention."""
    logits = np.random.default_rng(seed).normal(size=(L, H, T, T)) * 2
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)).astype(np.float32)


def reference_rollout(attn, fusion="mean", discard_ratio=0.0, start_layer=0, protect=0):
    """Straight from the paper, written independently with torch and loops: per block fuse heads, zero the
    lowest entries outside the protected token's row and column, Â = (A + I) / 2, divide each row by its sum,
    multiply on the left."""
    attn = torch.tensor(attn, dtype=torch.float64)
    T = attn.shape[-1]
    result = torch.eye(T, dtype=torch.float64)
    for layer in range(start_layer, attn.shape[0]):
        heads = attn[layer]
        fused = {"mean": heads.mean(0), "max": heads.max(0).values, "min": heads.min(0).values}[fusion].clone()
        candidates = [(fused[i, j].item(), i, j) for i in range(T) for j in range(T) if i != protect and j != protect]
        candidates.sort()
        for _, i, j in candidates[:int(discard_ratio * len(candidates))]:
            fused[i, j] = 0.0
        a = (fused + torch.eye(T, dtype=torch.float64)) / 2
        a = a / a.sum(dim=1, keepdim=True)
        result = a @ result
    return result.numpy()


@pytest.mark.parametrize("fusion", ["mean", "max", "min"])
@pytest.mark.parametrize("discard_ratio", [0.0, 0.7])
@pytest.mark.parametrize("start_layer", [0, 2])
@pytest.mark.parametrize("protect", [0, 7])
def test_rollout_matches_reference(fusion, discard_ratio, start_layer, protect):
    attn = random_attention()
    got = rollout_matrix(attn, fusion, discard_ratio, start_layer, protect=(protect,))
    np.testing.assert_allclose(got, reference_rollout(attn, fusion, discard_ratio, start_layer, protect), atol=1e-5)


def test_rollout_map_reads_the_token_row_over_patches():
    attn = random_attention(T=1 + 6)  # 1 prefix + 2×3 grid
    matrix = rollout_matrix(attn, "max", 0.5, protect=(0,))
    # float32 through different products (a row through the blocks, not R): the rounding of any CPU's kernels
    np.testing.assert_allclose(rollout_map(attn, 1, (2, 3), fusion="max", discard_ratio=0.5),
                               matrix[0, 1:].reshape(2, 3), rtol=1e-5)
    q = patch_token(1, 2, 1, (2, 3))
    matrix_q = rollout_matrix(attn, "max", 0.5, protect=(q,))
    np.testing.assert_allclose(rollout_map(attn, 1, (2, 3), token=q, fusion="max", discard_ratio=0.5),
                               matrix_q[q, 1:].reshape(2, 3), rtol=1e-5)


def test_rows_and_columns_through_the_blocks_are_those_of_the_product():
    fused = fuse_heads(random_attention(L=6, T=1 + 12, seed=2), "mean")
    for protect, start in (((0,), 0), ((5,), 2), ((), 1)):
        R = rollout_product(fused, 0.8, start, protect)
        steps = residual_steps(fused, 0.8, start, protect)
        weights = np.random.default_rng(1).random((3, 13)).astype(np.float32)
        np.testing.assert_allclose(rows_through(steps, weights), weights @ R, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(columns_through(steps, weights.T), R @ weights.T, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(rollout_rows(fused, weights[0], 0.8, start, protect), weights[0] @ R, rtol=1e-5)


def flat_discard(matrix, ratio, protect):
    """The discard by its definition: a candidate mask, its flat positions, a stable sort of their values."""
    out = np.array(matrix, dtype=np.float32)
    candidate = np.ones(out.shape, dtype=bool)
    candidate[list(protect), :] = False
    candidate[:, list(protect)] = False
    positions = np.flatnonzero(candidate)
    k = int(ratio * positions.size)
    out.flat[positions[np.argsort(out.flat[positions], kind="stable")[:k]]] = 0.0
    return out


@pytest.mark.parametrize("protect", [(0,), (7,), (), (0, 3)])
@pytest.mark.parametrize("tied", ["none", "rounded", "zeros"])
def test_the_discard_zeroes_the_lowest_entries_and_the_first_ties_in_reading_order(protect, tied):
    """The cached attention is float16, so entries tie at the cut ("rounded"), and underflowed entries make the cut
    0 ("zeros", held by many more than k): the first tied entries in row-major order fall, as a stable sort orders
    them; in place when asked."""
    m = random_attention(L=1, H=1, T=40, seed=5)[0, 0]
    if tied == "rounded":
        m = np.round(m * 500) / 500
        assert len(np.unique(m)) < m.size / 10
    if tied == "zeros":
        m = np.where(np.random.default_rng(0).random(m.shape) < 0.95, 0.0, m)
    expected = flat_discard(m, 0.9, protect)
    k = int(0.9 * (40 - len(protect)) ** 2)
    assert np.count_nonzero(expected != m) <= k   # (entries already 0 among the k fall without a change)
    np.testing.assert_array_equal(discard_lowest(m, 0.9, protect), expected)
    mine = np.array(m, dtype=np.float32)
    assert discard_lowest(mine, 0.9, protect, overwrite=True) is mine
    np.testing.assert_array_equal(mine, expected)
    np.testing.assert_array_equal(with_residual(mine.copy(), overwrite=True), with_residual(mine))


def test_of_entries_tied_at_the_cut_the_first_in_reading_order_fall():
    m = np.array([[9, 9, 9], [9, 1, 2], [2, 2, 3]], dtype=np.float32)   # protect 0: candidates [[1, 2], [2, 3]]
    np.testing.assert_array_equal(discard_lowest(m, 0.5, (0,)), [[9, 9, 9], [9, 0, 0], [2, 2, 3]])
    np.testing.assert_array_equal(discard_lowest(m, 0.5, ()), [[9, 9, 9], [9, 0, 0], [0, 0, 3]])   # k = 4


def test_rollout_from_cached_fused_heads_is_the_same():
    attn = random_attention(L=5, T=1 + 6)
    drop = np.zeros((2, 3), dtype=bool)
    drop[1, 1] = True
    for fusion in ("mean", "max", "min"):
        np.testing.assert_allclose(
            fused_rollout_map(fuse_heads(attn, fusion), 1, (2, 3), 0, 0.4, 2, drop),
            rollout_map(attn, 1, (2, 3), 0, fusion, 0.4, 2, drop), rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match="fused attention shape"):
        fused_rollout_map(attn, 1, (2, 3))


def test_identity_attention_rolls_out_to_identity_and_a_uniform_zero_map():
    T, L = 1 + 9, 5
    attn = np.broadcast_to(np.eye(T, dtype=np.float32), (L, 2, T, T))
    np.testing.assert_allclose(rollout_matrix(attn), np.eye(T), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(rollout_map(attn, 1, (3, 3)), np.zeros((3, 3)), atol=1e-7)  # nothing flows from patches


def test_uniform_attention_gives_uniform_map_with_closed_form_value():
    # Â = 0.5·U + 0.5·I with U² = U, so Â^L = 0.5^L·I + (1 - 0.5^L)·U: every patch gets (1 - 0.5^L) / T.
    T, L = 2 + 12, 4
    attn = np.full((L, 3, T, T), 1.0 / T, dtype=np.float32)
    np.testing.assert_allclose(rollout_map(attn, 2, (3, 4)), np.full((3, 4), (1 - 0.5 ** L) / T), rtol=1e-5)


def test_one_hot_attention_to_a_patch_lands_there():
    T, L, target = 1 + 16, 6, patch_token(2, 1, 1, (4, 4))
    attn = np.zeros((L, 2, T, T), dtype=np.float32)
    attn[:, :, :, target] = 1.0                        # every token attends only to patch (2, 1)
    m = rollout_map(attn, 1, (4, 4))
    assert np.unravel_index(m.argmax(), m.shape) == (2, 1)
    assert m[2, 1] == pytest.approx(1 - 0.5 ** L)      # the CLS keeps 0.5^L of itself
    assert np.count_nonzero(m) == 1


def test_chain_of_one_hot_attention_has_the_hand_computed_rollout():
    # top block: CLS -> a; middle: a -> b; bottom: b -> c; everything else attends to itself.
    grid, T = (3, 3), 1 + 9
    a, b, c = (patch_token(r, q, 1, grid) for r, q in [(0, 0), (1, 1), (2, 2)])
    attn = np.broadcast_to(np.eye(T, dtype=np.float32), (3, 1, T, T)).copy()
    for layer, (src, dst) in enumerate([(b, c), (a, b), (0, a)]):
        attn[layer, 0, src] = 0.0
        attn[layer, 0, src, dst] = 1.0
    expected = np.zeros(grid)
    expected[0, 0], expected[1, 1], expected[2, 2] = 0.25, 0.125, 0.125
    np.testing.assert_allclose(rollout_map(attn, 1, grid), expected, rtol=1e-5, atol=1e-7)
    # starting at the middle block the last hop (b -> c) is not part of the product
    expected_from_1 = np.zeros(grid)
    expected_from_1[0, 0], expected_from_1[1, 1] = 0.25, 0.25
    np.testing.assert_allclose(rollout_map(attn, 1, grid, start_layer=1), expected_from_1, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("fusion", ["mean", "max", "min"])
def test_rows_sum_to_one_after_discard(fusion):
    attn = random_attention(L=3, T=17)
    for matrix in attn.max(1) if fusion == "max" else attn.mean(1):
        np.testing.assert_allclose(with_residual(discard_lowest(matrix, 0.9)).sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(rollout_matrix(attn, fusion, 0.9).sum(-1), 1.0, rtol=1e-5)


def test_discard_keeps_protected_row_and_column_and_zeroes_exactly_the_lowest():
    m = random_attention(L=1, H=1, T=12, seed=3)[0, 0]
    out = discard_lowest(m, 0.5, protect=(4,))
    np.testing.assert_array_equal(out[4], m[4])
    np.testing.assert_array_equal(out[:, 4], m[:, 4])
    others = np.delete(np.delete(m, 4, 0), 4, 1).ravel()
    k = int(0.5 * others.size)
    zeroed = np.delete(np.delete(out, 4, 0), 4, 1).ravel() == 0
    assert zeroed.sum() == k
    assert others[zeroed].max() < others[~zeroed].min()   # the k lowest, no others


def test_dropped_patches_read_zero_and_no_flow_passes_through_them():
    grid, T = (2, 3), 1 + 6
    attn = random_attention(L=3, T=T, seed=5)
    drop = np.zeros(grid, dtype=bool)
    drop[0, 2] = drop[1, 0] = True
    got = rollout_map(attn, 1, grid, drop_patches=drop)
    keep = [0, 1, 2, 5, 6]                              # tokens of the patches left
    reduced = attn[:, :, keep][:, :, :, keep]
    expected = np.zeros(T)
    expected[keep] = reference_rollout(reduced)[0]
    np.testing.assert_allclose(got, expected[1:].reshape(grid), atol=1e-6)
    assert got[0, 2] == 0 and got[1, 0] == 0


def test_bad_input_gets_clear_messages():
    attn = random_attention(T=10)
    with pytest.raises(ValueError, match=r"Expected \(layers, heads, 17, 17\)"):
        rollout_map(attn, 1, (4, 4))
    with pytest.raises(ValueError, match="head fusion"):
        rollout_matrix(attn, "median")
    with pytest.raises(ValueError, match="discard_ratio"):
        rollout_matrix(attn, discard_ratio=1.0)
    with pytest.raises(ValueError, match="Layer 9"):
        rollout_matrix(attn, start_layer=9)
    with pytest.raises(ValueError, match="masked out"):
        rollout_map(attn, 1, (3, 3), token=1, drop_patches=np.eye(3, dtype=bool))
    with pytest.raises(ValueError, match="token mask shape"):
        rollout_map(attn, 1, (3, 3), drop_patches=np.zeros((9,), dtype=bool))
