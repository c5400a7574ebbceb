"""The model-running half of "can this map be trusted?": each method's map, its deletion / insertion curves under
one or several protocols and its sanity curve, computed in steps of about one model pass so that a server can
interleave them with other visitors' work, with progress, and cached per (photo, model, target, method, protocol).

    job = TrustJob(model, x, target, ["gae", "attention", "random"], sanity=True)   # one protocol ("fast")
    for done, total, what in job.steps():       # each step: one forward (or one forward + backward)
        ...                                      # report progress, yield the lock to another request, …
    report = job.result()                        # viz.trust.TrustReport

    job = ProtocolsJob(model, x, target, methods, protocols=PROTOCOLS)                # every protocol ("thorough")
    for done, total, what in job.steps(): ...    # the same steps, protocol after protocol, the maps computed once
    report = job.result()                        # viz.trust.ProtocolsReport: verdicts, agreement

``trust_report`` and ``protocols_report`` run a whole job at once. The formulas (orders, AUCs, errors, Spearman,
the flag, the verdicts) are in ``viz.trust``; the fills in ``viz.trust.protocols``; the token dropping and the
randomisation in ``vit.explain.perturb``.

How the curves are batched: a method's 2 × points curve values need 2 × (points − 2) sequences besides the whole
photo and the empty one (shared by every method, and the whole photo's probability comes free with a map's own
model pass). Under ``tokens`` the sequences are packed end to end into rows of about one forward's tokens (first
fit, longest first: deletion at f and insertion at f together hold every patch once, so they fill a row), a mask
keeping each sequence to itself (``vit.explain.perturb.forward_packed``); under a pixel protocol each is a whole
image. ``rows_per_step`` rows (images) run as one batch: 8 by default, for throughput (the CLI, data sets); the
page runs 1, so that a step never holds another visitor's analysis back by more than one forward. With the
default 11 points the curves of one map cost about 9 forwards' worth of tokens under ``tokens`` and 18 forwards
under each pixel protocol (plus, for ``road``, 18 sparse solves).
"""
from __future__ import annotations

import hashlib
from typing import Callable, Iterator, Sequence

import numpy as np
import torch

from vit.explain import RULE_SETS, ClassTarget, Target
from vit.explain.perturb import cascading_randomization, forward_kept, forward_packed, token_dropping_refusal
from vit.explain.rules import rule_view, without_parameter_grads

from ..explain.explainer import concrete_target, explain_tensor
from ..cache import Cache
from ..explain.arrays import ExplainArrays
from ..explain.methods import FAMILIES, METHODS, families_of, method_names, methods_for, refusals, served_by
from .curves import KINDS, POINTS, Faithfulness, fractions, keep_sets, removed_counts
from .protocols import PIXEL, PROTOCOLS, fill, perturbed, protocol_list
from .report import MethodTrust, TrustReport
from .sanity import spearman
from .verdicts import ProtocolsReport

Progress = Callable[[int, int, str], None]      # (steps done, steps in all, what the last step did)
ROWS_PER_STEP = 8   # rows of about one forward batched per step by default: larger matrix products, ~15 % faster
CurvePoint = tuple[str, str, int, int]           # one curve sequence: (method, kind, fraction index, kept patches K)


def photo_key(x: torch.Tensor) -> str:
    """sha256 of the preprocessed input's float32 bytes: the photo part of a cache key (same pixels, same key)."""
    return hashlib.sha256(x.detach().float().cpu().contiguous().numpy().tobytes()).hexdigest()


def cache_key(photo: str, model: str, target_index: int, method: str, protocol: str = "tokens",
              seed: int = 0, points: int = POINTS) -> tuple:
    """The key one ``MethodTrust`` is cached under: (photo_key(x), a model id such as the checkpoint's sha256,
    the class index, the method, the protocol, the seed (randomisation, ROAD's noise), the points per curve)."""
    return (photo, model, int(target_index), method, protocol, int(seed), int(points))


