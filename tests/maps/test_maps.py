"""Raw attention maps read the right entries for any token layout; DINO's threshold mask holds its share;
high-norm tokens are flagged (synthetic norms here, the real AugReg checkpoint in test_token_norms.py)."""
from __future__ import annotations

import numpy as np
import pytest

from viz.maps.attention import all_heads_maps, patch_query_maps, rollout_query_maps, threshold_mask, token_attention_map
from viz.maps.layout import patch_token, pixel_to_patch, to_grid
from viz.maps.norms import artifact_mask, flag_high_norm, token_norm_maps
from oracles import rollout_matrix
from viz.maps.rollout import fuse_heads

GRID, PREFIX = (3, 4), 2  # non-square grid, CLS + DIST
T = PREFIX + 12


@pytest.fixture
def attn() -> np.ndarray:
    logits = np.random.default_rng(1).normal(size=(3, 2, T, T))
    e = np.exp(logits)
    return (e / e.sum(-1, keepdims=True)).astype(np.float32)


def test_patch_tokens_are_row_major_after_the_prefix():
    assert patch_token(0, 0, PREFIX, GRID) == 2
    assert patch_token(1, 0, PREFIX, GRID) == 2 + 4
    assert patch_token(2, 3, PREFIX, GRID) == T - 1
    assert patch_token(-1, -1, PREFIX, GRID) == T - 1
    np.testing.assert_array_equal(to_grid(np.arange(T), PREFIX, GRID), np.arange(2, T).reshape(3, 4))
    with pytest.raises(ValueError, match="outside the 3×4 grid"):
        patch_token(3, 0, PREFIX, GRID)


def test_pixel_to_patch_for_any_display_size():
    assert pixel_to_patch(0, 0, (64, 48), GRID) == (0, 0)
    assert pixel_to_patch(63.9, 47.9, (64, 48), GRID) == (2, 3)
    assert pixel_to_patch(17, 16, (64, 48), GRID) == (1, 1)         # 16 px per patch
    assert pixel_to_patch(34, 32, (128, 96), GRID) == (1, 1)        # the same point on a 2× display
    assert pixel_to_patch(-5, 500, (64, 48), GRID) == (2, 0)        # clamped


def test_cls_attention_map_is_the_cls_row_over_patches(attn):
    np.testing.assert_allclose(token_attention_map(attn, PREFIX, GRID, layer=1, head=0),
                               attn[1, 0, 0, PREFIX:].reshape(GRID))
    np.testing.assert_allclose(token_attention_map(attn, PREFIX, GRID, layer=-1),
                               attn[2, :, 0, PREFIX:].mean(0).reshape(GRID), rtol=1e-5)
    np.testing.assert_allclose(token_attention_map(attn, PREFIX, GRID, layer=0, head=1, token=1),
                               attn[0, 1, 1, PREFIX:].reshape(GRID))
    with pytest.raises(ValueError, match="Head 2 does not exist"):
        token_attention_map(attn, PREFIX, GRID, head=2)


def test_all_heads_maps(attn):
    maps = all_heads_maps(attn, PREFIX, GRID)
    assert maps.shape == (3, 2, 3, 4)
    np.testing.assert_allclose(maps[2, 1], attn[2, 1, 0, PREFIX:].reshape(GRID))


def test_patch_query_row_and_column(attn):
    q = patch_token(1, 2, PREFIX, GRID)
    row, column = patch_query_maps(attn, PREFIX, GRID, 1, 2, layer=0, head=1)
    np.testing.assert_allclose(row, attn[0, 1, q, PREFIX:].reshape(GRID))
    np.testing.assert_allclose(column, attn[0, 1, PREFIX:, q].reshape(GRID))
    matrix = rollout_matrix(attn, protect=(q,))
    row, column = rollout_query_maps(fuse_heads(attn), PREFIX, GRID, 1, 2)
    # R's row and column, each a vector through the blocks instead of R itself: equal up to float32 rounding
    np.testing.assert_allclose(row, matrix[q, PREFIX:].reshape(GRID), rtol=1e-5)
    np.testing.assert_allclose(column, matrix[PREFIX:, q].reshape(GRID), rtol=1e-5)


def test_threshold_mask_known_answers():
    v = np.array([[0.5, 0.2], [0.2, 0.1]])
    np.testing.assert_array_equal(threshold_mask(v, 0.6), [[True, True], [False, False]])   # 0.5 + 0.2 ≥ 0.6
    np.testing.assert_array_equal(threshold_mask(v, 0.5), [[True, False], [False, False]])  # 0.5 reaches 0.5
    np.testing.assert_array_equal(threshold_mask(v, 0.95), [[True, True], [True, True]])
    assert not threshold_mask(np.zeros((2, 2))).any()
    with pytest.raises(ValueError, match="share"):
        threshold_mask(v, 0.0)


@pytest.mark.parametrize("share", [0.3, 0.6, 0.9])
def test_threshold_mask_is_the_smallest_set_holding_the_share(share):
    v = np.random.default_rng(2).random((14, 14)) ** 4
    mask = threshold_mask(v, share)
    total = v.sum()
    assert v[mask].sum() >= share * total
    assert v[mask].sum() - v[mask].min() < share * total     # without its smallest patch it falls short
    assert v[mask].min() >= v[~mask].max()                   # the highest patches


def test_high_norm_patches_are_flagged_per_block():
    rng = np.random.default_rng(0)
    norms = rng.uniform(9, 11, size=(4, PREFIX + 12)).astype(np.float32)
    norms[2:, PREFIX + 0] = 200.0        # patch (0, 0) from block 2 on
    norms[3, PREFIX + 7] = 35.0          # patch (1, 3) in the last block
    norms[:, 0] = 500.0                  # a prefix token is never a patch flag
    flags = flag_high_norm(norms, PREFIX, GRID)
    assert flags.shape == (4, 3, 4)
    assert not flags[:2].any()
    assert flags[2].sum() == 1 and flags[2, 0, 0]
    assert flags[3].sum() == 2 and flags[3, 1, 3]
    assert artifact_mask(flags).sum() == 2
    assert artifact_mask(flags, from_layer=3).sum() == 2
    np.testing.assert_allclose(token_norm_maps(norms, PREFIX, GRID)[3, 1, 3], 35.0)
    with pytest.raises(ValueError, match="ratio"):
        flag_high_norm(norms, PREFIX, GRID, ratio=0.5)
