"""Maps and rendering for Vision Transformer attention: numpy arrays in, numpy arrays or PIL images out.

No model, no torch and no Gradio in the map and drawing modules; ``viz.analysis`` is the one subpackage
that runs a model (once per image) and hands back plain arrays (an ``Analysis``). Subpackages and modules:

- ``maps``: the class-agnostic maps from attention arrays:
  ``layout`` (prefix tokens + gh×gw patches, pixel -> patch), ``rollout`` (Abnar & Zuidema 2020, with head
  fusion, discard and token dropping), ``attention`` (raw CLS / token attention, all heads, patch queries,
  DINO threshold mask), ``figure7`` (the ViT paper's Figure 7), ``norms`` (token norms, high-norm artifacts),
  ``statistics`` (entropy and attention shares, the per-image numbers data-set statistics average);
- ``drawing``: ``render`` (colour lookup, overlays with numpy/Pillow), ``grids`` (thumbnail grids), ``plots``
  (matplotlib Figure plots), ``fonts`` (the CJK font for Chinese texts), ``dataset_plots`` (statistics over images);
- ``analysis``: run the model once -> ``Analysis``, on any device, post-processing in torch (``postprocess``);
  module by module -> ``Walkthrough``;
- ``dataset``: ``python -m viz FOLDER`` in batches, statistics streamed, torchrun, ``--resume``;
- ``i18n``: every text of the pictures and the page in English and Chinese (``t``, ``translations`` for gr.I18n);
- ``panels``: every panel of the explorer from an ``Analysis``; ``explorer``: what the app's tabs show;
- ``walkthrough``: the guided walk through the ViT, pictures and sentences;
- ``compare``: two checkpoints on the same photo; ``animate``: attention through depth, one frame per block;
  ``dynamics``: a training run's snapshots on one photo (``python -m viz.dynamics``);
- ``architecture``: the stages of the model with this input's tensor shapes (the Model tab); ``cli``.
"""
from .result import Analysis, ModelArrays

__all__ = ["Analysis", "ModelArrays"]
