"""Maps and rendering for Vision Transformer attention: numpy arrays in, numpy arrays or PIL images out.

No model, no torch and no Gradio in the map and render modules; ``viz.analysis`` is the one module that
runs a model (once per image) and hands back a plain ``Analysis``. Submodules:

- ``layout``: token layout helpers (prefix tokens + gh×gw patches), pixel -> patch;
- ``rollout``: attention rollout (Abnar & Zuidema 2020) with head fusion, discard and token dropping;
- ``attention``: raw CLS / token attention, all heads, patch queries, DINO threshold mask;
- ``figure7``: the ViT paper's Figure 7 (embedding filters, position similarity, mean attention distance);
- ``norms``: token norms per block and high-norm artifact flags (Darcet et al. 2023);
- ``render``, ``grids``, ``plots``: overlays (numpy/Pillow), thumbnail grids, matplotlib Figure plots;
- ``panels``: every panel of the explorer from an ``Analysis``; ``analysis``: run the model once;
- ``architecture``: the stages of the model with this input's tensor shapes (the Model tab).
"""
from .result import Analysis, ModelArrays

__all__ = ["Analysis", "ModelArrays"]
