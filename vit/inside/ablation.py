"""Head ablation: what the answer becomes when heads are removed, and how much each head alone matters.

A head is removed by setting its output, its slice of attn @ v (``Attention.mix``), to zero before the heads are
merged and projected ("zero" ablation), or to its mean over reference images, per token position ("mean" ablation,
``head_means``: the head keeps what it writes on average and loses what it writes about this photo). Heads are
named ``L.H``, layers and heads counted from 0 (``parse_heads``).

Head importance is the change of the score when each head alone is ablated: an L × H table.

- ``head_importance`` runs it exactly: the stream entering block l is kept from one forward (``stream.trace``) and
  reused, the H ablations of block l run as one batch from there (``stream.run_from``: block l's attention is not
  re-run, the last block reads its readout tokens only), so the work is about H·(L+1)/2 forwards, not H·L.
  ``head_importance_steps`` yields one layer at a time, for a caller that interleaves other work.
- ``head_importance_linear`` estimates it by attribution patching (Nanda 2023; Syed et al. 2023): the first-order
  change, gradient × (replacement − head output), from the one forward and one backward of ``trace(…, score=…)``.
"""
from __future__ import annotations

import re
from typing import Iterable, Iterator, Sequence

import torch

from ..model import VisionTransformer
from .readout import Score
from .stream import HeadEdit, Trace, head_variants, run_edited, run_from, trace

VARIANTS_PER_PASS = 48     # ablated copies continued together from one block (memory: each holds T × D floats per block)
_HEAD = re.compile(r"^\s*(\d+)\s*\.\s*(\d+)\s*$")


def head_names(heads: Sequence[tuple[int, int]]) -> list[str]:
    """[(11, 0), (11, 2)] -> ["11.0", "11.2"]."""
    return [f"{l}.{h}" for l, h in heads]


def parse_heads(text: str | Sequence, depth: int, num_heads: int) -> list[tuple[int, int]]:
    """"11.0,11.2" (or ["11.0", "11.2"], or [(11, 0), (11, 2)]) -> [(11, 0), (11, 2)], in the order given, repeats
    dropped.

    ValueError for a name that is not LAYER.HEAD or a head the model does not have, saying which exist."""
    parts = [f"{p[0]}.{p[1]}" if isinstance(p, tuple) else p for p in (text.split(",") if isinstance(text, str) else text)]
    valid = (f"layers 0 to {depth - 1} and heads 0 to {num_heads - 1}, written LAYER.HEAD (e.g. {depth - 1}.0 or "
             f"0.{num_heads - 1},{depth - 1}.0)")
    if not [p for p in parts if str(p).strip()]:
        raise ValueError(f"No heads given! This model has {valid}.")
    heads: list[tuple[int, int]] = []
    for part in parts:
        match = _HEAD.match(str(part))
        if not match:
            raise ValueError(f"Bad head {str(part).strip()!r}! This model has {valid}.")
        l, h = int(match.group(1)), int(match.group(2))
        if l >= depth or h >= num_heads:
            raise ValueError(f"No head {l}.{h}! This model has {valid}.")
        if (l, h) not in heads:
            heads.append((l, h))
    return heads


def head_means(model: VisionTransformer, batches: Iterable[torch.Tensor]) -> torch.Tensor:
    """Every head's mean output per token position over reference images -> (L, H, T, Dh), streamed: ``batches``
    yields model inputs (B, C, H, W) of one size, and only the running sum is kept."""
    total, count = None, 0
    for x in batches:
        t = trace(model, x)
        heads = torch.stack([h.double().sum(dim=0) for h in t.heads])      # (L, H, T, Dh)
        if total is not None and heads.shape != total.shape:
            raise ValueError(f"Reference images must all have the model's input size; got token layouts "
                             f"{tuple(total.shape[2:3])} and {tuple(heads.shape[2:3])}.")
        total = heads if total is None else total + heads
        count += x.shape[0]
    if not count:
        raise ValueError("No reference images: mean ablation needs at least one.")
    return (total / count).float()


