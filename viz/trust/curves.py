"""Perturbation curves of a map, as pure formulas (the model runs in ``viz.analysis.trust``).

The protocol (Petsiuk et al. 2018, "RISE"; Chefer et al. 2021, "Transformer Interpretability Beyond Attention
Visualization", Sec. 4.2, positive and negative perturbation), made ViT-native:

- order the N patches by relevance, highest first, ties broken by patch index: ``patch_order``;
- for each fraction f of ``FRACTIONS`` (0, 0.1, …, 1), with r = round(f·N) (half to even, as Python's ``round``):
  **deletion** keeps every patch except the first r of the order (the most relevant go first),
  **insertion** keeps only those first r: ``keep_sets``;
- the model runs on the prefix tokens plus the kept patches (removed patches are dropped from the sequence, the
  kept ones keep their positions), and the curve is the target's softmax probability at each fraction;
- the area under it, ``auc(curve) = np.trapezoid(curve, FRACTIONS)`` (not normalised): deletion, lower is
  better (the probability falls at once when the map is right), insertion, higher is better.

Beside the raw AUCs, the **gains over the random baseline on the same photo** say whether a map beats chance:
``deletion_gain = random_deletion_auc − deletion_auc`` and ``insertion_gain = insertion_auc − random_insertion_auc``
(both positive when the map beats the random order), and the **faithfulness** used to sort methods is
``insertion_auc − deletion_auc`` (high when the map's top patches alone keep the class and removing them loses
it: both curves in one number).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FRACTIONS = np.linspace(0.0, 1.0, 11)        # f = 0, 0.1, …, 1.0: the 11 points of every curve
KINDS = ("deletion", "insertion")
VARIANTS = {  # how removed patches are removed (the JSON, the CLI's --perturbation and the page name the variant)
    "tokens": "dropped from the token sequence (the default: no out-of-distribution pixels)",
    "mean_colour": "pixel space: replaced by the photo's mean colour (channel means of the model input)",
    "blur": "pixel space: replaced by the photo blurred with a Gaussian of σ = patch size / 2",
}


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


@dataclass(frozen=True)
class Faithfulness:
    """A map's two perturbation curves on one photo and their areas (the CLI's JSON entry, ``as_json``)."""
    deletion: tuple[float, ...]              # target probability as the top patches are removed, one per fraction
    insertion: tuple[float, ...]             # … as only the top patches are kept
    deletion_auc: float                      # lower is better
    insertion_auc: float                     # higher is better

    @classmethod
    def from_curves(cls, deletion, insertion, fractions: np.ndarray = FRACTIONS) -> "Faithfulness":
        return cls(tuple(float(v) for v in deletion), tuple(float(v) for v in insertion),
                   auc(deletion, fractions), auc(insertion, fractions))

    @property
    def score(self) -> float:
        """insertion_auc − deletion_auc: the one number methods are sorted by (higher is more faithful)."""
        return self.insertion_auc - self.deletion_auc

    def gains(self, random: "Faithfulness") -> dict[str, float]:
        """How much better than the random map on the same photo: both positive when this map beats it."""
        return {"deletion_gain": random.deletion_auc - self.deletion_auc,
                "insertion_gain": self.insertion_auc - random.insertion_auc}

    def as_json(self) -> dict:
        """``{"deletion_auc", "insertion_auc", "deletion": [11], "insertion": [11]}``: the CLI contract (issue 14)."""
        return {"deletion_auc": self.deletion_auc, "insertion_auc": self.insertion_auc,
                "deletion": list(self.deletion), "insertion": list(self.insertion)}
