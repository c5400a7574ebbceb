"""What a trust run finds for one (photo, model, target): every method's map, curves and sanity curve, and what
is derived from them without the model (the ranking, the gains over random, the correlations between methods).

``MethodTrust`` is the unit of caching (one per photo, model, target, method and protocol): the page can keep
them and assemble a ``TrustReport`` from any set of methods without running anything again.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .curves import FRACTIONS, Faithfulness
from .sanity import flagged, spearman


@dataclass(frozen=True)
class MethodTrust:
    """One method on one photo: its map (gh, gw), its perturbation curves, and its sanity curve (ρ after 1 … L
    randomised blocks; None when the sanity check was not run)."""
    name: str
    map: np.ndarray
    faithfulness: Faithfulness
    sanity: tuple[float, ...] | None = None

    @property
    def flagged(self) -> bool | None:
        """Does the map barely depend on the model (``viz.trust.sanity.flagged``)? None without a sanity run."""
        return None if self.sanity is None else flagged(self.sanity)


@dataclass(frozen=True)
class TrustReport:
    """Every method's ``MethodTrust`` for one target, plus the random baseline the gains are measured against."""
    target: dict                          # {"index": int, "name": str} (the target's ``describe()``)
    probability: float                    # the target's probability on the whole photo
    methods: dict[str, MethodTrust]       # in the order asked for
    random: Faithfulness                  # the "random" method's curves on the same photo
    protocol: str = "tokens"              # how patches were removed (``viz.trust.protocols.PROTOCOLS``)
    fractions: tuple[float, ...] = field(default_factory=lambda: tuple(float(f) for f in FRACTIONS))

    def ranking(self) -> list[str]:
        """Method names, most faithful first (the area between the curves, insertion_auc − deletion_auc, ties in the
        order asked for)."""
        names = list(self.methods)
        return sorted(names, key=lambda n: (-self.methods[n].faithfulness.abpc, names.index(n)))

    def gains(self, name: str) -> dict[str, float]:
        """The method's deletion and insertion gains over the random map (positive: better than random)."""
        return self.methods[name].faithfulness.gains(self.random)

    def correlations(self, names: list[str] | None = None) -> tuple[list[str], np.ndarray]:
        """(names, (M, M) Spearman ρ between the methods' maps): which methods agree on this photo."""
        names = list(self.methods) if names is None else names
        M = len(names)
        matrix = np.eye(M)
        for i in range(M):
            for j in range(i + 1, M):
                matrix[i, j] = matrix[j, i] = spearman(self.methods[names[i]].map, self.methods[names[j]].map)
        return names, matrix

    def as_json(self) -> dict:
        """``{"faithfulness": {method: {deletion_auc, insertion_auc, deletion, insertion, auc_error}}, "sanity":
        {method: [ρ after 1 … L randomised blocks]}}`` ("sanity" only for methods that ran it): the CLI's
        result.json entries."""
        out = {"faithfulness": {n: m.faithfulness.as_json() for n, m in self.methods.items()}}
        sanity = {n: list(m.sanity) for n, m in self.methods.items() if m.sanity is not None}
        if sanity:
            out["sanity"] = sanity
        return out
