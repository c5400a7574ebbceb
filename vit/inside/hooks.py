"""Hook points: where a layer's tokens are read, and replaced, for a sparse autoencoder (``viz.concepts``) or any
other reader of one layer's activations.

Block L of a pre-norm ViT turns the stream x (B, T, D) into x + a + m, a = what its attention adds (its "attention
output", TransformerLens' ``blocks.L.hook_attn_out``), m = what its MLP adds (``hook_mlp_out``), and x + a + m is the
residual stream after the block (``hook_resid_post``). The three hook points:

- ``residual``: the stream after block L;
- ``attention``: block L's attention branch, ls1(merge(heads)) (``BlockStep.attn_branch``);
- ``mlp``: block L's MLP branch, ls2(mlp(norm2(x + a))) (``BlockStep.mlp_branch``).

``hook_tokens`` runs the blocks up to L and no further; ``continue_edited`` continues a forward pass from the stream
entering block L with the tokens at the hook point replaced by ``edit(tokens)`` (what a spliced SAE, or a latent
switched off, does), the blocks after L re-run on the edited stream; ``run_edited_at`` is both from the images. Every
block runs through ``Block.step``, the block's only arithmetic. Layers are counted from 0 (negative: from the end).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal

import torch

from ..architecture import require_one_sequence
from ..model import TokenLayout, VisionTransformer
from ..positions import TokenPositions
from .stream import readout_rows

HOOK_POINTS = ("residual", "attention", "mlp")
Hook = Literal["residual", "attention", "mlp"]
TokenEdit = Callable[[torch.Tensor], torch.Tensor]     # tokens (B, T, D) -> tokens of the same shape
PURPOSE = "Reading a layer's tokens at a hook point"


@dataclass
class HookRead:
    """The tokens at a hook point of B images, and what continuing from there needs."""
    tokens: torch.Tensor                 # (B, T, D) at the hook point
    stream: torch.Tensor                 # (B, T, D) the stream entering block ``layer``
    layer: int                           # 0-based
    hook: str
    layout: TokenLayout
    positions: TokenPositions | None     # what attention needs beyond q, k, v (None for a plain ViT)


def check_hook(model: VisionTransformer, layer: int, hook: str) -> int:
    """The 0-based index of ``layer`` (negative: from the end); ValueError naming what exists otherwise."""
    depth = len(model.blocks)
    if hook not in HOOK_POINTS:
        raise ValueError(f"Unknown hook point {hook!r}! Expected one of {', '.join(HOOK_POINTS)}.")
    if not -depth <= layer < depth:
        raise ValueError(f"No layer {layer}! The model has layers 0 to {depth - 1} (or -1 for the last).")
    return layer % depth


def hook_tokens(model: VisionTransformer, x: torch.Tensor, layer: int, hook: str) -> HookRead:
    """Images (B, C, H, W) -> the tokens at ``hook`` of block ``layer`` (and the stream entering that block); the
    blocks after ``layer`` never run."""
    require_one_sequence(model, PURPOSE)
    layout = model.eval_layout(x, PURPOSE)
    layer = check_hook(model, layer, hook)
    with torch.inference_mode():
        positions = model.token_positions(x.shape[-2], x.shape[-1], x.device)
        stream = model.embed(x)
        for block in model.blocks[:layer]:
            stream = block.step(stream, positions).out
        step = model.blocks[layer].step(stream, positions)
        tokens = {"residual": step.out, "attention": step.attn_branch, "mlp": step.mlp_branch}[hook]
    return HookRead(tokens, stream, layer, hook, layout, positions)


def _edited(block, stream: torch.Tensor, positions: TokenPositions | None, step, hook: str,
            edit: TokenEdit) -> torch.Tensor:
    """The stream after ``block`` (whose plain ``step`` from ``stream`` is given) with ``hook``'s tokens edited."""
    if hook == "residual":
        return edit(step.out)
    if hook == "mlp":
        return block.step(stream, positions, heads=step.heads, mlp=edit(step.mlp_branch)).out
    return block.step(stream, positions, heads=step.heads, attn_branch=edit(step.attn_branch)).out


def continue_edited(model: VisionTransformer, stream: torch.Tensor, layer: int, hook: str, edit: TokenEdit,
                    positions: TokenPositions | None = None) -> torch.Tensor:
    """The stream entering block ``layer`` (B, T, D) -> the model's output (B, K) with the tokens at ``hook`` of that
    block replaced by ``edit(tokens)``: the stream after the block, or the branch it adds (the MLP then reads the
    edited attention branch). The blocks below ``layer`` are not re-run; the last block runs on the readout's tokens
    only when ``layer`` is below it (``readout_rows``)."""
    require_one_sequence(model, PURPOSE)
    layer = check_hook(model, layer, hook)
    rows = readout_rows(model)
    rows = None if rows is None else rows.to(stream.device)
    last = len(model.blocks) - 1
    with torch.inference_mode():
        block = model.blocks[layer]
        stream = _edited(block, stream, positions, block.step(stream, positions), hook, edit)
        for l in range(layer + 1, last + 1):
            stream = model.blocks[l].step(stream, positions, rows=rows if l == last else None).out
        return model.forward_head(stream)


def run_edited_at(model: VisionTransformer, x: torch.Tensor, layer: int, hook: str, edit: TokenEdit,
                  attention: bool = False):
    """Images (B, C, H, W) -> the model's output (B, K) with the tokens at ``hook`` of block ``layer`` replaced by
    ``edit(tokens)``. The identity edit gives the model's own output. ``attention``: ``(output, maps)`` instead, maps
    every block's attention (B, H, T, T) as this pass used it (the explicit softmax; those below ``layer`` unchanged)."""
    if not attention:
        read = hook_tokens(model, x, layer, hook)
        return continue_edited(model, read.stream, read.layer, hook, edit, read.positions)
    require_one_sequence(model, PURPOSE)
    model.eval_layout(x, PURPOSE)
    layer = check_hook(model, layer, hook)
    maps = []
    with torch.inference_mode():
        positions = model.token_positions(x.shape[-2], x.shape[-1], x.device)
        stream = model.embed(x)
        for l, block in enumerate(model.blocks):
            step = block.step(stream, positions, taps=("attn",))
            maps.append(step.attn)
            stream = _edited(block, stream, positions, step, hook, edit) if l == layer else step.out
        return model.forward_head(stream), maps
