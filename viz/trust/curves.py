"""Perturbation curves of a map, as pure formulas (the model runs in ``viz.trust.job``).

The protocol (Petsiuk et al. 2018, "RISE"; Chefer et al. 2021, "Transformer Interpretability Beyond Attention
Visualization", Sec. 4.2, positive and negative perturbation), made ViT-native:

- order the N patches by relevance, highest first, ties broken by patch index: ``patch_order``;
- for each fraction f of ``fractions(points)`` (0, 1/(points − 1), …, 1; 11 points by default: 0, 0.1, …, 1),
  with r = round(f·N) (half to even, as Python's ``round``):
  **deletion** keeps every patch except the first r of the order (the most relevant go first),
  **insertion** keeps only those first r: ``keep_sets``;
- the model sees the kept patches and not the removed ones (how a patch is removed is the *protocol*:
  ``viz.trust.protocols``), and the curve is the target's softmax probability at each fraction;
- the area under it, ``auc(curve) = np.trapezoid(curve, fractions)`` (not normalised): deletion, lower is
  better (the probability falls at once when the map is right), insertion, higher is better;
- **every AUC comes with its error**, the discretisation error of its own curve:
  ``auc_error = |AUC(all points) − AUC(every other point)|`` (``auc_error``; free, no model run). The trapezoid
  rule's error falls as 1/points², so the coarser sum's difference is a conservative estimate of the finer one's
  error; ``--steps`` (``points``) buys finer curves where it matters.

Beside the raw AUCs, the **gains over the random baseline on the same photo** say whether a map beats chance:
``deletion_gain = random_deletion_auc − deletion_auc`` and ``insertion_gain = insertion_auc − random_insertion_auc``
(both positive when the map beats the random order), and the **area between the perturbation curves**,
``abpc = insertion_auc − deletion_auc`` (Blücher et al. 2024; Achtibat et al. 2024: keeping the most relevant k
patches is removing the least relevant N − k first, so the insertion curve is the least-relevant-first curve
read backwards), sorts the methods: high when the map's top patches alone keep the class and removing them loses
it, both curves in one number. Its own error is ``auc_error`` of the difference curve.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

POINTS = 11                                  # default points per curve (the CLI's --steps)
FRACTIONS = np.linspace(0.0, 1.0, POINTS)    # f = 0, 0.1, …, 1.0: the 11 points of a default curve
KINDS = ("deletion", "insertion")


def fractions(points: int = POINTS) -> np.ndarray:
    """The fractions of a curve of ``points`` points: 0, 1/(points − 1), …, 1 (points ≥ 3, so that "every other
    point" still spans [0, 1] and the error is defined)."""
    if int(points) != points or points < 3:
        raise ValueError(f"A curve needs at least 3 points (--steps 3) but got {points}!")
    return np.linspace(0.0, 1.0, int(points))


def every_other(count: int) -> np.ndarray:
    """Indices of every other point of a curve of ``count`` points, the last one always included (an even count
    ends on a shorter interval): 11 points -> 0, 2, …, 10; 10 points -> 0, 2, 4, 6, 8, 9."""
    return np.unique(np.r_[np.arange(0, count, 2), count - 1])


def patch_order(relevance: np.ndarray) -> np.ndarray:
    """A (gh, gw) map -> (N,) patch indices (row-major), most relevant first, ties in index order."""
    values = np.asarray(relevance, dtype=np.float64).ravel()
    if not np.isfinite(values).all():
        raise ValueError("The map holds NaN or infinite values; a perturbation order needs finite relevance.")
    return np.argsort(-values, kind="stable")


def removed_counts(num_patches: int, fractions: np.ndarray = FRACTIONS) -> list[int]:
    """round(f·N) for each fraction: how many of the top patches deletion removes (and insertion keeps)."""
    return [int(round(float(f) * num_patches)) for f in fractions]


def keep_sets(relevance: np.ndarray, fractions: np.ndarray = FRACTIONS) -> dict[str, list[np.ndarray]]:
    """{"deletion": [kept patches at each f], "insertion": [...]}: sorted int64 index arrays, one per fraction."""
    order = patch_order(relevance)
    counts = removed_counts(order.size, fractions)
    return {"deletion": [np.sort(order[r:]) for r in counts], "insertion": [np.sort(order[:r]) for r in counts]}


def auc(curve, fractions: np.ndarray = FRACTIONS) -> float:
    """Area under a curve sampled at ``fractions``: the trapezoid rule, not normalised."""
    curve = np.asarray(curve, dtype=np.float64)
    if curve.shape != np.shape(fractions):
        raise ValueError(f"A curve needs one value per fraction ({len(fractions)}) but got shape {curve.shape}!")
    return float(np.trapezoid(curve, fractions))


def auc_error(curve, fractions: np.ndarray = FRACTIONS) -> float:
    """|AUC(all points) − AUC(every other point)|: how much the area still depends on the sampling."""
    curve, fractions = np.asarray(curve, dtype=np.float64), np.asarray(fractions, dtype=np.float64)
    half = every_other(len(fractions))
    return abs(auc(curve, fractions) - float(np.trapezoid(curve[half], fractions[half])))


@dataclass(frozen=True)
class Faithfulness:
    """A map's two perturbation curves on one photo and their areas (the CLI's JSON entry, ``as_json``)."""
    deletion: tuple[float, ...]              # target probability as the top patches are removed, one per fraction
    insertion: tuple[float, ...]             # … as only the top patches are kept
    deletion_auc: float                      # lower is better
    insertion_auc: float                     # higher is better
    fractions: tuple[float, ...] = tuple(float(f) for f in FRACTIONS)   # where the curves were sampled

    @classmethod
    def from_curves(cls, deletion, insertion, fractions: np.ndarray = FRACTIONS) -> "Faithfulness":
        return cls(tuple(float(v) for v in deletion), tuple(float(v) for v in insertion),
                   auc(deletion, fractions), auc(insertion, fractions), tuple(float(f) for f in fractions))

    @property
    def abpc(self) -> float:
        """The area between the perturbation curves, insertion_auc − deletion_auc: the one number methods are
        sorted by (higher is more faithful)."""
        return self.insertion_auc - self.deletion_auc

    @property
    def auc_error(self) -> dict[str, float]:
        """{"deletion", "insertion", "abpc"}: each area's discretisation error (``auc_error``)."""
        x = np.asarray(self.fractions)
        d, i = np.asarray(self.deletion), np.asarray(self.insertion)
        return {"deletion": auc_error(d, x), "insertion": auc_error(i, x), "abpc": auc_error(i - d, x)}

    def gains(self, random: "Faithfulness") -> dict[str, float]:
        """How much better than the random map on the same photo: both positive when this map beats it."""
        return {"deletion_gain": random.deletion_auc - self.deletion_auc,
                "insertion_gain": self.insertion_auc - random.insertion_auc}

    def as_json(self) -> dict:
        """``{"deletion_auc", "insertion_auc", "deletion": [points], "insertion": [points], "auc_error":
        {"deletion", "insertion", "abpc"}}``: the CLI's result.json entry of one method."""
        return {"deletion_auc": self.deletion_auc, "insertion_auc": self.insertion_auc,
                "deletion": list(self.deletion), "insertion": list(self.insertion), "auc_error": self.auc_error}
