"""The logit lens (nostalgebraist 2020; for ViTs ViT-Prisma's ``logit_lens``): what the model would answer if it
stopped after block l, for every l.

The tokens after block l are read out through the model's own final norm, pooling and head (``readout.read``), so
the reading after the last block is the model's output itself. Each patch token is also read alone through the
same norm and head (``readout.read_patches``): its own top-1 class per layer, a map of what every part of the
photo "says" at that depth. For attention pooling (SigLIP's MAP) the pool is applied to each layer's tokens: a
probe trained on the last layer's tokens only, so the early layers' readings are approximate (``Lens.approximate``).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..model import VisionTransformer
from .readout import Classes, read, read_patches
from .stream import Trace


@dataclass
class Lens:
    """The logit lens of B images through L blocks, K classes, P patch tokens."""
    logits: torch.Tensor                 # (B, L, K) the readout of the tokens after each block; [:, L-1] = the output
    patches: torch.Tensor | None         # (B, L, P) long: each patch token's own top-1 class after each block
    approximate: bool                    # True for MAP pooling: a probe trained on the last layer read at every layer


def logit_lens(model: VisionTransformer, t: Trace, classes: Classes, patches: bool = True) -> Lens:
    """A ``Trace`` -> ``Lens``; ``patches=False`` skips the per-patch reading (L·P reads of the head, about a tenth
    of a forward for ViT-B with 1000 classes; a data set's per-layer accuracy does not need it)."""
    with torch.inference_mode():
        L = t.depth
        # one layer at a time, as forward_head ran on the last one: that reading is the output, bit for bit
        logits = torch.stack([read(model, t.residual[l + 1], classes) for l in range(L)], dim=1)   # (B, L, K)
        top1 = None
        if patches:
            top1 = torch.stack([read_patches(model, t.residual[l + 1], classes).argmax(dim=-1) for l in range(L)],
                               dim=1)                                  # (B, L, P)
    return Lens(logits.float(), top1, model.attn_pool is not None)


def rank_of(logits: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """Logits (…, K) and a class per row (…) -> its rank (…) long: 1 for the top class, 1 + the number of classes
    with a strictly larger logit in general (ties share the better rank)."""
    own = logits.gather(-1, index.unsqueeze(-1))                        # (…, 1)
    return (logits > own).sum(dim=-1) + 1
