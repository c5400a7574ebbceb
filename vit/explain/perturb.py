"""The model on fewer patches, and the model with its top blocks re-initialised: the two interventions that test
whether an explanation is faithful (perturbation curves, Petsiuk et al. 2018; Chefer et al. 2021) and whether it
depends on the model at all (cascading model randomisation, Adebayo et al. 2018).

``forward_kept(model, x, keep)`` drops patch tokens from the sequence instead of greying or blurring pixels, so
the model never sees an out-of-distribution patch: image b keeps its prefix tokens (CLS, DIST, registers) and the
patches ``keep[b]``, and each kept patch keeps its own position, whatever the scheme:

- learned / sine-cosine table: the table is added before the tokens are gathered (``model.embed``);
- rotary (EVA-02, RoPE-ViT, DINOv3): the kept patches' own rotation angles (RoPE-Mixed: coordinates), per image;
- relative position bias (BEiT's table, timm's MLP): the (prefix + K)² sub-matrix of the bias index, per image,
  into the table of the full grid;
- mean / MAP pooling: over the kept patches only (the pooling sees the shorter sequence).

Every step of ``model.embed`` acts on each token alone (patch projection, + position, CLIP's norm_pre), so
gathering after it equals embedding only the kept tokens. B differently perturbed copies of one photo run as
one batch of B sequences of the same length. A model without one sequence of tokens through every block (windows
that tile the grid, merges between stages: ``Architecture.one_sequence``) has no token to drop, and
``token_dropping_refusal`` says why from its description.
"""
from __future__ import annotations

import copy
from typing import Iterator

import torch
import torch.nn as nn

from ..architecture import Architecture
from ..positions import TokenPositions
from ..readout import kind as readout_kind


def token_dropping_refusal(model, size: tuple[int, int] | None = None) -> str | None:
    """Why ``forward_kept`` / ``forward_packed`` cannot run this model at ``size`` (H, W) (default: its own), in
    one sentence from its description, or None when they can: dropping a patch needs one sequence of tokens
    through every block (``Architecture.one_sequence``)."""
    return _refusal(model.architecture(*(size or model.cfg.img_size)))


def _refusal(architecture: Architecture) -> str | None:
    """``token_dropping_refusal``'s sentence for a description."""
    if architecture.one_sequence:
        return None
    return (f"Token dropping does not apply to this model: {_no_sequence(architecture)}, so it has no one sequence of "
            f"tokens to leave a patch out of; its faithfulness curves use the pixel protocols (mean_colour, blur, "
            f"road).")


def _no_sequence(architecture: Architecture) -> str:
    """What in the description breaks the one sequence of tokens, in words."""
    blocks = architecture.blocks
    reasons = ["its windows tile the whole grid"] if architecture.windowed else []
    merges = dict.fromkeys(Architecture.merge_factor(a, b) for a, b in zip(blocks, blocks[1:]) if a.grid != b.grid)
    reasons += [f"merging {fh}×{fw} groups of tokens between stages needs every group" for fh, fw in merges]
    return " and ".join(reasons) or "its blocks do not all attend over the same tokens"


def _positions_of(model, height: int, width: int, ids: torch.Tensor,
                  mask: torch.Tensor | None = None) -> TokenPositions | None:
    """The positions of gathered tokens: ids (B, T) long are their indices in the full layout (prefix tokens
    0…n−1, patch p at n + p). Rotary angles (B, 1, T, Dh) with the identity rotation (sin 0, cos 1) for prefix
    tokens (RoPE-Mixed: coordinates (B, T, 2), 0 for prefix tokens, each block's angles 0 there), so prefix and
    patch tokens may sit anywhere in a row; relative-position rows (B, T, T) of every
    (query, key) pair; ``mask`` (B, T, T) for packed rows. None when nothing needs it (a plain ViT, one sequence
    per row)."""
    full = model.token_positions(height, width, ids.device)
    if full is None and mask is None:
        return None
    rope = rel_index = coords = None
    if full is not None and full.coords is not None:                            # RoPE-Mixed: coordinates, per block
        n = full.num_prefix
        coords = torch.cat([full.coords.new_zeros(n, 2), full.coords])[ids]     # (B, T, 2): prefix at 0, not turned
    if full is not None and full.rope is not None:
        sin, cos = full.rope                                                    # each (N, Dh): patches only
        n = full.num_prefix
        sin = torch.cat([sin.new_zeros(n, sin.shape[1]), sin])                  # (n + N, Dh): prefix not rotated
        cos = torch.cat([cos.new_ones(n, cos.shape[1]), cos])
        rope = (sin[ids].unsqueeze(1), cos[ids].unsqueeze(1))                   # each (B, 1, T, Dh): all heads alike
    if full is not None and full.rel_index is not None:
        rel_index = full.rel_index[ids[:, :, None], ids[:, None, :]]            # (B, T, T)
    rel_coords = None if full is None else full.rel_coords                     # the MLP's table: the full grid's
    return TokenPositions(0, rope, rel_index, mask, coords, rel_coords)


