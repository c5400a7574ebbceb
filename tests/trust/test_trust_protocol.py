"""Protects the faithfulness protocol and the sanity formulas (viz.trust) and their runner (viz.trust.job):
exact curves and AUCs on a hand-built model whose class depends on known patches, the order and rounding rules,
Spearman against scipy, the report's ranking and JSON, the steps' size and progress, the cache, every family.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

import vit
from tiny_models import FAMILIES, tiny
from viz.cache import Cache
from viz.trust.job import TrustJob, cache_key, first_fit, photo_key, trust_report
from viz.explain import METHODS
from viz.trust import (FLAG_THRESHOLD, FRACTIONS, Faithfulness, MethodTrust, TrustReport, average_ranks, flagged,
                       keep_sets, patch_order, removed_counts, spearman)
from vit.explain import ClassTarget

A = 2.0                      # the class-0 logit is A × (evidence patches − counter-evidence patches) / kept patches
EVIDENCE, AGAINST = (1, 6), (8,)


def evidence_model() -> vit.VisionTransformer:
    """2×5 patches, one block that adds nothing (its attention's and MLP's output projections are zero), mean
    pooling, 2 classes. Patch i becomes the token v_i·[1, −1] (v_i its mean red value); the LayerNorm turns it into
    sign(v_i)·[1, −1] (0 for a black patch), the mean over the K kept patches is c/K·[1, −1] with c = (#bright −
    #dark patches kept), and the head gives logits (A·c/K, 0): the class-0 probability is sigmoid(A·c/K), 1/2
    when nothing is kept."""
    model = vit.VisionTransformer(vit.ViTConfig(img_size=(16, 40), patch_size=8, embed_dim=2, depth=1, num_heads=1,
                                                mlp_dim=4, num_classes=2, class_token=False, readout="mean",
                                                pos_embed_kind="none")).eval()
    with torch.no_grad():
        for projection in (model.blocks[0].attn.proj, model.blocks[0].mlp.fc2):
            projection.weight.zero_()
            projection.bias.zero_()
        model.patch_embed.proj.weight.zero_()
        model.patch_embed.proj.weight[0, 0] = 1 / 64        # token[0] = mean red value of the patch
        model.patch_embed.proj.weight[1, 0] = -1 / 64       # token[1] = −token[0]
        model.patch_embed.proj.bias.zero_()
        model.head.weight.copy_(torch.tensor([[A, 0.0], [0.0, 0.0]]))
        model.head.bias.zero_()
    return model


def evidence_image() -> torch.Tensor:
    x = torch.zeros(1, 3, 16, 40)
    for i in EVIDENCE + AGAINST:
        r, c = divmod(i, 5)
        x[0, 0, 8 * r:8 * r + 8, 8 * c:8 * c + 8] = 10.0 if i in EVIDENCE else -10.0
    return x


def expected(kept: list[int]) -> float:
    if not kept:
        return 0.5
    c = sum(i in EVIDENCE for i in kept) - sum(i in AGAINST for i in kept)
    return 1 / (1 + math.exp(-A * c / len(kept)))


def test_the_curves_and_aucs_of_a_hand_built_model_are_exact():
    """The true map [0,1,0,0,0,0,1,0,−1,0] orders the patches 1, 6, then the zeros in index order, then 8. With
    N = 10 each fraction removes exactly 10·f of them. Deletion: 0.2 → sigmoid(0.2) (1 − 1 evidence over 10),
    then 0.5 once patch 1 is gone (c = 0), sigmoid(−2/8) once 6 is gone, …, sigmoid(−2) with patch 8 alone,
    and 1/2 with nothing kept."""
    relevance = np.zeros((2, 5))
    relevance.flat[list(EVIDENCE)], relevance.flat[list(AGAINST)] = 1.0, -1.0
    order = [1, 6, 0, 2, 3, 4, 5, 7, 9, 8]
    assert patch_order(relevance).tolist() == order
    deletion = [expected(order[r:]) for r in range(11)]
    insertion = [expected(order[:r]) for r in range(11)]
    assert deletion[:3] == [1 / (1 + math.exp(-0.2)), 0.5, 1 / (1 + math.exp(0.25))] and deletion[-2:] == \
        [1 / (1 + math.exp(2.0)), 0.5]
    assert insertion[1] == 1 / (1 + math.exp(-2.0)) and insertion[10] == deletion[0]

    model, x = evidence_model(), evidence_image()
    report = trust_report(model, x, ClassTarget(0), [], maps={"true": relevance})
    assert list(report.methods) == ["true"]
    f = report.methods["true"].faithfulness
    np.testing.assert_allclose(f.deletion, deletion, rtol=0, atol=1e-6)
    np.testing.assert_allclose(f.insertion, insertion, rtol=0, atol=1e-6)
    assert f.deletion_auc == pytest.approx(np.trapezoid(deletion, FRACTIONS), abs=1e-6)
    assert f.insertion_auc == pytest.approx(np.trapezoid(insertion, FRACTIONS), abs=1e-6)
    assert f.deletion_auc == pytest.approx(sum((deletion[i] + deletion[i + 1]) / 2 * 0.1 for i in range(10)), abs=1e-6)


def test_the_order_breaks_ties_by_index_and_the_counts_round_half_to_even():
    assert patch_order(np.array([[0.5, 1.0], [0.5, 1.0]])).tolist() == [1, 3, 0, 2]
    assert removed_counts(10) == list(range(11))
    assert removed_counts(5) == [0, 0, 1, 2, 2, 2, 3, 4, 4, 4, 5]          # 0.5 → 0, 1.5 → 2, 2.5 → 2, 4.5 → 4
    assert removed_counts(196)[1] == 20 and removed_counts(196)[5] == 98
    sets = keep_sets(np.arange(5.0)[None])
    assert sets["deletion"][2].tolist() == [0, 1, 2, 3] and sets["insertion"][2].tolist() == [4]
    with pytest.raises(ValueError, match="NaN"):
        patch_order(np.array([np.nan, 1.0]))


def test_spearman_is_scipys_with_ties_and_the_flag_threshold():
    rng = np.random.default_rng(0)
    for _ in range(20):
        a, b = rng.integers(0, 4, 30).astype(float), rng.normal(size=30)       # many ties in a
        assert spearman(a, b) == pytest.approx(stats.spearmanr(a, b).statistic, abs=1e-12)
        np.testing.assert_allclose(average_ranks(a), stats.rankdata(a, method="average"))
    assert spearman(np.ones(4), np.ones(4)) == 1.0 and spearman(np.ones(4), np.arange(4.0)) == 0.0
    assert spearman(np.arange(9.0), -np.arange(9.0)) == pytest.approx(-1.0, abs=1e-12)
    assert flagged([0.2, 0.9, FLAG_THRESHOLD]) and not flagged([1.0, 0.4]) and not flagged([])


def _report() -> TrustReport:
    grid = np.arange(4.0).reshape(2, 2)
    f = lambda d, i: Faithfulness.from_curves([d] * 11, [i] * 11)
    methods = {"a": MethodTrust("a", grid, f(0.5, 0.6), (0.9, 0.8)), "b": MethodTrust("b", -grid, f(0.2, 0.7)),
               "c": MethodTrust("c", grid, f(0.4, 0.45), (0.3, 0.1))}
    return TrustReport({"index": 3, "name": "x"}, 0.9, methods, f(0.45, 0.55))


def test_the_report_ranks_scores_against_random_correlates_and_writes_the_cli_json():
    r = _report()
    assert r.ranking() == ["b", "a", "c"]                                   # insertion − deletion: 0.5, 0.1, 0.05
    assert r.gains("b") == pytest.approx({"deletion_gain": 0.25, "insertion_gain": 0.15})
    names, m = r.correlations()
    np.testing.assert_allclose(m, [[1, -1, 1], [-1, 1, -1], [1, -1, 1]])
    assert r.methods["a"].flagged is True and r.methods["c"].flagged is False and r.methods["b"].flagged is None
    j = r.as_json()
    assert set(j) == {"faithfulness", "sanity"} and list(j["sanity"]) == ["a", "c"]
    assert set(j["faithfulness"]["a"]) == {"deletion_auc", "insertion_auc", "deletion", "insertion", "auc_error"}
    assert len(j["faithfulness"]["a"]["deletion"]) == 11


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_gets_curves_for_every_method(family):
    model = tiny(**FAMILIES[family])
    x = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    r = trust_report(model, x)                                           # every method this model can run
    assert list(r.methods) == list(METHODS)                              # the LRP rules cover every family
    with torch.no_grad():
        p = float(model(x).softmax(1).max())
    for m in r.methods.values():
        d, i = m.faithfulness.deletion, m.faithfulness.insertion
        assert len(d) == len(i) == 11 and all(0 <= v <= 1 for v in d + i)
        assert d[0] == pytest.approx(p, abs=1e-5) and i[-1] == pytest.approx(p, abs=1e-5)   # the whole photo
        assert d[-1] == i[0]                                                                   # nothing kept


def test_steps_stay_within_one_forward_report_progress_and_the_cache_skips_known_methods(monkeypatch):
    model = tiny()
    x = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    calls, seen = [], []
    real = __import__("viz.trust.job", fromlist=["forward_packed"]).forward_packed

    def counting(m, xx, rows):
        calls.append([sum(1 + len(keep) for keep in row) for row in rows])   # tokens of each row
        return real(m, xx, rows)

    monkeypatch.setattr("viz.trust.job.forward_packed", counting)
    cache = Cache(None, 2**20)
    r = trust_report(model, x, None, ["gae", "rollout"], progress=lambda d, t, w: seen.append((d, t)), sanity=True,
                     cache=cache, model_id="tiny", rows_per_step=1)
    assert all(len(rows) == 1 for rows in calls)                          # one row per step, as the page runs it
    assert max(max(rows) for rows in calls) <= 17 + 1                     # ≤ one forward's tokens (1 + 16) + a prefix
    # 3 maps × 18 inner sequences (16 patches: counts 0 2 3 5 6 8 10 11 13 14 16) + the prefix alone, no whole
    # photo (gae's pass gave its probability): 55 sequences of 1 + K tokens packed into 18-token rows
    assert sum(sum(rows) for rows in calls) == 3 * 2 * sum(1 + K for K in (14, 13, 11, 10, 8, 6, 5, 3, 2)) + 1
    assert len(calls) == 27 + 1                                            # pairs (K, 16 − K) fill a row; + the prefix
    assert [d for d, _ in seen] == list(range(1, len(seen) + 1)) and {t for _, t in seen} == {len(seen)}
    assert len(r.methods["gae"].sanity) == 2 and len(cache) == 3          # gae, rollout and the random baseline
    key = cache_key(photo_key(x), "tiny", r.target["index"], "gae")
    assert cache.get(key) is r.methods["gae"]
    calls.clear()
    again = trust_report(model, x, None, ["gae", "rollout"], sanity=True, cache=cache, model_id="tiny")
    assert calls == [] and again.methods["gae"] is r.methods["gae"]        # nothing ran again


def test_curve_lengths_are_the_token_counts_the_curves_run(monkeypatch):
    """bench.run's lower bound on the curves' time counts ``curve_lengths``: it must be what really runs."""
    model = tiny()
    x = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    ran = []
    real = __import__("viz.trust.job", fromlist=["forward_packed"]).forward_packed

    def counting(m, xx, rows):
        ran.extend(1 + len(keep) for row in rows for keep in row)             # prefix + kept patches, per sequence
        return real(m, xx, rows)

    monkeypatch.setattr("viz.trust.job.forward_packed", counting)
    job = TrustJob(model, x, None, ["gae", "random"])
    lengths = job.curve_lengths()
    job.result()
    assert sorted(lengths) == sorted(ran) and len(lengths) == 2 * 18 + 1     # 2 maps × 18 sequences + the prefix
    # pixel protocols: whole images, the 18 inner ones per map and the all-filled one (the whole photo: gae's pass)
    assert TrustJob(model, x, None, ["gae"], protocol="blur").curve_lengths() == [17] * (2 * 18 + 1)


def test_first_fit_packs_the_longest_first_into_the_first_bin_with_room():
    assert first_fit([177, 21, 158, 40, 99, 99, 1, 197], 198) == [[7, 6], [0, 1], [2, 3], [4, 5]]
    assert first_fit([5, 300, 5], 198) == [[1], [0, 2]]                  # too long for a bin: a bin of its own
    assert first_fit([], 198) == []


def test_the_pixel_protocols_are_named_and_keep_the_whole_sequence():
    model = tiny()
    x = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    tokens = trust_report(model, x, None, ["gae", "random"])
    for protocol in ("mean_colour", "blur", "road"):
        r = trust_report(model, x, None, ["gae", "random"], protocol=protocol)
        assert r.protocol == protocol
        f = r.methods["gae"].faithfulness
        assert f.deletion[0] == pytest.approx(tokens.methods["gae"].faithfulness.deletion[0], abs=1e-5)
        assert f.deletion[-1] != pytest.approx(tokens.methods["gae"].faithfulness.deletion[-1], abs=1e-4)
    with pytest.raises(ValueError, match="Unknown protocol 'grey'"):
        TrustJob(model, x, None, ["gae"], protocol="grey")
    assert set(METHODS) >= {"gae", "random"}
