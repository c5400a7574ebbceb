"""A Swin Transformer written from scratch: "Swin Transformer: Hierarchical Vision Transformer using Shifted Windows"
(Liu et al. 2021) and "Swin Transformer V2: Scaling Up Capacity and Resolution" (Liu et al. 2022).

The module layout follows timm's ``SwinTransformer`` / ``SwinTransformerV2`` (patch merging at the start of a stage),
so that checkpoints map onto it with few renames:

    image (B, C, H, W)
      -> PatchEmbed (the patch partition): Conv2d(C, D, kernel=P, stride=P), LayerNorm   -> (B, gh, gw, D)
         [+ an absolute position embedding, when the config has one]
      -> stage 0: depths[0] × SwinBlock on the gh×gw grid, width D
      -> stage s ≥ 1: PatchMerging (each 2×2 group of tokens concatenated, LayerNorm, Linear 4C -> 2C)
                      -> (B, gh/2^s, gw/2^s, 2^s·D), then depths[s] × SwinBlock
      -> LayerNorm -> mean over the last stage's tokens (the average pool) -> head

A block attends only inside windows of W×W tokens. Every other block (the odd ones of a stage) shifts its windows
by ⌊W/2⌋ tokens right and down, so that information crosses the previous block's window borders. The shift is
done as the papers do it: the grid is rolled cyclically by −⌊W/2⌋ (``torch.roll``), cut into windows, and the
tokens that the roll brought together from opposite borders are kept apart by a mask of −100 added to their
logits; the output is rolled back. Seen on the grid itself, a shifted block's windows are the W×W tiles displaced
by (⌊W/2⌋, ⌊W/2⌋) and cut at the border (``vit.architecture.BlockLayout``, ``viz.maps.windows``).

    SwinBlock, v1 (pre-norm):  x = x + DropPath(W-MSA(LN(x)));   x = x + DropPath(MLP(LN(x)))
    SwinBlock, v2 (post-norm): x = x + DropPath(LN(W-MSA(x)));   x = x + DropPath(LN(MLP(x)))
    W-MSA, v1: softmax(q·kᵀ/√d + B[Δ] + mask)·v, B a learnt table per head and offset Δ inside a window
    W-MSA, v2: softmax(τ_h·cos(q, k) + 16·σ(CPB(log-spaced Δ)) + mask)·v: scaled cosine attention (τ_h = e^{logit
               scale} ≤ 100) and a continuous position bias, an MLP of the log-spaced offsets (sign(Δ)·log2(1 + 8|Δ|/
               (W'−1)) / 3, W' the pretraining window, or this window when none is given)

A stage whose grid is not larger than its window attends within the whole stage (the window shrinks to the grid
and there is no shift), as timm and transformers do; every stage's grid must be a multiple of its window
(``SwinTransformer.architecture`` says which input sizes a model takes).

``model(x)`` is the plain forward (fused scaled-dot-product attention when ``fused_attn``);
``model.forward_with_attention(x)`` also returns every block's window attention with its layout
(``WindowCapture``), computed with an explicit softmax inside the call, so concurrent calls never mix.
The block's computation lives in ``SwinBlock.forward``, which every pass calls.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache, wraps
from typing import Iterator, NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from .architecture import Architecture, BlockLayout
from .model import DropPath, FusedAttentionSwitch, TokenLayout, VisionTransformer, init_weights

SHIFT_MASK = -100.0          # the logit added between tokens a cyclic shift brought into one window (as the papers)
LOGIT_SCALE_MAX = math.log(100.0)   # v2: τ = exp(logit_scale) is clamped at 100
CPB_RANGE = 8.0              # v2: offsets are scaled to [-8, 8] before the log spacing
CPB_BIAS_SCALE = 16.0        # v2: the bias is 16·sigmoid(CPB(offset))
VERSIONS = (1, 2)


@dataclass(frozen=True)
class SwinConfig:
    img_size: tuple[int, int] = (224, 224)   # native input (H, W): what its preprocessing crops to
    patch_size: int = 4                      # P: side of a square patch in pixels (the patch partition)
    in_chans: int = 3                        # C: input image channels
    num_classes: int = 1000                  # classifier outputs; 0 means no head (pooled features)
    embed_dim: int = 96                      # D: token width of stage 0; stage s is 2^s·D wide
    depths: tuple[int, ...] = (2, 2, 6, 2)   # blocks per stage (the number of stages is its length)
    num_heads: tuple[int, ...] = (3, 6, 12, 24)  # attention heads per stage
    window_size: tuple[int, ...] = (7, 7, 7, 7)  # W per stage: windows are W×W tokens (an int: every stage)
    mlp_ratio: float = 4.0                   # MLP hidden width over token width
    qkv_bias: bool = True                    # biases on q, k, v (v2: on q and v only, k has none)
    version: int = 1                         # 1: Swin; 2: Swin v2 (cosine attention, continuous bias, post-norm)
    pretrained_window_sizes: tuple[int, ...] = (0, 0, 0, 0)  # v2: the window each stage's CPB offsets are scaled
    # to (the pretraining window of a fine-tuned model); 0: the stage's own window
    cpb_hidden: int = 512                    # v2: hidden width of the continuous position bias MLP
    # A learnt absolute position embedding added after the patch partition (the original Swin's "ape", transformers'
    # use_absolute_embeddings): none of the published Swins has one, but a task where only position decides the class
    # needs it (docs/swin.md#training-a-swin-on-the-squares). Resized bicubically for another grid, as a ViT's.
    absolute_pos_embed: bool = False
    layer_norm_eps: float = 1e-5             # every LayerNorm's epsilon (torch's default, as all three libraries)
    drop_rate: float = 0.0                   # dropout in MLPs, after attention and before the head
    attn_drop_rate: float = 0.0              # dropout on attention probabilities
    drop_path_rate: float = 0.0              # stochastic depth, rising linearly to this rate in the last block
    # torchvision pads a stage smaller than its window up to one window (timm and transformers shrink the window to
    # the stage instead, as here): False marks a torchvision model, whose smaller stages are then refused, not
    # silently computed another way.
    shrink_window: bool = True

    def __post_init__(self):
        if isinstance(self.img_size, int):
            object.__setattr__(self, "img_size", (self.img_size, self.img_size))
        object.__setattr__(self, "img_size", tuple(int(s) for s in self.img_size))
        stages = len(self.depths)
        for name in ("depths", "num_heads", "window_size", "pretrained_window_sizes"):
            value = getattr(self, name)
            value = (value,) * stages if isinstance(value, int) else tuple(int(v) for v in value)
            if name == "pretrained_window_sizes" and len(value) > stages and not any(value[stages:]):
                value = value[:stages]                     # transformers' default (0, 0, 0, 0) for fewer stages
            object.__setattr__(self, name, value)
        if stages < 1 or min(self.depths) < 1:
            raise ValueError(f"A Swin needs at least one stage of at least one block! Got depths={self.depths}.")
        for name in ("num_heads", "window_size", "pretrained_window_sizes"):
            if len(getattr(self, name)) != stages:
                raise ValueError(f"{name} needs one value per stage ({stages}, as depths={self.depths}) but got "
                                 f"{getattr(self, name)}!")
        for s, heads in enumerate(self.num_heads):
            if heads < 1 or self.stage_dim(s) % heads:
                raise ValueError(f"Stage {s} is {self.stage_dim(s)} wide, which {heads} heads do not divide! Expected "
                                 f"a number of heads that divides 2^s·embed_dim.")
        if min(self.window_size) < 1 or self.patch_size < 1:
            raise ValueError(f"Windows and patches need a positive size! Got window_size={self.window_size}, "
                             f"patch_size={self.patch_size}.")
        if self.version not in VERSIONS:
            raise ValueError(f"Unknown Swin version {self.version!r}! Expected 1 or 2.")

    @property
    def num_stages(self) -> int:
        return len(self.depths)

    @property
    def depth(self) -> int:
        """Blocks in all stages together."""
        return sum(self.depths)

    @property
    def grid(self) -> tuple[int, int]:
        """Native patch grid (gh, gw) of stage 0."""
        return self.img_size[0] // self.patch_size, self.img_size[1] // self.patch_size

    @property
    def num_features(self) -> int:
        """Width of the last stage: what the head reads."""
        return self.stage_dim(self.num_stages - 1)

    def stage_dim(self, stage: int) -> int:
        return self.embed_dim * 2 ** stage

    # What the explorer reads of any config: its family's name, its prefix tokens (none: a Swin is read out from the mean
    # of its last stage's tokens) and why it runs at its own size only ("windows": every stage's grid must be a whole
    # number of its windows, and its capture keeps every window).
    family = "swin"
    readout = "mean"
    num_prefix_tokens = 0
    fixed_size = "windows"

    def describe(self) -> str:
        """One line naming the shape, for messages."""
        return (f"Swin v{self.version}, patch {self.patch_size}, img {self.img_size[0]}×{self.img_size[1]}, "
                f"D={self.embed_dim}, depths={self.depths}, heads={self.num_heads}, windows={self.window_size}, "
                f"classes={self.num_classes}")


# Named sizes of the papers (Swin-T/S/B/L, Table 1 of both): width D, blocks per stage, heads per stage.
_SIZES = {
    "tiny": dict(embed_dim=96, depths=(2, 2, 6, 2), num_heads=(3, 6, 12, 24)),
    "small": dict(embed_dim=96, depths=(2, 2, 18, 2), num_heads=(3, 6, 12, 24)),
    "base": dict(embed_dim=128, depths=(2, 2, 18, 2), num_heads=(4, 8, 16, 32)),
    "large": dict(embed_dim=192, depths=(2, 2, 18, 2), num_heads=(6, 12, 24, 48)),
}
_SHORT = {"t": "tiny", "s": "small", "b": "base", "l": "large"}


def swin_variant(name: str, **overrides) -> SwinConfig:
    """Config of a named size: "tiny", "swin_t", "swin-b", "Swin-S", … (window 7 at 224 unless overridden)."""
    key = name.lower().replace("swin", "").replace("-", "_").strip("_")
    size = _SHORT.get(key, key)
    if size not in _SIZES:
        raise ValueError(f"Unknown Swin size {name!r}! Expected one of {sorted(_SIZES)} (or swin_t, swin_s, swin_b, "
                         f"swin_l).")
    return SwinConfig(**{**_SIZES[size], **overrides})


class WindowCapture(NamedTuple):
    """What ``SwinTransformer.forward_with_attention`` returns: the output and the attention behind it."""
    output: torch.Tensor                     # (B, K) logits; (B, D_last) pooled features without a head
    attention: list[torch.Tensor]            # per block, in forward order: (B, nW, H, N, N), N = wh·ww, the softmax
    # attention inside every window (with the relative position bias and the shift mask)
    layouts: list[BlockLayout]               # per block: its stage, grid, window and shift
    token_norms: list[torch.Tensor] | None   # per block: (B, gh, gw) L2 norm of every token after it, when asked


def window_partition(x: torch.Tensor, window: tuple[int, int]) -> torch.Tensor:
    """Tokens (B, gh, gw, C) -> windows (B, nW, wh·ww, C): tiles in row-major order, tokens row-major in each."""
    B, gh, gw, C = x.shape
    wh, ww = window
    x = x.view(B, gh // wh, wh, gw // ww, ww, C)               # (B, nWh, wh, nWw, ww, C)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(B, (gh // wh) * (gw // ww), wh * ww, C)


def window_reverse(windows: torch.Tensor, grid: tuple[int, int], window: tuple[int, int]) -> torch.Tensor:
    """Windows (B, nW, wh·ww, C) -> tokens (B, gh, gw, C): ``window_partition`` undone."""
    B, _, _, C = windows.shape
    (gh, gw), (wh, ww) = grid, window
    x = windows.view(B, gh // wh, gw // ww, wh, ww, C)         # (B, nWh, nWw, wh, ww, C)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(B, gh, gw, C)


def _cached(function):
    """``lru_cache`` for the index and mask tables, each made outside inference mode: a table first made under
    ``torch.inference_mode`` (a capture) would otherwise refuse to take part in a later backward (an explanation)."""
    cached = lru_cache(maxsize=64)(function)

    @wraps(function)
    def made_normally(*args):
        with torch.inference_mode(False):
            return cached(*args)
    made_normally.cache_clear = cached.cache_clear
    return made_normally


@_cached
def _relative_position_index(window: tuple[int, int], device: torch.device) -> torch.Tensor:
    """(N, N) long, N = wh·ww: the row of the (2wh−1)(2ww−1) offset table for every (query, key) pair of a window:
    (Δrow + wh − 1)·(2ww − 1) + (Δcol + ww − 1), Δ = query − key."""
    wh, ww = window
    rows, cols = torch.meshgrid(torch.arange(wh), torch.arange(ww), indexing="ij")
    rows, cols = rows.reshape(-1), cols.reshape(-1)                         # (N,) each, row-major
    d_row = rows[:, None] - rows[None, :] + wh - 1                          # (N, N) in 0 … 2wh−2
    d_col = cols[:, None] - cols[None, :] + ww - 1
    return (d_row * (2 * ww - 1) + d_col).to(device)


@_cached
def _shift_mask(grid: tuple[int, int], window: tuple[int, int], shift: tuple[int, int], device: torch.device,
                dtype: torch.dtype) -> torch.Tensor:
    """(nW, 1, N, N): 0 between tokens that lie in one displaced window, −100 between tokens the cyclic roll only
    brought together. A token's region along an axis is which displaced tile holds it: ⌊(i − s) / w⌋ for original
    index i, i.e. the tiles start s tokens into the grid and the first s tokens form a tile of their own."""
    (gh, gw), (wh, ww), (sh, sw) = grid, window, shift
    rows = torch.div(torch.arange(gh) - sh, wh, rounding_mode="floor")     # (gh,) displaced-tile row of each row
    cols = torch.div(torch.arange(gw) - sw, ww, rounding_mode="floor")
    region = (rows[:, None] * (gw + 1) + cols[None, :]).float()             # (gh, gw) one id per displaced tile
    rolled = torch.roll(region, shifts=(-sh, -sw), dims=(0, 1))             # where each window slot's token came from
    slots = window_partition(rolled[None, :, :, None], window)[0, :, :, 0]  # (nW, N)
    mask = (slots[:, :, None] != slots[:, None, :]).to(dtype) * SHIFT_MASK   # (nW, N, N)
    return mask[:, None].to(device)


def _log_spaced_offsets(window: tuple[int, int], pretrained: tuple[int, int]) -> torch.Tensor:
    """v2's input to the continuous position bias: every offset (Δrow, Δcol) of a window, (2wh−1, 2ww−1, 2),
    scaled to [−8, 8] by the pretraining window (or this one) and log-spaced: sign(Δ)·log2(1 + |Δ|) / log2(8)."""
    wh, ww = window
    d_row = torch.arange(-(wh - 1), wh, dtype=torch.float32) / max((pretrained[0] or wh) - 1, 1)
    d_col = torch.arange(-(ww - 1), ww, dtype=torch.float32) / max((pretrained[1] or ww) - 1, 1)
    table = torch.stack(torch.meshgrid(d_row, d_col, indexing="ij"), dim=-1) * CPB_RANGE   # (2wh−1, 2ww−1, 2)
    return torch.sign(table) * torch.log2(table.abs() + 1.0) / math.log2(CPB_RANGE)


def split_heads(qkv: torch.Tensor, num_heads: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Packed projections (B, nW, N, 3·C) -> q, k, v, each (B, nW, H, N, C/H)."""
    B, nW, N, C3 = qkv.shape
    qkv = qkv.reshape(B, nW, N, 3, num_heads, C3 // (3 * num_heads))
    return qkv.permute(3, 0, 1, 4, 2, 5).unbind(0)


def merge_heads(heads: torch.Tensor) -> torch.Tensor:
    """Heads (B, nW, H, N, Dh) -> (B, nW, N, H·Dh): head h in channels h·Dh … (h+1)·Dh − 1."""
    B, nW, H, N, Dh = heads.shape
    return heads.transpose(2, 3).reshape(B, nW, N, H * Dh)


class WindowAttention(nn.Module):
    """Swin v1's window attention: scaled dot products plus a learnt bias per head and offset inside a window.

    ``forward(windows (B, nW, N, C), bias (nW or 1, H, N, N))`` -> (out (B, nW, N, C), the softmax attention
    (B, nW, H, N, N) when asked); ``bias`` is ``position_bias`` plus the shift mask (``SwinBlock`` adds them).
    """

    def __init__(self, dim: int, num_heads: int, window: int, cfg: SwinConfig):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.window = (window, window)
        self.fused_attn = True  # plain forward uses F.scaled_dot_product_attention
        self.qkv = nn.Linear(dim, 3 * dim, bias=cfg.qkv_bias)
        self.relative_position_bias_table = nn.Parameter(torch.zeros((2 * window - 1) ** 2, num_heads))
        self.attn_drop = nn.Dropout(cfg.attn_drop_rate)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(cfg.drop_rate)

    def position_bias(self, window: tuple[int, int]) -> torch.Tensor:
        """(H, N, N): the table's row for every (query, key) offset of a ``window`` (its configured size)."""
        if tuple(window) != self.window:
            raise ValueError(f"Swin v1 learns its position bias for {self.window[0]}×{self.window[1]} windows, not "
                             f"{window[0]}×{window[1]}.")
        index = _relative_position_index(self.window, self.relative_position_bias_table.device)
        N = index.shape[0]
        return self.relative_position_bias_table[index.reshape(-1)].reshape(N, N, -1).permute(2, 0, 1)

    def project(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Windows (B, nW, N, C) -> q, k, v, each (B, nW, H, N, Dh)."""
        return split_heads(self.qkv(x), self.num_heads)

    def scaled(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, float]:
        """q and k as the logits read them, and the factor of q·kᵀ: v1's 1/√d."""
        return q, k, self.scale

    def forward(self, x: torch.Tensor, bias: torch.Tensor, return_attn: bool = False
                ) -> tuple[torch.Tensor, torch.Tensor | None]:
        q, k, v = self.project(x)                                   # each (B, nW, H, N, Dh)
        q, k, scale = self.scaled(q, k)
        attn = None
        if self.fused_attn and not return_attn:
            heads = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=scale,
                                                   dropout_p=self.attn_drop.p if self.training else 0.0)
        else:
            attn = ((q * scale) @ k.transpose(-2, -1) + bias).softmax(dim=-1)   # (B, nW, H, N, N)
            heads = self.attn_drop(attn) @ v                                    # (B, nW, H, N, Dh)
        return self.proj_drop(self.proj(merge_heads(heads))), attn


class CosineWindowAttention(WindowAttention):
    """Swin v2's window attention: τ_h·cos(q, k) plus a continuous position bias 16·σ(MLP(log-spaced offset)).

    q and v have biases, k has none (``q_bias``, ``v_bias``, timm's layout); τ_h = exp(min(logit_scale, log 100)).
    """

    def __init__(self, dim: int, num_heads: int, window: int, cfg: SwinConfig, pretrained_window: int):
        nn.Module.__init__(self)
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.window = (window, window)
        self.pretrained_window = (pretrained_window, pretrained_window)
        self.fused_attn = True
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.q_bias = nn.Parameter(torch.zeros(dim)) if cfg.qkv_bias else None
        self.v_bias = nn.Parameter(torch.zeros(dim)) if cfg.qkv_bias else None
        self.logit_scale = nn.Parameter(torch.full((num_heads, 1, 1), math.log(10.0)))
        self.cpb_mlp = nn.Sequential(nn.Linear(2, cfg.cpb_hidden), nn.ReLU(), nn.Linear(cfg.cpb_hidden, num_heads,
                                                                                        bias=False))
        self.attn_drop = nn.Dropout(cfg.attn_drop_rate)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(cfg.drop_rate)

    def position_bias(self, window: tuple[int, int]) -> torch.Tensor:
        """(H, N, N): 16·σ(CPB(offset)) for every (query, key) offset of a ``window`` (any size: the bias is an MLP)."""
        window = tuple(window)
        offsets = _log_spaced_offsets(window, self.pretrained_window).to(self.cpb_mlp[0].weight)
        table = self.cpb_mlp(offsets).reshape(-1, self.num_heads)              # ((2wh−1)(2ww−1), H)
        index = _relative_position_index(window, table.device)
        N = index.shape[0]
        return CPB_BIAS_SCALE * torch.sigmoid(table[index.reshape(-1)].reshape(N, N, -1).permute(2, 0, 1))

    def project(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        if self.q_bias is None:
            return split_heads(self.qkv(x), self.num_heads)
        bias = torch.cat([self.q_bias, torch.zeros_like(self.q_bias), self.v_bias])
        return split_heads(F.linear(x, self.qkv.weight, bias), self.num_heads)

    def scaled(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, float]:
        """Unit q and k with q times τ_h, so that q·kᵀ = τ_h·cos(q, k)."""
        tau = torch.clamp(self.logit_scale, max=LOGIT_SCALE_MAX).exp()         # (H, 1, 1)
        return F.normalize(q, dim=-1) * tau, F.normalize(k, dim=-1), 1.0


class SwinMlp(nn.Module):
    """Linear -> GELU -> Dropout -> Linear -> Dropout (timm's Mlp names)."""

    def __init__(self, dim: int, hidden: int, drop: float):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.drop1 = nn.Dropout(drop)
        self.fc2 = nn.Linear(hidden, dim)
        self.drop2 = nn.Dropout(drop)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop2(self.fc2(self.drop1(self.act(self.fc1(x)))))


class SwinBlock(nn.Module):
    """One transformer block attending inside (shifted) windows: the block's computation, in one place."""

    def __init__(self, cfg: SwinConfig, stage: int, index: int, drop_path: float):
        super().__init__()
        dim, heads, window = cfg.stage_dim(stage), cfg.num_heads[stage], cfg.window_size[stage]
        self.stage, self.index, self.shifted = stage, index, index % 2 == 1
        self.window = window
        self.post_norm = cfg.version == 2
        self.token_size = cfg.patch_size * 2 ** stage
        self.norm1 = nn.LayerNorm(dim, eps=cfg.layer_norm_eps)
        self.attn = WindowAttention(dim, heads, window, cfg) if cfg.version == 1 else \
            CosineWindowAttention(dim, heads, window, cfg, cfg.pretrained_window_sizes[stage])
        self.drop_path = DropPath(drop_path)
        self.norm2 = nn.LayerNorm(dim, eps=cfg.layer_norm_eps)
        self.mlp = SwinMlp(dim, int(dim * cfg.mlp_ratio), cfg.drop_rate)

    def layout(self, grid: tuple[int, int], index: int) -> BlockLayout:
        """The windows of this block (block ``index`` of the model) on a gh×gw grid: W×W (shrunk to the grid where it
        is not larger than a window), shifted by ⌊W/2⌋ in odd blocks along every axis longer than one window."""
        gh, gw = grid
        window = (min(self.window, gh), min(self.window, gw))
        half = self.window // 2 if self.shifted else 0
        shift = (half if gh > self.window else 0, half if gw > self.window else 0)
        return BlockLayout(index=index, stage=self.stage, block=self.index, heads=self.attn.num_heads, grid=(gh, gw),
                           token_size=self.token_size, window=window, shift=shift)

    def forward(self, x: torch.Tensor, layout: BlockLayout, return_attn: bool = False
                ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x (B, gh, gw, C) -> (B, gh, gw, C), and the window attention (B, nW, H, N, N) when asked."""
        a = x if self.post_norm else self.norm1(x)
        a, attn = self.shifted_window_attention(a, layout, return_attn)
        x = x + self.drop_path(self.norm1(a) if self.post_norm else a)
        m = self.mlp(x if self.post_norm else self.norm2(x))
        return x + self.drop_path(self.norm2(m) if self.post_norm else m), attn

    def shifted_window_attention(self, x: torch.Tensor, layout: BlockLayout, return_attn: bool
                                 ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Tokens (B, gh, gw, C) -> rolled by −shift, cut into windows, attended, put back and rolled back."""
        sh, sw = layout.shift
        if sh or sw:
            x = torch.roll(x, shifts=(-sh, -sw), dims=(1, 2))
        windows = window_partition(x, layout.window)                         # (B, nW, N, C)
        bias = self.attn.position_bias(layout.window).to(x.dtype)            # (H, N, N)
        if sh or sw:
            bias = bias + _shift_mask(layout.grid, layout.window, layout.shift, x.device, x.dtype)  # (nW, H, N, N)
        out, attn = self.attn(windows, bias, return_attn)                    # (B, nW, N, C)
        x = window_reverse(out, layout.grid, layout.window)                  # (B, gh, gw, C)
        if sh or sw:
            x = torch.roll(x, shifts=(sh, sw), dims=(1, 2))
        return x, attn


class PatchEmbed(nn.Module):
    """The patch partition: P×P patches projected to D dims by one strided convolution, then a LayerNorm."""

    def __init__(self, cfg: SwinConfig):
        super().__init__()
        self.proj = nn.Conv2d(cfg.in_chans, cfg.embed_dim, kernel_size=cfg.patch_size, stride=cfg.patch_size)
        self.norm = nn.LayerNorm(cfg.embed_dim, eps=cfg.layer_norm_eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.proj(x).permute(0, 2, 3, 1))          # (B, D, gh, gw) -> (B, gh, gw, D)


class PatchMerging(nn.Module):
    """Each 2×2 group of tokens becomes one: (B, gh, gw, C) -> (B, gh/2, gw/2, 2C).

    The four tokens are concatenated in the order (row 0, col 0), (row 1, col 0), (row 0, col 1), (row 1, col 1)
    (the papers' x0, x1, x2, x3), then v1: LayerNorm(4C), Linear(4C -> 2C, no bias); v2: the Linear, then LayerNorm(2C).
    """

    def __init__(self, dim: int, cfg: SwinConfig):
        super().__init__()
        self.post_norm = cfg.version == 2
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = nn.LayerNorm(2 * dim if self.post_norm else 4 * dim, eps=cfg.layer_norm_eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, gh, gw, C = x.shape
        x = x.reshape(B, gh // 2, 2, gw // 2, 2, C)                 # (B, gh/2, row in pair, gw/2, col in pair, C)
        x = x.permute(0, 1, 3, 4, 2, 5).reshape(B, gh // 2, gw // 2, 4 * C)   # column-major within the 2×2 group
        return self.norm(self.reduction(x)) if self.post_norm else self.reduction(self.norm(x))


class SwinStage(nn.Module):
    """[PatchMerging (stages ≥ 1)] then the stage's blocks."""

    def __init__(self, cfg: SwinConfig, stage: int, rates: list[float]):
        super().__init__()
        self.downsample = PatchMerging(cfg.stage_dim(stage - 1), cfg) if stage else nn.Identity()
        self.blocks = nn.ModuleList([SwinBlock(cfg, stage, j, r) for j, r in enumerate(rates)])


class SwinTransformer(FusedAttentionSwitch, nn.Module):
    def __init__(self, cfg: SwinConfig):
        super().__init__()
        self.cfg = cfg
        self.patch_embed = PatchEmbed(cfg)
        gh, gw = cfg.grid
        self.absolute_pos_embed = nn.Parameter(torch.zeros(1, gh * gw, cfg.embed_dim)) if cfg.absolute_pos_embed \
            else None                                                    # (1, gh·gw, D), row-major
        total = cfg.depth
        rates = [cfg.drop_path_rate * i / max(total - 1, 1) for i in range(total)]
        starts = [sum(cfg.depths[:s]) for s in range(cfg.num_stages)]
        self.layers = nn.ModuleList([SwinStage(cfg, s, rates[starts[s]:starts[s] + d])
                                     for s, d in enumerate(cfg.depths)])
        self.norm = nn.LayerNorm(cfg.num_features, eps=cfg.layer_norm_eps)
        self.head_drop = nn.Dropout(cfg.drop_rate)
        self.head = nn.Linear(cfg.num_features, cfg.num_classes) if cfg.num_classes else nn.Identity()
        self.apply(_init_weights)
        if self.absolute_pos_embed is not None:
            nn.init.trunc_normal_(self.absolute_pos_embed, std=0.02)

    @property
    def blocks(self) -> tuple[SwinBlock, ...]:
        """Every block in forward order (stage by stage): what cascading randomisation walks from the top down."""
        return tuple(b for layer in self.layers for b in layer.blocks)

    def architecture(self, height: int, width: int) -> Architecture:
        """The description the explorer reads (``vit.architecture``): every block's windows for an input of
        height×width pixels, in forward order, read out by the average pool of the last stage. ValueError (with sizes
        that work) unless the patch size divides the input, each stage but the last has an even grid (patch merging
        takes 2×2 groups) and each stage's grid is a multiple of its window."""
        problem = self._size_problem(height, width)
        if problem:
            raise ValueError(f"Wrong input size for this Swin! Expected a size whose every stage's grid is a multiple "
                             f"of its window, e.g. {self._sizes_near(height, width)}, but got {height}×{width}: "
                             f"{problem}.")
        layouts, grid = [], (height // self.cfg.patch_size, width // self.cfg.patch_size)
        for s, layer in enumerate(self.layers):
            grid = (grid[0] // 2, grid[1] // 2) if s else grid
            layouts += [b.layout(grid, len(layouts) + i) for i, b in enumerate(layer.blocks)]
        return Architecture("swin", tuple(layouts), "mean", self.cfg.patch_size)

    def _size_problem(self, height: int, width: int) -> str:
        """What is wrong with an input of height×width pixels, in words ("" when nothing is)."""
        cfg, P = self.cfg, self.cfg.patch_size
        if height < P or width < P or height % P or width % P:
            return f"the patch size {P} does not divide it"
        gh, gw = height // P, width // P
        for s in range(cfg.num_stages):
            if s:
                if gh % 2 or gw % 2:
                    return f"stage {s - 1}'s {gh}×{gw} grid cannot be merged 2×2"
                gh, gw = gh // 2, gw // 2
            W = cfg.window_size[s]
            for side in (gh, gw):
                if side < W and cfg.version == 1:
                    return (f"stage {s}'s {gh}×{gw} grid is smaller than the {W}×{W} windows its position bias table "
                            f"is learnt for")
                if side < W and not cfg.shrink_window:
                    return (f"stage {s}'s {gh}×{gw} grid is smaller than its {W}×{W} window, which torchvision pads "
                            f"(not reproduced here)")
                if side > W and side % W:
                    return f"stage {s}'s {gh}×{gw} grid is not a multiple of its {W}×{W} window"
        return ""

    def _sizes_near(self, height: int, width: int) -> str:
        """The input sizes this model takes closest to height×width (square when the request is), for a message."""
        P, found = self.cfg.patch_size, []
        for side in (height, width):
            base = max(side // P, 1)
            near = next((P * n for d in range(4096) for n in (base - d, base + d + 1)
                         if n >= 1 and not self._size_problem(P * n, P * n)), None)
            found.append(near)
        if None in found:
            return f"{self.cfg.img_size[0]}×{self.cfg.img_size[1]}"
        return f"{found[0]}×{found[1]}"

    def token_layout(self, height: int, width: int) -> TokenLayout:
        """The patch grid of stage 0 for an input of height×width pixels (no prefix tokens): the grid the explanations'
        maps live on. ValueError for a size this model does not take (see ``architecture``)."""
        self.architecture(height, width)
        return TokenLayout(0, (height // self.cfg.patch_size, width // self.cfg.patch_size))

    # Stage 0's patch grid of images x (B, C, H, W) for a purpose that must see the model as it predicts: the ViT's
    # checks (eval mode, four dimensions), then this model's token_layout.
    eval_layout = VisionTransformer.eval_layout

    def blocks_with_attention(self, x: torch.Tensor, return_attn: bool = True
                              ) -> Iterator[tuple[torch.Tensor, torch.Tensor | None, BlockLayout]]:
        """Images (B, C, H, W) -> after each block in turn, ``(tokens (B, gh, gw, C), its window attention
        (B, nW, H, N, N) or None, its BlockLayout)``; patch merging happens between the stages. Pass the last
        tokens to ``forward_head``. The forward pass of every call below."""
        B, C, H, W = x.shape
        if C != self.cfg.in_chans:
            raise ValueError(f"Wrong number of channels! Expected {self.cfg.in_chans} but got {C}!")
        layouts = iter(self.architecture(H, W).blocks)
        x = self.patch_embed(x)                                       # (B, gh, gw, D)
        if self.absolute_pos_embed is not None:
            x = x + self.position_embedding(x.shape[1:3])
        for layer in self.layers:
            x = layer.downsample(x)                                   # (B, gh/2, gw/2, 2C) from stage 1 on
            for block in layer.blocks:
                layout = next(layouts)
                x, attn = block(x, layout, return_attn)
                yield x, attn, layout

    def position_embedding(self, grid: tuple[int, int]) -> torch.Tensor:
        """The absolute position embedding on a gh×gw grid: (1, gh, gw, D), resized bicubically from the native grid."""
        gh0, gw0 = self.cfg.grid
        table = self.absolute_pos_embed.reshape(1, gh0, gw0, -1)
        if tuple(grid) == (gh0, gw0):
            return table
        table = F.interpolate(table.permute(0, 3, 1, 2), size=tuple(grid), mode="bicubic", align_corners=False)
        return table.permute(0, 2, 3, 1)

    def position_table(self) -> tuple[torch.Tensor | None, str, tuple[int, int]]:
        """(the absolute position embedding (gh·gw, D) when the config has one, else None; its kind; stage 0's native
        grid): a Swin's only other position information is the bias inside each window."""
        table = None if self.absolute_pos_embed is None else self.absolute_pos_embed[0]
        return table, "none" if table is None else "learned", self.cfg.grid

    def rotary_kernel(self) -> None:
        """A Swin rotates nothing by position (``VisionTransformer.rotary_kernel``'s counterpart)."""
        return None

    def forward_head(self, x: torch.Tensor, return_probe: bool = False):
        """Last stage's tokens (B, gh, gw, C) -> logits (B, num_classes), or pooled features (B, C) without a head;
        with ``return_probe`` ``(output, None)``, as ``VisionTransformer.forward_head`` (an average pool has no probe)."""
        pooled = self.norm(x).mean(dim=(1, 2))                        # the average pool over the last stage
        output = self.head(self.head_drop(pooled))
        return (output, None) if return_probe else output

    def patch_projection(self) -> tuple[str, int]:
        """Where an explanation's graph starts (``vit.explain.passes``): the module whose output is every patch's
        projection W·x + b, and the axis of its channels: the patch convolution's (B, D, gh, gw), before the patch
        LayerNorm (which has its relevance rule)."""
        return "patch_embed.proj", 1

    def gradcam_layer(self) -> str:
        """The module whose output is Grad-CAM's activation (``vit.explain.gradient_pass``): the last block's
        ``norm1``, pytorch-grad-cam's Swin target layer (``layers[-1].blocks[-1].norm1``)."""
        return f"layers.{len(self.layers) - 1}.blocks.{len(self.layers[-1].blocks) - 1}.norm1"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Images (B, C, H, W) -> logits (B, num_classes)."""
        for x, _, _ in self.blocks_with_attention(x, return_attn=False):
            pass
        return self.forward_head(x)

    def forward_with_attention(self, x: torch.Tensor, return_token_norms: bool = False) -> WindowCapture:
        """The output plus every block's window attention and layout, from one forward pass with an explicit
        softmax (``WindowCapture``); ``token_norms`` only with ``return_token_norms``. Nothing is kept on the
        module, so concurrent calls are independent; under autograd the maps are part of the graph."""
        maps, layouts, norms = [], [], [] if return_token_norms else None
        for x, attn, layout in self.blocks_with_attention(x):
            maps.append(attn)
            layouts.append(layout)
            if norms is not None:
                norms.append(x.norm(dim=-1))
        return WindowCapture(self.forward_head(x), maps, layouts, norms)


def _init_weights(m: nn.Module) -> None:
    """As a ViT's modules (``vit.model.init_weights``), and truncated-normal(0.02) for the v1 bias table (as timm and
    torchvision initialise a Swin)."""
    init_weights(m)
    if type(m) is WindowAttention:
        nn.init.trunc_normal_(m.relative_position_bias_table, std=0.02)
