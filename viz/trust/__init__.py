"""Can this map be trusted? Faithfulness by perturbation under several protocols, verdicts that hold across them,
the model-randomisation sanity check, data-set intervals and the paper's own protocol, with the model-running job.

Formulas over arrays (no model):
- ``curves``: the patch order of a map, the kept patches at each fraction, the AUCs and their errors, the area
  between the curves (ABPC), ``Faithfulness``;
- ``protocols``: how a removed patch is removed (tokens, mean_colour, blur, road) and the pixel-space images;
  ``road``: ROAD's noisy linear imputation;
- ``sanity``: Spearman rank correlation (average ranks for ties) and the "does not depend on the model" flag;
- ``report``: ``MethodTrust`` (one method on one photo under one protocol, the unit of caching) and
  ``TrustReport`` (the ranking, the gains over random, the correlations between methods, the CLI's JSON);
- ``verdicts``: faithful / not_faithful / depends_on_protocol per method, Kendall τ between protocols,
  ``ProtocolsReport``;
- ``dataset``: bootstrap confidence intervals over a folder's images and the folder's verdicts;
- ``chefer``: Chefer et al. 2021's positive / negative perturbation test (top-1 accuracy vs pixels removed).

The model runs in ``job`` (``TrustJob``, ``ProtocolsJob``, ``trust_report``, ``protocols_report``,
``occlusion_map``), imported from ``viz.trust.job``; results are cached in a ``viz.cache.Cache``.
"""
from . import texts  # noqa: F401  (the tab's texts in the catalogue)
from .curves import (FRACTIONS, KINDS, POINTS, Faithfulness, auc, auc_error, every_other, fractions, keep_sets,
                     patch_order, removed_counts)
from .protocols import PIXEL, PROTOCOLS, protocol_list
from .report import MethodTrust, TrustReport
from .sanity import FLAG_THRESHOLD, average_ranks, flagged, spearman
from .verdicts import MARGIN_FLOOR, VERDICTS, ProtocolsReport, Verdict, kendall_tau, margin, verdict_of

__all__ = ["FLAG_THRESHOLD", "FRACTIONS", "KINDS", "MARGIN_FLOOR", "PIXEL", "POINTS", "PROTOCOLS", "VERDICTS",
           "Faithfulness", "MethodTrust", "ProtocolsReport", "TrustReport", "Verdict", "auc", "auc_error",
           "average_ranks", "every_other", "flagged", "fractions", "keep_sets", "kendall_tau", "margin",
           "patch_order", "protocol_list", "removed_counts", "spearman", "verdict_of"]
