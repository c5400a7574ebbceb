"""Statistics over a data set, streamed: per-image values are summed as they come and then forgotten, so memory
does not grow with the number of images, and sums from several processes (torchrun) or from an interrupted and
resumed run add up to exactly what one uninterrupted process gets.

Exactness: floating-point addition depends on the order (process 0 summing images 0, 2, 4 and process 1 summing
1, 3, 5 would not give the single process's bits). Every per-image value x is therefore turned into a fixed-point
number, floor(x) plus round(frac(x) · 2⁵²) / 2⁵², held in two int64 words, and integers add up the same in
any order. The rounding (≤ 1.1e-16 absolute, per image) is a function of the value alone, so it is the same in
every run. Means and spreads are computed from the integer sums exactly and rounded once.

Per-image values, each an array of a fixed shape; the mean and the standard deviation over images are reported
for every one. Which exist follows the model's description (``vit.architecture``): ``image_values`` for a model whose
blocks all attend over one sequence of tokens (captured by ``viz.analysis.capture``), ``block_values`` for one
captured block by block (``capture_blocks``: windows, stages); ``declared`` lists them for a description.

- ``mean_distance`` (L, H): mean attention distance in pixels (Figure 7 right); H is the most heads of any block,
  and a block with fewer has 0 past its heads (the sums need numbers; the summary reports them as null);
- ``entropy`` (L, H): attention entropy in nats, averaged over query tokens (0 past a block's heads);
- ``prefix_share`` (L,): share of each block's attention going to the prefix tokens (CLS, DIST, registers); only
  for a model with prefix tokens;
- ``high_norm_share`` (L,): share going to the high-norm artifact patches (those ``--mask-artifacts`` drops); only
  for one sequence of tokens (a patch is flagged on the one grid every block shares);
- ``high_norm_patches`` (L,): how many patches are flagged high-norm after each block; likewise;
- ``top1``, ``top5`` (): 1 or 0 per labelled image, so their mean is the accuracy (labelled images only);
- ``faithfulness.<method>.<score>``: **where the Explain methods' per-image scores go** (e.g.
  ``faithfulness.rollout.deletion_auc``): any per-image value whose name starts with ``FAITHFULNESS`` is summed
  like the others, combined across processes, kept across ``--resume`` and reported as the faithfulness
  table (``viz.dataset.report``). Add them to the dict ``image_values`` returns, in ``viz.dataset.run``;
- ``inside.head_importance`` (L, H), ``inside.lens_top1`` (L,): with ``--inside``, the change of each image's target
  logit when each head alone is ablated, and 1 or 0 per layer where the logit lens's top-1 is the label (labelled
  images only); ``viz.inside.job.dataset_values``, reported as statistics.json's "inside".
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from vit.architecture import Architecture

from ..analysis import Captured
from ..maps.norms import artifact_mask, flag_high_norm
from ..maps.statistics import key_share, patch_keys, prefix_keys
from ..maps.windows import WindowedAttention

FAITHFULNESS = "faithfulness."     # prefix of the per-image scores of the explanation methods
CHEFER = "chefer."                 # prefix of the per-image hits of --protocol chefer2021: "chefer.<sign>.<method>"
INSIDE = "inside."                 # prefix of the inside views' per-image values
FRACTION_BITS = 52                 # fixed point: 2⁻⁵² ≈ 2.2e-16 resolution of the fractional part
_ONE = 1 << FRACTION_BITS


def _fixed(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float64 array -> (integer parts, fractional parts · 2⁵² rounded), both int64: x ≈ hi + lo / 2⁵²."""
    whole = np.floor(values)
    return whole.astype(np.int64), np.rint((values - whole) * float(_ONE)).astype(np.int64)


def _carry(hi: np.ndarray, lo: np.ndarray) -> None:
    """Move whole units from ``lo`` into ``hi`` in place, so that 0 <= lo < 2⁵² (room to add 2¹¹ more)."""
    carry = lo >> FRACTION_BITS
    hi += carry
    lo -= carry << FRACTION_BITS


