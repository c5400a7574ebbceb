"""What the inside views found for one photo, as plain numpy arrays and numbers (no model, no tensors): small enough
to cache per (photo, model, target), redrawn without the model (a clicked head's source map is a slice of
``DLAView.sources``), and written as result.json's "inside" entry (``InsideReport.as_json``).

L blocks, H heads, K classes (or typed texts), T = prefix + gh·gw tokens. Layers and heads are counted from 0. In
contrast mode (class A rather than B) every DLA term, every Δ, the ablation's Δ and the patched score are of A's logit
minus B's; the lens reports A's probability and rank.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

VIEWS = ("lens", "dla", "heads")       # what ``--inside`` can ask for; ablation and patching have their own options


def _float(value) -> float | None:
    """JSON-safe float: NaN (a share with no difference to share) -> None."""
    value = float(value)
    return None if math.isnan(value) else value


def _lists(values: np.ndarray):
    return [_lists(v) for v in values] if np.ndim(values) else _float(values)


@dataclass(frozen=True)
class TopK:
    """The k most probable classes: indices (k,) and probabilities (k,)."""
    indices: np.ndarray
    probabilities: np.ndarray

    @classmethod
    def of(cls, probabilities: np.ndarray, k: int = 5) -> "TopK":
        order = np.argsort(-probabilities, kind="stable")[:k]
        return cls(order.astype(np.int64), probabilities[order].astype(np.float64))

    def as_json(self, names) -> list[dict]:
        return [{"index": int(i), "name": names[i], "probability": float(p)}
                for i, p in zip(self.indices, self.probabilities)]


@dataclass(frozen=True)
class LensView:
    """The logit lens: what the readout says after each block."""
    top5: list[TopK]                       # per layer
    target_probability: np.ndarray         # (L,)
    target_rank: np.ndarray                # (L,) int: 1 = the readout's top class
    patches: np.ndarray | None             # (L, gh, gw) int: each patch token's own top-1 class per layer
    approximate: bool = False              # MAP pooling: the probe read at every layer (approximate early)

    def top1(self) -> np.ndarray:
        """(L,) the readout's top-1 class after each block."""
        return np.array([t.indices[0] for t in self.top5])


@dataclass(frozen=True)
class DLAView:
    """Direct logit attribution: the score split into parts that sum to it (``total``)."""
    logit: float
    head_bias: float                       # the head's bias + the final norm's shift through the head (w·β + b)
    embedding: float                       # the stream entering block 0 (class token + its position, …)
    attention_bias: np.ndarray             # (L,)
    heads: np.ndarray                      # (L, H)
    mlp: np.ndarray                        # (L,)
    sources: np.ndarray | None             # (L, H, T): each head's term split over its source tokens
    num_prefix: int
    grid: tuple[int, int]

    def total(self) -> float:
        return float(self.embedding + self.attention_bias.sum() + self.heads.sum() + self.mlp.sum() + self.head_bias)

    def source_map(self, layer: int, head: int) -> np.ndarray:
        """(gh, gw): what head ``head`` of block ``layer`` moved from each patch into the score (its prefix tokens'
        shares are in ``sources[layer, head, :num_prefix]``)."""
        if self.sources is None:
            raise ValueError("This DLA was computed without the attention, so it has no source maps.")
        L, H = self.heads.shape
        if not (0 <= layer < L and 0 <= head < H):
            raise ValueError(f"No head {layer}.{head}! Layers 0 to {L - 1}, heads 0 to {H - 1}.")
        return self.sources[layer, head, self.num_prefix:].reshape(self.grid)

    def as_json(self) -> dict:
        return {"logit": self.logit, "head_bias": self.head_bias, "embedding": self.embedding,
                "attention_bias": _lists(self.attention_bias), "heads": _lists(self.heads), "mlp": _lists(self.mlp)}


@dataclass(frozen=True)
class HeadsView:
    """Head importance: the score's change when each head alone is ablated."""
    ablation: str                          # "zero" or "mean"
    delta: np.ndarray | None               # (L, H) exact (None until computed)
    delta_linear: np.ndarray               # (L, H) attribution-patching estimate
    spearman: float | None = None          # rank correlation of the two (None until the exact table exists)

    def as_json(self) -> dict:
        return {"ablation": self.ablation, "delta_logit": None if self.delta is None else _lists(self.delta),
                "delta_logit_linear": _lists(self.delta_linear),
                "spearman": None if self.spearman is None else _float(self.spearman)}


@dataclass(frozen=True)
class AblatedView:
    """The photo with a set of heads ablated together."""
    heads: list[str]                       # ["11.0", "11.2"]
    top5: TopK
    delta_logit: float
    ablation: str = "zero"

    def as_json(self, names) -> dict:
        return {"heads": list(self.heads), "top5": self.top5.as_json(names), "delta_logit": self.delta_logit}


@dataclass(frozen=True)
class PatchedView:
    """Activation patching from another photo: the share of the score difference each piece moves."""
    source: str                            # the other photo's name (file stem)
    target: dict                           # {"index", "name"}: the patched class (the other photo's top-1 by default)
    heads: np.ndarray                      # (L, H) exact shares
    residual: np.ndarray                   # (L, T) estimated shares per (layer, token position)
    logit_this: float
    logit_other: float
    num_prefix: int
    grid: tuple[int, int]

    def as_json(self) -> dict:
        return {"from": self.source, "target": dict(self.target), "heads": _lists(self.heads),
                "residual": _lists(self.residual)}


@dataclass(frozen=True)
class InsideReport:
    """Everything the inside views found for one photo and target (each view None when not asked for)."""
    names: tuple[str, ...]                 # K class names (or typed texts)
    target: dict                           # {"index", "name"}
    top5: TopK                             # the model's own top 5
    grid: tuple[int, int]
    num_prefix: int
    contrast: dict | None = None
    lens: LensView | None = None
    dla: DLAView | None = None
    heads: HeadsView | None = None
    ablated: AblatedView | None = None
    patched: PatchedView | None = None
    notes: list[str] = field(default_factory=list)
    timings: dict = field(default_factory=dict)   # seconds per step

    def as_json(self) -> dict:
        """result.json's "inside" entry (keys of the CLI contract; "contrast" and "notes" only when there are any)."""
        out: dict = {"target": dict(self.target)}
        if self.contrast is not None:
            out["contrast"] = dict(self.contrast)
        if self.lens is not None:
            out["lens"] = [{"layer": l, "top5": top.as_json(self.names),
                            "target_probability": float(self.lens.target_probability[l]),
                            "target_rank": int(self.lens.target_rank[l])} for l, top in enumerate(self.lens.top5)]
        if self.dla is not None:
            out["dla"] = self.dla.as_json()
        if self.heads is not None:
            out["heads"] = self.heads.as_json()
        if self.ablated is not None:
            out["ablated"] = self.ablated.as_json(self.names)
        if self.patched is not None:
            out["patched"] = self.patched.as_json()
        if self.notes:
            out["notes"] = list(self.notes)
        return out

    def arrays(self) -> dict[str, np.ndarray]:
        """attention.npz's inside arrays: inside_lens_patches (L, gh, gw) int, inside_dla_heads (L, H),
        inside_head_importance (L, H) (each only with its view)."""
        out = {}
        if self.lens is not None and self.lens.patches is not None:
            out["inside_lens_patches"] = self.lens.patches.astype(np.int64)
        if self.dla is not None:
            out["inside_dla_heads"] = self.dla.heads.astype(np.float32)
        if self.heads is not None and self.heads.delta is not None:
            out["inside_head_importance"] = self.heads.delta.astype(np.float32)
        return out
