"""GAE: "Generic Attention-model Explainability for Interpreting Bi-Modal and Encoder-Decoder Transformers"
(Chefer, Gur & Wolf, ICCV 2021), for a self-attention-only encoder.

Per block l, the attention A_l (H, T, T) is weighted by its gradient ∂score/∂A_l, negative contributions
are dropped per head before the heads are averaged:

    Ā_l = mean_h((∂score/∂A_l ⊙ A_l)⁺)                          (T, T)
    R ← R + Ā_l · R,  blocks from the first to the last,  R₀ = I   (T, T)

and the map is the readout's row of R over the patch columns (row 0 for a CLS model; the mean of the
patch rows for a mean-pooled model; p · R for SigLIP, p the MAP probe's attention, mean of heads, as
``viz.maps.readout`` reads rollout; the mean of the CLS and DIST rows for a distilled DeiT). Any number
of prefix tokens takes part in R; only the patch columns are shown. Values are R's, not rescaled.
"""
from __future__ import annotations

import numpy as np

from .arrays import ExplainArrays, chain_row, row_to_grid


def gae_steps(attention: np.ndarray, attention_grad: np.ndarray) -> list[np.ndarray]:
    """(L, H, T, T) attention and its gradient -> the L update matrices I + mean_h((∇A ⊙ A)⁺), first block first."""
    attention, attention_grad = np.asarray(attention), np.asarray(attention_grad)
    if attention.shape != attention_grad.shape or attention.ndim != 4:
        raise ValueError(f"Wrong shapes! Expected attention and its gradient both (L, H, T, T) but got "
                         f"{attention.shape} and {attention_grad.shape}.")
    eye = np.eye(attention.shape[-1], dtype=np.float32)
    return [eye + np.maximum(A * G, 0.0).mean(axis=0, dtype=np.float32)     # block l's map with block l's gradient
            for A, G in zip(attention, attention_grad)]


def gae_map(arrays: ExplainArrays) -> np.ndarray:
    """GAE relevance of the patches -> (gh, gw): the readout's row of R, without forming R."""
    attention, grad, readout = arrays.need("attention", "attention_grad", "readout")
    return row_to_grid(chain_row(gae_steps(attention, grad), readout), arrays.num_prefix, arrays.grid)
