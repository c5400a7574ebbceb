"""Layer-wise relevance propagation maps: AttnLRP (Achtibat et al., ICML 2024, "AttnLRP: Attention-Aware
Layer-wise Relevance Propagation for Transformers") and CP-LRP (Ali et al., ICML 2022, "XAI for
Transformers: Better Explanations through Conservative Propagation").

The relevance itself comes from one rule-wired backward pass (``vit.explain.relevance_pass``, rules in
``vit.explain.rules``): gradient × input at the patch embedding, summed over the channels of each patch.
Values are signed (evidence for the score is positive, against it negative) and, up to the biases the
rules leave out, sum to the explained logit. Here they only go onto the grid.
"""
from __future__ import annotations

import numpy as np

from .arrays import ExplainArrays


def relevance_map(arrays: ExplainArrays, rules: str) -> np.ndarray:
    """Relevance per patch under ``rules`` ("attnlrp" or "cp_lrp") -> (gh, gw)."""
    if rules not in arrays.relevance:
        raise ValueError(f"This formula needs the {rules} relevance pass, which did not run! "
                         f"Relevance present: {sorted(arrays.relevance) or 'none'}.")
    values = np.asarray(arrays.relevance[rules], dtype=np.float32)
    if values.shape != (arrays.grid[0] * arrays.grid[1],):
        raise ValueError(f"Wrong relevance shape! Expected ({arrays.grid[0] * arrays.grid[1]},) for a "
                         f"{arrays.grid[0]}×{arrays.grid[1]} grid but got {values.shape}.")
    return values.reshape(arrays.grid)


def attnlrp_map(arrays: ExplainArrays) -> np.ndarray:
    return relevance_map(arrays, "attnlrp")


def cp_lrp_map(arrays: ExplainArrays) -> np.ndarray:
    return relevance_map(arrays, "cp_lrp")
