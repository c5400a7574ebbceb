"""The page's display and map controls as one named value, ``ControlValues``: handlers take it as their
``controls`` parameter (``vit_explorer.page`` fills it from the components of the same names), never a list
whose order they must repeat. Which pictures a control redraws is each map tab's ``uses`` (``vit_explorer.tabs``).
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace

from viz.maps.rollout import FUSIONS
from viz.records import Analysis
from viz.controls import Controls, clamp_controls

ROLLOUT = frozenset({"fusion", "discard_ratio", "start_layer"})           # the Rollout tab's controls
DISPLAY = frozenset({"opacity", "mask_artifacts", "patch_true"})          # how every map is drawn
SCREEN = "narrow"   # set by the page once, at load (the browser's width): never changed by a person


@dataclass(frozen=True)
class ControlValues:
    """The values of the page's controls, named as their components are, as the page shows them (layers and heads
    0-based; ``head`` is the Head slider's value, used only when ``mean_heads`` is off)."""
    fusion: str = FUSIONS[0]          # Rollout: how heads are fused
    discard_ratio: float = 0.9        # Rollout: share of the weakest attention discarded
    start_layer: int = 0              # Rollout: first block rolled out
    opacity: float = 0.6              # Display: the map over the photo
    mask_artifacts: bool = True       # Display: high-norm artifact tokens left out (the page's default: docs/app.md)
    layer: int = -1                   # Attention: the block (-1: the last)
    head: int = 0                     # Attention: the head
    mean_heads: bool = True           # Attention: the mean of heads instead of one head
    dino_mask: bool = False           # Attention: DINO's outline of the top 60 % of the attention
    rolled: bool = False              # Patch query: rolled out through every block instead of one
    shared_scale: bool = False        # Display: one colour scale over all layers (attention and patch query)
    patch_true: bool = False          # Display: one colour per patch, grid lines, no smoothing
    narrow: bool = False              # Screen: a phone-sized browser (larger text, fewer columns in pictures)

    def for_analysis(self, a: Analysis) -> Controls:
        """The controls as the maps take them (``Controls``), valid for the analysis's model."""
        c = Controls(fusion=self.fusion, discard_ratio=float(self.discard_ratio), start_layer=int(self.start_layer),
                     opacity=float(self.opacity), mask_artifacts=bool(self.mask_artifacts), layer=int(self.layer),
                     head=None if self.mean_heads else int(self.head), dino_mask=bool(self.dino_mask),
                     rolled=bool(self.rolled), shared_scale=bool(self.shared_scale), patch_true=bool(self.patch_true),
                     narrow=bool(self.narrow))
        return clamp_controls(c, a.architecture.heads)

    def but(self, **changes) -> ControlValues:
        return replace(self, **changes)


NAMES = tuple(f.name for f in fields(ControlValues))   # the components that make a ControlValues, by name
CONTROLS = tuple(name for name in NAMES if name != SCREEN)   # those a person changes (each redraws its maps)
