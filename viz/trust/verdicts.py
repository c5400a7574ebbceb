"""Verdicts that hold: a method is called faithful on a photo only when it beats the random map by more than the
curves' own sampling error under *every* protocol run, and how far the protocols agree on the ranking.

Why (measured on the AugReg ViT-Ti and five scikit-image photos): the eight methods' ranking changes more with how
a patch is removed than with anything else (Rong et al. 2022, ROAD: mean and blur fills leak the class through the
mask's shape), and the margins over ``random`` that decide "better than random" are often smaller than the
difference between an 11-point and a 197-point AUC. So, per method m and protocol p:

- ``abpc_gain[p] = ABPC(m) − ABPC(random)``: the area between the perturbation curves (insertion AUC − deletion
  AUC, ``viz.trust.curves``) against the random map's on the same photo under the same protocol;
- ``margin[p] = max(0.01, auc_error_abpc(m) + auc_error_abpc(random))``: the two areas' discretisation errors
  added (|AUC(all points) − AUC(every other point)| of each difference curve), never below 0.01;
- **faithful** when ``abpc_gain[p] > margin[p]`` under every protocol run; **not_faithful** when
  ``abpc_gain[p] < −margin[p]`` under every protocol; **depends_on_protocol** otherwise (the protocols disagree,
  or some cannot tell the method from random). One protocol alone still gives a verdict, which the page words with
  "(one protocol)" (``viz.trust.view``).

The protocols' agreement is Kendall's τ-b between every pair of protocols' rankings of the methods by ABPC
(ties counted as scipy's ``kendalltau`` does): 1 when they rank the methods alike, −1 when reversed. **The tie
rule**: under a protocol, two methods whose ABPCs differ by less than their combined error (``auc_error_abpc`` of
each, added) are tied: the curves cannot tell them apart, so their order is no evidence either way. Without the
rule such a pair would swap with the rounding of a CPU's kernels, and τ with it; with it, τ moves only when a
difference crosses the methods' own error, which no rounding does.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .curves import Faithfulness
from .report import TrustReport

MARGIN_FLOOR = 0.01          # the smallest margin a gain over random must exceed (AUC units)
VERDICTS = ("faithful", "not_faithful", "depends_on_protocol")


def margin(f: Faithfulness, random: Faithfulness) -> float:
    """How much a method's ABPC must beat random's to count: both ABPC errors added, at least ``MARGIN_FLOOR``."""
    return max(MARGIN_FLOOR, f.auc_error["abpc"] + random.auc_error["abpc"])


def verdict_of(gains: dict[str, float], margins: dict[str, float]) -> str:
    """The verdict rule over the protocols run (module docstring): gains and margins keyed by protocol."""
    if not gains:
        raise ValueError("A verdict needs at least one protocol's gain over random.")
    if all(gains[p] > margins[p] for p in gains):
        return "faithful"
    if all(gains[p] < -margins[p] for p in gains):
        return "not_faithful"
    return "depends_on_protocol"


@dataclass(frozen=True)
class Verdict:
    """One method's verdict over the protocols run, with what decided it."""
    method: str
    verdict: str                      # one of VERDICTS
    abpc_gain: dict[str, float]       # protocol -> ABPC(method) − ABPC(random)
    margin: dict[str, float]          # protocol -> the margin the gain had to exceed

    def as_json(self) -> dict:
        return {"verdict": self.verdict, "abpc_gain": dict(self.abpc_gain), "margin": dict(self.margin)}


