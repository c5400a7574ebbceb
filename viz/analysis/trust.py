"""The model-running half of "can this map be trusted?": each method's map, its deletion / insertion curves and its
sanity curve, computed in steps of about one model pass so that a server can interleave them with other visitors'
work, with progress, and cached per (photo, model, target, method).

    job = TrustJob(model, x, target, ["gae", "attention", "random"], sanity=True)
    for done, total, what in job.steps():       # each step: one forward (or one forward + backward)
        ...                                      # report progress, yield the lock to another request, …
    report = job.result()                        # viz.trust.TrustReport

``trust_report(model, x, target, methods, progress=None)`` runs a whole job at once. The formulas (orders, AUCs,
Spearman, the flag) are in ``viz.trust``; the token dropping and the randomisation in ``vit.explain.perturb``.

How the curves are batched: a method's 22 curve points need 18 sequences besides the whole photo and the empty
one (shared by every method, and the whole photo's probability comes free with a map's own model pass). The
sequences are packed end to end into rows of about one forward's tokens (first fit, longest first: deletion at f
and insertion at f together hold every patch once, so they fill a row), a mask keeping each sequence to itself
(``vit.explain.perturb.forward_packed``), and ``rows_per_step`` rows run as one batch: 8 by default, for
throughput (the CLI, data sets); the page runs 1, so that a step never holds another visitor's analysis back by
more than one forward. The curves of one map thus cost about 9 forwards' worth of tokens in full-size matrices.
"""
from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Callable, Iterator, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from vit.explain import RULE_SETS, ClassTarget, Target
from vit.explain.perturb import cascading_randomization, forward_kept, forward_packed
from vit.explain.rules import rule_view, without_parameter_grads
from vit.model import PatchEmbed

from ..explain.arrays import ExplainArrays
from ..explain.methods import FAMILIES, METHODS, families_of, method_names, served_by
from ..trust.curves import FRACTIONS, KINDS, VARIANTS, Faithfulness, keep_sets, removed_counts
from ..trust.report import MethodTrust, TrustReport
from ..trust.sanity import spearman
from .explainer import concrete_target, explain_tensor

Progress = Callable[[int, int, str], None]      # (steps done, steps in all, what the last step did)
ROWS_PER_STEP = 8   # rows of about one forward batched per step by default: larger matrix products, ~15 % faster
CurvePoint = tuple[str, str, int, int]           # one curve sequence: (method, kind, fraction index, kept patches K)


def photo_key(x: torch.Tensor) -> str:
    """sha256 of the preprocessed input's float32 bytes: the photo part of a cache key (same pixels, same key)."""
    return hashlib.sha256(x.detach().float().cpu().contiguous().numpy().tobytes()).hexdigest()


def cache_key(photo: str, model: str, target_index: int, method: str, variant: str = "tokens",
              seed: int = 0) -> tuple:
    """The key one ``MethodTrust`` is cached under: (photo_key(x), a model id such as the checkpoint's sha256,
    the class index, the method, the removal variant, the randomisation seed)."""
    return (photo, model, int(target_index), method, variant, int(seed))


class TrustCache:
    """A thread-safe LRU store of ``MethodTrust`` (a few kB each: a (gh, gw) map and 22 + L floats)."""

    def __init__(self, max_entries: int = 512):
        self.max_entries = max_entries
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        return None

    def put(self, key, value: MethodTrust) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


def unsupported(model, names: Sequence[str]) -> dict[str, str]:
    """{method: why} for the methods this model cannot run: an LRP method on a model with a module its rules do
    not reproduce (named in the reason, e.g. q/k norms). Builds the rule views, runs nothing."""
    out = {}
    for name in names:
        rules = FAMILIES[METHODS[name].family].rules
        if rules is not None:
            try:
                rule_view(without_parameter_grads(model), RULE_SETS[rules],
                          lambda n, m: m if isinstance(m, PatchEmbed) else None)   # the pass starts its graph there
            except ValueError as error:
                out[name] = str(error)
    return out


