"""Grad-CAM (Selvaraju et al., ICCV 2017, "Grad-CAM: Visual Explanations from Deep Networks via
Gradient-based Localization") on a transformer's last tokens.

The activation is the output of the model's ``gradcam_layer`` over the last block's tokens (T, D): its patch
rows are the "feature map" (D channels on the block's gh×gw grid). Each channel is weighted by its gradient
averaged over the patches, and the weighted sum is clipped at 0:

    w_d = mean_n ∂score/∂a_{n,d},   cam_n = max(0, Σ_d w_d · a_{n,d})

Which layer: the tokens the last block's attention reads, its ``norm1`` (pytorch-grad-cam's documented choice,
``target_layers = [model.blocks[-1].norm1]`` for a ViT, ``layers[-1].blocks[-1].norm1`` for a Swin), and not
the block's output: with CLS pooling the model reads only the CLS token after the last block, so the last
block's *patch outputs* get no gradient at all (the map would be 0). Inside the last block the patch tokens
still matter, as the keys and values the CLS token attends to, and ``norm1``'s output is where they enter that
attention. The same layer is used for mean-pooled models, whose patch outputs would also have a gradient, so
that the method is one definition. (Where the norms follow the branches, a ViT's ``res_post_norm``, the stream
entering the last block is what its attention reads; Swin v2 keeps the tutorial's ``norm1``.)

A model of stages reads the map on its last stage's grid; it comes down to the photo's patch grid through every
merge (``Architecture.to_patch_grid``: each token's value shared equally by the patches merged into it, so
``vit.architecture.sum_up`` recovers the last stage's map exactly).

Compared with pytorch-grad-cam: the same numbers before its display steps (it then min-max scales the map
to [0, 1] and resizes it to the input with OpenCV; here the raw map is kept and the renderer scales). Its ViT
recipe drops exactly one prefix token and reshapes to a square grid; here any number of prefix tokens (CLS,
DIST, registers) is dropped and any gh×gw grid works (its Swin recipe's reshape transform is the layout the
description gives).
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
    """Grad-CAM of the last block's patches, on the photo's patch grid -> (gh, gw)."""
    tokens, grad = arrays.need("tokens", "tokens_grad")
    architecture = arrays.description
    last = architecture.blocks[-1]
    return architecture.to_patch_grid(gradcam_values(tokens, grad, last.prefix, last.grid), -1)
