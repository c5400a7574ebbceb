"""The patch features of one layer, read from an analysis' residual stream: the patch tokens after block ``layer``
through the model's final LayerNorm, as DINOv2's ``x_norm_patchtokens`` are for the last block (its
``get_intermediate_layers(..., norm=True)`` for the others). Models without a LayerNorm before pooling (``fc_norm``)
give the tokens as they leave the block."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ..maps.layout import layer_index
from ..records import Analysis, FinalNorm


def check_features(a: Analysis) -> None:
    """ValueError, saying what to do, for an analysis without its residual stream (or too few patches for a PCA)."""
    if a.stream is None:
        raise ValueError("This analysis has no residual stream, so it has no patch features! Analyse the photo with "
                         "keep_stream=True (the page and --features do).")
    patches = a.grid[0] * a.grid[1]
    if patches < 4:
        raise ValueError(f"Patch features need at least 4 patches (a PCA of 3 components) but this input has "
                         f"{patches} ({a.grid[0]}×{a.grid[1]}).")


def patch_features(a: Analysis, layer: int = -1) -> np.ndarray:
    """(gh·gw, D) float32: the patch tokens after block ``layer`` (0-based, negative from the end), final-normed."""
    check_features(a)
    return layer_features(a.stream, layer, a.num_prefix, a.final_norm)


def layer_features(stream: np.ndarray, layer: int, num_prefix: int, final_norm: FinalNorm | None) -> np.ndarray:
    """One image's residual stream (L + 1, T, D) -> the patch tokens after block ``layer`` through ``final_norm``
    (gh·gw, D) float32."""
    tokens = stream[layer_index(layer, stream.shape[0] - 1) + 1, num_prefix:]
    tokens = torch.from_numpy(np.ascontiguousarray(tokens)).float()
    if final_norm is None:
        return tokens.numpy()
    n = final_norm
    return F.layer_norm(tokens, tokens.shape[-1:], torch.from_numpy(n.weight), torch.from_numpy(n.bias), n.eps).numpy()
