"""Protects the explanation formulas (viz.explain): each on synthetic attention, gradients and activations
with an answer computed by hand, the method table's contract, and the contrast.

Layouts are tiny: T = 1 prefix token + a 1×2 patch grid unless said otherwise, so every number below can be
checked on paper.
"""
from __future__ import annotations

import numpy as np
import pytest

from viz.explain import METHODS, ExplainArrays, Explanation, contrast, families_of, method_names
from viz.explain.baselines import attention_map, random_map, rollout_map
from oracles import gae_matrix, grad_rollout_matrix
from viz.explain.gae import gae_map
from viz.explain.grad_rollout import grad_rollout_map
from viz.explain.gradcam import gradcam_map
from viz.explain.lrp import attnlrp_map
from viz.maps.attention import token_attention_map
from viz.maps.rollout import rollout_map as cls_rollout_map

CLS = np.array([1.0, 0.0, 0.0], dtype=np.float32)      # readout of a CLS model, T = 3


def arrays(attention=None, attention_grad=None, readout=CLS, grid=(1, 2), num_prefix=1, **kw) -> ExplainArrays:
    f = lambda a: None if a is None else np.asarray(a, dtype=np.float32)
    return ExplainArrays(num_prefix=num_prefix, grid=grid, readout=f(readout), attention=f(attention),
                         attention_grad=f(attention_grad), **kw)


# --- GAE -----------------------------------------------------------------------------------------------------

def test_gae_hand_computed_two_blocks_two_heads():
    """R ← R + mean_h((∇A ⊙ A)⁺)·R. Head 1's gradient is negative everywhere, so (∇A ⊙ A)⁺ = 0 for it and the
    head mean halves head 0's A (its gradient is 1):
        Ā₀ = ½·A₀ = [[.25 .125 .125] [0 .5 0] [0 0 .5]]           R₁ = I + Ā₀ = [[1.25 .125 .125] [0 1.5 0] [0 0 1.5]]
        Ā₁ row 0 = ½·[0 .75 .25] = [0 .375 .125]                   (Ā₁·R₁) row 0 = .375·[0 1.5 0] + .125·[0 0 1.5]
                                                                               = [0 .5625 .1875]
        R₂ row 0 = [1.25, .125 + .5625, .125 + .1875] = [1.25, .6875, .3125]  -> map [[.6875, .3125]]."""
    a0 = [[.5, .25, .25], [0, 1, 0], [0, 0, 1]]
    a1 = [[0, .75, .25], [.5, .5, 0], [0, 0, 1]]
    attention = np.array([[a0, a0], [a1, a1]])                    # (L=2, H=2, 3, 3)
    grad = np.stack([np.ones((2, 3, 3)), np.ones((2, 3, 3))])
    grad[:, 1] = -1.0                                             # head 1: negative contributions only
    np.testing.assert_allclose(gae_map(arrays(attention, grad)), [[0.6875, 0.3125]], rtol=1e-5, atol=1e-7)
    R = gae_matrix(attention, grad)
    np.testing.assert_allclose(R[0], [1.25, 0.6875, 0.3125], rtol=1e-5, atol=1e-7)


def test_gae_clips_each_head_before_the_mean():
    """GAE drops negative head contributions before averaging: heads +0.4 and -0.2 give 0.2, not (0.4-0.2)/2 = 0.1."""
    attention = np.zeros((1, 2, 3, 3))
    attention[0, :, 0, 1] = 1.0
    grad = np.zeros((1, 2, 3, 3))
    grad[0, 0, 0, 1], grad[0, 1, 0, 1] = 0.4, -0.2
    np.testing.assert_allclose(gae_map(arrays(attention, grad)), [[0.2, 0.0]], rtol=1e-5, atol=1e-7)


