"""What the explanation formulas read: the arrays one model pass produced for one image, as numpy.

Filled by ``viz.explain.explainer`` from the passes in ``vit.explain``; every formula in this package takes
an ``ExplainArrays`` and returns a (gh, gw) map, so a formula never sees a model. Fields a pass did not
produce are None, and a formula that needs one says so (``need``).

Shapes: L blocks, H heads, T = num_prefix + gh·gw tokens, D width, N = gh·gw patches (row-major).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class ExplainArrays:
    num_prefix: int                          # prefix tokens (CLS, DIST, registers) before the patches
    grid: tuple[int, int]                    # (gh, gw)
    readout: np.ndarray | None = None        # (T,) weights of the tokens the output is read from (sum 1)
    attention: np.ndarray | None = None      # (L, H, T, T) attention probabilities, rows sum to 1
    attention_grad: np.ndarray | None = None  # (L, H, T, T) ∂score/∂attention, block l with block l
    tokens: np.ndarray | None = None         # (T, D) last block's norm1 output (Grad-CAM activation)
    tokens_grad: np.ndarray | None = None    # (T, D) ∂score/∂tokens
    relevance: dict = field(default_factory=dict)  # rule set name ("attnlrp", "cp_lrp") -> (N,) LRP relevance
    query: str = "cls"                       # the readout's query as viz.maps.readout names it: "cls", "map", "mean"
    windows: object | None = None            # a Swin's passes: viz.explain.windows.WindowArrays (grid: stage 0's)

    def need(self, *names: str) -> tuple:
        """The named fields, or ValueError naming the ones missing (the pass that makes them did not run)."""
        missing = [n for n in names if getattr(self, n) is None]
        if missing:
            raise ValueError(f"This formula needs {', '.join(missing)}, which the model pass did not provide!")
        return tuple(getattr(self, n) for n in names)

    @property
    def num_tokens(self) -> int:
        return self.num_prefix + self.grid[0] * self.grid[1]

    def protected(self) -> tuple[int, ...]:
        """Prefix tokens the output is read from (CLS, DIST): never discarded by rollout's filter."""
        readout = self.need("readout")[0]
        return tuple(int(t) for t in np.flatnonzero(readout[:self.num_prefix]))


def chain_row(matrices, readout: np.ndarray) -> np.ndarray:
    """readout · M_{L-1} · … · M_0 -> (T,), for per-block matrices given first block first.

    The readout's row of a product of L matrices, as L vector-matrix products from the last block down
    instead of L matrix products: the same numbers (up to float rounding) for 1/T of the work.
    """
    row = np.asarray(readout, dtype=np.float32)
    for matrix in reversed(list(matrices)):
        row = row @ matrix
    return row


def row_to_grid(row: np.ndarray, num_prefix: int, grid: tuple[int, int]) -> np.ndarray:
    """(T,) values per token -> (gh, gw) over the patches (prefix tokens dropped)."""
    return np.asarray(row, dtype=np.float32)[num_prefix:].reshape(grid)


def read_out(matrix: np.ndarray, readout: np.ndarray, num_prefix: int, grid: tuple[int, int]) -> np.ndarray:
    """(T, T) token-to-token matrix -> (gh, gw): the readout's row of it (readout @ matrix) over the patch columns.

    For a CLS model this is row 0 (Chefer's and Abnar's map); for a mean-pooled model the mean of the patch rows.
    """
    row = np.asarray(readout, dtype=np.float32) @ np.asarray(matrix, dtype=np.float32)   # (T,)
    return row[num_prefix:].reshape(grid)
