"""Position schemes that act inside attention instead of on the tokens: BEiT's relative position bias, timm's
relative-position MLP and EVA-02's rotary embedding. They depend only on the token layout, so they are computed per
forward pass from the grid (never stored in a checkpoint) and handed to every block as one ``TokenPositions``.

Relative position bias (BEiT, Bao et al. 2022): each block learns a table of (2gh-1)(2gw-1) + 3 rows × H
heads; the bias of query i and key j is the row of their offset (Δrow, Δcol), or one of 3 extra rows when
a prefix token is involved (prefix→patch, patch→prefix, prefix→prefix). It is added to q·kᵀ/√d.

Relative-position MLP (timm's vit_relpos_*, after Swin V2's continuous position bias, Liu et al. 2022): the same
table, but computed for the input's grid by a small MLP from each offset's log-spaced coordinates
sign(d)·ln(1 + |d|) (``relative_log_coords``), so it exists at any input size; the 3 prefix rows are 0 (the prefix
tokens get no bias).

Rotary embedding (RoPE, EVA-02, Fang et al. 2023): q and k of every patch token are rotated in planes of
2 channels by angles proportional to the patch's row (first Dh/2 channels) and column (last Dh/2); then
q_i·k_j depends on the offset between patches i and j only. Prefix tokens are not rotated.
"""
from __future__ import annotations

from typing import NamedTuple

import torch


class TokenPositions(NamedTuple):
    """What attention needs beyond q, k, v for one token layout (None: the scheme is not used)."""
    num_prefix: int                                   # tokens before the patch grid (never rotated)
    rope: tuple[torch.Tensor, torch.Tensor] | None    # (sin, cos), each (N, Dh) for the N patch tokens, or (B, 1, N, Dh)
    rel_index: torch.Tensor | None                    # (T, T) long: table row of every (query, key) pair, or (B, T, T)
    mask: torch.Tensor | None = None                  # (B, T, T) bool: query i may attend key j (several sequences
                                                      # packed in one row, vit.explain.perturb); None: every pair
    rel_coords: torch.Tensor | None = None            # (R - 3, 2) log-spaced (Δrow, Δcol) of every patch offset's table
                                                      # row, the input of the relative-position MLP (timm's vit_relpos)


def attention_bias(positions: TokenPositions | None, rel_table: torch.Tensor | None,
                   dtype: torch.dtype) -> torch.Tensor | None:
    """What is added to the attention logits q·kᵀ/√d: None, or (H, T, T) / (B, H, T, T) of ``dtype``.

    BEiT's relative-position bias (the table's row of every (query, key) pair; ``rel_table``: (R, H)) and, for
    packed sequences, −inf wherever the mask forbids a pair, so the softmax gives it exactly 0 and no token sees
    another sequence. Both the fused and the explicit attention take it as is.
    """
    if positions is None:
        return None
    bias = None
    if rel_table is not None:
        bias = rel_table[positions.rel_index].movedim(-1, -3).to(dtype)   # (T, T, H) -> (H, T, T), or per image
    if positions.mask is not None:
        allowed = positions.mask.unsqueeze(-3)                              # (B, 1, T, T): every head alike
        base = torch.zeros((), dtype=dtype, device=allowed.device) if bias is None else bias
        bias = base.masked_fill(~allowed, float("-inf"))                    # (B, H or 1, T, T)
    return bias


def num_relative_positions(grid: tuple[int, int]) -> int:
    """Rows of a relative-position table for a gh×gw grid: every offset, plus 3 for the prefix tokens."""
    gh, gw = grid
    return (2 * gh - 1) * (2 * gw - 1) + 3


def grid_from_relative_positions(rows: int) -> tuple[int, int]:
    """The square grid a relative-position table of ``rows`` rows was learnt for (inverse of the above)."""
    n = rows - 3
    side = round((n ** 0.5 + 1) / 2)
    if (2 * side - 1) ** 2 != n:
        raise ValueError(f"A relative position bias table of {rows} rows is not (2·s-1)² + 3 for a square s×s grid; "
                         f"pass img_size=(H, W) for a non-square one.")
    return side, side


