"""Maps and rendering for Vision Transformer attention: numpy arrays in, numpy arrays or PIL images out.

No model, no torch and no Gradio in the map and drawing modules; ``viz.analysis`` is the one subpackage whose
code runs a model (once per image) and hands back plain arrays (an ``Analysis``). Subpackages and modules:

- ``records``: ``Analysis``, ``ModelArrays``, ``SnapshotSeries``: what a model run leaves for every map;
- ``maps``: the class-agnostic maps from attention arrays: ``layout`` (prefix tokens + gh×gw patches, pixel ->
  patch), ``rollout`` (Abnar & Zuidema 2020, with head fusion, discard and token dropping), ``attention`` (raw CLS
  / token attention, all heads, patch queries, DINO threshold mask), ``readout`` (the query of a model that reads
  its CLS token, a MAP probe or the mean of its patches), ``embeddings`` and ``distance`` (the ViT paper's
  Figure 7: filters and position similarity; mean attention distance), ``norms`` (token norms, high-norm
  artifacts), ``statistics`` (attention shares over a data set);
- ``drawing``: ``render`` (colour lookup, overlays with numpy/Pillow), ``grids`` (thumbnail grids), ``plots``
  (matplotlib Figure plots), ``fonts`` (the CJK font for Chinese texts), ``dataset_plots`` (statistics over
  images), ``walk_steps`` (the guided walk's pictures and sentences), ``trust`` (the trust figure);
- ``panels``: every panel from an ``Analysis``: ``select`` (which map the options give), ``files`` (at the
  model's size, for the CLI), ``display`` / ``heads`` / ``crop`` (at display size, for the page);
- ``analysis``: run the model once -> ``Analysis``, on any device, post-processing in torch (``postprocess``);
  module by module -> ``Walkthrough``; explanations (``explainer``), trust checks (``trust``), a served model
  (``serve``), a training run's snapshots (``snapshots``);
- ``explain``: the explanation methods and their families, one table each (``METHODS``, ``FAMILIES``), and the
  formulas; ``trust``: the faithfulness and sanity formulas;
- ``compare``: two checkpoints on the same photo (``side`` runs each model, ``comparison``, ``align``,
  ``figure``); ``animate``: attention through depth, one frame per block; ``dynamics``: a training run's
  snapshots on one photo; ``architecture``: the model's stages with this input's shapes (the Model tab);
- ``explorer`` and ``tabs``: what the page's tabs show, from cached results (no Gradio: the page is
  ``vit_explorer``); ``cache``: THE cache bounded in bytes that the page and the panels keep results in;
- ``dataset``: ``python -m viz FOLDER`` in batches, statistics streamed, torchrun, ``--resume``;
- ``i18n``: every text of the pictures and the page in English and Chinese (``t``, ``translations`` for gr.I18n);
- ``cli``: ``python -m viz`` (``explain``, ``compare``, ``write``, ``options``) and ``python -m viz.dynamics``
  (``dynamics``).
"""
from .records import Analysis, ModelArrays

__all__ = ["Analysis", "ModelArrays"]
