"""Plain containers for what one forward pass produced and what a checkpoint holds: numpy arrays and
a PIL image, no tensors and no model, so they can be cached per session and passed to any panel."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from PIL import Image

from vit.architecture import Architecture

from .maps.readout import heads_query
from .maps.source import AttentionSource, HeldAttention


@dataclass(frozen=True)
class FinalNorm:
    """A model's last LayerNorm as arrays (what DINOv2's ``x_norm_patchtokens`` come out of), so that any layer's
    tokens can be normalised as the last layer's are without the model."""
    weight: np.ndarray                   # (D,) float32
    bias: np.ndarray                     # (D,) float32
    eps: float


@dataclass(frozen=True)
class Analysis:
    """One image through one model, for any architecture: what the model saw and answered, and its attention.

    ``architecture`` (``vit.architecture.Architecture``) describes the blocks for this input: each block's tokens
    (prefix tokens, then its grid of patches), heads and windows, the stages, and the readout (``readout``: "cls"
    for a model that answers from its CLS token, "map" for SigLIP's attention-pooling probe, whose attention
    ``probe_attention`` (H, T) holds, "mean" for mean-pooled models such as a Swin). Every view reads the attention
    through ``maps`` (``viz.maps.source``): the kept (L, H, T, T) array (the library's full capture, the CLI), the
    rows recomputed on demand (``source``: the page), or a windowed model's window maps (``source``:
    ``viz.maps.windows.WindowedAttention``); rows and columns of block l are over its own T_l tokens.
    ``token_norms[l]`` (T_l,): the L2 norm of every token after block l (an (L, T) array when every block holds the
    same tokens). ``image`` is the cropped RGB image the model saw (width gw·P, height gh·P of block 0's grid): maps
    are overlaid on exactly these pixels. A video model's analysis (``architecture.video``: its blocks hold frames ×
    the grid, ``viz.analysis.video``) also has ``clip``, the frames it saw (``vit.video_file.Clip``: (T, h, w, 3)
    uint8, their indices and times in the video; ``image`` is the first), and ``temporal_distance`` (L, H) in
    frames beside the spatial ``mean_distance``. A model without a classifier (a CLIP or SigLIP image tower, a DINO
    backbone) has no classes: ``probabilities`` is empty and ``top_k`` gives [].
    """
    image: Image.Image
    probabilities: np.ndarray            # (K,) softmax over the classes
    labels: tuple[str, ...]              # K class names
    architecture: Architecture           # the blocks, their tokens and windows, the readout, for this input
    token_norms: np.ndarray | tuple      # per block l: (T_l,); (L, T) when every block holds the same tokens
    attention: np.ndarray | None = None  # (L, H, T, T) when the whole array was kept, else None (``source``)
    model_name: str = ""
    timings: dict = field(default_factory=dict)  # seconds per step
    # Derived once per image so that re-renders never reduce the whole (L, H, T, T) array again
    # (numpy is slow on float16): head-fused attention per fusion ("mean", "max", "min") -> (L, T, T)
    # in the attention's dtype, and the mean attention distance (L, H) keyed by ``renormalise``.
    fused: dict = field(default_factory=dict)
    mean_distance: dict = field(default_factory=dict)
    probe_attention: np.ndarray | None = None  # (H, T) the MAP probe's attention over the tokens (readout "map")
    # The residual stream, when kept (the page, --features): the tokens entering block 0, then after each block
    # (L + 1, T, D), in the cache's dtype; with ``final_norm`` (None: the model has no LayerNorm before pooling,
    # e.g. BEiT's fc_norm) any layer's patch features (``viz.features``).
    stream: np.ndarray | None = None
    final_norm: FinalNorm | None = None
    source: AttentionSource | None = None    # the attention on demand (or a windowed model's), when not ``attention``
    clip: object | None = None               # a video model's frames (vit.video_file.Clip); None for a photo
    temporal_distance: np.ndarray | None = None  # (L, H) a video model's temporal attention distance in frames

    @cached_property
    def maps(self) -> AttentionSource:
        """Where every view reads the attention: ``source``, or the kept array (with its head-fused copies)."""
        if self.source is not None:
            return self.source
        return HeldAttention(self.attention, self.num_prefix, self.grid, self.fused, heads_query(self.readout))

    @property
    def readout(self) -> str:
        """The image-level maps' query: "cls", "map" (the MAP probe) or "mean" (of the patches)."""
        return self.architecture.readout

    @property
    def num_prefix(self) -> int:
        """Prefix tokens (CLS, distillation, registers) before block 0's patches."""
        return self.architecture.num_prefix

    @property
    def grid(self) -> tuple[int, int]:
        """(gh, gw): the photo's patch grid (block 0's); every image-level map lies on it."""
        return self.architecture.grid

    @property
    def patch_size(self) -> int:
        return self.architecture.patch_size

    @property
    def depth(self) -> int:
        return self.architecture.depth

    @property
    def heads(self) -> int:
        """The most heads of any block (every block's, in a ViT); ``architecture.heads`` has each block's."""
        return self.architecture.max_heads

    @property
    def input_size(self) -> tuple[int, int]:
        """(H, W) in pixels of the model input."""
        return self.architecture.input_size

    def top_k(self, k: int = 5) -> list[tuple[str, float]]:
        """The k most probable classes as (label, probability), most probable first."""
        order = np.argsort(-self.probabilities, kind="stable")[:k]
        return [(self.labels[i], float(self.probabilities[i])) for i in order]


