"""A Swin re-implemented densely, for the tests: the same weights as a ``vit.swin.SwinTransformer``, but every block
attends over its whole stage with a mask instead of rolling and cutting windows.

A block's windows are the W×W tiles of the stage's grid, displaced by the shift and cut at the border: token (r, c)
lies in tile (⌊(r − sh)/wh⌋, ⌊(c − sw)/ww⌋), and two tokens may attend to each other exactly when their tiles are the
same (−∞ otherwise). The position bias of a pair is read at its offset on the grid. Nothing here rolls, partitions
or looks at ``vit.swin``'s window code or ``viz.maps.windows``: the window size and shift follow the papers' rule
(the window shrinks to a stage that is not larger than it, no shift there; odd blocks shift by ⌊W/2⌋), the v2 bias
is its formula written out again. Its attention is a (B, H, T, T) tensor of the graph, so gradients flow to it.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def block_geometry(grid: tuple[int, int], W: int, odd: bool) -> tuple[tuple[int, int], tuple[int, int]]:
    """(window, shift) of a block on a gh×gw grid with configured window W."""
    window = tuple(min(W, g) for g in grid)
    shift = tuple(W // 2 if odd and g > W else 0 for g in grid)
    return window, shift


def allowed_pairs(grid: tuple[int, int], window, shift) -> torch.Tensor:
    """(T, T) bool: both tokens in the same displaced tile."""
    gh, gw = grid
    r, c = torch.meshgrid(torch.arange(gh), torch.arange(gw), indexing="ij")
    tile_r = torch.div(r.reshape(-1) - shift[0], window[0], rounding_mode="floor")
    tile_c = torch.div(c.reshape(-1) - shift[1], window[1], rounding_mode="floor")
    return (tile_r[:, None] == tile_r[None, :]) & (tile_c[:, None] == tile_c[None, :])


def offsets(grid: tuple[int, int]) -> tuple[torch.Tensor, torch.Tensor]:
    """(T, T) row and column offsets (query − key) of every pair of tokens on the grid."""
    gh, gw = grid
    r, c = torch.meshgrid(torch.arange(gh), torch.arange(gw), indexing="ij")
    r, c = r.reshape(-1), c.reshape(-1)
    return r[:, None] - r[None, :], c[:, None] - c[None, :]


def position_bias(attn, grid, window, allowed) -> torch.Tensor:
    """(H, T, T) bias of every pair (0 where the pair may not attend: it is masked anyway)."""
    dr, dc = offsets(grid)
    dr, dc = dr.clamp(-(window[0] - 1), window[0] - 1), dc.clamp(-(window[1] - 1), window[1] - 1)
    if hasattr(attn, "relative_position_bias_table"):            # v1: the learnt table, (2W−1)² rows
        W = attn.window[0]
        table = attn.relative_position_bias_table                  # ((2W−1)², H)
        bias = table[(dr + W - 1) * (2 * W - 1) + (dc + W - 1)]    # (T, T, H)
    else:                                                          # v2: 16·σ(MLP(log-spaced offset))
        pretrained = attn.pretrained_window
        rows = dr.float() / max((pretrained[0] or window[0]) - 1, 1) * 8
        cols = dc.float() / max((pretrained[1] or window[1]) - 1, 1) * 8
        coords = torch.stack([rows, cols], dim=-1)
        coords = torch.sign(coords) * torch.log2(coords.abs() + 1.0) / math.log2(8)
        bias = 16 * torch.sigmoid(attn.cpb_mlp(coords))            # (T, T, H)
    return bias.permute(2, 0, 1) * allowed


def dense_attention(attn, x: torch.Tensor, grid, window, shift) -> tuple[torch.Tensor, torch.Tensor]:
    """One block's attention over the whole stage: tokens (B, T, C) -> (out (B, T, C), attention (B, H, T, T))."""
    B, T, C = x.shape
    H = attn.num_heads
    if hasattr(attn, "q_bias") and attn.q_bias is not None:
        qkv = F.linear(x, attn.qkv.weight, torch.cat([attn.q_bias, torch.zeros_like(attn.q_bias), attn.v_bias]))
    else:
        qkv = attn.qkv(x)
    q, k, v = qkv.reshape(B, T, 3, H, C // H).permute(2, 0, 3, 1, 4)             # each (B, H, T, Dh)
    if hasattr(attn, "logit_scale"):                                              # v2: τ·cos(q, k)
        tau = torch.clamp(attn.logit_scale, max=math.log(100.0)).exp()
        logits = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1) * tau
    else:
        logits = q @ k.transpose(-2, -1) * (C // H) ** -0.5
    allowed = allowed_pairs(grid, window, shift)
    logits = logits + position_bias(attn, grid, window, allowed)
    a = logits.masked_fill(~allowed, float("-inf")).softmax(dim=-1)              # (B, H, T, T)
    out = (a @ v).transpose(1, 2).reshape(B, T, C)
    return attn.proj(out), a


def merge(down, x: torch.Tensor, grid, v2: bool) -> torch.Tensor:
    """Patch merging on row-major tokens (B, T, C): children (0,0), (1,0), (0,1), (1,1) of each 2×2 group."""
    B, T, C = x.shape
    gh, gw = grid
    g = x.reshape(B, gh, gw, C)
    cat = torch.cat([g[:, 0::2, 0::2], g[:, 1::2, 0::2], g[:, 0::2, 1::2], g[:, 1::2, 1::2]], dim=-1)
    cat = cat.reshape(B, (gh // 2) * (gw // 2), 4 * C)
    return down.norm(down.reduction(cat)) if v2 else down.reduction(down.norm(cat))


def dense_forward(model, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor], list[tuple]]:
    """Images -> (logits, every block's dense attention (B, H, T, T), every block's (grid, window, shift))."""
    cfg = model.cfg
    v2 = cfg.version == 2
    h = model.patch_embed.proj(x)                                                 # (B, D, gh, gw)
    grid = tuple(h.shape[-2:])
    h = model.patch_embed.norm(h.flatten(2).transpose(1, 2))                      # (B, T, D) row-major
    maps, geometry = [], []
    for s, layer in enumerate(model.layers):
        if s:
            h = merge(layer.downsample, h, grid, v2)
            grid = (grid[0] // 2, grid[1] // 2)
        for j, block in enumerate(layer.blocks):
            window, shift = block_geometry(grid, cfg.window_size[s], j % 2 == 1)
            a_in = h if v2 else block.norm1(h)
            a, attention = dense_attention(block.attn, a_in, grid, window, shift)
            h = h + (block.norm1(a) if v2 else a)
            m = block.mlp(h if v2 else block.norm2(h))
            h = h + (block.norm2(m) if v2 else m)
            maps.append(attention)
            geometry.append((grid, window, shift))
    logits = model.head(model.norm(h).mean(dim=1))
    return logits, maps, geometry


def merge_matrix(grid: tuple[int, int]) -> torch.Tensor:
    """(T/4, T) M[p, c] = 1/4 when token c of the gh×gw grid is one of merged token p's 2×2 children."""
    gh, gw = grid
    r, c = torch.meshgrid(torch.arange(gh), torch.arange(gw), indexing="ij")
    parent = ((r // 2) * (gw // 2) + c // 2).reshape(-1)
    return (torch.arange((gh // 2) * (gw // 2))[:, None] == parent[None, :]).float() / 4


def chain(stage_matrices: list[list[torch.Tensor]], grids: list[tuple[int, int]]) -> torch.Tensor:
    """The mean of the last stage's rows through every block's (T, T) step, stage by stage, merges as M:
    (1/T_S)·1ᵀ·R_S·M_{S−1}·R_{S−1}···R_0 -> (T_0,)."""
    row = torch.full((grids[-1][0] * grids[-1][1],), 1.0 / (grids[-1][0] * grids[-1][1]), dtype=torch.float64)
    for s in reversed(range(len(stage_matrices))):
        if s < len(stage_matrices) - 1:
            row = row @ merge_matrix(grids[s]).double()
        for step in reversed(stage_matrices[s]):
            row = row @ step.double()
    return row
