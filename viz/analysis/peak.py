"""THE estimator of a job's peak memory, from its shapes, before it runs: what the page's server admits within its
budget (``vit_explorer.budget``), and what decides the largest input size each job accepts (``largest_side``).

A job's peak is the most memory it holds at once above what the server holds at rest (the model and the caches):
for the page's jobs, a sum of a few terms of the model's shapes at one input, each counted in float32 bytes

- ``attention``: every block's attention, Σ_blocks heads·queries·keys (L·H·T² for a ViT: what a gradient pass keeps
  with its gradient, and a relevance pass with its rules),
- ``layer``: the largest block's attention, heads·queries·keys (what one block's softmax holds), and ``chunk``: as
  much of it as is computed at once (64 MB at most),
- ``square``: one T×T matrix (a rollout's head-fused layer, an explanation's chain of them),
- ``stream``: every block's tokens, Σ_blocks T·D (the residual stream an analysis keeps, the inside views' passes),
- ``activation``: the largest block's working set, T·(3·D + M) (queries, keys and values, the MLP's hidden layer),
- ``photo``: the model's input, H·W·3,

weighted per job (``COEFFICIENTS``), plus a constant (the pictures at display size, the allocator's working set) and,
for the jobs that copy the model (the sanity check's randomised copies), its parameters. The weights are what the
code holds at its peak, rounded up, and ``tests/load/test_peaks.py`` holds every job's estimate to the peak measured
in a process of its own (RSS from /proc, at small and medium sizes on the AugReg ViT-Ti and a ViT-S/16: never below
it, at most ``TOLERANCE`` above it).

    shape = Shape.of(model, 448, 448, params=served.nbytes)
    of("explain", shape, families=("gradient", "attnlrp"))      # bytes
    largest_side("explain", model, 6 * 2**30)                   # the largest square input that fits 6 GB

The jobs (``JOBS``): an analysis (its forward pass and every tab's first pictures), a redraw (a rollout control:
every layer's head-fused matrix recomputed), each family of explanation passes and the Explain tab's every method,
the trust check (fast or thorough, with or without the sanity check), the inside views (the views, an ablation,
patching), a comparison, the depth animation, the dense features, the guided walk, a training run's snapshots,
CLIP's zero-shot scores, and the Video tab's three: a clip's analysis, a clip's class map and the deletion and
insertion check of its class maps (their terms from ``ClipShape``: each attention step inside its groups,
``of("video", ClipShape.of(model))``).
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Callable, Literal

from .cost import follows_size
from .video import CHUNK_BYTES as CLIP_CHUNK_BYTES
from .video import FUSED_BYTES

F32 = 4
MB = 2**20
CHUNK = 16 * MB                   # float32 elements computed together at most (viz.analysis.capture.CHUNK_BYTES / 4)
CLIP_CHUNK = CLIP_CHUNK_BYTES // F32   # float32 elements a clip's capture reduces together at most
TOLERANCE = (1.6, 96 * MB)        # tests/load: measured <= estimate <= 1.6 · measured + 96 MB

Job = Literal["analysis", "render", "explain", "trust", "inside", "compare", "animation", "features", "walk",
              "snapshots", "zero_shot", "video", "video_classmap", "video_check"]
JOBS: tuple[str, ...] = Job.__args__


@dataclass(frozen=True)
class Shape:
    """What a job's memory follows, for one model at one input (the terms of the module docstring, in elements),
    and the input itself."""
    height: int                   # the model's input, pixels
    width: int
    tokens: int                   # T: the first block's (after a merge a block has fewer)
    depth: int                    # blocks
    attention: int                # Σ_blocks heads·queries·keys
    layer: int                    # the largest block's heads·queries·keys
    stream: int                   # Σ_blocks T·D (+ the embedding's)
    activation: int               # the largest block's T·(3·D + M)
    params: int = 0               # bytes of the model's parameters (the served model's, what a copy costs)

    @property
    def square(self) -> int:
        return self.tokens * self.tokens

    @property
    def chunk(self) -> int:
        """One block's attention as far as it is computed at once: ``layer``, at most ``CHUNK`` elements (the capture's
        rows, the columns a redraw asks for, 64 MB of float32 at a time)."""
        return min(self.layer, CHUNK)

    @property
    def photo(self) -> int:
        return self.height * self.width * 3

    @classmethod
    def of(cls, model, height: int, width: int, params: int | None = None) -> "Shape":
        """The shape of ``model`` at an input of height×width, read from its description (``model.architecture``):
        each block's tokens, heads and keys (its window's, or every token's). A block's width is the config's
        ``embed_dim`` times the merges its tokens went through per axis (``token_size / patch_size``: a 2×2 merge
        doubles it), its MLP ``mlp_dim / embed_dim`` times wider (the config's ``mlp_ratio`` where it says that)."""
        cfg = model.cfg
        if params is None:
            params = sum(p.numel() * p.element_size() for p in model.parameters())
        arch = model.architecture(height, width)
        ratio = getattr(cfg, "mlp_ratio", None) or cfg.mlp_dim / cfg.embed_dim
        attention = layer = activation = 0
        stream = arch.blocks[0].num_tokens * cfg.embed_dim                 # the embedding's tokens
        for b in arch.blocks:
            T, D = b.num_tokens, cfg.embed_dim * b.token_size // arch.patch_size
            attention += b.heads * T * b.window_area
            layer = max(layer, b.heads * T * b.window_area)
            stream += T * D
            activation = max(activation, round(T * (3 + ratio) * D))
        return cls(height, width, arch.blocks[0].num_tokens, arch.depth, attention, layer, stream, activation, params)

    @classmethod
    def of_config(cls, cfg, height: int, width: int, params: int = 0) -> "Shape":
        """The shape of a ViT config at height×width, without a model (square grids of whole patches)."""
        P = cfg.patch_size
        T = cfg.num_prefix_tokens + (height // P) * (width // P)
        L, H, D, M = cfg.depth, cfg.num_heads, cfg.embed_dim, cfg.mlp_dim
        return cls(height, width, T, L, L * H * T * T, H * T * T, (L + 1) * T * D, T * (3 * D + M), params)


@dataclass(frozen=True)
class Terms:
    """How much of each term a job holds at its peak (module docstring): float32 copies, and a constant in bytes."""
    constant: float = 0.0         # bytes
    attention: float = 0.0
    layer: float = 0.0
    chunk: float = 0.0
    square: float = 0.0
    stream: float = 0.0
    activation: float = 0.0
    photo: float = 0.0
    params: float = 0.0           # copies of the model's parameters (bytes, not float32 elements)
    fused: float = 0.0            # a clip's terms (``ClipShape``): its head-fused maps kept in float16, …
    tables: float = 0.0           # … its steps' distance tables, …
    graph: float = 0.0            # … and what autograd keeps of every step

    def bytes(self, s: Shape) -> int:
        held = sum(getattr(self, f.name) * getattr(s, f.name, 0) for f in fields(self)
                   if f.name not in ("constant", "params"))
        return int(self.constant + F32 * held + self.params * s.params)


# What each job holds at its peak, in copies of each term, fitted to the peaks measured on the AugReg ViT-Ti (224 to
# 640 px) and a ViT-S/16 (224, 384) and rounded up (tests/load/test_peaks.py). A redraw: every layer's head-fused matrix
# recomputed in turn, the copies the discard sorts and the residual makes (viz.maps.source.residual_step), the columns
# asked for a chunk at a time (viz.maps.source.COLUMNS_BYTES). An analysis: the capture's stream and chunk of rows
# (viz.analysis.capture), then its first pictures (a redraw's work). A gradient pass: every block's attention in the
# graph, its gradient, both stacked, and GAE's product of the two (vit.explain.passes, viz.explain.gae); a relevance
# pass: the rules' activations of every block; the attention family: every block's attention captured. The inside
# views: one forward and one backward with every block's attention and the stream kept (vit.inside); patching: two
# photos' streams. A clip's analysis (``ClipShape``, fitted to random VideoMAE-like models of 196 to 1,568 tokens, widths
# 192 to 768): the capture's chunks of probabilities and its distance tables, the queries and keys kept in float16 (as
# large as the stream), the head-fused maps in float16, then the rollout's steps made matrices of the stream; the clip's
# pixels and its tensor. A clip's Grad-CAM: every step's graph (the fused kernel keeps no attention: its output and
# log-sum-exp) and the backward's step; no weight gradient is computed. Its GAE: every step's explicit attention
# held until the backward reaches it (``vit.explain.video.gradcam_pass``'s reduce), and a step's attention, gradient
# and product at once. A clip's deletion and insertion check: the clip, its baseline and, per perturbed clip of a
# batch, its mask, its pixels and their temporaries (``viz.video.faithfulness.perturbed_clips``) and one step's working
# set of the plain forward (inference mode, the fused kernel: no attention kept); the curves' picture.
COEFFICIENTS: dict[str, Terms] = {
    "render": Terms(constant=32 * MB, square=5.0, chunk=1.2, stream=1.2),
    "analysis": Terms(constant=72 * MB, square=5.0, chunk=1.2, stream=3.0),
    "gradient": Terms(constant=64 * MB, attention=4.2, square=12.0),
    "attnlrp": Terms(constant=40 * MB, square=1.5, stream=9.0),
    "cp_lrp": Terms(constant=40 * MB, square=1.5, stream=9.0),
    "attention": Terms(constant=40 * MB, attention=1.9, square=2.0),
    "none": Terms(constant=16 * MB),
    "thorough": Terms(constant=40 * MB, layer=2.0, photo=60.0),     # more: a pixel protocol's batch, ROAD's solves
    "sanity": Terms(constant=24 * MB, params=2.0),                                   # the randomised copies, more
    "inside": Terms(constant=56 * MB, attention=1.1, square=8.0, stream=12.0),
    "ablation": Terms(constant=48 * MB, attention=0.5, square=2.0),
    "patching": Terms(constant=56 * MB, attention=0.5, stream=20.0),
    "animation": Terms(constant=72 * MB, square=2.0, chunk=1.2),
    "comparison": Terms(constant=32 * MB, square=1.2, chunk=1.2),                    # beside B's analysis
    "features": Terms(constant=24 * MB, stream=1.2),
    "capture": Terms(constant=24 * MB, chunk=1.2, stream=3.0),                       # a second photo's forward pass
    "curves": Terms(constant=16 * MB, layer=1.0),                                    # a trust check's, beside its maps
    "walk": Terms(constant=48 * MB, attention=0.9, square=12.0, stream=4.0),
    "snapshots": Terms(constant=80 * MB, square=5.0, chunk=1.2, stream=3.0, params=2.0),
    "zero_shot": Terms(constant=48 * MB, activation=4.0, params=1.0),
    "video": Terms(constant=32 * MB, chunk=2.0, square=4.0, stream=2.0, activation=2.0, fused=1.0, tables=2.0,
                   photo=2.0),
    "video_gradcam": Terms(constant=32 * MB, graph=2.0, activation=1.0, photo=2.0),
    "video_gae": Terms(constant=32 * MB, graph=2.0, activation=1.0, photo=2.0, attention=1.2, layer=3.0),
    "video_check": Terms(constant=32 * MB, photo=2.0),
    "video_check_clip": Terms(photo=4.0, activation=2.0),                           # per perturbed clip of a batch
}
FAMILY_NAMES = ("gradient", "attnlrp", "cp_lrp", "attention", "none")     # viz.explain.methods.FAMILIES


def family(s: Shape, name: str) -> int:
    """The peak of one family of explanation passes (``viz.explain.methods.FAMILIES``) and its formulas."""
    if name not in FAMILY_NAMES:
        raise ValueError(f"Unknown family of explanation passes {name!r}! Expected one of {FAMILY_NAMES}.")
    return COEFFICIENTS[name].bytes(s)


def explain(s: Shape, families: tuple[str, ...] = ("gradient", "attnlrp", "cp_lrp")) -> int:
    """Every method's map for one target, family after family (each family's passes freed before the next)."""
    return max(family(s, f) for f in families)


def trust(s: Shape, protocols: tuple[str, ...] = ("tokens",), sanity: bool = False,
          families: tuple[str, ...] = ("gradient", "attnlrp", "cp_lrp")) -> int:
    """A trust check: each method's map (its family's passes), then its curves a forward at a time (a pixel protocol
    a batch of whole images); with the sanity check, the maps of randomised copies of the model."""
    more = COEFFICIENTS["thorough"].bytes(s) if any(p != "tokens" for p in protocols) else 0
    return (explain(s, families) + COEFFICIENTS["curves"].bytes(s) + more
            + (COEFFICIENTS["sanity"].bytes(s) if sanity else 0))


def inside(s: Shape, part: Literal["views", "ablation", "patching"] = "views") -> int:
    """The inside views (the lens, DLA, head importance), an ablation, or patching from a second photo."""
    return COEFFICIENTS["inside" if part == "views" else part].bytes(s)


def compare(s: Shape, other: Shape | None = None) -> int:
    """A comparison: model B's analysis at its own input, and both models' rollouts on the photo's pixels."""
    other = s if other is None else other
    return analysis(other) + COEFFICIENTS["comparison"].bytes(s)


def analysis(s: Shape) -> int:
    return COEFFICIENTS["analysis"].bytes(s)


def render(s: Shape) -> int:
    return COEFFICIENTS["render"].bytes(s)


def features(s: Shape, second: bool = False) -> int:
    """The dense features (PCA, similarity), with a second photo's forward pass when one is matched."""
    return COEFFICIENTS["features"].bytes(s) + (COEFFICIENTS["capture"].bytes(s) if second else 0)


# ---- a clip's jobs: the Video tab --------------------------------------------------------------------------------

@dataclass(frozen=True)
class ClipShape:
    """What a video model's jobs follow for one clip (``vit.architecture``: one block per attention step, each
    attending inside its groups, ``BlockLayout.groups``), in elements as ``Shape``'s; the names a ``Terms`` reads."""
    height: int                   # a frame, pixels
    width: int
    frames: int                   # F: input frames of the clip
    tokens: int                   # T: the stream's tokens (prefix and every time position's patches)
    depth: int                    # attention steps (a divided block's time and space steps are two)
    attention: int                # Σ_steps heads·G·n²: every step's attention inside its G groups of n tokens
    layer: int                    # the largest step's heads·G·n²
    stream: int                   # Σ_steps T·D (+ the embedding's): a float16 copy of q and k per step is as large
    activation: int               # the largest step's T·(3·D + M) (a time step's M: its temporal_fc's D)
    graph: int                    # Σ_steps T·(3·D + M): what autograd keeps of every step for a backward pass (the
                                  # fused attention kernel keeps its output and log-sum-exp, not the attention)
    fused: int                    # Σ_steps G·n² when the capture keeps the head-fused maps (within FUSED_BYTES in
                                  # float16, ``viz.analysis.video``), else 0
    tables: int                   # Σ over the step kinds of G·n²: the capture's distance tables (one per layout)
    params: int = 0

    @property
    def square(self) -> int:
        """T²: one step made one matrix of the stream (a rollout's step, ``viz.maps.video.dense_step``)."""
        return self.tokens * self.tokens

    @property
    def chunk(self) -> int:
        """The probabilities a capture reduces together (``viz.analysis.video.CHUNK_BYTES`` of float32)."""
        return min(self.layer, CLIP_CHUNK)

    @property
    def photo(self) -> int:
        """The clip's pixels, F·H·W·3 (the frames as the model sees them, and their tensor)."""
        return self.frames * self.height * self.width * 3

    @classmethod
    def of(cls, model, frames: int | None = None, params: int | None = None) -> "ClipShape":
        """The shape of a video model's clip of ``frames`` frames (default: its own count) at its own frame size,
        read from its description (``model.architecture(H, W, frames)``)."""
        cfg = model.cfg
        if params is None:
            params = sum(p.numel() * p.element_size() for p in model.parameters())
        height, width = cfg.img_size
        frames = frames or cfg.num_frames
        arch = model.architecture(height, width, frames)
        D = cfg.embed_dim
        attention = layer = activation = graph = fused = 0
        stream = arch.blocks[0].num_tokens * D
        kinds = {}
        for b in arch.blocks:
            G, n = b.groups().shape
            T = b.num_tokens
            M = getattr(cfg, "probe_mlp_dim", cfg.mlp_dim) if b.index >= arch.depth - _probe_blocks(model) \
                else cfg.mlp_dim
            if b.attends == "time":          # a divided block's time step: its attention and temporal_fc, no MLP
                M = D
            attention += b.heads * G * n * n
            layer = max(layer, b.heads * G * n * n)
            fused += G * n * n
            kinds[(b.attends, b.prefix, b.frames, b.grid)] = G * n * n
            stream += T * D
            activation = max(activation, T * (3 * D + M))
            graph += T * (3 * D + M)
        kept_fused = fused if fused * 2 <= FUSED_BYTES else 0
        return cls(height, width, frames, arch.blocks[0].num_tokens, arch.depth, attention, layer, stream, activation,
                   graph, kept_fused, sum(kinds.values()), params)


def _probe_blocks(model) -> int:
    probe = getattr(model, "probe", None)
    return len(probe.blocks) if probe is not None else 0


def video(s: ClipShape) -> int:
    """A clip's analysis on the page (``viz.analysis.video.capture_clips``, queries and keys kept in float16) with its
    rollout and first pictures, the clip decoded before it."""
    return COEFFICIENTS["video"].bytes(s)


def video_classmap(s: ClipShape, method: str = "gradcam") -> int:
    """A class map of the clip (``viz.video.classmap``): one forward of the clip whose every step autograd keeps, one
    backward to the layer the method reads, the map drawn on the frames."""
    if f"video_{method}" not in COEFFICIENTS:
        raise ValueError(f"No memory estimate for the video method {method!r}!")
    return COEFFICIENTS[f"video_{method}"].bytes(s)


def video_check(s: ClipShape, batch: int) -> int:
    """The deletion and insertion check of the clip's class maps (``viz.video.faithfulness.ClipCheck``): ``batch``
    perturbed clips at a time through the plain model, beside the clip and its baseline."""
    if batch < 1:
        raise ValueError(f"batch must be at least 1 but got {batch}!")
    return COEFFICIENTS["video_check"].bytes(s) + batch * COEFFICIENTS["video_check_clip"].bytes(s)


PEAKS: dict[str, Callable[..., int]] = {
    "analysis": analysis, "render": render, "explain": explain, "trust": trust, "inside": inside,
    "compare": compare, "features": features, "video": video, "video_classmap": video_classmap,
    "video_check": video_check,
    **{job: (lambda job: lambda s: COEFFICIENTS[job].bytes(s))(job)
       for job in ("animation", "walk", "snapshots", "zero_shot")},
}
assert set(PEAKS) == set(JOBS), "every job needs its estimate"


def of(job: str, s: Shape, **options) -> int:
    """THE estimate: the peak bytes of ``job`` (one of ``JOBS``) on ``s``, with the job's ``options``."""
    if job not in PEAKS:
        raise ValueError(f"Unknown job {job!r}! Expected one of {JOBS}.")
    return PEAKS[job](s, **options)


def largest_side(job: str, model, budget: int, params: int | None = None, smallest: int | None = None,
                 **options) -> int | None:
    """The largest square input, in whole patches, at which ``job`` fits ``budget`` bytes on ``model``, from one
    patch up to the model's own side (or ``smallest``) and beyond while it fits; None when not even one patch does.
    A model that cannot change its size (``viz.analysis.cost.follows_size``) only at its own size."""
    cfg = model.cfg
    if not follows_size(cfg):
        side = cfg.img_size[0]
        return side if of(job, Shape.of(model, side, side, params), **options) <= budget else None
    P = cfg.patch_size

    def fits(patches: int) -> bool:
        side = patches * P
        return of(job, Shape.of_config(cfg, side, side, params or 0), **options) <= budget

    if not fits(1):
        return None
    low, high = 1, 2
    while fits(high) and high < 4096:
        low, high = high, high * 2
    while high - low > 1:                         # fits(low), not fits(high): every term grows with the side
        mid = (low + high) // 2
        low, high = (mid, high) if fits(mid) else (low, mid)
    return low * P