def _fill(x: torch.Tensor, variant: str, patch: int) -> torch.Tensor:
    """The pixels a removed patch shows in a pixel-space variant: (1, C, H, W)."""
    if variant == "mean_colour":
        return x.mean(dim=(2, 3), keepdim=True).expand_as(x)
    sigma = patch / 2
    size = 2 * patch + 1                                     # ±2σ
    r = torch.arange(size, dtype=x.dtype, device=x.device) - patch
    g = torch.exp(-r ** 2 / (2 * sigma ** 2))
    g = g / g.sum()
    C = x.shape[1]
    padded = F.pad(x, (patch, patch, patch, patch), mode="reflect")
    h = F.conv2d(padded, g.view(1, 1, 1, size).expand(C, 1, 1, size).contiguous(), groups=C)
    return F.conv2d(h, g.view(1, 1, size, 1).expand(C, 1, size, 1).contiguous(), groups=C)


def first_fit(sizes: Sequence[int], capacity: int) -> list[list[int]]:
    """Pack items into bins of ``capacity`` (first fit, largest first; an item larger than a bin gets its own)
    -> bins as lists of item indices, each in the order items went in. Deterministic: ties keep index order."""
    bins: list[list[int]] = []
    room: list[int] = []
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        for b, left in enumerate(room):
            if sizes[i] <= left:
                bins[b].append(i)
                room[b] -= sizes[i]
                break
        else:
            bins.append([i])
            room.append(capacity - sizes[i])
    return bins


