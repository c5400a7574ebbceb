"""The one part of viz/ that runs a model: everything else in viz/ takes the arrays these functions return.

- ``capture``: one forward pass with attention capture -> ``Analysis``; the model's own arrays -> ``ModelArrays``.
- ``walkthrough``: the forward pass one module at a time -> ``Walkthrough`` (the guided walk through the ViT).
"""
from .capture import analyze, model_arrays
from .walkthrough import Walkthrough, walk

__all__ = ["analyze", "model_arrays", "Walkthrough", "walk"]
