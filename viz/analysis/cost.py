"""What analysing a photo at another input size costs, said before it runs: its tokens, about how long (scaled from
the served model's own time at its native size by the work of a forward pass) and what the server keeps for it
(``viz.records.cached_bytes`` of an on-demand analysis, computed from the shapes).

Which models can run at another size at all (``follows_size``): those whose position information can follow the
grid: a learnt table (resampled bicubically, ``VisionTransformer.resampled_pos_embed``), the fixed sine-cosine table
(computed for the grid), rotary embeddings (EVA-02) or none at all. BEiT's relative position bias is a table learnt
for its own grid, which the model refuses to stretch: native size only; a Swin too (its stages' grids must be whole
numbers of windows, and its capture keeps every window: ``viz.analysis.capture.capture_blocks``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .capture import FUSED_BYTES
from .recompute import KEPT_KEYS

LOCAL_MAX_TOKENS = 6000          # a server on this machine alone: one analysis of a ViT-S/14 at 1022 (5,330 tokens)
KEPT_BYTES = 2                   # float16: what the page keeps (viz.analysis.serve.ATTENTION_DTYPE)


@dataclass(frozen=True)
class Cost:
    """One analysis of a photo at a square input of ``side`` pixels."""
    side: int
    tokens: int                  # T: prefix tokens + patches
    seconds: float               # about: the native analysis' time scaled by the forward pass's work
    bytes: int                   # what the server's cache keeps for it


def follows_size(cfg) -> bool:
    """Whether the model's position information can follow another grid (module docstring): its config says why not
    (``fixed_size``)."""
    return cfg.fixed_size is None


def tokens_at(cfg, side: int) -> int:
    """Tokens of a side×side input."""
    return cfg.num_prefix_tokens + (side // cfg.patch_size) ** 2


def largest_side(cfg, max_tokens: int) -> int:
    """The largest square input (a multiple of the patch size) whose tokens stay within ``max_tokens``; at least one
    patch."""
    patches = max(1, math.isqrt(max(max_tokens - cfg.num_prefix_tokens, 1)))
    return patches * cfg.patch_size


def forward_work(cfg, tokens: int) -> float:
    """Multiply-adds of one forward pass with ``tokens`` tokens: per block the projections and the MLP (T·D·(4D + 2M))
    and the attention (2·T²·D), which the analysis runs explicitly."""
    D, M = cfg.embed_dim, cfg.mlp_dim
    return cfg.depth * (tokens * D * (4 * D + 2 * M) + 2 * tokens * tokens * D)


def kept_bytes(cfg, side: int) -> int:
    """What the server keeps for an on-demand analysis at side×side (``viz.records.cached_bytes``): the float16
    stream (L + 1)·T·D, each head's readout row and each row's log-sum-exp (float32), the head-fused copies while they
    fit ``FUSED_BYTES``, one layer's float32 queries and keys while they fit ``KEPT_KEYS``, the token norms, the mean
    distances and the photo."""
    L, H, D = cfg.depth, cfg.num_heads, cfg.embed_dim
    T = tokens_at(cfg, side)
    fused = 3 * L * T * T * KEPT_BYTES
    keys = 2 * T * D * 4
    return ((L + 1) * T * D * KEPT_BYTES + 2 * L * H * T * 4 + (fused if fused <= FUSED_BYTES else 0)
            + (keys if keys <= KEPT_KEYS else 0) + L * T * 4 + L * H * 4 + side * side * 3)


def analysis_cost(cfg, side: int, native_side: int, native_seconds: float) -> Cost:
    """The cost of an analysis at side×side, its time scaled from one at native_side×native_side."""
    work = forward_work(cfg, tokens_at(cfg, side)) / forward_work(cfg, tokens_at(cfg, native_side))
    return Cost(side, tokens_at(cfg, side), native_seconds * work, kept_bytes(cfg, side))
