"""Class-specific explanation maps from arrays: the formulas, THE method table, and the cached result.

- ``methods``: ``METHODS``, every method by name (``Method``: family, formula, title, reference, what it needs of
  the architecture), for every model;
- formulas, each ``ExplainArrays -> (gh, gw)`` over the photo's patch grid, through any blocks and merges:
  ``gae``, ``grad_rollout``, ``gradcam``, ``lrp`` (attnlrp, cp_lrp), ``baselines`` (attention, rollout, random);
- ``arrays``: ``ExplainArrays``, what one model pass produced for one image, laid out as the model's description
  (``vit.architecture``) says, and ``BlockSteps``, a matrix per block for ``viz.maps.source.rollout_rows``;
- ``explanation``: ``Explanation`` (the maps for one image and target) and ``contrast``;
- ``panels``: overlays with a colour bar (diverging and centred on 0 for signed maps and contrasts).

No model here: ``viz.explain.explainer`` runs the passes of ``vit.explain`` and then these formulas.
"""
from . import texts  # noqa: F401  (the tab's texts in the catalogue)
from .arrays import ExplainArrays
from .explanation import Explanation, contrast
from .methods import FAMILIES, METHODS, Method, families_of, method_names

__all__ = ["ExplainArrays", "Explanation", "FAMILIES", "METHODS", "Method", "contrast", "families_of", "method_names"]
