"""The one part of viz/ that runs a model: everything else in viz/ takes the arrays these functions return.

- ``capture``: one forward pass with attention capture -> ``Analysis``; the model's own arrays -> ``ModelArrays``.
"""
from .capture import analyze, model_arrays

__all__ = ["analyze", "model_arrays"]
