"""What the explanation formulas read: the arrays one model pass produced for one image, as numpy, and the blocks
they are laid out on.

Filled by ``viz.explain.explainer`` from the passes in ``vit.explain``; every formula in this package takes
an ``ExplainArrays`` and returns a (gh, gw) map over the photo's patch grid, so a formula never sees a model. Fields
a pass did not produce are None, and a formula that needs one says so (``need``).

How the arrays are laid out is the model's description (``architecture``, a ``vit.architecture.Architecture``):
block l's attention and its gradient on the block's own layout, (H, T_l, T_l) for global attention over T_l tokens
(prefix tokens, then the block's grid), (nW, H, N, N) for nW windows of N tokens. A map read on a later block comes
down to the photo's patch grid through every merge (``on_patch_grid``), and a row is carried down through every
block's matrix by ``viz.maps.source.rollout_rows`` over ``BlockSteps`` — whatever the blocks are. Arrays built by
hand without a description are one stage of global attention over num_prefix + gh·gw tokens (a plain ViT's).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from vit.architecture import Architecture, BlockLayout

from ..maps.windows import rows_through


@dataclass(frozen=True)
class ExplainArrays:
    num_prefix: int                          # prefix tokens (CLS, DIST, registers) before block 0's patches
    grid: tuple[int, int]                    # (gh, gw) the photo's patch grid (block 0's)
    readout: np.ndarray | None = None        # (T_L,) weights of the last block's tokens the output reads (sum 1)
    attention: Sequence[np.ndarray] | None = None       # per block: its attention probabilities on its layout
    attention_grad: Sequence[np.ndarray] | None = None  # per block: ∂score/∂attention, block l with block l
    tokens: np.ndarray | None = None         # (T_L, D) Grad-CAM's activation over the last block's tokens
    tokens_grad: np.ndarray | None = None    # (T_L, D) ∂score/∂tokens
    relevance: dict = field(default_factory=dict)  # rule set name ("attnlrp", "cp_lrp") -> (gh·gw,) LRP relevance
    query: str = "cls"                       # the readout's query as viz.maps.readout names it: "cls", "map", "mean"
    architecture: Architecture | None = None  # the blocks the arrays are laid out on (None: see ``description``)

    def need(self, *names: str) -> tuple:
        """The named fields, or ValueError naming the ones missing (the pass that makes them did not run)."""
        missing = [n for n in names if getattr(self, n) is None]
        if missing:
            raise ValueError(f"This formula needs {', '.join(missing)}, which the model pass did not provide!")
        return tuple(getattr(self, n) for n in names)

    @property
    def description(self) -> Architecture:
        """The pass's ``architecture``, or for arrays built without one a single stage of global attention over
        num_prefix + gh·gw tokens, as many blocks as ``attention`` holds."""
        if self.architecture is not None:
            return self.architecture
        depth = 1 if self.attention is None else len(self.attention)
        heads = 1 if self.attention is None else int(np.shape(self.attention[0])[0])
        return Architecture.plain(depth, heads, self.grid, 1, self.num_prefix)

    def on_patch_grid(self, values: np.ndarray, layer: int = 0) -> np.ndarray:
        """(T_l,) values over block ``layer``'s tokens -> (gh, gw) over the photo's patch grid: the prefix tokens
        dropped, a coarser grid's values shared down through every merge (``Architecture.to_patch_grid``)."""
        architecture = self.description
        prefix = architecture.block(layer).prefix
        return architecture.to_patch_grid(np.asarray(values, dtype=np.float32)[prefix:], layer)

    def protected(self) -> tuple[int, ...]:
        """Prefix tokens the output is read from (CLS, DIST): never discarded by rollout's filter."""
        readout = self.need("readout")[0]
        return tuple(int(t) for t in np.flatnonzero(readout[:self.description.blocks[-1].prefix]))


def through(rows: np.ndarray, matrix: np.ndarray, block: BlockLayout) -> np.ndarray:
    """``rows`` (…, T) over a block's tokens times the block's (T, T) token-mixing matrix, given on the block's
    layout: (T, T) for global attention, (nW, N, N) window by window (``viz.maps.windows.rows_through``)."""
    if block.window is None:
        return np.asarray(rows, dtype=np.float32) @ matrix
    return rows_through(rows, matrix, block)


class BlockSteps:
    """One token-mixing matrix per block on the block's layout (``through``), as ``viz.maps.source.rollout_rows``
    carries a row from the last block down to block 0's tokens, through every merge: rollout's Â, GAE's
    I + mean_h((∂score/∂A ⊙ A)⁺), the gradient-weighted rollout's step."""

    def __init__(self, steps: Sequence[np.ndarray], blocks: Sequence[BlockLayout]):
        if len(steps) != len(blocks):
            raise ValueError(f"Expected one matrix per block ({len(blocks)}) but got {len(steps)}!")
        self.steps, self.blocks = list(steps), tuple(blocks)
        self.depth = len(self.blocks)

    def layout(self, layer: int) -> tuple[int, tuple[int, int]]:
        return self.blocks[layer].tokens()

    def carry(self, layer: int, rows: np.ndarray, *options) -> np.ndarray:
        """``rows`` times block ``layer``'s matrix (rollout's fusion and discard options are the steps' own)."""
        return through(rows, self.steps[layer], self.blocks[layer])