def unsupported(model, names: Sequence[str], size: tuple[int, int] | None = None) -> dict[str, str]:
    """{method: why} for the methods this model cannot run at ``size`` (H, W) (default: its own), in the order
    given: a method that has no meaning for its description (``viz.explain.methods.refusals``), an LRP method on a
    model with a module its rules do not reproduce (named in the reason, e.g. q/k norms). Builds the rule views,
    runs nothing."""
    refused = refusals(list(names), model.architecture(*(size or model.cfg.img_size)))
    start = model.patch_projection()[0]                     # the relevance pass starts its graph there
    out = {}
    for name in names:
        rules = FAMILIES[METHODS[name].family].rules
        if name in refused:
            out[name] = refused[name]
        elif rules is not None:
            try:
                rule_view(without_parameter_grads(model), RULE_SETS[rules], lambda n, m: m if n == start else None)
            except ValueError as error:
                out[name] = str(error)
    return out


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
    """Maps, curves and (optionally) sanity curves of ``methods`` for one image and target under one protocol, as a
    sequence of steps.

    model: any model the explorer opens, in eval mode (one without one sequence of tokens, e.g. windows that tile the
    grid, refuses "tokens" in one sentence and uses the pixel protocols: ``token_dropping_refusal``); x: one
    preprocessed image (1, C, H, W); target: a ``Target`` (default: the top-1 class); methods: names of
    ``viz.explain.METHODS`` (default: every method this model can run; the others are listed in
    ``job.unsupported``, an explicit unsupported one raises ValueError). ``sanity``:
    also the cascading randomisation (L more steps per model pass family). ``protocol``: a key of
    ``viz.trust.protocols.PROTOCOLS``; ``points``: values per curve (``viz.trust.curves.fractions``; the CLI's
    --steps); ``seed``: of the randomisation and of ROAD's noise. ``rows_per_step``: rows of about one forward's
    tokens (or images) per curve step (1 where a step must stay one forward). ``cache`` (a ``viz.cache.Cache``) with
    ``model_id``: methods found under ``cache_key`` are not run again. The random baseline is computed (or taken
    from the cache) whether asked for or not: the gains are measured against it. ``maps``: further named (gh, gw)
    maps to score the same way (the CLS attention of a chosen layer and head, an occlusion map, …): curves only
    (no sanity check, which needs a method to recompute), never cached. ``source``: another job on the same photo
    and target, run before this one, whose maps and whole-photo probability this one reuses (no map pass of its
    own): how ``ProtocolsJob`` runs one protocol after another.
    """

    def __init__(self, model, x: torch.Tensor, target: Target | None = None, methods: Sequence[str] | str | None = None,
                 *, sanity: bool = False, protocol: str = "tokens", points: int = POINTS, seed: int = 0,
                 rows_per_step: int = ROWS_PER_STEP, cache: Cache | None = None, model_id: str = "",
                 labels: Sequence[str] = (), maps: dict[str, np.ndarray] | None = None,
                 source: "TrustJob | None" = None):
        if x.ndim != 4 or x.shape[0] != 1:
            raise ValueError(f"Wrong input shape! Expected one image (1, C, H, W) but got {tuple(x.shape)}.")
        if protocol not in PROTOCOLS:
            raise ValueError(f"Unknown protocol {protocol!r}! Expected one of {', '.join(PROTOCOLS)}.")
        size = tuple(x.shape[-2:])
        if protocol == "tokens" and token_dropping_refusal(model, size):
            raise ValueError(token_dropping_refusal(model, size))
        self.architecture = model.architecture(*size)
        self.fractions = fractions(points)
        self.model, self.labels, self.source = model, labels, source
        self.x = x.to(next(model.parameters()).device)
        self.extra = {k: np.asarray(v, dtype=np.float32) for k, v in (maps or {}).items()}
        self.names = [] if self.extra and not methods and methods is not None else \
            method_names(methods_for(self.architecture) if methods is None else methods)
        self.unsupported = unsupported(model, self.names, size)
        if self.unsupported and methods is not None:
            raise ValueError(" ".join(self.unsupported.values()))
        self.names = [n for n in self.names if n not in self.unsupported]
        clash = sorted(set(self.extra) & set(METHODS))
        if clash:
            raise ValueError(f"Extra maps may not take a method's name: {', '.join(clash)}!")
        self.sanity, self.protocol, self.seed = sanity and source is None, protocol, seed
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
                if hit is not None and (hit.sanity is not None or not self.sanity or name not in self.names):
                    self.cached[name] = hit
        self.to_map = [n for n in self.all if n not in self.cached] + list(self.extra)
        self.to_check = [n for n in self.names if self.sanity and n not in self.cached]
        self.maps: dict[str, np.ndarray] = {**{n: m.map for n, m in self.cached.items()}, **self.extra}
        self.points: dict[tuple[str, str], np.ndarray] = {}      # (method, kind) -> (points,) probabilities
        self.rho: dict[str, list[float]] = {}
        self._sets: dict[str, dict] = {}
        self._filled: torch.Tensor | None = None
        self._report: TrustReport | None = None

    # --- the plan ----------------------------------------------------------------------------------------------

    def _key(self, name: str) -> tuple:
        return cache_key(self._photo, self.model_id, self.target.index, name, self.protocol, self.seed,
                         len(self.fractions))

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

    def _runs_model(self, name: str) -> bool:
        return FAMILIES[METHODS[name].family].runs_model

    def _methods_to_map(self) -> list[str]:
        """The methods whose map this job computes itself (none when a source job computed them)."""
        return [] if self.source is not None else [n for n in self.to_map if n in METHODS]

    def _probability_known(self) -> bool:
        """Whether the whole photo's probability is known without a forward of its own: from the top-1 forward,
        a map's own model pass, or the source job."""
        return (self.probability is not None or self.source is not None
                or any(self._runs_model(n) for n in self._methods_to_map()))

    def _sequences(self) -> list[CurvePoint]:
        """Every curve point that needs a model run: a method's 2 × (points − 2) inner points, the whole photo unless
        its probability is known, and the empty input (the prefix alone, when a class token can read it, or the
        image with every patch filled), shared by every method."""
        counts = removed_counts(self.N, self.fractions)
        items = []
        for name in self.to_map:
            for kind in KINDS:
                for i, r in enumerate(counts):
                    K = self.N - r if kind == "deletion" else r
                    if 0 < K < self.N:
                        items.append((name, kind, i, K))
        if self.to_map:
            if not self._probability_known():
                items.append(("", "full", 0, self.N))
            if self.protocol in PIXEL or self.architecture.readout in ("cls", "distilled"):
                items.append(("", "empty", 0, 0))
        return items

    def _plan(self) -> list[list[list[CurvePoint]]]:
        """The curve sequences packed into rows (``first_fit``) and the rows into steps: plan[step][row] = the
        sequences of that row. A pixel-protocol sequence is a whole image: one per row."""
        items = self._sequences()
        if self.protocol == "tokens":
            n = self.layout.num_prefix
            rows = [[items[i] for i in b] for b in first_fit([n + K for *_, K in items], self.row_tokens)]
        else:
            rows = [[item] for item in items]
        return [rows[i:i + self.rows_per_step] for i in range(0, len(rows), self.rows_per_step)]

    def curve_lengths(self) -> list[int]:
        """Tokens of every curve sequence that needs a model run (prefix included): what the curves cost whatever
        the packing (bench.run turns it into a lower bound on their time)."""
        sequences = [item for step in self._plan() for row in step for item in row]
        if self.protocol != "tokens":                      # pixel protocols: a whole image each
            return [self.layout.num_tokens] * len(sequences)
        return [self.layout.num_prefix + K for *_, K in sequences]

    def total(self) -> int:
        """Steps in all: the model passes for the maps, the curve batches, L × the passes of the sanity check."""
        check = len(self.model.blocks) * len(self._groups(self.to_check)) if self.to_check else 0
        return len(self._groups(self._methods_to_map())) + len(self._plan()) + check

    # --- the steps ---------------------------------------------------------------------------------------------

    def steps(self) -> Iterator[tuple[int, int, str]]:
        """Run the job; after each step yield (steps done, steps in all, what it did). Each step is one model pass
        (a forward, or a forward + backward for the gradient and LRP methods) or ``rows_per_step`` packed rows."""
        total, done = self.total(), 0
        if self.source is not None:
            self.maps.update({n: self.source.maps[n] for n in self.to_map if n in METHODS})
            self.probability = self.source.probability
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
                    self.points.setdefault((name, kind), np.full(len(self.fractions), np.nan))[i] = value
            done += 1
            yield done, total, f"curves ({self.protocol}): {len(sequences)} sequences in {len(rows)} rows"
        if self.to_map:
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
            if self.protocol == "tokens":
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
        if name not in self._sets:
            self._sets[name] = keep_sets(self.maps[name], self.fractions)
        return self._sets[name][kind][i]

    def _pixels(self, keep: list[np.ndarray]) -> torch.Tensor:
        """Pixel-space protocol: (B, C, H, W) images whose patches outside each keep set are filled."""
        P = self.model.cfg.patch_size
        if self._filled is None and self.protocol != "road":
            self._filled = fill(self.x, self.protocol, P)
        return perturbed(self.x, keep, self.protocol, tuple(self.layout.grid), P, self.seed, self._filled)

    def _fill_shared(self, full: float, empty: float) -> None:
        """The two ends every curve shares: the whole photo (nothing removed) and nothing kept."""
        counts = removed_counts(self.N, self.fractions)
        for name in self.to_map:
            for kind in KINDS:
                curve = self.points.setdefault((name, kind), np.full(len(self.fractions), np.nan))
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
                self.points[(name, "deletion")], self.points[(name, "insertion")], self.fractions),
                old.sanity if old else None)
        for name in self.names:
            m = methods[name]
            if name in self.rho:
                methods[name] = MethodTrust(name, m.map, m.faithfulness, tuple(self.rho[name]))
        if self.cache is not None and isinstance(self.target, ClassTarget):
            for name, m in methods.items():
                if name in METHODS:
                    self.cache.put(self._key(name), m)
        return TrustReport(self.target.describe(), self.probability,
                           {n: methods[n] for n in self.names + list(self.extra)}, methods["random"].faithfulness,
                           self.protocol, tuple(float(f) for f in self.fractions))

    def result(self) -> TrustReport:
        """The ``TrustReport`` (runs the remaining steps first if ``steps()`` was not exhausted)."""
        if self._report is None:
            for _ in self.steps():
                pass
        return self._report


