"""Can this map be trusted? Faithfulness by perturbation, the model-randomisation sanity check, and methods
compared, as pure formulas over arrays (the model-running half is ``viz.analysis.trust``).

- ``curves``: the patch order of a map, the kept patches at each fraction, the AUCs, ``Faithfulness``;
- ``sanity``: Spearman rank correlation (average ranks for ties) and the "does not depend on the model" flag;
- ``report``: ``MethodTrust`` (one method on one photo, the unit of caching) and ``TrustReport`` (the ranking,
  the gains over random, the correlations between methods, the JSON of the CLI).
"""
from .curves import FRACTIONS, KINDS, Faithfulness, auc, keep_sets, patch_order, removed_counts
from .report import MethodTrust, TrustReport
from .sanity import FLAG_THRESHOLD, average_ranks, flagged, spearman

__all__ = ["FLAG_THRESHOLD", "FRACTIONS", "KINDS", "Faithfulness", "MethodTrust", "TrustReport", "auc",
           "average_ranks", "flagged", "keep_sets", "patch_order", "removed_counts", "spearman"]