@dataclass
class ExactSum:
    """Σx and Σx² of one per-image array over the images added, in fixed point, and how many were added."""
    shape: tuple[int, ...]
    count: int = 0
    words: np.ndarray = field(default=None)   # (4, *shape) int64: Σx high, Σx low, Σx² high, Σx² low

    def __post_init__(self):
        self.shape = tuple(self.shape)
        if self.words is None:
            self.words = np.zeros((4, *self.shape), dtype=np.int64)

    def add(self, value) -> None:
        x = np.asarray(value, dtype=np.float64)
        if x.shape != self.shape:
            raise ValueError(f"Wrong shape for a per-image value! Expected {self.shape} but got {x.shape}.")
        for k, part in enumerate((*_fixed(x), *_fixed(x * x))):
            self.words[k] += part
        self.normalise()
        self.count += 1

    def normalise(self) -> None:
        _carry(self.words[0], self.words[1])
        _carry(self.words[2], self.words[3])

    def _totals(self, k: int) -> list[int]:
        """Exact sums as integers in units of 2⁻⁵², flattened (Python ints: no overflow)."""
        return [(int(h) << FRACTION_BITS) + int(lo) for h, lo in zip(self.words[k].ravel(), self.words[k + 1].ravel())]

    def mean(self) -> np.ndarray:
        """Σx / n over the images added (NaN when none were)."""
        if not self.count:
            return np.full(self.shape, np.nan)
        return np.array([s / (self.count << FRACTION_BITS) for s in self._totals(0)]).reshape(self.shape)

    def std(self) -> np.ndarray:
        """Standard deviation over the images (ddof 0) from the exact sums, (n·Σx² − (Σx)²) / n² rounded once."""
        if not self.count:
            return np.full(self.shape, np.nan)
        n = self.count
        var = [max(n * s2 * _ONE - s1 * s1, 0) / (n * n << 2 * FRACTION_BITS)
               for s1, s2 in zip(self._totals(0), self._totals(2))]
        return np.sqrt(np.array(var)).reshape(self.shape)


class Statistics:
    """Named ``ExactSum``s: what a data-set run accumulates, combines across processes and saves for --resume."""

    def __init__(self):
        self.sums: dict[str, ExactSum] = {}

    @property
    def images(self) -> int:
        """Images added (every image adds ``mean_distance``)."""
        return self.sums["mean_distance"].count if "mean_distance" in self.sums else 0

    def add_image(self, values: dict[str, np.ndarray]) -> None:
        for name, value in values.items():
            if name not in self.sums:
                self.sums[name] = ExactSum(np.shape(value))
            self.sums[name].add(value)

    def declare(self, shapes: dict[str, tuple[int, ...]]) -> None:
        """Make sure these sums exist (empty), so that every process holds the same ones before combining."""
        for name, shape in shapes.items():
            self.sums.setdefault(name, ExactSum(shape))

    def shapes(self) -> dict[str, tuple[int, ...]]:
        return {name: s.shape for name, s in self.sums.items()}

    def to_flat(self) -> np.ndarray:
        """Every sum as one int64 vector (names sorted): per name [count, words…]; what all-reduce adds up."""
        parts = []
        for name in sorted(self.sums):
            s = self.sums[name]
            parts += [np.array([s.count], dtype=np.int64), s.words.ravel()]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def from_flat(self, flat: np.ndarray) -> None:
        """Inverse of ``to_flat`` for the same names and shapes (e.g. after adding several processes' vectors)."""
        at = 0
        for name in sorted(self.sums):
            s = self.sums[name]
            size = s.words.size
            s.count = int(flat[at])
            s.words = np.array(flat[at + 1:at + 1 + size], dtype=np.int64).reshape(s.words.shape)
            s.normalise()
            at += 1 + size

    def merge(self, other: "Statistics") -> None:
        """Add another run's sums to these (e.g. the saved part of an interrupted run)."""
        self.declare(other.shapes())
        other.declare(self.shapes())
        self.from_flat(self.to_flat() + other.to_flat())

    def to_arrays(self) -> dict[str, np.ndarray]:
        """For np.savez: ``<name>|count`` and ``<name>|words`` per sum (no pickle needed to read them back)."""
        out = {}
        for name, s in self.sums.items():
            out[f"{name}|count"] = np.array(s.count, dtype=np.int64)
            out[f"{name}|words"] = s.words
        return out

    @classmethod
    def from_arrays(cls, arrays) -> "Statistics":
        stats = cls()
        for key in arrays:
            name, part = key.rsplit("|", 1)
            if part == "words":
                words = np.asarray(arrays[key], dtype=np.int64)
                stats.sums[name] = ExactSum(words.shape[1:], int(arrays[f"{name}|count"]), words.copy())
        return stats


