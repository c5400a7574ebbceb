"""The one part of viz/ that runs a model: everything else in viz/ takes the arrays these functions return.

- ``capture``: one forward pass with attention capture -> ``Analysis`` (``analyze``), or a batch of images ->
  ``Captured`` (``capture``) and its per-image ``Analysis`` objects (``analyses``); the model's own arrays ->
  ``ModelArrays``.
- ``postprocess``: what is derived from each block's maps, in torch, on the model's device.
"""
from .capture import Captured, analyses, analyze, capture, model_arrays, model_input

__all__ = ["Captured", "analyses", "analyze", "capture", "model_arrays", "model_input"]
