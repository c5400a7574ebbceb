"""Figure 7 of the ViT paper: mean attention distance, position-embedding similarity, filter components."""
from __future__ import annotations

import math

import numpy as np
import pytest
import vit
from viz.analysis import model_arrays
from viz.maps.distance import mean_attention_distance, patch_distances, uniform_distance
from viz.maps.embeddings import embedding_filter_components, position_similarity

# Uniform attention on a 3×3 grid, distances in patches from each query to all 9 patches:
#   corner (×4): 1, 1, 2, 2, √2, √5, √5, √8 -> 6 + 3√2 + 2√5
#   edge   (×4): 1, 1, 1, 2, √2, √2, √5, √5 -> 5 + 2√2 + 2√5
#   centre (×1): 1, 1, 1, 1, √2, √2, √2, √2 -> 4 + 4√2
SUM_3x3 = (4 * (6 + 3 * math.sqrt(2) + 2 * math.sqrt(5)) + 4 * (5 + 2 * math.sqrt(2) + 2 * math.sqrt(5))
           + (4 + 4 * math.sqrt(2))) / 9            # mean over queries of the summed distances, in patches


def test_patch_distances_in_pixels():
    d = patch_distances((2, 3), 16)
    assert d.shape == (6, 6)
    assert d[0, 5] == pytest.approx(16 * math.sqrt(1 + 4))    # (0, 0) to (1, 2)
    assert d[1, 4] == 16 and d[2, 2] == 0
    np.testing.assert_array_equal(d, d.T)
    # uniform attention over the 6 patches: the mean of the 36 ordered pairs' distances: 6 zeros, 14 one step
    # apart (8 across, 6 down), 4 two steps across, 8 diagonal (√2), 4 a knight's move (√5)
    hand = 16 * (14 * 1 + 4 * 2 + 8 * math.sqrt(2) + 4 * math.sqrt(5)) / 36
    assert uniform_distance((2, 3), 16) == pytest.approx(hand)


@pytest.mark.parametrize("grid", [(1, 1), (2, 3), (7, 5), (14, 14), (37, 22)])
def test_the_uniform_distance_by_offsets_is_the_mean_of_every_pairs_distance(grid):
    every_pair = patch_distances(grid, 14).astype(np.float64).mean()
    assert uniform_distance(grid, 14) == pytest.approx(every_pair, rel=1e-6)   # float32 table entries: 1e-7 each


def test_identity_attention_has_zero_distance():
    T = 1 + 9
    attn = np.broadcast_to(np.eye(T, dtype=np.float32), (2, 3, T, T))
    np.testing.assert_array_equal(mean_attention_distance(attn, 1, (3, 3), 16), np.zeros((2, 3)))


@pytest.mark.parametrize("num_prefix", [0, 1, 5])
def test_uniform_attention_on_3x3_has_the_hand_computed_distance(num_prefix):
    T, P = num_prefix + 9, 16
    attn = np.full((1, 2, T, T), 1.0 / T, dtype=np.float32)
    expected = P * SUM_3x3 / T                 # attention on prefix tokens counts as distance 0 (not renormalised)
    np.testing.assert_allclose(mean_attention_distance(attn, num_prefix, (3, 3), P), expected, rtol=1e-5)
    np.testing.assert_allclose(mean_attention_distance(attn, num_prefix, (3, 3), P, renormalise=True),
                               P * SUM_3x3 / 9, rtol=1e-5)


def test_distance_follows_each_head():
    # head 0 attends to the patch to its right (16 px), head 1 to itself (0 px); a 1×4 grid, no prefix
    attn = np.zeros((1, 2, 4, 4), dtype=np.float32)
    attn[0, 0, [0, 1, 2, 3], [1, 2, 3, 2]] = 1.0
    attn[0, 1] = np.eye(4)
    np.testing.assert_allclose(mean_attention_distance(attn, 0, (1, 4), 16), [[16.0, 0.0]], rtol=1e-5)


def test_position_similarity_drops_the_prefix_and_has_unit_diagonal():
    rng = np.random.default_rng(0)
    patches = rng.normal(size=(6, 8))
    pos = np.concatenate([rng.normal(size=(2, 8)) * 100, patches])[None]   # (1, 2 + 6, 8) with CLS, DIST
    sim = position_similarity(pos, (2, 3))
    assert sim.shape == (6, 6)
    np.testing.assert_allclose(np.diag(sim), 1.0, rtol=1e-5)
    np.testing.assert_allclose(sim, sim.T, atol=1e-6)
    unit = patches / np.linalg.norm(patches, axis=1, keepdims=True)
    np.testing.assert_allclose(sim, unit @ unit.T, atol=1e-6)
    with pytest.raises(ValueError, match="Too few position embeddings"):
        position_similarity(patches, (3, 3))


def test_filter_components_recover_planted_components():
    # 64 filters (3×4×4) built from 3 orthonormal patterns with decreasing variance + tiny noise
    rng = np.random.default_rng(0)
    basis, _ = np.linalg.qr(rng.normal(size=(48, 3)))
    coef = rng.normal(size=(64, 3)) * np.array([10.0, 5.0, 2.0])
    weight = (coef @ basis.T + 1e-4 * rng.normal(size=(64, 48))).reshape(64, 3, 4, 4)
    tiles, variance = embedding_filter_components(weight, count=3)
    assert tiles.shape == (3, 4, 4, 3) and tiles.min() >= 0 and tiles.max() <= 1
    assert variance[0] > variance[1] > variance[2]
    for k in range(3):   # each tile is its planted pattern, up to sign and display scaling
        tile = tiles[k].transpose(2, 0, 1).ravel()
        assert abs(np.corrcoef(tile, basis[:, k])[0, 1]) > 0.999


def test_filter_components_of_a_model_have_the_paper_layout():
    model = vit.VisionTransformer(vit.variant("tiny", depth=1, patch_size=14, img_size=224))
    tiles, variance = embedding_filter_components(model_arrays(model).patch_weight)
    assert tiles.shape == (28, 14, 14, 3)
    assert variance.shape == (28,) and np.all(np.diff(variance) <= 1e-7)


def test_real_position_embeddings_are_most_similar_to_their_neighbours(real_weights_dir):
    # The paper's observation: closer patches have more similar position embeddings.
    loaded = vit.load(real_weights_dir / "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors")
    m = model_arrays(loaded.model)
    sim = position_similarity(m.pos_embed, m.native_grid)
    d = patch_distances(m.native_grid, 1)
    assert sim[d == 1].mean() > sim[(d > 0) & (d < 3)].mean() > sim[d >= 7].mean()
    assert all(np.argsort(-sim[i])[1] in np.flatnonzero(d[i] < 2) for i in range(sim.shape[0]))  # nearest = a neighbour