def _replacement(t: Trace, layer: int, means: torch.Tensor | None) -> torch.Tensor:
    """What an ablated head of ``layer`` continues with: zeros, or its reference mean (1, H, T, Dh)."""
    heads = t.heads[layer]
    if means is None:
        return torch.zeros_like(heads[:1])
    if means.shape[1:] != heads.shape[1:] or means.shape[0] != t.depth:
        raise ValueError(f"The reference means have shape {tuple(means.shape)} but this photo's heads need "
                         f"({t.depth}, {', '.join(map(str, heads.shape[1:]))}): the reference images must be "
                         f"preprocessed to the same input size.")
    return means[layer].unsqueeze(0).to(heads)


def ablation_edits(heads: Sequence[tuple[int, int]], means: torch.Tensor | None = None) -> dict[int, HeadEdit]:
    """Heads [(layer, head)] -> the edits ``stream.run_edited`` applies: each listed head's output set to zero (or
    to its reference mean, ``means`` (L, H, T, Dh))."""
    by_layer: dict[int, list[int]] = {}
    for l, h in heads:
        by_layer.setdefault(l, []).append(h)

    def edit(layer: int, chosen: list[int]) -> HeadEdit:
        def apply(z: torch.Tensor) -> torch.Tensor:
            z = z.clone()
            z[:, chosen] = 0.0 if means is None else means[layer, chosen].to(z)
            return z
        return apply

    return {l: edit(l, hs) for l, hs in by_layer.items()}


def ablate(model: VisionTransformer, x: torch.Tensor, heads: Sequence[tuple[int, int]],
           means: torch.Tensor | None = None) -> torch.Tensor:
    """Images (B, C, H, W) -> the output (B, K) with the listed heads ablated together (zero, or ``means``)."""
    return run_edited(model, x, ablation_edits(heads, means))


def head_importance_steps(model: VisionTransformer, t: Trace, score: Score, means: torch.Tensor | None = None,
                          variants_per_pass: int = VARIANTS_PER_PASS) -> Iterator[tuple[int, torch.Tensor]]:
    """For each layer in turn: (layer, the score's change (B, H) when each of its heads alone is ablated), from the
    kept stream of ``t`` (``trace`` of the same images)."""
    B, H = t.output.shape[0], t.heads[0].shape[1]
    clean = score(t.output)                                              # (B,)
    images = torch.arange(B).repeat_interleave(H)                        # variant b·H + h belongs to image b
    for layer in range(t.depth):
        variants = head_variants(t.heads[layer], _replacement(t, layer, means))   # (B·H, H, T, Dh)
        stream = t.residual[layer].repeat_interleave(H, dim=0)                    # (B·H, T, D)
        outputs = [run_from(model, stream[i:i + variants_per_pass], layer, variants[i:i + variants_per_pass],
                            t.positions) for i in range(0, B * H, variants_per_pass)]
        yield layer, (score(torch.cat(outputs), images) - clean[images.to(clean.device)]).reshape(B, H).float().cpu()


def head_importance(model: VisionTransformer, t: Trace, score: Score, means: torch.Tensor | None = None) -> torch.Tensor:
    """The exact head importance (B, L, H): the score's change when each head alone is ablated (zero, or ``means``)."""
    return torch.stack([delta for _, delta in head_importance_steps(model, t, score, means)], dim=1)


def head_importance_linear(t: Trace, means: torch.Tensor | None = None) -> torch.Tensor:
    """The attribution-patching estimate of ``head_importance`` (B, L, H): Σ gradient × (replacement − output) over
    each head's tokens and channels, from a ``trace`` run with ``score`` (one forward, one backward)."""
    if t.heads_grad is None:
        raise ValueError("The linear estimate needs the gradients: run trace(model, x, score=…).")
    rows = []
    for layer in range(t.depth):
        change = _replacement(t, layer, means) - t.heads[layer]                # (B, H, T, Dh)
        rows.append((t.heads_grad[layer] * change).sum(dim=(-1, -2)))
    return torch.stack(rows, dim=1).float().cpu()
