"""GAE: "Generic Attention-model Explainability for Interpreting Bi-Modal and Encoder-Decoder Transformers"
(Chefer, Gur & Wolf, ICCV 2021), for a self-attention-only encoder, through any blocks and merges.

Per block l, the attention A_l is weighted by its gradient ∂score/∂A_l, negative contributions are dropped per head
before the heads are averaged, and the identity is added:

    Ā_l = I + mean_h((∂score/∂A_l ⊙ A_l)⁺)                          (T_l, T_l)
    R ← Ā_l · R,  blocks from the first to the last,  R₀ = I

and the map is the readout's row of R over the patch columns (row 0 for a CLS model; the mean of the patch rows
for a mean-pooled model; p · R for SigLIP, p the MAP probe's attention, mean of heads, as ``viz.maps.readout``
reads rollout; the mean of the CLS and DIST rows for a distilled DeiT). Any number of prefix tokens takes part
in R; only the patch columns are shown. Values are R's, not rescaled.

Each block's step is computed on the block's own layout (``viz.explain.arrays``): for a windowed block window by
window, (nW, N, N), zero between tokens of different windows; where the grid changes (a patch merging) the row
comes down through the merge's adjoint, each merged token's value shared equally by the tokens merged into it
(``vit.architecture.share_down``), as rollout does (docs/swin.md works it out on a Swin).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..maps.source import rollout_rows
from .arrays import BlockSteps, ExplainArrays


def gae_step(attention: np.ndarray, attention_grad: np.ndarray) -> np.ndarray:
    """One block's attention and its gradient on its layout, heads on axis −3 ((H, T, T), or (nW, H, N, N) window
    by window) -> I + mean_h((∂score/∂A ⊙ A)⁺) on the same layout ((T, T), or (nW, N, N))."""
    attention, attention_grad = np.asarray(attention), np.asarray(attention_grad)
    if attention.shape != attention_grad.shape or attention.ndim < 3 or attention.shape[-1] != attention.shape[-2]:
        raise ValueError(f"Wrong shapes! Expected a block's attention and its gradient both (…, H, T, T) but got "
                         f"{attention.shape} and {attention_grad.shape}.")
    step = weighted_attention(attention, attention_grad)
    np.einsum("...ii->...i", step)[...] += 1.0
    return step


def weighted_attention(attention: np.ndarray, attention_grad: np.ndarray) -> np.ndarray:
    """Ē = mean_h((∂score/∂A ⊙ A)⁺), heads on axis −3: (…, H, n, n) -> (…, n, n) float32 (GAE's update without the
    identity; ``viz.video.gae`` places a video step's groups of it on the stream)."""
    return np.maximum(np.asarray(attention) * np.asarray(attention_grad), 0.0).mean(axis=-3, dtype=np.float32)


def gae_steps(attention: Sequence[np.ndarray], attention_grad: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Every block's attention and gradient, first block first (e.g. (L, H, T, T) arrays) -> its update matrix
    I + mean_h((∇A ⊙ A)⁺) (``gae_step``), block l's map with block l's gradient."""
    if len(attention) != len(attention_grad):
        raise ValueError(f"Expected the attention and its gradient of the same blocks but got {len(attention)} and "
                         f"{len(attention_grad)} blocks.")
    return [gae_step(A, G) for A, G in zip(attention, attention_grad)]


def gae_map(arrays: ExplainArrays) -> np.ndarray:
    """GAE relevance of the patches -> (gh, gw): the readout's row of R carried down block by block (and through
    every merge) to block 0's tokens, without forming R."""
    attention, grad, readout = arrays.need("attention", "attention_grad", "readout")
    steps = BlockSteps(gae_steps(attention, grad), arrays.description.blocks)
    return arrays.on_patch_grid(rollout_rows(steps, readout))