class ProtocolsJob:
    """The same methods under several protocols ("thorough"), as one sequence of steps: the first protocol's job
    computes the maps (and the sanity check, if asked for), every later one reuses them and runs its curves
    alone. Arguments as ``TrustJob``'s, with ``protocols`` (a list, or "tokens,blur" / "all") in place of
    ``protocol``; each protocol's methods are cached under their own key, so "fast" (tokens) results are reused
    by "thorough" and the other way round."""

    def __init__(self, model, x: torch.Tensor, target: Target | None = None, methods: Sequence[str] | str | None = None,
                 *, protocols: Sequence[str] | str = tuple(PROTOCOLS), **options):
        self.protocols = protocol_list(protocols)
        first = TrustJob(model, x, target, methods, protocol=self.protocols[0], **options)
        options = {k: v for k, v in options.items() if k != "sanity"}
        self.jobs = [first] + [TrustJob(model, x, first.target, methods, protocol=p, source=first, **options)
                               for p in self.protocols[1:]]
        self.unsupported = first.unsupported
        self.running = self.protocols[0]           # the protocol whose steps run now (for a progress bar)
        self._report: ProtocolsReport | None = None

    def total(self) -> int:
        return sum(job.total() for job in self.jobs)

    def totals(self) -> dict[str, int]:
        """Steps per protocol (the first also computes the maps and the sanity check)."""
        return {job.protocol: job.total() for job in self.jobs}

    def steps(self) -> Iterator[tuple[int, int, str]]:
        """Every protocol's steps in turn, counted as one job: (steps done, steps in all, what it did)."""
        total, offset = self.total(), 0
        for job in self.jobs:
            self.running = job.protocol
            for done, _, what in job.steps():
                yield offset + done, total, what
            offset += job.total()
        self._report = ProtocolsReport({job.protocol: job.result() for job in self.jobs})

    def result(self) -> ProtocolsReport:
        if self._report is None:
            for _ in self.steps():
                pass
        return self._report


