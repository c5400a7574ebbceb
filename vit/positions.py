"""Position schemes that act inside attention instead of on the tokens: BEiT's relative position bias, timm's
relative-position MLP and the rotary embeddings (EVA-02, timm's RoPE ViTs, DINOv3). They depend only on the token
layout (and, for RoPE-Mixed, each block's learnt frequencies), so they are computed per forward pass from the grid and
handed to every block as one ``TokenPositions``.

Relative position bias (BEiT, Bao et al. 2022): each block learns a table of (2gh-1)(2gw-1) + 3 rows × H
heads; the bias of query i and key j is the row of their offset (Δrow, Δcol), or one of 3 extra rows when
a prefix token is involved (prefix→patch, patch→prefix, prefix→prefix). It is added to q·kᵀ/√d.

Relative-position MLP (timm's vit_relpos_*, after Swin V2's continuous position bias, Liu et al. 2022): the same
table, but computed for the input's grid by a small MLP from each offset's log-spaced coordinates
sign(d)·ln(1 + |d|) (``relative_log_coords``), so it exists at any input size; the 3 prefix rows are 0 (the prefix
tokens get no bias).

Rotary embedding (RoPE; Su et al. 2021, for images Heo et al. 2024): q and k of every patch token are rotated in
Dh/2 planes of 2 channels by angles proportional to the patch's coordinates; then q_i·k_j depends on the offset
between patches i and j only. Prefix tokens are not rotated. Axial RoPE gives a quarter of the planes to each
axis's frequencies f_b = temperature^(-b/(Dh/4)), b = 0 … Dh/4 − 1, and the families differ in four settings
(``ViTConfig``'s rope_* fields):

    family              coordinates                          angle          temperature  first half   planes
    EVA-02, timm gap    row, column (× ref_grid / grid)      coord · f_b    10000        rows         neighbours
    RoPE-ViT (Naver)    row, column                          coord · f_b    100          columns      neighbours
    DINOv3              patch centre per axis in [-1, 1]     2π·coord · f_b 100          rows         halves

("planes": a plane is two neighbouring channels (x0, x1), or channels c and c + Dh/2.) RoPE-Mixed (Heo et al.)
learns the frequencies instead, per block and head, each plane turning with a mix of both axes:
angle = x·f_x + y·f_y (``mixed_rope_tables``).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch


class TokenPositions(NamedTuple):
    """What attention needs beyond q, k, v for one token layout (None: the scheme is not used)."""
    num_prefix: int                                   # tokens before the patch grid (never rotated)
    rope: tuple[torch.Tensor, torch.Tensor] | None    # (sin, cos), each (N, Dh) for the N patch tokens, or (B, 1, N, Dh)
    rel_index: torch.Tensor | None                    # (T, T) long: table row of every (query, key) pair, or (B, T, T)
    mask: torch.Tensor | None = None                  # (B, T, T) bool: query i may attend key j (several sequences
                                                      # packed in one row, vit.explain.perturb); None: every pair
    coords: torch.Tensor | None = None                # (N, 2) or (B, T, 2): (x, y) of the patches, for RoPE-Mixed
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


ROPE_COORDS = ("index", "centered")
ROPE_AXES = ("ij", "xy")


def rope_angles(grid: tuple[int, int], head_dim: int, ref_grid: tuple[int, int] | None = None,
                temperature: float = 10000.0, device=None, coords: str = "index", axes: str = "ij",
                offset: float = 0.0) -> torch.Tensor:
    """(gh·gw, Dh/2) float32: the rotation angle of every patch (row-major) in every plane, the first Dh/4 planes
    turning with one axis (rows for ``axes="ij"``, columns for "xy") and the last Dh/4 with the other.

    ``coords="index"``: the patch's row r and column c plus ``offset`` (Perception Encoder counts from 1), rescaled
    (r + offset)·ref_h/gh with ``ref_grid`` (so a model fine-tuned at another size keeps its pretraining angles),
    angle coord·f_b with f_b = temperature^(-b/(Dh/4));
    ``coords="centered"`` (DINOv3): the patch centre ((r + ½)/gh) mapped to [-1, 1] on each axis, angle
    2π·coord / temperature^(b/(Dh/4)) (DINOv3's periods).
    """
    if head_dim % 4:
        raise ValueError(f"Rotary embedding needs a head width divisible by 4 but got {head_dim}.")
    if coords not in ROPE_COORDS or axes not in ROPE_AXES:
        raise ValueError(f"Unknown rotary settings coords={coords!r}, axes={axes!r}! Expected coords in {ROPE_COORDS} "
                         f"and axes in {ROPE_AXES}.")
    gh, gw = grid
    n = head_dim // 4
    if coords == "centered":
        r = 2.0 * (torch.arange(0.5, gh, device=device, dtype=torch.float32) / gh) - 1.0        # (gh,) in (-1, 1)
        c = 2.0 * (torch.arange(0.5, gw, device=device, dtype=torch.float32) / gw) - 1.0        # (gw,)
        periods = temperature ** (2.0 * torch.arange(n, device=device, dtype=torch.float32) / (head_dim // 2))
        scale = lambda t: 2 * math.pi * t[..., None] / periods                                 # noqa: E731
    else:
        bands = 1.0 / temperature ** (torch.arange(n, device=device, dtype=torch.float32) / n)
        ref_h, ref_w = ref_grid or grid
        r = torch.arange(gh, device=device, dtype=torch.float32) + offset                      # (gh,)
        c = torch.arange(gw, device=device, dtype=torch.float32) + offset                      # (gw,)
        if ref_grid:
            r, c = r / gh * ref_h, c / gw * ref_w
        scale = lambda t: t[..., None] * bands                                                 # noqa: E731
    rr, cc = torch.meshgrid(r, c, indexing="ij")                                                 # (gh, gw) each
    first, second = (rr, cc) if axes == "ij" else (cc, rr)
    angles = torch.cat([scale(first), scale(second)], dim=-1)                                    # (gh, gw, Dh/2)
    return angles.reshape(gh * gw, head_dim // 2)


def rope_layout(angles: torch.Tensor, half: bool = False) -> torch.Tensor:
    """Angles per plane (…, Dh/2) -> per channel (…, Dh): [a0, a0, a1, a1, …] for neighbouring planes, [a0, a1, …,
    a0, a1, …] for halves (``half``)."""
    return torch.cat([angles, angles], dim=-1) if half else angles.repeat_interleave(2, dim=-1)


def rope_tables(grid: tuple[int, int], head_dim: int, ref_grid: tuple[int, int] | None = None,
                temperature: float = 10000.0, device=None, coords: str = "index", axes: str = "ij",
                half: bool = False, offset: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """(sin, cos), each (gh·gw, Dh): the axial rotary tables of ``rope_angles`` in the channel layout ``apply_rope``
    takes (timm's RotaryEmbeddingCat / RotaryEmbeddingDinoV3 with the same settings)."""
    angles = rope_angles(grid, head_dim, ref_grid, temperature, device, coords, axes, offset)
    return rope_layout(angles.sin(), half), rope_layout(angles.cos(), half)


def patch_coordinates(grid: tuple[int, int], device=None) -> torch.Tensor:
    """(gh·gw, 2) float32: (column, row) of every patch, row-major: what RoPE-Mixed's learnt frequencies turn."""
    gh, gw = grid
    rows = torch.arange(gh, device=device, dtype=torch.float32).repeat_interleave(gw)
    cols = torch.arange(gw, device=device, dtype=torch.float32).repeat(gh)
    return torch.stack([cols, rows], dim=-1)


def mixed_rope_tables(coords: torch.Tensor, freqs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """RoPE-Mixed (Heo et al. 2024): coords (…, N, 2) as (x, y), one block's learnt frequencies (2, H, Dh/2) ->
    (sin, cos), each (…, H, N, Dh) in neighbouring-plane layout: plane p of head h turns by
    x·f_x[h, p] + y·f_y[h, p]."""
    x, y = coords.float().unsqueeze(-3).unbind(-1)                    # each (…, 1, N)
    freqs = freqs.float()
    angles = x[..., None] * freqs[0][:, None] + y[..., None] * freqs[1][:, None]   # (…, H, N, Dh/2)
    return rope_layout(angles.sin()), rope_layout(angles.cos())


def rotary_kernel(angles: torch.Tensor) -> torch.Tensor:
    """Rotation angles (…, N, P) of N positions in P planes -> (N, N): the mean over planes (and the leading
    dimensions: blocks, heads) of cos(θ_i − θ_j) = cos θ_i cos θ_j + sin θ_i sin θ_j. It is the cosine similarity of
    one vector rotated to position i and to position j, averaged over vectors spread evenly over the planes: the
    similarity of positions the rotation itself implies."""
    c, s = angles.cos().double(), angles.sin().double()
    kernel = (c @ c.transpose(-1, -2) + s @ s.transpose(-1, -2)) / angles.shape[-1]     # (…, N, N)
    return kernel.reshape(-1, *kernel.shape[-2:]).mean(dim=0).float()


def apply_rope(x: torch.Tensor, sin: torch.Tensor, cos: torch.Tensor, num_prefix: int,
               half: bool = False) -> torch.Tensor:
    """Rotate the patch tokens of q or k, x: (B, H, T, Dh) -> (B, H, T, Dh); the prefix tokens stay as they are.

    Neighbouring planes: channel pairs (x0, x1) become (x0·cos − x1·sin, x1·cos + x0·sin). Halves (``half``,
    DINOv3): channel c and c + Dh/2 turn together, x·cos + [−x_second_half, x_first_half]·sin.
    """
    prefix, patches = x[:, :, :num_prefix], x[:, :, num_prefix:]
    if half:
        first, second = patches.chunk(2, dim=-1)
        rotated = torch.cat([-second, first], dim=-1)
    else:
        pairs = patches.unflatten(-1, (-1, 2))                                    # (B, H, N, Dh/2, 2)
        rotated = torch.stack([-pairs[..., 1], pairs[..., 0]], dim=-1).flatten(-2)  # (-x1, x0, -x3, x2, …)
    return torch.cat([prefix, (patches * cos + rotated * sin).to(x.dtype)], dim=2)   # tables may be wider (float32)
