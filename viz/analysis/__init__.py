"""The one part of viz/ that runs a model: everything else in viz/ takes the arrays these functions return.

- ``capture``: one forward pass with attention capture -> ``Analysis``; the model's own arrays -> ``ModelArrays``.
- ``explainer``: the passes of ``vit.explain`` and the formulas of ``viz.explain`` -> ``Explanation``;
  ``explain_map(name, model, x, target)`` is every method's one call signature.
"""
from .capture import analyze, model_arrays
from .explainer import explain, explain_map, explain_tensor

__all__ = ["analyze", "explain", "explain_map", "explain_tensor", "model_arrays"]
