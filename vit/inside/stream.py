"""The residual stream, kept: the model's forward pass run from its own modules one piece at a time, and re-run from
any block with some heads' outputs replaced.

A pre-norm block adds two branches to the stream x (B, T, D): attention's, ls1(merge(heads)) with heads (B, H, T, Dh)
every head's attn @ v before the heads are merged, and the MLP's. The block's arithmetic lives in one place,
``vit.model.Block.step``, which keeps the pieces read here (heads, branches, attention) and takes the ones replaced
(heads, an MLP branch, the rows computed). Everything in ``vit.inside`` reads or replaces one of these pieces:

- ``trace``: one forward pass that keeps the stream entering every block, every block's heads and MLP branch (and,
  when asked, the attention), and optionally the gradient of a score with respect to the heads and
  the stream (one backward, no weight gradient): what the lens, DLA and the attribution-patching estimates read;
- ``run_edited``: a whole forward pass with some heads' outputs, MLP branches or the embedding replaced (ablation
  of a set of heads, patching from another photo);
- ``run_from``: V variants of one block's heads continued from the kept stream entering that block, the blocks
  below never re-run, the last block on the readout tokens only (``readout_rows``): exact head importance and exact
  per-head patching run one batch of H variants per layer this way.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from ..model import HeadEdit, TokenLayout, VisionTransformer
from ..positions import TokenPositions
from ..architecture import require_one_sequence

INSIDE = "Looking inside the model (the logit lens, direct logit attribution, head ablation and patching)"


@dataclass
class Trace:
    """One forward pass of B images kept piece by piece. L blocks, H heads, T tokens, width D, head width Dh.

    Lists hold one tensor per block (``residual`` one more). Tensors are detached unless noted.
    """
    residual: list[torch.Tensor]          # L + 1 × (B, T, D): the stream entering block l; [L] = after the last block
    heads: list[torch.Tensor]             # L × (B, H, T, Dh): every head's attn @ v, before merge (proj)
    mlp: list[torch.Tensor]               # L × (B, T, D): each block's MLP branch as added to the stream (ls2 included)
    output: torch.Tensor                  # (B, K) what model(x) returns (logits, or a CLIP tower's embedding)
    layout: TokenLayout
    positions: TokenPositions | None      # what attention needs beyond q, k, v (EVA-02, BEiT); None for a plain ViT
    # L × (B, H, R, T): the softmax attention of the R tokens the readout reads (``readout_rows``; all T for mean or
    # MAP pooling), with ``attention=True``: what DLA's split over sources needs, not L·H·T² numbers
    attention: list[torch.Tensor] | None = None
    heads_grad: list[torch.Tensor] | None = None  # L × (B, H, T, Dh) ∂score/∂heads, with ``score``
    residual_grad: list[torch.Tensor] | None = None  # L + 1 × (B, T, D) ∂score/∂residual, with ``score``
    score: torch.Tensor | None = None             # (B,) the differentiated score, with ``score``

    @property
    def depth(self) -> int:
        return len(self.heads)


def readout_rows(model: VisionTransformer) -> torch.Tensor | None:
    """The tokens ``forward_head`` reads, when they are fewer than all: CLS (and DIST) for a class-token readout
    (indices 0[, 1], so ``forward_head`` of just these rows is the model's output); None for a readout of the patches
    (mean or MAP pooling, CLS beside the patches' mean)."""
    readout = model.cfg.readout
    if readout not in ("cls", "distilled"):
        return None
    return torch.arange(2 if readout == "distilled" else 1)


def trace(model: VisionTransformer, x: torch.Tensor, attention: bool = False,
          score: Callable[[torch.Tensor], torch.Tensor] | None = None) -> Trace:
    """Images (B, C, H, W) -> ``Trace`` of one forward pass.

    ``attention``: keep every block's attention probabilities of the readout's tokens too (the explicit softmax;
    DLA's split of a head over its source tokens needs them). ``score``: a function of the output (B, K) -> (B,); then the pass is
    differentiated once (``torch.autograd.grad`` from the embedding's output up, the parameters detached, so no
    weight gradient is ever computed) and ``heads_grad``, ``residual_grad`` and ``score`` are filled: the
    gradients attribution patching multiplies by a difference of activations.
    """
    require_one_sequence(model, INSIDE)
    layout = model.eval_layout(x, "Views inside the model")
    if score is None:
        with torch.inference_mode():
            return _forward(model, x, layout, attention, None)
    from ..explain.rules import without_parameter_grads   # a view whose parameters are detached

    with torch.inference_mode(False), torch.enable_grad():
        return _forward(without_parameter_grads(model), x.clone() if x.is_inference() else x, layout, attention,
                        score)


def _forward(model: VisionTransformer, x: torch.Tensor, layout: TokenLayout, attention: bool,
             score: Callable | None) -> Trace:
    positions = model.token_positions(x.shape[-2], x.shape[-1], x.device)
    stream = model.embed(x)                                          # (B, T, D)
    if score is not None:
        stream = stream.detach().requires_grad_()                    # the graph starts here
    residual, heads, mlps, maps = [stream], [], [], []
    rows = readout_rows(model)
    for block in model.blocks:
        step = block.step(stream, positions, taps=("attn",) if attention else ())
        stream, attn = step.out, step.attn
        residual.append(stream)
        heads.append(step.heads)
        mlps.append(step.mlp_branch)
        maps.append(attn if rows is None or attn is None else attn[:, :, rows.to(attn.device)])
    output = model.forward_head(stream)
    kept = dict(layout=layout, positions=positions)
    if score is None:
        return Trace(residual, heads, mlps, output, attention=maps if attention else None, **kept)
    s = score(output)                                                # (B,)
    grads = torch.autograd.grad(s.sum(), heads + residual, allow_unused=True)   # images are independent: sum
    grads = [torch.zeros_like(t) if g is None else g for g, t in zip(grads, heads + residual)]
    L = len(heads)
    detach = lambda ts: [t.detach() for t in ts]                     # noqa: E731
    return Trace(detach(residual), detach(heads), detach(mlps), output.detach(), heads_grad=grads[:L],
                 residual_grad=grads[L:], score=s.detach(), attention=detach(maps) if attention else None, **kept)


def run_edited(model: VisionTransformer, x: torch.Tensor, heads: dict[int, HeadEdit] | None = None,
               mlps: dict[int, torch.Tensor] | None = None, embedding: torch.Tensor | None = None) -> torch.Tensor:
    """Images (B, C, H, W) -> the model's output (B, K) with pieces replaced: ``heads[l]`` maps block l's heads
    (B, H, T, Dh) to the heads it continues with (ablation, patching), ``mlps[l]`` (B, T, D) replaces block l's MLP
    branch, ``embedding`` (B, T, D) the stream entering block 0. Nothing replaced: the model's own forward."""
    require_one_sequence(model, INSIDE)
    model.eval_layout(x, "Views inside the model")
    heads, mlps = heads or {}, mlps or {}
    wrong = sorted(l for l in {*heads, *mlps} if not 0 <= l < len(model.blocks))
    if wrong:
        raise ValueError(f"No layer {wrong[0]}! The model has layers 0 to {len(model.blocks) - 1}.")
    with torch.inference_mode():
        positions = model.token_positions(x.shape[-2], x.shape[-1], x.device)
        stream = model.embed(x) if embedding is None else embedding
        for l, block in enumerate(model.blocks):
            stream = block.step(stream, positions, heads=heads.get(l), mlp=mlps.get(l)).out
        return model.forward_head(stream)


def run_from(model: VisionTransformer, stream: torch.Tensor, layer: int, heads: torch.Tensor,
             positions: TokenPositions | None) -> torch.Tensor:
    """V variants continued from block ``layer``: the stream entering it (V, T, D) (kept by ``trace``) and the
    heads it continues with (V, H, T, Dh) -> the model's output (V, K).

    The blocks below ``layer`` are never re-run, nor is this block's attention (its heads are given); the last
    block runs on the readout tokens only (``readout_rows``: its keys and values still come from every token), so
    a class-token model pays about a quarter of a block there.
    """
    rows = readout_rows(model)
    rows = None if rows is None else rows.to(stream.device)
    last = len(model.blocks) - 1
    with torch.inference_mode():
        if layer == last and rows is not None:
            stream = model.blocks[layer].step(stream, rows=rows, heads=heads[:, :, rows]).out
            return model.forward_head(stream)
        stream = model.blocks[layer].step(stream, heads=heads).out
        for l in range(layer + 1, last + 1):
            stream = model.blocks[l].step(stream, positions, rows=rows if l == last else None).out
        return model.forward_head(stream)


def head_variants(heads: torch.Tensor, replacement: torch.Tensor) -> torch.Tensor:
    """One block's heads of B images (B, H, T, Dh) -> B·H variants (B·H, H, T, Dh), variant b·H + h with head h
    replaced by ``replacement[b, h]`` (``replacement``: (B or 1, H, T, Dh), e.g. zeros, reference means, another
    photo's heads) and every other head as it was."""
    B, H, T, Dh = heads.shape
    variants = heads.unsqueeze(1).repeat(1, H, 1, 1, 1)                # (B, H variants, H heads, T, Dh)
    index = torch.arange(H, device=heads.device)
    variants[:, index, index] = replacement.expand(B, H, T, Dh).to(heads.dtype)
    return variants.reshape(B * H, H, T, Dh)