def check_steps(model, size: tuple[int, int], protocols: Sequence[str] | str = tuple(PROTOCOLS),
                methods: Sequence[str] | str | None = None, *, sanity: bool = False, points: int = POINTS,
                rows_per_step: int = 1) -> dict[str, int]:
    """What a check costs before anything is cached: {protocol: steps} for every method this model can run on an
    input of ``size`` (H, W), as ``ProtocolsJob.totals`` counts them (a step: about one forward pass, or one image
    under a pixel protocol; ROAD's also solves for its removed pixels). Runs nothing: the target is a fixed class."""
    x = torch.zeros(1, model.cfg.in_chans, *size, device=next(model.parameters()).device)
    return ProtocolsJob(model, x, ClassTarget(0), methods, protocols=protocols, sanity=sanity, points=points,
                        rows_per_step=rows_per_step).totals()


def trust_report(model, x: torch.Tensor, target: Target | None = None, methods: Sequence[str] | str | None = None,
                 progress: Progress | None = None, **options) -> TrustReport:
    """Run a whole ``TrustJob`` (``options``: sanity, protocol, points, seed, rows_per_step, cache, model_id, labels,
    maps), calling ``progress(done, total, what)`` after each step."""
    return _run(TrustJob(model, x, target, methods, **options), progress)


def protocols_report(model, x: torch.Tensor, target: Target | None = None,
                     methods: Sequence[str] | str | None = None, progress: Progress | None = None,
                     **options) -> ProtocolsReport:
    """Run a whole ``ProtocolsJob`` (``options``: protocols and those of ``trust_report``)."""
    return _run(ProtocolsJob(model, x, target, methods, **options), progress)


def trust_check(model, x: torch.Tensor, target: Target | None = None, methods: Sequence[str] | str | None = None,
                *, protocols: Sequence[str] | str = ("tokens",), progress: Progress | None = None,
                **options) -> TrustReport | ProtocolsReport:
    """One protocol -> ``trust_report``'s ``TrustReport``; several -> ``protocols_report``'s ``ProtocolsReport``
    (what the CLI and data-set runs write)."""
    protocols = protocol_list(protocols)
    if len(protocols) == 1:
        return trust_report(model, x, target, methods, progress, protocol=protocols[0], **options)
    return protocols_report(model, x, target, methods, progress, protocols=protocols, **options)


def _run(job, progress: Progress | None):
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
