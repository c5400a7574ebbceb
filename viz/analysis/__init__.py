"""Running a model for an ``Analysis``: what every tab's view reads. The tabs that run a model for more than the
attention keep their model runs in their slices (``viz.explain.explainer``, ``viz.inside.job``, ``viz.trust.job``,
``viz.learn.walkthrough``, ``viz.compare.snapshots``).

- ``capture``: one forward pass with attention capture -> ``Analysis`` (``analyze``, any architecture), or a batch
  of images -> ``Captured`` (``capture``: one sequence of tokens) or a dict of every block's window maps
  (``capture_blocks``: windows and stages) and their per-image ``Analysis`` objects (``analyses``,
  ``block_analyses``); the model's own arrays -> ``ModelArrays``.
- ``postprocess``: what is derived from each block's maps, in torch, on the model's device.
- ``recompute``: a layer's attention recomputed on demand from the kept residual stream.
- ``serve``: a checkpoint served to the explorer's visitors (warmed up, its model-only pictures drawn once per
  language) and a photo analysed for the page.
- ``cost``: what an analysis at another input size costs, said before it runs.
"""
from .capture import (Captured, analyses, analyze, block_analyses, capture, capture_blocks, model_arrays,
                      model_input)

__all__ = ["Captured", "analyses", "analyze", "block_analyses", "capture", "capture_blocks", "model_arrays",
           "model_input"]
