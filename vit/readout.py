"""The readout: which of a transformer's last tokens its answer is read from.

A ViT's blocks give one token per patch and a few prefix tokens (CLS, DIST, registers); its head reads one vector
made of some of them. Which ones is part of the model: the same weights read through another readout are another
model. The closed set, one name each, used by ``ViTConfig.readout`` (and a Swin's config: the mean of its last
stage's tokens), by the loader (which reads it from what the file or its folder says), and by every view that
shows "the token the answer comes from" (rollout, the readout's attention, the heads grid, the lens, class maps):

    name        the head reads                                       whose
    cls         the CLS token                                        ViT, DeiT, CLIP, EVA-02, DINOv2/v3's own
    mean        the mean of the patch tokens (prefix tokens left     BEiT, timm's gap ViTs and DINOv3 (its default
                out)                                                 global_pool='avg'), AIMv2, Swin
    mean_all    the mean of every token, prefix tokens included      timm's pool_include_prefix
    cls_mean    [CLS token, mean of the patch tokens] side by side   transformers' Dinov2ForImageClassification,
                (a head 2·D wide)                                    DINOv2/DINOv3's linear heads
    map         a learnt probe attending over the patch tokens       SigLIP (multi-head attention pooling)
    map_all     a learnt probe attending over every token            Perception Encoder (timm's PE core)
    distilled   the mean of head(CLS) and head_dist(DIST)            DeiT distilled (timm, transformers'
                                                                     ...WithTeacher)

``token_weights`` gives each readout's query as weights over the T tokens (summing to 1): how much each token's
row of a token-mixing matrix enters what the head reads. A MAP probe's weights are its attention, which depends on
the photo. This module imports nothing of the explorer's, so any part of it (and the description of the
architectures) can name the set.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np

Readout = Literal["cls", "mean", "mean_all", "cls_mean", "map", "map_all", "distilled"]
READOUT_NAMES: tuple[str, ...] = get_args(Readout)


@dataclass(frozen=True)
class ReadoutKind:
    name: str
    description: str          # what the head reads, as a sentence says it
    class_token: bool         # needs a CLS token (distilled: a DIST token after it too)
    pooled: bool              # many tokens pooled into one vector (a LayerNorm after pooling, fc_norm, can follow)
    probe: bool               # a learnt probe's attention pools the tokens (the weights depend on the photo)
    prefix: bool              # the prefix tokens are among the pooled tokens
    width: int = 1            # the head's input, in multiples of the token width D

    @property
    def layer_query(self) -> str:
        """The query of the blocks' own attention (the heads grid, the per-layer maps): the readout itself, or for a
        probe, which exists after the last block only, the mean of the tokens it attends over."""
        if self.probe:
            return "mean_all" if self.prefix else "mean"
        return self.name


READOUTS: dict[str, ReadoutKind] = {k.name: k for k in (
    ReadoutKind("cls", "the CLS token", class_token=True, pooled=False, probe=False, prefix=True),
    ReadoutKind("mean", "the mean of the patch tokens", class_token=False, pooled=True, probe=False, prefix=False),
    ReadoutKind("mean_all", "the mean of all tokens (prefix tokens included)", class_token=False, pooled=True,
                probe=False, prefix=True),
    ReadoutKind("cls_mean", "the CLS token and the mean of the patch tokens side by side", class_token=True,
                pooled=False, probe=False, prefix=True, width=2),
    ReadoutKind("map", "the MAP probe's attention over the patch tokens", class_token=False, pooled=True, probe=True,
                prefix=False),
    ReadoutKind("map_all", "the MAP probe's attention over all tokens", class_token=False, pooled=True, probe=True,
                prefix=True),
    ReadoutKind("distilled", "the mean of the CLS token's and the distillation token's heads", class_token=True,
                pooled=False, probe=False, prefix=True),
)}


def kind(readout: str) -> ReadoutKind:
    """The ``ReadoutKind`` of a name; ValueError for a name outside the set."""
    if readout not in READOUTS:
        raise ValueError(f"Unknown readout {readout!r}! Expected one of {list(READOUT_NAMES)}.")
    return READOUTS[readout]


def token_weights(readout: str, num_tokens: int, num_prefix: int, probe_row: np.ndarray | None = None) -> np.ndarray:
    """The readout's query as weights over T tokens -> (T,) float32 summing to 1 (prefix tokens first): one-hot on
    CLS; 1/N on each of the N patches ("mean"); 1/T on every token ("mean_all"); ½ on CLS and ½/N on each patch
    ("cls_mean"); ½ on CLS and ½ on DIST ("distilled", the token after CLS); the probe's head-fused attention
    ``probe_row`` (T,) for "map" and "map_all" (ValueError without it)."""
    k = kind(readout)
    if k.probe:
        if probe_row is None or np.shape(probe_row) != (num_tokens,):
            raise ValueError(f"The {readout!r} readout's weights are its probe's attention over the {num_tokens} "
                             f"tokens, but got {None if probe_row is None else np.shape(probe_row)}.")
        return np.asarray(probe_row, dtype=np.float32)
    if k.class_token and num_prefix < (2 if readout == "distilled" else 1):
        raise ValueError(f"The {readout!r} readout reads {k.description}, but this layout has {num_prefix} prefix "
                         f"tokens!")
    weights = np.zeros(num_tokens, dtype=np.float32)
    patches = num_tokens - num_prefix
    if readout == "cls":
        weights[0] = 1.0
    elif readout == "mean":
        weights[num_prefix:] = 1.0 / patches
    elif readout == "mean_all":
        weights[:] = 1.0 / num_tokens
    elif readout == "cls_mean":
        weights[num_prefix:] = 0.5 / patches
        weights[0] = 0.5
    else:                                                                    # distilled
        weights[:2] = 0.5
    return weights


TIMM_POOLS = {"token": "cls", "avg": "mean", "map": "map"}   # timm's global_pool (and open_clip's timm_pool)


def from_timm(global_pool: str, include_prefix: bool = False) -> str:
    """timm's ``global_pool`` (with ``pool_include_prefix``) as a readout; ValueError for one outside the set
    (timm's "max" and "avgmax", and "" which leaves the tokens unpooled)."""
    if global_pool not in TIMM_POOLS:
        raise ValueError(f"timm's global_pool={global_pool!r} is not a readout this explorer draws! Expected one of "
                         f"{sorted(TIMM_POOLS)}.")
    readout = TIMM_POOLS[global_pool]
    return readout + "_all" if include_prefix and readout in ("mean", "map") else readout