@dataclass(frozen=True)
class ModelArrays:
    """The image-independent tensors Figure 7 needs, copied out of a model once per checkpoint."""
    name: str
    patch_weight: np.ndarray             # (D, C, P, P) patch-embedding filters
    pos_embed: np.ndarray | None         # (prefix_with_pos + gh·gw, D) position embeddings; None without (BEiT, "none")
    native_grid: tuple[int, int]         # grid the position embeddings were learnt for
    patch_size: int
    num_prefix: int
    depth: int
    heads: int
    pos_embed_kind: str = "learned"      # "learned", "sincos2d" (fixed table) or "none" (pos_embed is then None)
    # (N, N) on the native grid: the position similarity a rotary embedding implies (``VisionTransformer.
    # rotary_kernel``), for a model that rotates q and k by position instead of adding a table; None otherwise
    rotary_kernel: np.ndarray | None = None

    @property
    def has_position_embedding(self) -> bool:
        return self.pos_embed is not None


@dataclass(frozen=True)
class SnapshotSeries:
    """Every snapshot of one training run (``--snapshot-every``) on one photo: the small arrays a slider or an
    animation needs, computed once (S snapshots, L blocks, H heads, N = gh·gw patches of the native grid)."""
    name: str                            # the run, e.g. "squares" (from weights/squares.snapshots)
    epochs: np.ndarray                   # (S,) int, 0 = before any training step
    val_accuracy: np.ndarray             # (S,) validation accuracy the run measured at each snapshot
    image: Image.Image                   # the crop every snapshot saw (one preprocessing for the whole run)
    rollout: np.ndarray                  # (S, gh, gw) CLS attention rollout of the photo
    pos_similarity: np.ndarray           # (S, N, N) cosine similarity of the position embeddings; (S, 0, 0) for none
    mean_distance: np.ndarray            # (S, L, H) mean attention distance in pixels of the input
    pos_neighbour_similarity: np.ndarray  # (S,) grid neighbours' minus all patches' similarity; NaN for none
    top1: tuple[tuple[str, float], ...]  # (S,) the photo's most probable class and its probability
    grid: tuple[int, int]                # (gh, gw) of the photo's patch grid
    native_grid: tuple[int, int]         # grid of the position embeddings
    patch_size: int
    pos_embed_kind: str = "learned"

    def __len__(self) -> int:
        return len(self.epochs)


def cached_bytes(a: Analysis) -> int:
    """Memory the server's cache spends on one analysis: what recomputes its attention (the residual stream, the
    readout rows and log-sum-exps, the head-fused copies while small; a windowed model's window maps) or the
    attention itself, the token norms, the mean distances and the cropped photo (what bounds the cache of
    analyses)."""
    width, height = a.image.size
    if a.source is not None:
        attention = a.source.nbytes
    else:
        stream = 0 if a.stream is None else a.stream.nbytes
        attention = a.attention.nbytes + sum(f.nbytes for f in a.fused.values()) + stream
    frames = 0 if a.clip is None else a.clip.frames.nbytes
    return (attention + sum(np.asarray(n).nbytes for n in a.token_norms) + frames
            + sum(d.nbytes for d in a.mean_distance.values()) + width * height * len(a.image.getbands()))