class TrustJob:
    """Maps, curves and (optionally) sanity curves of ``methods`` for one image and target, as a sequence of steps.

    model: a ``VisionTransformer`` in eval mode; x: one preprocessed image (1, C, H, W); target: a ``Target``
    (default: the top-1 class); methods: names of ``viz.explain.METHODS`` (default: every method this model can
    run; the others are listed in ``job.unsupported``, an explicit unsupported one raises ValueError). ``sanity``: also the
    cascading randomisation (L more steps per model pass family). ``variant``: a key of ``VARIANTS``.
    ``rows_per_step``: rows of about one forward's tokens per curve step (1 where a step must stay one forward). ``cache``
    (a ``TrustCache``) with ``model_id``: methods found under ``cache_key`` are not run again. The random
    baseline is computed (or taken from the cache) whether asked for or not: the gains are measured against it.
    ``maps``: further named (gh, gw) maps to score the same way (the CLS attention of a chosen layer and head, an
    occlusion map, …): curves only (no sanity check, which needs a method to recompute), never cached.
    """

    def __init__(self, model, x: torch.Tensor, target: Target | None = None, methods: Sequence[str] | str | None = None,
                 *, sanity: bool = False, variant: str = "tokens", seed: int = 0, rows_per_step: int = ROWS_PER_STEP,
                 cache: TrustCache | None = None, model_id: str = "", labels: Sequence[str] = (),
                 maps: dict[str, np.ndarray] | None = None):
        if x.ndim != 4 or x.shape[0] != 1:
            raise ValueError(f"Wrong input shape! Expected one image (1, C, H, W) but got {tuple(x.shape)}.")
        if variant not in VARIANTS:
            raise ValueError(f"Unknown variant {variant!r}! Expected one of {', '.join(VARIANTS)}.")
        self.model, self.labels = model, labels
        self.x = x.to(next(model.parameters()).device)
        self.extra = {k: np.asarray(v, dtype=np.float32) for k, v in (maps or {}).items()}
        self.names = [] if self.extra and not methods and methods is not None else \
            method_names(list(METHODS) if methods is None else methods)
        self.unsupported = unsupported(model, self.names)
        if self.unsupported and methods is not None:
            raise ValueError(" ".join(self.unsupported.values()))
        self.names = [n for n in self.names if n not in self.unsupported]
        clash = sorted(set(self.extra) & set(METHODS))
        if clash:
            raise ValueError(f"Extra maps may not take a method's name: {', '.join(clash)}!")
        self.sanity, self.variant, self.seed = sanity, variant, seed
        self.layout = model.token_layout(x.shape[-2], x.shape[-1])
        self.N = self.layout.grid[0] * self.layout.grid[1]
        if rows_per_step < 1:
            raise ValueError(f"rows_per_step must be at least 1 but got {rows_per_step}!")
        # a row: one forward's tokens and room for one more prefix, so that deletion at f and insertion at f share it
        self.row_tokens = self.layout.num_tokens + self.layout.num_prefix
        self.rows_per_step = rows_per_step
        self.cache, self.model_id = cache, model_id
        self.target = ClassTarget() if target is None else target
        self.probability: float | None = None      # the target's probability on the whole photo
        if isinstance(self.target, ClassTarget) and self.target.index is None:   # the top-1 class: one forward
            with torch.inference_mode():
                output = model(self.x)
            self.target = concrete_target(self.target, output, labels)
            self.probability = float(self.target.probability(output)[0])
        self.all = list(dict.fromkeys(self.names + ["random"]))
        self.cached: dict[str, MethodTrust] = {}
        if cache is not None and isinstance(self.target, ClassTarget):
            self._photo = photo_key(self.x)
            for name in self.all:
                hit = cache.get(self._key(name))
                if hit is not None and (hit.sanity is not None or not sanity or name not in self.names):
                    self.cached[name] = hit
        self.to_map = [n for n in self.all if n not in self.cached] + list(self.extra)
        self.to_check = [n for n in self.names if sanity and n not in self.cached]
        self.maps: dict[str, np.ndarray] = {**{n: m.map for n, m in self.cached.items()}, **self.extra}
        self.points: dict[tuple[str, str], np.ndarray] = {}      # (method, kind) -> (11,) probabilities
        self.rho: dict[str, list[float]] = {}
        self._report: TrustReport | None = None

    # --- the plan ----------------------------------------------------------------------------------------------

    def _key(self, name: str) -> tuple:
        return cache_key(self._photo, self.model_id, self.target.index, name, self.variant, self.seed)

    def _groups(self, names: list[str]) -> list[list[str]]:
        """The methods a single model pass serves together (one backward for gae, grad_rollout and gradcam)."""
        groups = []
        for family in families_of(names):
            group = [n for n in names if METHODS[n].family in served_by(family)]
            if group and FAMILIES[family].runs_model:
                groups.append(group)
        if any(not self._runs_model(n) for n in names):
            groups.append([n for n in names if not self._runs_model(n)])
        return groups

    def _map_passes(self) -> bool:
        """Whether a model pass on the whole photo computes a map (and so gives its probability for free)."""
        return any(self._runs_model(n) for n in self._methods_to_map())

    @staticmethod
    def _runs_model(name: str) -> bool:
        return FAMILIES[METHODS[name].family].runs_model

    def _sequences(self) -> list[CurvePoint]:
        """Every curve point that needs a model run: a method's 18 inner points (the pixel variants: all 22), the
        whole photo unless its probability is known, and the prefix alone when a class token can read it."""
        counts = removed_counts(self.N, FRACTIONS)
        items = []
        for name in self.to_map:
            for kind in KINDS:
                for i, r in enumerate(counts):
                    K = self.N - r if kind == "deletion" else r
                    if 0 < K < self.N or self.variant != "tokens":
                        items.append((name, kind, i, K))
        if self.variant == "tokens" and self.to_map:
            if self.probability is None and not self._map_passes():
                items.append(("", "full", 0, self.N))
            if self.model.cfg.global_pool == "token":
                items.append(("", "empty", 0, 0))
        return items

    def _plan(self) -> list[list[list[CurvePoint]]]:
        """The curve sequences packed into rows (``first_fit``) and the rows into steps: plan[step][row] = the
        sequences of that row. A pixel-variant sequence is a whole image: one per row."""
        items = self._sequences()
        if self.variant == "tokens":
            n = self.layout.num_prefix
            rows = [[items[i] for i in b] for b in first_fit([n + K for *_, K in items], self.row_tokens)]
        else:
            rows = [[item] for item in items]
        return [rows[i:i + self.rows_per_step] for i in range(0, len(rows), self.rows_per_step)]

    def curve_lengths(self) -> list[int]:
        """Tokens of every curve sequence that needs a model run (prefix included): what the curves cost whatever
        the packing (bench.run turns it into a lower bound on their time)."""
        sequences = [item for step in self._plan() for row in step for item in row]
        if self.variant != "tokens":                       # pixel variants: a whole image each
            return [self.layout.num_tokens] * len(sequences)
        return [self.layout.num_prefix + K for *_, K in sequences]

    def total(self) -> int:
        """Steps in all: the model passes for the maps, the curve batches, L × the passes of the sanity check."""
        check = len(self.model.blocks) * len(self._groups(self.to_check)) if self.to_check else 0
        return len(self._groups(self._methods_to_map())) + len(self._plan()) + check

    def _methods_to_map(self) -> list[str]:
        return [n for n in self.to_map if n in METHODS]

    # --- the steps ---------------------------------------------------------------------------------------------

    def steps(self) -> Iterator[tuple[int, int, str]]:
        """Run the job; after each step yield (steps done, steps in all, what it did). Each step is one model pass
        (a forward, or a forward + backward for the gradient and LRP methods) or ``rows_per_step`` packed rows."""
        total, done = self.total(), 0
        for group in self._groups(self._methods_to_map()):
            maps, probability = self._explain(self.model, group)
            self.maps.update(maps)
            if self.probability is None:
                self.probability = probability
            done += 1
            yield done, total, "maps: " + ", ".join(group)
        empty = None
        for rows in self._plan():
            sequences = [item for row in rows for item in row]
            for (name, kind, i, K), value in zip(sequences, self._run_step(rows)):
                if kind == "full":
                    self.probability = value
                elif kind == "empty":
                    empty = value
                else:
                    self.points.setdefault((name, kind), np.full(len(FRACTIONS), np.nan))[i] = value
            done += 1
            yield done, total, f"curves: {len(sequences)} sequences in {len(rows)} rows"
        if self.to_map and self.variant == "tokens":
            self._fill_shared(self.probability, self._empty_probability() if empty is None else empty)
        if self.to_check:
            groups = self._groups(self.to_check)
            for k, randomized in cascading_randomization(self.model, self.seed):
                for group in groups:
                    for name, m in self._explain(randomized, group)[0].items():
                        if name in self.to_check:
                            self.rho.setdefault(name, []).append(spearman(self.maps[name], m))
                    done += 1
                    yield done, total, f"sanity: {k} randomised layers, " + ", ".join(group)
        self._report = self._assemble()

    def _explain(self, model, group: list[str]) -> tuple[dict[str, np.ndarray], float | None]:
        """The maps of ``group`` and the target's probability on the whole photo (None: no model pass ran)."""
        if not any(self._runs_model(n) for n in group):         # no model pass: the formula alone
            arrays = ExplainArrays(num_prefix=self.layout.num_prefix, grid=tuple(self.layout.grid))
            return {n: np.asarray(METHODS[n].formula(arrays), dtype=np.float32) for n in group}, None
        e = explain_tensor(model, self.x, self.target, group, self.labels)
        return {n: e.map(n) for n in group}, e.probability

    def _empty_probability(self) -> float:
        """The prefix tokens alone: classifiable with a class token; a pooling model has no patch to pool, so it
        knows nothing and gets chance, 1 / classes (only for class targets)."""
        if isinstance(self.target, ClassTarget) and self.model.cfg.num_classes:
            return 1.0 / self.model.cfg.num_classes
        raise ValueError("Insertion from zero patches needs a class token or a class target!")

    def _run_step(self, rows: list[list[CurvePoint]]) -> list[float]:
        """The target's probability for every sequence of these rows, in row-major order: one batched model run."""
        kept = [[self._kept(item) for item in row] for row in rows]
        with torch.inference_mode():
            if self.variant == "tokens":
                output = forward_packed(self.model, self.x, kept)
            else:
                output = self.model(self._pixels([row[0] for row in kept]))
            return [float(p) for p in self.target.probability(output)]

    def _kept(self, item: CurvePoint) -> np.ndarray:
        name, kind, i, _ = item
        if kind == "full":
            return np.arange(self.N)
        if kind == "empty":
            return np.zeros(0, dtype=np.int64)
        return self._keep_sets(name)[kind][i]

    def _keep_sets(self, name: str) -> dict:
        if not hasattr(self, "_sets"):
            self._sets = {}
        if name not in self._sets:
            self._sets[name] = keep_sets(self.maps[name], FRACTIONS)
        return self._sets[name]

    def _pixels(self, keep: list[np.ndarray]) -> torch.Tensor:
        """Pixel-space variant: (B, C, H, W) images whose patches outside each keep set show the fill."""
        if not hasattr(self, "_fill_pixels"):
            self._fill_pixels = _fill(self.x, self.variant, self.model.cfg.patch_size)
        gh, gw = self.layout.grid
        P = self.model.cfg.patch_size
        mask = torch.zeros(len(keep), self.N, dtype=self.x.dtype, device=self.x.device)
        for b, k in enumerate(keep):
            mask[b, torch.as_tensor(k, dtype=torch.long)] = 1.0
        mask = mask.view(-1, 1, gh, gw).repeat_interleave(P, 2).repeat_interleave(P, 3)  # (B, 1, H, W)
        return self.x * mask + self._fill_pixels * (1 - mask)

    def _fill_shared(self, full: float, empty: float) -> None:
        counts = removed_counts(self.N, FRACTIONS)
        for name in self.to_map:
            for kind in KINDS:
                curve = self.points.setdefault((name, kind), np.full(len(FRACTIONS), np.nan))
                for i, r in enumerate(counts):
                    K = self.N - r if kind == "deletion" else r
                    if K == self.N:
                        curve[i] = full
                    elif K == 0:
                        curve[i] = empty

    def _assemble(self) -> TrustReport:
        if self.probability is None:                       # everything came from the cache
            with torch.inference_mode():
                self.probability = float(self.target.probability(self.model(self.x))[0])
        methods = dict(self.cached)
        for name in self.to_map:
            old = self.cached.get(name)
            methods[name] = MethodTrust(name, self.maps[name], Faithfulness.from_curves(
                self.points[(name, "deletion")], self.points[(name, "insertion")]), old.sanity if old else None)
        for name in self.names:
            m = methods[name]
            if name in self.rho:
                methods[name] = MethodTrust(name, m.map, m.faithfulness, tuple(self.rho[name]))
        if self.cache is not None and isinstance(self.target, ClassTarget):
            for name, m in methods.items():
                if name in METHODS:
                    self.cache.put(self._key(name), m)
        return TrustReport(self.target.describe(), self.probability, {n: methods[n] for n in self.names + list(self.extra)},
                           methods["random"].faithfulness, self.variant)

    def result(self) -> TrustReport:
        """The ``TrustReport`` (runs the remaining steps first if ``steps()`` was not exhausted)."""
        if self._report is None:
            for _ in self.steps():
                pass
        return self._report