def relative_log_coords(grid: tuple[int, int], device=None) -> torch.Tensor:
    """(R - 3, 2) float32, R = ``num_relative_positions(grid)``: row (Δrow + gh-1)·(2gw-1) + (Δcol + gw-1) holds
    sign(d)·ln(1 + |d|) of its offset d = (Δrow, Δcol) in patches, what timm's relative-position MLP reads (its
    ``"cr"`` coordinates); offsets mean the same distance whatever the grid, so the bias works at any input size."""
    gh, gw = grid
    d_row = torch.arange(-(gh - 1), gh, device=device, dtype=torch.float32)           # (2gh-1,)
    d_col = torch.arange(-(gw - 1), gw, device=device, dtype=torch.float32)           # (2gw-1,)
    coords = torch.stack(torch.meshgrid(d_row, d_col, indexing="ij"), dim=-1)           # (2gh-1, 2gw-1, 2)
    return (torch.sign(coords) * torch.log(1.0 + coords.abs())).reshape(-1, 2)


def relative_position_index(grid: tuple[int, int], num_prefix: int, device=None) -> torch.Tensor:
    """(T, T) long, T = num_prefix + gh·gw: row of the bias table for query i and key j (BEiT's layout).

    Patch pairs use (Δrow + gh-1)·(2gw-1) + (Δcol + gw-1); a prefix query uses row R-3, a prefix key R-2,
    both R-1, with R = ``num_relative_positions(grid)``.
    """
    gh, gw = grid
    rows = torch.arange(gh, device=device).repeat_interleave(gw)     # (N,) row of each patch, row-major
    cols = torch.arange(gw, device=device).repeat(gh)                # (N,) column of each patch
    d_row = rows[:, None] - rows[None, :] + gh - 1                   # (N, N) in [0, 2gh-2]
    d_col = cols[:, None] - cols[None, :] + gw - 1                   # (N, N) in [0, 2gw-2]
    R = num_relative_positions(grid)
    T = num_prefix + gh * gw
    index = torch.empty(T, T, dtype=torch.long, device=device)
    index[num_prefix:, num_prefix:] = d_row * (2 * gw - 1) + d_col
    index[:num_prefix, :] = R - 3                                    # prefix query -> anything
    index[:, :num_prefix] = R - 2                                    # anything -> prefix key
    index[:num_prefix, :num_prefix] = R - 1                          # prefix -> prefix
    return index


def rope_tables(grid: tuple[int, int], head_dim: int, ref_grid: tuple[int, int] | None = None,
                temperature: float = 10000.0, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """(sin, cos), each (gh·gw, Dh): EVA-02's axial rotary angles for a gh×gw grid (timm's RotaryEmbeddingCat).

    Dh/4 frequencies f_b = temperature^(-b/(Dh/4)); a patch at (r, c) gets angles r'·f_b (Dh/4 of them) then
    c'·f_b, each repeated for the 2 channels of its plane: [a0, a0, a1, a1, …]. With ``ref_grid`` the
    coordinates are rescaled to it, r' = r·ref_h/gh, so a model fine-tuned at 448 keeps its 224 angles.
    """
    if head_dim % 4:
        raise ValueError(f"Rotary embedding needs a head width divisible by 4 but got {head_dim}.")
    gh, gw = grid
    bands = 1.0 / temperature ** (torch.arange(head_dim // 4, device=device, dtype=torch.float32) / (head_dim // 4))
    ref_h, ref_w = ref_grid or grid
    r = torch.arange(gh, device=device, dtype=torch.float32) / gh * ref_h              # (gh,)
    c = torch.arange(gw, device=device, dtype=torch.float32) / gw * ref_w              # (gw,)
    rr, cc = torch.meshgrid(r, c, indexing="ij")                                          # (gh, gw) each
    angles = torch.cat([rr[..., None] * bands, cc[..., None] * bands], dim=-1)              # (gh, gw, Dh/2)
    angles = angles.reshape(gh * gw, head_dim // 2).repeat_interleave(2, dim=-1)        # (N, Dh)
    return angles.sin(), angles.cos()


def apply_rope(x: torch.Tensor, sin: torch.Tensor, cos: torch.Tensor, num_prefix: int) -> torch.Tensor:
    """Rotate the patch tokens of q or k, x: (B, H, T, Dh) -> (B, H, T, Dh); the prefix tokens stay as they are.

    Channel pairs (x0, x1) become (x0·cos − x1·sin, x1·cos + x0·sin).
    """
    prefix, patches = x[:, :, :num_prefix], x[:, :, num_prefix:]
    pairs = patches.unflatten(-1, (-1, 2))                                    # (B, H, N, Dh/2, 2)
    rotated = torch.stack([-pairs[..., 1], pairs[..., 0]], dim=-1).flatten(-2)  # (-x1, x0, -x3, x2, …)
    return torch.cat([prefix, patches * cos + rotated * sin], dim=2)
