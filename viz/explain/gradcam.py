"""Grad-CAM (Selvaraju et al., ICCV 2017, "Grad-CAM: Visual Explanations from Deep Networks via
Gradient-based Localization") on a ViT's patch tokens.

The activation is the output of the last block's ``norm1`` (T, D): its patch rows are the "feature map"
(D channels on the gh×gw grid). Each channel is weighted by its gradient averaged over the patches, and
the weighted sum is clipped at 0:

    w_d = mean_n ∂score/∂a_{n,d},   cam_n = max(0, Σ_d w_d · a_{n,d})

Why norm1 of the last block and not the block's output: with CLS pooling the model reads only the CLS
token after the last block, so the last block's *patch outputs* get no gradient at all (the map would be
0). Inside the last block the patch tokens still matter, as the keys and values the CLS token attends
to, and ``norm1``'s output is where they enter that attention. It is also pytorch-grad-cam's documented
choice for ViTs (``target_layers = [model.blocks[-1].norm1]``). The same layer is used for mean-pooled
models, whose patch outputs would also have a gradient, so that the method is one definition.

Compared with pytorch-grad-cam: the same numbers before its display steps (it then min-max scales the map
to [0, 1] and resizes it to the input with OpenCV; here the raw (gh, gw) map is kept and the renderer
scales). Its ViT recipe drops exactly one prefix token and reshapes to a square grid; here any number of
prefix tokens (CLS, DIST, registers) is dropped and any gh×gw grid works.
"""
from __future__ import annotations

import numpy as np

from .arrays import ExplainArrays


def gradcam_values(tokens: np.ndarray, tokens_grad: np.ndarray, num_prefix: int, grid: tuple[int, int]) -> np.ndarray:
    """(T, D) activation and its gradient -> (gh, gw) Grad-CAM map (ReLU applied, not rescaled)."""
    tokens, tokens_grad = np.asarray(tokens, dtype=np.float32), np.asarray(tokens_grad, dtype=np.float32)
    T = num_prefix + grid[0] * grid[1]
    if tokens.shape != tokens_grad.shape or tokens.ndim != 2 or tokens.shape[0] != T:
        raise ValueError(f"Wrong shapes! Expected the activation and its gradient both ({T}, D) for "
                         f"{num_prefix} prefix tokens and a {grid[0]}×{grid[1]} grid but got "
                         f"{tokens.shape} and {tokens_grad.shape}.")
    patches, grads = tokens[num_prefix:], tokens_grad[num_prefix:]      # (N, D) each
    weights = grads.mean(axis=0)                                        # (D,) one weight per channel
    return np.maximum(patches @ weights, 0.0).reshape(grid)


def gradcam_map(arrays: ExplainArrays) -> np.ndarray:
    """Grad-CAM of the patches -> (gh, gw)."""
    tokens, grad = arrays.need("tokens", "tokens_grad")
    return gradcam_values(tokens, grad, arrays.num_prefix, arrays.grid)