def test_gae_reads_out_through_the_readout_with_any_prefix():
    """Two prefix tokens (CLS, DIST) and a distilled readout ½(e₀ + e₁): the map is the mean of R's rows 0 and 1
    over the patch columns 2 and 3. One block with gradient 1: R = I + A."""
    A = np.array([[.1, .2, .3, .4], [.4, .3, .2, .1], [.25] * 4, [.25] * 4])
    R_rows = np.eye(4)[:2] + A[:2]
    expected = 0.5 * (R_rows[0] + R_rows[1])[2:]                  # [.25, .25]
    got = gae_map(arrays(A[None, None], np.ones((1, 1, 4, 4)), readout=[.5, .5, 0, 0], grid=(1, 2), num_prefix=2))
    np.testing.assert_allclose(got, [expected], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(expected, [0.25, 0.25])


# --- gradient-weighted rollout -------------------------------------------------------------------------------

def pairing_case():
    """Two blocks of uniform attention whose gradients point at different patches:
    block 0's gradient is 3 on entry (0, 1), block 1's on entry (0, 2)."""
    attention = np.full((2, 1, 3, 3), 1 / 3)
    grad = np.zeros((2, 1, 3, 3))
    grad[0, 0, 0, 1] = 3.0
    grad[1, 0, 0, 2] = 3.0
    return attention, grad


def test_grad_rollout_hand_computed_pairs_block_l_with_its_own_gradient():
    """Â₀ row 0 = rownorm(½·[0 1 0] + ½·[1 0 0]) = [.5 .5 0], other rows identity; Â₁ row 0 = [.5 0 .5].
    R = Â₁·Â₀: row 0 = .5·Â₀[0] + .5·Â₀[2] = [.25 .25 .5] -> map [[.25, .5]].
    vit-explain's pairing (its issue #6: block l with block L-1-l's gradient) gives R' = Â(g₀)·Â(g₁),
    row 0 = .5·[.5 0 .5] + .5·[0 1 0] = [.25 .5 .25] -> [[.5, .25]]: the wrong patch wins."""
    attention, grad = pairing_case()
    np.testing.assert_allclose(grad_rollout_map(arrays(attention, grad), discard_ratio=0.0), [[0.25, 0.5]], rtol=1e-5,
                               atol=1e-7)
    swapped = grad_rollout_map(arrays(attention, grad[::-1]), discard_ratio=0.0)
    np.testing.assert_allclose(swapped, [[0.5, 0.25]], rtol=1e-5, atol=1e-7)


def test_grad_rollout_fuses_heads_then_clips_and_normalises_rows():
    """vit-explain fuses (mean_h(A ⊙ ∇A))⁺: heads +0.4 and -0.2 give 0.1 (GAE would give 0.2). Then
    Â row 0 = rownorm(½·[0 .1 0] + ½·[1 0 0]) = [.5 .05 0]/.55 -> map [[.05/.55, 0]]."""
    attention = np.zeros((1, 2, 3, 3))
    attention[0, :, 0, 1] = 1.0
    grad = np.zeros((1, 2, 3, 3))
    grad[0, 0, 0, 1], grad[0, 1, 0, 1] = 0.4, -0.2
    np.testing.assert_allclose(grad_rollout_map(arrays(attention, grad), 0.0), [[0.05 / 0.55, 0.0]], rtol=1e-5,
                               atol=1e-7)


def test_grad_rollout_rows_sum_to_one_unlike_vit_explains_normalisation():
    """vit-explain #16: ``a / a.sum(dim=-1)`` divides column j by row j's sum. Here each row by its own sum.
    Fused matrix (one head, gradient 1) with rows summing to 1.0, 0.2 and 0.6."""
    A = np.array([[[[.2, .6, .2], [.1, .1, 0], [.3, 0, .3]]]])
    R = grad_rollout_matrix(A, np.ones_like(A), discard_ratio=0.0)
    np.testing.assert_allclose(R.sum(axis=1), [1, 1, 1], atol=1e-6)
    a = 0.5 * A[0, 0] + 0.5 * np.eye(3)
    vit_explain = a / a.sum(axis=-1)                    # what vit-explain computes (broadcast over the columns)
    np.testing.assert_allclose(R, a / a.sum(axis=-1, keepdims=True), atol=1e-6)
    assert np.abs(vit_explain.sum(axis=1) - 1).max() > 0.2   # its rows do not sum to 1


def test_grad_rollout_discard_keeps_the_readout_tokens_row_and_column():
    """discard 0.5 of the 4 patch-to-patch entries: the two lowest go, the CLS row and column stay."""
    A = np.array([[[[.1, .05, .05], [.01, .6, .3], [.02, .2, .5]]]])
    fused_after = grad_rollout_matrix(A, np.ones_like(A), discard_ratio=0.5)
    # patch-patch entries .6 .3 .2 .5 -> .3 and .2 discarded; CLS row [.1 .05 .05] and column [.01 .02] kept
    a = 0.5 * np.array([[.1, .05, .05], [.01, .6, 0], [.02, 0, .5]]) + 0.5 * np.eye(3)
    np.testing.assert_allclose(fused_after, a / a.sum(axis=1, keepdims=True), atol=1e-6)


# --- Grad-CAM ------------------------------------------------------------------------------------------------

def test_gradcam_hand_computed_prefix_tokens_ignored():
    """Tokens (T=4: CLS, register, 2 patches; D=2). Channel weights = gradients averaged over the two patches:
    [(1+3)/2, (0+2)/2] = [2, 1]; cam = [1·2 + 2·1, 3·2 - 1·1] = [4, 5]. The prefix rows (huge values and
    gradients) play no part. With the second patch's activation [-3, 1]: -6 + 1 = -5 -> ReLU -> 0."""
    tokens = np.array([[9., 9.], [-7., 8.], [1., 2.], [3., -1.]])
    grads = np.array([[50., 50.], [-40., 9.], [1., 0.], [3., 2.]])
    got = gradcam_map(ExplainArrays(2, (1, 2), tokens=tokens, tokens_grad=grads))
    np.testing.assert_allclose(got, [[4.0, 5.0]])
    tokens[3] = [-3., 1.]
    np.testing.assert_allclose(gradcam_map(ExplainArrays(2, (1, 2), tokens=tokens, tokens_grad=grads)), [[4.0, 0.0]])


def test_gradcam_non_square_grid_is_row_major():
    tokens = np.zeros((1 + 6, 1))
    tokens[1:, 0] = np.arange(6)                      # patch n has activation n
    grads = np.ones((7, 1))
    np.testing.assert_allclose(gradcam_map(ExplainArrays(1, (2, 3), tokens=tokens, tokens_grad=grads)),
                               [[0, 1, 2], [3, 4, 5]])


# --- the class-agnostic maps and the random baseline -----------------------------------------------------------

def test_attention_and_rollout_equal_the_existing_cls_maps():
    rng = np.random.default_rng(0)
    attn = rng.random((3, 2, 1 + 2 + 6, 1 + 2 + 6)).astype(np.float32)
    attn /= attn.sum(-1, keepdims=True)
    readout = np.zeros(9, dtype=np.float32)
    readout[0] = 1
    a = ExplainArrays(num_prefix=3, grid=(2, 3), readout=readout, attention=attn)
    np.testing.assert_allclose(attention_map(a), token_attention_map(attn, 3, (2, 3)), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(rollout_map(a), cls_rollout_map(attn, 3, (2, 3)), atol=1e-6)


def test_attention_of_a_mean_pooled_model_is_the_mean_of_the_patch_rows():
    """No prefix, 2 patches, readout ½·(e₀ + e₁): mean of the rows [.2 .8] and [.6 .4] = [.4 .6]."""
    A = np.array([[[[.2, .8], [.6, .4]]]])
    got = attention_map(ExplainArrays(0, (1, 2), readout=np.array([.5, .5]), attention=A))
    np.testing.assert_allclose(got, [[0.4, 0.6]], rtol=1e-5, atol=1e-7)


def test_random_map_is_seeded_uniform():
    a = random_map(ExplainArrays(1, (14, 20)))
    assert a.shape == (14, 20) and a.dtype == np.float32 and 0 <= a.min() and a.max() < 1
    np.testing.assert_array_equal(a, random_map(ExplainArrays(3, (14, 20))))   # same grid -> same map
    np.testing.assert_array_equal(a, np.random.default_rng(0).random((14, 20), dtype=np.float32))


def test_relevance_goes_onto_the_grid_row_major():
    got = attnlrp_map(ExplainArrays(1, (2, 3), relevance={"attnlrp": np.arange(6.0)}))
    np.testing.assert_array_equal(got, [[0, 1, 2], [3, 4, 5]])
    with pytest.raises(ValueError, match="attnlrp relevance pass"):
        attnlrp_map(ExplainArrays(1, (2, 3)))


def test_a_formula_says_which_arrays_are_missing():
    with pytest.raises(ValueError, match="attention_grad"):
        gae_map(arrays(np.ones((1, 1, 3, 3))))


# --- the table ------------------------------------------------------------------------------------------------

def test_the_table_lists_every_method_once_with_a_family():
    assert list(METHODS)[:2] == ["gae", "attnlrp"]
    assert {"gae", "attnlrp", "cp_lrp", "grad_rollout", "gradcam", "attention", "rollout", "random"} == set(METHODS)
    assert all(m.name == name and callable(m.formula) and m.reference for name, m in METHODS.items())
    assert {n for n, m in METHODS.items() if not m.class_specific} == {"attention", "rollout", "random"}
    assert families_of(["gae", "gradcam", "rollout", "attnlrp"]) == ["gradient", "attnlrp"]  # rollout rides along
    assert families_of(["rollout", "random"]) == ["attention", "none"]


def test_method_names_parse_and_unknown_names_list_what_exists():
    assert method_names("gae, gradcam,gae") == ["gae", "gradcam"]
    with pytest.raises(ValueError) as error:
        method_names("gae,saliency")
    assert "'saliency'" in str(error.value) and all(name in str(error.value) for name in METHODS)


def test_contrast_is_a_minus_b_and_zero_for_the_same_maps():
    a = Explanation({"index": 1, "name": "a"}, {"gae": np.array([[1., 3.]], dtype=np.float32)}, (1, 2), 1, "", 0, 0)
    b = Explanation({"index": 2, "name": "b"}, {"gae": np.array([[2., 1.]], dtype=np.float32)}, (1, 2), 1, "", 0, 0)
    np.testing.assert_array_equal(contrast(a, b, "gae"), [[-1., 2.]])
    np.testing.assert_array_equal(contrast(a, a, "gae"), [[0., 0.]])
    assert a.nbytes == 8


def test_every_family_is_one_record_that_the_runner_and_the_trust_checks_read():
    from vit.explain import RULE_SETS
    from viz.explain.explainer import PASSES
    from viz.explain.methods import FAMILIES, served_by

    for family in FAMILIES.values():
        assert family.model_pass in PASSES and set(family.serves) <= set(FAMILIES), family.name
        assert family.rules is None or family.rules in RULE_SETS, family.name
    assert {m.family for m in METHODS.values()} <= set(FAMILIES)
    assert served_by("gradient") == {"gradient", "attention"} and served_by("attnlrp") == {"attnlrp"}
    assert families_of(["gae", "attention"]) == ["gradient"] and not FAMILIES["none"].runs_model


def test_a_picked_target_is_resolved_by_one_rule():
    from types import SimpleNamespace

    from vit.explain import ClassTarget
    from viz.explain.explainer import resolve_target

    classifier = SimpleNamespace(labels=["cat", "dog"], text=None)
    assert resolve_target(classifier, "dog") == ClassTarget(1, "dog") == resolve_target(classifier, 1, text=False)
    assert resolve_target(classifier, None) is None                       # the top-1 class
    with pytest.raises(ValueError, match="unicorn"):
        resolve_target(classifier, "unicorn")
    with pytest.raises(ValueError):
        resolve_target(classifier, "a photo of a cat", ["a photo of a cat"], text=True)   # no text tower