def trust_report(model, x: torch.Tensor, target: Target | None = None, methods: Sequence[str] | str | None = None,
                 progress: Progress | None = None, **options) -> TrustReport:
    """Run a whole ``TrustJob`` (``options``: sanity, variant, seed, rows_per_step, cache, model_id, labels),
    calling ``progress(done, total, what)`` after each step."""
    job = TrustJob(model, x, target, methods, **options)
    for done, total, what in job.steps():
        if progress is not None:
            progress(done, total, what)
    return job.result()


def occlusion_map(model, x: torch.Tensor, target: Target, batch: int = 64) -> np.ndarray:
    """The "oracle" map of the deletion protocol: for each patch, the target's probability on the whole photo
    minus its probability with that one patch dropped (N forwards of N − 1 patches, ``batch`` at a time)
    -> (gh, gw). What single-patch removal really does, so a faithful map should rank patches like it."""
    layout = model.token_layout(x.shape[-2], x.shape[-1])
    N = layout.grid[0] * layout.grid[1]
    x = x.to(next(model.parameters()).device)
    all_but = torch.stack([torch.cat([torch.arange(i), torch.arange(i + 1, N)]) for i in range(N)])  # (N, N-1)
    with torch.inference_mode():
        p = float(target.probability(model(x))[0])
        dropped = torch.cat([target.probability(forward_kept(model, x, all_but[i:i + batch].to(x.device)))
                             for i in range(0, N, batch)])
    return (p - dropped.float().cpu().numpy()).reshape(layout.grid)
