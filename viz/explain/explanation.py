"""The result of explaining one image for one target: a few (gh, gw) maps, small enough to cache.

Changing the colour map, the opacity or the contrast class re-renders from these arrays without the
model. For ViT-B/16 at 224 one map is 14·14 float32 = 784 bytes, every method of the table 6.3 kB.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Explanation:
    """Maps of one image for one target, every method of the passes that ran.

    ``maps[name]`` is (gh, gw) float32 in the method's own units (see ``viz.explain.methods``); ``target``
    is the resolved ``Target.describe()`` (for a class: ``{"index": 281, "name": "tabby"}``); ``readout``
    says which tokens the attention-based maps read out (e.g. "the CLS token"), ``query`` the same as
    ``viz.maps.readout`` names it ("cls", "map", "mean"; ``viz.maps.readout.query_name`` gives the caption).
    """
    target: dict
    maps: dict                         # method name -> (gh, gw) float32
    grid: tuple[int, int]
    num_prefix: int
    readout: str
    score: float                       # the target's score (the class logit) on this image
    probability: float                 # the target's probability
    timings: dict = field(default_factory=dict)   # seconds per model pass and for the formulas
    query: str = "cls"                 # the readout's query, viz.maps.readout's name: "cls", "map" or "mean"

    @property
    def methods(self) -> list[str]:
        return list(self.maps)

    @property
    def nbytes(self) -> int:
        """Bytes of the maps (what a cache of explanations holds per image and target)."""
        return sum(m.nbytes for m in self.maps.values())

    def map(self, method: str) -> np.ndarray:
        if method not in self.maps:
            raise ValueError(f"No {method!r} map in this explanation! It holds: {', '.join(self.maps)}.")
        return self.maps[method]


def contrast(a: Explanation, b: Explanation, method: str) -> np.ndarray:
    """"Why A rather than B": A's map minus B's for one method -> (gh, gw), positive where A has more.

    Both must explain the same image (same grid). The difference of a class-agnostic method is 0.
    """
    if a.grid != b.grid:
        raise ValueError(f"Contrast needs two explanations of the same image! Got grids {a.grid} and {b.grid}.")
    return (a.map(method) - b.map(method)).astype(np.float32)