def declared(architecture: Architecture) -> dict[str, tuple[int, ...]]:
    """The per-image values every image of a model with this description has, with their shapes (so that a process
    that got no image still holds them): the per-head tables always, the prefix share with prefix tokens, the
    high-norm values with one sequence of tokens."""
    L, H = architecture.depth, architecture.max_heads
    shapes = {"mean_distance": (L, H), "entropy": (L, H)}
    if architecture.num_prefix:
        shapes["prefix_share"] = (L,)
    if architecture.one_sequence:
        shapes.update(high_norm_share=(L,), high_norm_patches=(L,))
    return shapes


def image_values(captured: Captured, b: int, label: int | None, norm_ratio: float = 3.0,
                 distance_renormalise: bool = False) -> dict[str, np.ndarray]:
    """The per-image values of image ``b`` of a batch captured with ``statistics=True`` (one sequence of tokens;
    names: module docstring).

    ``label``: its class index when the folder is labelled. ``norm_ratio``: the high-norm rule of
    ``viz.maps.norms.flag_high_norm``. ``distance_renormalise``: which mean distance (``--distance-renormalise``).
    """
    p, grid = captured.num_prefix, captured.grid
    flags = flag_high_norm(captured.token_norms[b], p, grid, norm_ratio)          # (L, gh, gw)
    mass = captured.key_mass[b]                                                   # (L, T)
    distance = captured.mean_distance_renormalised if distance_renormalise else captured.mean_distance
    values = {"mean_distance": distance[b], "entropy": captured.entropy[b],
              "high_norm_share": key_share(mass, patch_keys(p, artifact_mask(flags))),
              "high_norm_patches": flags.sum(axis=(1, 2))}
    if p:
        values["prefix_share"] = key_share(mass, prefix_keys(p, grid))
    return {**values, **accuracy_values(captured.probabilities[b], label)}


def block_values(source: WindowedAttention, architecture: Architecture, probabilities: np.ndarray,
                 label: int | None) -> dict[str, np.ndarray]:
    """One image's per-image values from its blocks' maps kept block by block (``capture_blocks``; ``source``: each
    block's (nW, H, N, N) with its layout): every head's mean distance in pixels of the input and entropy in nats,
    averaged over the block's tokens, 0 past a block's heads (module docstring)."""
    L, H = architecture.depth, architecture.max_heads
    distance = np.nan_to_num(source.mean_distance(architecture.patch_size), nan=0.0)     # (L, H)
    entropy = np.zeros((L, H))
    for block, attention in zip(architecture.blocks, source.attention):
        a = np.asarray(attention, dtype=np.float64)                                    # (nW, H, N, N)
        entropy[block.index, :block.heads] = -(a * np.log(np.maximum(a, 1e-30))).sum(axis=-1).mean(axis=(0, 2))
    return {"mean_distance": distance, "entropy": entropy, **accuracy_values(probabilities, label)}


def accuracy_values(probabilities: np.ndarray, label: int | None) -> dict[str, np.ndarray]:
    """``top1`` and ``top5`` (1 or 0) of a labelled image; nothing for an unlabelled one."""
    if label is None:
        return {}
    top5 = np.argsort(-probabilities, kind="stable")[:5]
    return {"top1": np.float64(top5[0] == label), "top5": np.float64(label in top5)}


def uniform_entropy(tokens: int) -> float:
    """Entropy of attention spread evenly over ``tokens`` keys, ln T: the largest a head can have."""
    return math.log(tokens)