def _check_kept(architecture: Architecture, keeps: list[torch.Tensor]) -> None:
    N = architecture.grid[0] * architecture.grid[1]
    for keep in keeps:
        if keep.numel() and (int(keep.min()) < 0 or int(keep.max()) >= N):
            raise ValueError(f"keep holds patch indices outside [0, {N}) for a {architecture.grid[0]}×"
                             f"{architecture.grid[1]} grid: got {int(keep.min())}…{int(keep.max())}!")
        if keep.numel() == 0 and architecture.readout not in ("cls", "distilled"):
            raise ValueError(f"This model reads its answer from {readout_kind(architecture.readout).description}, so "
                             f"it needs at least one kept patch; got none.")


def forward_kept(model, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """The model's output when image b sees only its prefix tokens and the patches ``keep[b]``.

    x: (B, C, H, W) or one image (1, C, H, W) shared by every row of ``keep``; keep: (B, K) long, row-major patch
    indices in [0, N) (any order: positions travel with the tokens, so the order does not change the output)
    -> output (B, num_classes) (or the embedding, as ``model(x)``). K = 0 keeps the prefix tokens alone, which
    only a model that reads a class token can classify: mean and MAP pooling have nothing to pool and raise.
    """
    architecture = model.architecture(x.shape[-2], x.shape[-1])
    if _refusal(architecture):
        raise ValueError(_refusal(architecture))
    if keep.ndim != 2:
        raise ValueError(f"keep must be (B, K) patch indices but got shape {tuple(keep.shape)}!")
    B, K = keep.shape
    if x.shape[0] not in (1, B):
        raise ValueError(f"x must hold one image or one per row of keep ({B}) but holds {x.shape[0]}!")
    n = architecture.num_prefix
    _check_kept(architecture, [keep])
    keep = keep.to(x.device)
    ids = torch.cat([torch.arange(n, device=x.device).expand(B, n), keep + n], dim=1)   # (B, n + K) layout indices
    tokens = model.embed(x).expand(B, -1, -1)                                   # (B, T, D), positions added
    h = torch.gather(tokens, 1, ids[:, :, None].expand(-1, -1, tokens.shape[-1]))  # (B, n + K, D)
    positions = _positions_of(model, x.shape[-2], x.shape[-1], ids)
    for blk in model.blocks:
        h, _ = blk(h, False, positions)
    return model.forward_head(h)


def forward_packed(model, x: torch.Tensor, rows: list[list[torch.Tensor]]) -> torch.Tensor:
    """Several differently kept sequences of one image packed into each row of one batch, so that short
    sequences fill a forward's worth of tokens instead of running as small, inefficient matrix products.

    x: one image (1, C, H, W); rows[b]: the kept patch indices (1-D long, any length K ≥ 0) of each sequence
    packed into row b -> outputs (S, num_classes), one per sequence, in row-major order. Row b lays its
    sequences end to end, each as [its prefix tokens, its kept patches]; a mask lets a token attend only to
    tokens of its own sequence (the others get −inf before the softmax, i.e. exactly 0 weight), and each
    sequence keeps its own positions (table, rotary angles, relative-bias rows), so every output equals
    ``forward_kept`` on that sequence alone, up to float rounding. Shorter rows are padded; padding tokens
    attend only to padding and are never read. The head runs per sequence (pooling sees its own tokens).
    """
    if x.ndim != 4 or x.shape[0] != 1:
        raise ValueError(f"forward_packed takes one image (1, C, H, W) but got shape {tuple(x.shape)}!")
    architecture = model.architecture(x.shape[-2], x.shape[-1])
    if _refusal(architecture):
        raise ValueError(_refusal(architecture))
    n = architecture.num_prefix
    packed = [[torch.as_tensor(k, dtype=torch.long).reshape(-1).cpu() for k in row] for row in rows]
    _check_kept(architecture, [keep for row in packed for keep in row])
    T = max(sum(n + keep.numel() for keep in row) for row in packed)            # the longest row's tokens
    ids = torch.zeros(len(rows), T, dtype=torch.long)                           # padding: a copy of token 0
    segment = torch.full((len(rows), T), -1, dtype=torch.long)                  # padding: segment −1
    spans = []                                                                  # (row, start, length) per sequence
    for b, row in enumerate(packed):
        start = 0
        for keep in row:
            L = n + keep.numel()
            ids[b, start:start + L] = torch.cat([torch.arange(n), keep + n])    # layout indices of its tokens
            segment[b, start:start + L] = len(spans)
            spans.append((b, start, L))
            start += L
    ids, segment = ids.to(x.device), segment.to(x.device)
    tokens = model.embed(x)[0]                                                  # (n + N, D), positions added
    h = tokens[ids]                                                             # (B, T, D): the packed rows
    mask = segment[:, :, None] == segment[:, None, :]                           # (B, T, T): own sequence only
    positions = _positions_of(model, x.shape[-2], x.shape[-1], ids, mask)
    for blk in model.blocks:
        h, _ = blk(h, False, positions)
    outputs: list[torch.Tensor | None] = [None] * len(spans)
    by_length: dict[int, list[int]] = {}
    for i, (_, _, L) in enumerate(spans):
        by_length.setdefault(L, []).append(i)
    for L, members in by_length.items():                                        # one head call per length
        final = torch.stack([h[spans[i][0], spans[i][1]:spans[i][1] + L] for i in members])   # (S_L, L, D)
        for i, out in zip(members, model.forward_head(final)):
            outputs[i] = out
    return torch.stack(outputs)


# --- cascading model randomisation (Adebayo et al. 2018) -----------------------------------------------------------

def _reinitialise(block: nn.Module, generator: torch.Generator) -> None:
    """Draw a block's weights afresh as ``VisionTransformer.__init__`` does (truncated normal 0.02 for linear maps,
    zero biases, identity LayerNorms), with the relative-position table drawn like timm's (normal 0.02, not zero,
    so that a randomised BEiT block does not lose its positions to a constant). LayerScale keeps its learnt
    gains: re-initialised to 1e-5 the randomised block would all but vanish from the residual stream, and the
    check would test a shallower model instead of a random one. RoPE-Mixed's learnt frequencies are kept too: like
    the other rotary families' fixed rotation they say where a patch is, not what it looks like."""
    with torch.no_grad():
        for m in block.modules():
            if isinstance(m, (nn.Linear, nn.Conv2d)):
                nn.init.trunc_normal_(m.weight, std=0.02, generator=generator)
                if m.bias is not None:
                    m.bias.zero_()
            elif isinstance(m, (nn.LayerNorm, nn.RMSNorm)):
                m.weight.fill_(1.0)
                if getattr(m, "bias", None) is not None:
                    m.bias.zero_()
            for name in ("q_bias", "v_bias"):
                if isinstance(getattr(m, name, None), nn.Parameter):
                    getattr(m, name).zero_()
            table = getattr(m, "relative_position_bias_table", None)
            if isinstance(table, nn.Parameter):
                nn.init.trunc_normal_(table, std=0.02, generator=generator)


def randomize_block(model, index: int, seed: int = 0) -> None:
    """Re-initialise block ``index`` of ``model`` IN PLACE (call it on a copy), seeded by (seed, index) so block
    ``index`` gets the same weights in every cascade, whichever blocks were randomised before it."""
    generator = torch.Generator().manual_seed(seed * 1_000_003 + index)
    _reinitialise(model.blocks[index], generator)


def cascading_randomization(model, seed: int = 0) -> Iterator[tuple[int, object]]:
    """Yield ``(k, copy with the top k blocks randomised)`` for k = 1 … L, from the top block down (Adebayo et al.'s
    cascading randomisation; a model of stages: its blocks in forward order across them, the merges kept). One copy
    is made and randomised one more block per step (the yielded model is the same object each time), so the whole
    cascade costs one copy of the weights; the caller's model is untouched."""
    randomized = copy.deepcopy(model).eval()
    L = len(model.blocks)
    for k in range(1, L + 1):
        randomize_block(randomized, L - k, seed)
        yield k, randomized
