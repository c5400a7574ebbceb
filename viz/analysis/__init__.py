"""The one part of viz/ that runs a model: everything else in viz/ takes the arrays these functions return.

- ``capture``: one forward pass with attention capture -> ``Analysis``; the model's own arrays -> ``ModelArrays``.
- ``sides``: a checkpoint's side of a comparison (``viz.compare``): analysis, file name, sha256, crop box.
- ``snapshots``: every snapshot of a training run on one photo -> the small arrays ``viz.dynamics`` draws.
"""
from .capture import analyze, model_arrays
from .sides import compare_side

__all__ = ["analyze", "compare_side", "model_arrays"]
