"""The one part of viz/ that runs a model: everything else in viz/ takes the arrays these functions return.

- ``capture``: one forward pass with attention capture -> ``Analysis`` (``analyze``, any architecture), or a batch
  of images -> ``Captured`` (``capture``: one sequence of tokens) or a dict of every block's window maps
  (``capture_blocks``: windows and stages) and their per-image ``Analysis`` objects (``analyses``,
  ``block_analyses``); the model's own arrays -> ``ModelArrays``.
- ``postprocess``: what is derived from each block's maps, in torch, on the model's device.
- ``walkthrough``: the forward pass one module at a time -> ``Walkthrough`` (the guided walk through the ViT).
- ``explainer``: the passes of ``vit.explain`` and the formulas of ``viz.explain`` -> ``Explanation``;
  ``explain_map(name, model, x, target)`` is every method's one call signature; ``resolve_target`` turns a
  typed class or CLIP text into a target (for the CLI, the page, the API and the trust checks alike).
- ``inside``: the inside views of one photo (logit lens, direct logit attribution, head importance, ablation,
  patching; ``vit.inside``) run in steps (``InsideJob``) into a ``viz.inside.InsideReport``; ``inside_report``
  from a photo; a data-set batch's values (``dataset_values``).
- ``trust``: the maps' deletion / insertion curves and sanity check, in steps of about one model pass.
- ``serve``: a checkpoint served to the explorer's visitors (warmed up, its model-only panels drawn once per
  language) and a photo analysed for the page.
- ``snapshots``: every snapshot of a training run on one photo -> the small arrays ``viz.dynamics`` draws.

(A comparison's side runs the model too, through ``analyze``: ``viz.compare.side``.)
"""
from .capture import (Captured, analyses, analyze, block_analyses, capture, capture_blocks, model_arrays,
                      model_input)
from .explainer import explain, explain_map, explain_tensor, resolve_target
from .inside import InsideJob, inside_report
from .walkthrough import Walkthrough, walk

__all__ = ["Captured", "InsideJob", "Walkthrough", "analyses", "analyze", "block_analyses", "capture",
           "capture_blocks", "explain", "explain_map",
           "explain_tensor", "inside_report", "model_arrays", "model_input", "resolve_target", "walk"]
