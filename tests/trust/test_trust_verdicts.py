"""Protects the verdicts that hold across protocols (viz.trust.verdicts) and the folder's intervals
(viz.trust.dataset): every AUC's discretisation error, the margin, each branch of the verdict rule on hand-made
AUC tables, Kendall's τ-b against scipy, the result.json keys of several protocols, the percentile bootstrap on
tables whose answer is known, and the folder's verdict.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from viz.trust import (MARGIN_FLOOR, Faithfulness, MethodTrust, ProtocolsReport, TrustReport, auc_error, every_other,
                       fractions, kendall_tau, margin, verdict_of)
from viz.trust.dataset import bootstrap_ci, folder_table, folder_verdicts, score_columns
from viz.trust.verdicts import agreement
from viz.trust.view import verdict_kind, verdict_words

GRID = np.arange(4.0).reshape(2, 2)


def flat(deletion: float, insertion: float, points: int = 11) -> Faithfulness:
    """Constant curves: their AUCs are the values themselves and their errors 0."""
    return Faithfulness.from_curves([deletion] * points, [insertion] * points, fractions(points))


def test_every_other_point_spans_the_curve_and_the_error_is_the_coarser_sums_difference():
    assert every_other(11).tolist() == [0, 2, 4, 6, 8, 10]
    assert every_other(10).tolist() == [0, 2, 4, 6, 8, 9]                    # an even count keeps its last point
    x = fractions(11)
    assert auc_error(x, x) == pytest.approx(0.0, abs=1e-15)                  # the trapezoid rule is exact on a line
    # y = x²: all points 0.335 (the trapezoid overestimates 1/3 by h²/6), every other point 0.34: error 0.005
    assert auc_error(x ** 2, x) == pytest.approx(0.34 - 0.335, abs=1e-12)
    f = Faithfulness.from_curves(1 - x ** 2, x ** 2, x)
    assert f.auc_error == pytest.approx({"deletion": 0.005, "insertion": 0.005, "abpc": 0.01})
    assert f.abpc == pytest.approx(0.335 - 0.665)
    assert list(f.as_json()) == ["deletion_auc", "insertion_auc", "deletion", "insertion", "auc_error"]
    with pytest.raises(ValueError, match="at least 3 points"):
        fractions(2)


def test_the_margin_adds_both_abpc_errors_and_never_falls_below_the_floor():
    x = fractions(11)
    curved = Faithfulness.from_curves(1 - x ** 2, x ** 2, x)                 # abpc error 0.01
    assert margin(flat(0.3, 0.6), flat(0.5, 0.5)) == MARGIN_FLOOR == 0.01
    assert margin(curved, curved) == pytest.approx(0.02)


def test_each_branch_of_the_verdict_rule():
    m = {"tokens": 0.02, "blur": 0.01}
    assert verdict_of({"tokens": 0.05, "blur": 0.011}, m) == "faithful"           # above the margin under both
    assert verdict_of({"tokens": 0.05, "blur": 0.01}, m) == "depends_on_protocol"  # at the margin is not above it
    assert verdict_of({"tokens": -0.03, "blur": -0.2}, m) == "not_faithful"        # below −margin under both
    assert verdict_of({"tokens": 0.05, "blur": -0.2}, m) == "depends_on_protocol"  # the protocols disagree
    assert verdict_of({"tokens": 0.0, "blur": 0.0}, m) == "depends_on_protocol"    # neither tells it from random
    assert verdict_of({"tokens": 0.05}, {"tokens": 0.02}) == "faithful"            # one protocol still decides
    with pytest.raises(ValueError):
        verdict_of({}, {})


def report(protocol: str, table: dict[str, tuple[float, float]], random=(0.5, 0.5)) -> TrustReport:
    methods = {n: MethodTrust(n, GRID, flat(*aucs)) for n, aucs in table.items()}
    return TrustReport({"index": 1, "name": "cat"}, 0.9, methods, flat(*random), protocol)


def test_a_protocols_report_gives_verdicts_words_agreement_and_the_contracted_json():
    """Hand-made AUC tables (deletion, insertion): a wins everywhere, b loses everywhere, c wins under tokens
    only, d is random-like everywhere; the rankings by ABPC: tokens a > c > d > b, blur a > d > b > c."""
    r = ProtocolsReport({
        "tokens": report("tokens", {"a": (0.2, 0.8), "b": (0.7, 0.3), "c": (0.4, 0.7), "d": (0.5, 0.505)}),
        "blur": report("blur", {"a": (0.3, 0.7), "b": (0.6, 0.45), "c": (0.7, 0.4), "d": (0.5, 0.5)}),
    })
    v = r.verdicts()
    assert {n: x.verdict for n, x in v.items()} == {"a": "faithful", "b": "not_faithful", "c": "depends_on_protocol",
                                                   "d": "depends_on_protocol"}
    assert v["a"].abpc_gain == pytest.approx({"tokens": 0.6, "blur": 0.4})
    assert v["a"].margin == {"tokens": 0.01, "blur": 0.01}
    assert verdict_words(v["a"]) == "✓ faithful on this photo under all 2 ways of removing patches"
    assert verdict_words(v["c"]) == "? depends on how patches are removed (tokens ✓ · blur ✗): see the table"
    assert verdict_kind(v["d"]) == "inside"
    assert verdict_words(v["d"]) == "≈ cannot be told from random under any of the 2 ways of removing patches"
    assert verdict_words(v["c"], "zh-CN") == "? 取决于图块如何移除（词元 ✓ · 模糊 ✗）：见下表"
    protocols, tau = r.agreement()
    assert protocols == ["tokens", "blur"]
    expected = stats.kendalltau([0.6, -0.4, 0.3, 0.005], [0.4, -0.15, -0.3, 0.0]).statistic
    assert tau[0, 1] == tau[1, 0] == pytest.approx(expected) and tau[0, 0] == 1.0
    j = r.as_json()
    assert list(j) == ["faithfulness_by_protocol", "fractions", "verdicts", "protocol_agreement"]
    assert list(j["faithfulness_by_protocol"]) == ["tokens", "blur"]
    assert set(j["faithfulness_by_protocol"]["blur"]["a"]) == {"deletion_auc", "insertion_auc", "deletion",
                                                               "insertion", "auc_error"}
    assert j["verdicts"]["b"] == {"verdict": "not_faithful", "abpc_gain": pytest.approx({"tokens": -0.4, "blur": -0.15}),
                                  "margin": {"tokens": 0.01, "blur": 0.01}}
    assert j["protocol_agreement"]["kendall_tau"][0][1] == pytest.approx(expected)
    one = ProtocolsReport({"tokens": r.reports["tokens"]}).verdicts()
    assert verdict_words(one["c"]) == "✓ faithful (one protocol)"
    assert verdict_words(one["b"]) == "✗ worse than random (one protocol)"
    assert verdict_words(one["d"]) == "≈ cannot be told from random (one protocol)"


def test_kendall_tau_b_equals_scipys_with_ties():
    rng = np.random.default_rng(0)
    for _ in range(20):
        a, b = rng.integers(0, 4, 8).astype(float), rng.normal(size=8)
        assert kendall_tau(a, b) == pytest.approx(stats.kendalltau(a, b).statistic, abs=1e-12)
    assert kendall_tau([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert math.isnan(kendall_tau([1, 1, 1], [1, 2, 3]))


def test_the_tie_rule_ties_scores_closer_than_their_errors_and_no_rounding_flips_tau():
    """Two methods whose ABPCs differ by less than their errors added are tied: τ is scipy's on the scores with the
    pair made equal; a pair that differs by 1e-6 (another CPU's rounding) no longer swings τ."""
    a, b = [0.300, 0.301, 0.1, -0.2], [0.5, 0.4, 0.3, 0.2]
    errors = [0.002, 0.002, 0.001, 0.001]
    tied = stats.kendalltau([0.300, 0.300, 0.1, -0.2], b).statistic
    assert kendall_tau(a, b, errors) == pytest.approx(tied, abs=1e-12)
    assert kendall_tau(a, b) != pytest.approx(tied)                         # without the rule: the pair counts
    assert kendall_tau(a, b, [0.0001] * 4) == pytest.approx(kendall_tau(a, b), abs=1e-12)   # far apart: no tie
    rounded = [0.300 + 1e-6, 0.301 - 2e-3 - 1e-6, 0.1, -0.2]               # the near pair in either order
    assert kendall_tau(rounded, b, errors) == kendall_tau([0.300, 0.299, 0.1, -0.2], b, errors)
    assert kendall_tau([0.3, 0.3 + 1e-6, 0.1], [0.3, 0.2, 0.1]) != kendall_tau([0.3, 0.3 - 1e-6, 0.1], [0.3, 0.2, 0.1])
    with pytest.raises(ValueError, match="One error per score"):
        kendall_tau(a, b, [0.1])


def test_the_protocols_agreement_ties_methods_within_their_curves_errors():
    """A report's agreement applies the rule with each method's own ABPC error (``auc_error["abpc"]``)."""
    x = fractions(11)

    def curves(deletion_level: float, wobble: float) -> Faithfulness:     # an error of about ``wobble``
        deletion = deletion_level + wobble * (-1.0) ** np.arange(11)
        return Faithfulness.from_curves(deletion, 1.0 - deletion, x)

    near = {"a": curves(0.20, 0.0), "b": curves(0.30, 0.02), "c": curves(0.301, 0.02), "d": curves(0.6, 0.0)}
    flipped = {**near, "c": curves(0.299, 0.02)}
    assert near["b"].auc_error["abpc"] + near["c"].auc_error["abpc"] > abs(near["b"].abpc - near["c"].abpc)

    def report_of(tokens):
        random = flat(0.5, 0.5)
        reports = {p: TrustReport({"index": 1, "name": "cat"}, 0.9,
                                  {n: MethodTrust(n, GRID, f) for n, f in tokens.items()}, random, p)
                   for p in ("tokens", "blur")}
        reports["blur"] = TrustReport({"index": 1, "name": "cat"}, 0.9,
                                      {n: MethodTrust(n, GRID, f) for n, f in near.items()}, random, "blur")
        return ProtocolsReport(reports)

    assert report_of(near).agreement()[1][0, 1] == 1.0 == report_of(flipped).agreement()[1][0, 1]
    assert agreement({"tokens": {k: f.abpc for k, f in flipped.items()},
                      "blur": {k: f.abpc for k, f in near.items()}})[1][0, 1] < 1.0      # without the errors


def test_the_bootstrap_interval_on_tables_with_a_known_answer():
    """A constant column has the interval [c, c]; a 0/1 column of 400 images, 30 % ones, has a mean whose bootstrap
    distribution is binomial(400, 0.3) / 400: its 95 % interval is 0.3 ± 1.96·√(0.3·0.7/400) = [0.255, 0.345] up
    to the resampling's own noise (± 0.005 at 1,000 resamples); the same seed gives the same interval."""
    rng = np.random.default_rng(1)
    ones = np.zeros(400)
    ones[rng.choice(400, 120, replace=False)] = 1.0
    table = np.stack([np.full(400, 0.42), ones], axis=1)
    ci = bootstrap_ci(table)
    assert ci[0].tolist() == [pytest.approx(0.42), pytest.approx(0.42)]
    half = 1.96 * math.sqrt(0.3 * 0.7 / 400)
    assert ci[1] == pytest.approx([0.3 - half, 0.3 + half], abs=0.006)
    np.testing.assert_array_equal(bootstrap_ci(table), ci)
    assert not np.array_equal(bootstrap_ci(table, seed=1), ci)
    with pytest.raises(ValueError, match="at least one image"):
        bootstrap_ci(np.zeros((0, 2)))


def test_the_folder_verdict_compares_intervals_under_every_protocol():
    """Per image: method a's ABPC beats random's by 0.2 ± small noise under both protocols (faithful); b's is
    below random's under both (not faithful); c beats random under tokens and loses under blur (depends)."""
    rng = np.random.default_rng(2)
    n = 30
    columns = score_columns(["tokens", "blur"], ["a", "b", "c"])
    base = rng.uniform(0.3, 0.5, n)                                     # random's deletion AUC per image
    rows = []
    for i in range(n):
        e = rng.normal(0, 0.01, 8)
        aucs = {("tokens", "a"): (base[i] - 0.1 + e[0], 0.6), ("tokens", "b"): (base[i] + 0.2, 0.6 + e[1]),
                ("tokens", "c"): (base[i] - 0.1, 0.6 + e[2]), ("tokens", "random"): (base[i], 0.6 + e[3]),
                ("blur", "a"): (base[i] - 0.1, 0.6 + e[4]), ("blur", "b"): (base[i] + 0.2, 0.6 + e[5]),
                ("blur", "c"): (base[i] + 0.2, 0.6 + e[6]), ("blur", "random"): (base[i], 0.6 + e[7])}
        rows.append([aucs[(p, m)][0 if s == "deletion_auc" else 1] for p, m, s in columns])
    table = folder_table(columns, np.array(rows))
    assert folder_verdicts(table) == {"a": "faithful", "b": "not_faithful", "c": "depends_on_protocol"}
    row = table["tokens"]["a"]
    assert row["abpc"] == pytest.approx(row["insertion_auc"] - row["deletion_auc"])
    low, high = row["ci95"]["abpc"]
    assert low < row["abpc"] < high and set(row["ci95"]) == {"deletion_auc", "insertion_auc", "abpc"}