def kendall_tau(a, b, errors_a=None, errors_b=None) -> float:
    """Kendall's τ-b of two score vectors (ties in either allowed); NaN when either has no two distinct values.
    ``errors_a``, ``errors_b``: each score's error; two scores that differ by less than their errors added are
    tied (the tie rule of the module docstring). None: only equal scores are tied."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"Both rankings need the same methods but got {a.size} and {b.size} scores!")
    i, j = np.triu_indices(a.size, 1)
    da, db = (_order(s, e, i, j) for s, e in ((a, errors_a), (b, errors_b)))
    pairs_a, pairs_b = np.count_nonzero(da), np.count_nonzero(db)
    if pairs_a == 0 or pairs_b == 0:
        return math.nan
    return float(np.sum(da * db) / math.sqrt(pairs_a * pairs_b))


def _order(scores: np.ndarray, errors, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """+1, −1 or 0 (tied) for each pair (i, j) of scores."""
    difference = scores[i] - scores[j]
    order = np.sign(difference)
    if errors is not None:
        errors = np.asarray(errors, dtype=np.float64)
        if errors.shape != scores.shape:
            raise ValueError(f"One error per score needed but got {errors.size} for {scores.size} scores!")
        order[np.abs(difference) < errors[i] + errors[j]] = 0
    return order


def agreement(scores: dict[str, dict[str, float]],
              errors: dict[str, dict[str, float]] | None = None) -> tuple[list[str], np.ndarray]:
    """{protocol: {method: score}} -> (protocols, (P, P) Kendall τ-b between their rankings of the methods).
    ``errors`` ({protocol: {method: error}}, as ``scores``): with the tie rule; None: without."""
    protocols = list(scores)
    methods = list(next(iter(scores.values()))) if scores else []

    def errors_of(p):
        return None if errors is None else [errors[p][m] for m in methods]

    matrix = np.eye(len(protocols))
    for x in range(len(protocols)):
        for y in range(x + 1, len(protocols)):
            px, py = protocols[x], protocols[y]
            matrix[x, y] = matrix[y, x] = kendall_tau([scores[px][m] for m in methods],
                                                      [scores[py][m] for m in methods], errors_of(px), errors_of(py))
    return protocols, matrix


def _plain(value: float):
    return None if math.isnan(value) else float(value)


@dataclass(frozen=True)
class ProtocolsReport:
    """The same methods on one photo under several protocols: each protocol's ``TrustReport``, the verdicts and the
    protocols' agreement."""
    reports: dict[str, TrustReport]      # protocol -> its report, in the order run (the first is the "fast" one)

    @property
    def protocols(self) -> list[str]:
        return list(self.reports)

    @property
    def first(self) -> TrustReport:
        return next(iter(self.reports.values()))

    def verdicts(self) -> dict[str, Verdict]:
        """{method: Verdict} for every scored map but ``random`` itself, in the order asked for."""
        out = {}
        for name in self.first.methods:
            if name == "random":
                continue
            gains, margins = {}, {}
            for p, r in self.reports.items():
                f = r.methods[name].faithfulness
                gains[p], margins[p] = f.abpc - r.random.abpc, margin(f, r.random)
            out[name] = Verdict(name, verdict_of(gains, margins), gains, margins)
        return out

    def agreement(self) -> tuple[list[str], np.ndarray]:
        """(protocols, (P, P) Kendall τ-b between the protocols' rankings of the methods by ABPC), with the tie
        rule: under a protocol, two methods closer than their ABPC errors added are tied."""
        reports = self.reports.items()
        return agreement({p: {n: m.faithfulness.abpc for n, m in r.methods.items()} for p, r in reports},
                         {p: {n: m.faithfulness.auc_error["abpc"] for n, m in r.methods.items()} for p, r in reports})

    def as_json(self) -> dict:
        """The keys several protocols add to result.json's "explain" (besides "faithfulness", the first protocol's):
        "faithfulness_by_protocol", "fractions", "verdicts", "protocol_agreement"."""
        protocols, tau = self.agreement()
        return {"faithfulness_by_protocol": {p: r.as_json()["faithfulness"] for p, r in self.reports.items()},
                "fractions": list(self.first.fractions),
                "verdicts": {n: v.as_json() for n, v in self.verdicts().items()},
                "protocol_agreement": {"protocols": protocols,
                                       "kendall_tau": [[_plain(v) for v in row] for row in tau]}}
