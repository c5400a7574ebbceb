"""The model-randomisation sanity check (Adebayo et al. 2018, "Sanity Checks for Saliency Maps"), as formulas.

The blocks are re-initialised one by one from the top (``vit.explain.perturb.cascading_randomization``); after
k = 1 … L randomised blocks each method's map is compared with its map on the trained model by the Spearman rank
correlation of the patch values. A map that explains the model must change when the model does: its curve falls
towards 0. A method whose map, with **every** block randomised, still correlates at ``FLAG_THRESHOLD`` or more with
the trained model's map is flagged as not depending on the model (a centre prior, the random baseline, an edge
detector: Adebayo et al.'s finding). 0.5 is the line: a correlation ≥ 0.5 means the randomised model still ranks
the patches largely as the trained one did, which a map of what *this* network computed must not do.
"""
from __future__ import annotations

import numpy as np

FLAG_THRESHOLD = 0.5    # Spearman ρ with all blocks randomised at or above this: "barely depends on the model"


def average_ranks(values: np.ndarray) -> np.ndarray:
    """(N,) values -> (N,) ranks 1 … N, ties sharing the average of the ranks they span (scipy's "average")."""
    values = np.asarray(values, dtype=np.float64).ravel()
    order = np.argsort(values, kind="stable")
    sorted_values = values[order]
    # boundaries of runs of equal values in sorted order
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_values) != 0) + 1]
    ends = np.r_[starts[1:], values.size]
    ranks = np.empty(values.size, dtype=np.float64)
    for s, e in zip(starts, ends):
        ranks[order[s:e]] = (s + 1 + e) / 2.0          # mean of ranks s+1 … e
    return ranks


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman rank correlation of two maps of the same shape: Pearson's r of their average ranks.

    A constant map has no ranking: two constant maps count as unchanged (1.0), one constant map against a
    varying one as unrelated (0.0), where the textbook formula would divide by zero."""
    a, b = np.asarray(a, dtype=np.float64).ravel(), np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"Both maps need the same number of patches but got {a.size} and {b.size}!")
    ra, rb = average_ranks(a), average_ranks(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    na, nb = np.sqrt((ra * ra).sum()), np.sqrt((rb * rb).sum())
    if na == 0 or nb == 0:
        return 1.0 if na == nb else 0.0
    return float(np.clip((ra * rb).sum() / (na * nb), -1.0, 1.0))


def flagged(correlations) -> bool:
    """True when the map barely changed with every block randomised (the last value, ρ ≥ ``FLAG_THRESHOLD``)."""
    correlations = list(correlations)
    return bool(correlations) and correlations[-1] >= FLAG_THRESHOLD
