"""The image encoder of Segment Anything (Kirillov et al. 2023), a plain ViT whose blocks attend inside windows or over
the whole grid ("ViTDet", Li et al. 2022), written from scratch.

The module layout follows timm's ``VisionTransformerSAM`` (timm's samvit_* models; Meta's and transformers' files
are renamed onto it):

    image (B, C, H, W), 1024×1024 for SAM
      -> PatchEmbed: Conv2d(C, D, kernel=P, stride=P)                   -> (B, gh, gw, D), 64×64 tokens, no CLS token
      -> + a learnt position table (B, gh, gw, D), resized bicubically for another grid
      -> L × SamBlock, each windowed (14×14 tokens, the grid padded with zero tokens to whole windows) or global
         (blocks 2, 5, 8, 11 of ViT-B), each adding a decomposed relative position term to its logits:
             x = x + attn(LN(x));   x = x + MLP(LN(x))
      -> neck: Conv 1×1 (D -> 256), LayerNorm over channels, Conv 3×3 (256 -> 256), LayerNorm   -> (B, 256, gh, gw)
      -> [the mean over the grid -> head]: what a classifier fine-tuned on SAM reads (timm's samvit_base_patch16_224)

Decomposed relative positions (MViTv2, Li et al. 2022): a block learns a table per axis (2S−1 rows of head width Dh,
S its window or grid side); the logit of query (i, j) and key (k, l) gets q_ij·R_h[i−k] + q_ij·R_w[j−l], the
query itself read against the offset's embedding, added to q·k/√Dh (``decomposed_bias``). A table learnt for another
side is resized linearly first.

SAM has no readout token: its answer is the neck's feature map (the masks are decoded from it). ``model(x)`` gives
the mean of the neck's features (or a fine-tuned head's logits), ``model.features(x)`` the neck's map, and
``model.forward_with_attention(x)`` every block's attention on its own layout (``vit.swin.WindowCapture``): a
windowed block's (B, nW, H, w², w²) within its windows, which tile the grid padded to whole windows
(``BlockLayout.padded_grid``: the rows and columns past the token grid are SAM's zero padding, keys like any other),
a global block's (B, 1, H, N, N) over the whole grid. ``model.architecture(height, width)`` describes those blocks
(``vit.architecture``), with no readout: no token is read. ``SamBlock.step`` is the block's computation, the one
every pass runs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator

import torch
import torch.nn as nn
import torch.nn.functional as F

from .architecture import Architecture, BlockLayout
from .model import MLP_ACTIVATIONS, FusedAttentionSwitch
from .swin import WindowCapture


@dataclass(frozen=True)
class SamConfig:
    img_size: tuple[int, int] = (1024, 1024)  # native input (H, W): the position table's grid times the patch
    patch_size: int = 16             # P: side of a square patch in pixels
    in_chans: int = 3                # C: input image channels
    embed_dim: int = 768             # D: token width
    depth: int = 12                  # L: blocks
    num_heads: int = 12              # H: heads per block
    mlp_dim: int = 3072              # hidden width of each block's MLP
    qkv_bias: bool = True            # bias on the query/key/value projection
    window_size: int = 14            # side of a windowed block's windows, in tokens (0: every block global)
    global_blocks: tuple[int, ...] = (2, 5, 8, 11)   # the blocks that attend over the whole grid
    rel_pos: bool = True             # decomposed relative positions in every block's logits
    abs_pos: bool = True             # a learnt position table added to the patch embeddings
    neck_dim: int = 256              # the neck's channels (0: no neck, one LayerNorm over the tokens' channels)
    num_classes: int = 0             # a head on the mean of the neck's features (0: the mean itself is the output)
    layer_norm_eps: float = 1e-6     # the blocks' LayerNorm eps (SAM's and transformers' 1e-6; timm's samvit 1e-5)
    neck_norm_eps: float = 1e-6      # the neck's LayerNorms' eps
    mlp_act: str = "gelu"            # the MLP's activation (exact GELU)

    # What the ViT and Swin code paths ask of a config: no token is read (the answer is the neck's feature map), no
    # prefix tokens, and any size the patch divides (the position table resized, the windows padded).
    family = "sam"
    readout = None
    num_prefix_tokens = 0
    fixed_size = None

    def __post_init__(self):
        if isinstance(self.img_size, int):
            object.__setattr__(self, "img_size", (self.img_size, self.img_size))
        object.__setattr__(self, "img_size", tuple(int(s) for s in self.img_size))
        object.__setattr__(self, "global_blocks", tuple(int(b) for b in self.global_blocks))
        if self.embed_dim % self.num_heads:
            raise ValueError(f"embed_dim must be divisible by num_heads! Got {self.embed_dim} and {self.num_heads}.")
        if any(not 0 <= b < self.depth for b in self.global_blocks):
            raise ValueError(f"global_blocks must name blocks 0 … {self.depth - 1}, but got {self.global_blocks}!")
        for side in self.img_size:
            if side % self.patch_size:
                raise ValueError(f"img_size {self.img_size} is not divisible by patch_size {self.patch_size}!")
        if self.mlp_act not in MLP_ACTIVATIONS or self.mlp_act == "swiglu":
            raise ValueError(f"mlp_act must be a plain MLP's activation but got {self.mlp_act!r}!")

    @property
    def grid(self) -> tuple[int, int]:
        """The native token grid (gh, gw)."""
        return self.img_size[0] // self.patch_size, self.img_size[1] // self.patch_size

    @property
    def head_dim(self) -> int:
        return self.embed_dim // self.num_heads

    def windowed(self, block: int) -> bool:
        """Whether block ``block`` attends inside windows (else over the whole grid)."""
        return self.window_size > 0 and block not in self.global_blocks

    def describe(self) -> str:
        """One line naming the shape, for messages."""
        return (f"SAM image encoder, patch {self.patch_size}, img {self.img_size[0]}×{self.img_size[1]}, "
                f"D={self.embed_dim}, L={self.depth}, H={self.num_heads}, windows {self.window_size}, global blocks "
                f"{list(self.global_blocks)}, neck {self.neck_dim}, classes={self.num_classes}")


SAM_VARIANTS = {   # Meta's three encoders: width, depth, heads, the global blocks
    "base": dict(embed_dim=768, depth=12, num_heads=12, mlp_dim=3072, global_blocks=(2, 5, 8, 11)),
    "large": dict(embed_dim=1024, depth=24, num_heads=16, mlp_dim=4096, global_blocks=(5, 11, 17, 23)),
    "huge": dict(embed_dim=1280, depth=32, num_heads=16, mlp_dim=5120, global_blocks=(7, 15, 23, 31)),
}


def relative_table(rel_pos: torch.Tensor, q_size: int, k_size: int) -> torch.Tensor:
    """A block's table for one axis (2S−1, Dh) -> (q_size, k_size, Dh): the embedding of each query–key offset, the
    table resized linearly when it was learnt for another side (SAM's ``get_rel_pos``)."""
    rows = int(2 * max(q_size, k_size) - 1)
    if rel_pos.shape[0] != rows:
        rel_pos = F.interpolate(rel_pos.reshape(1, rel_pos.shape[0], -1).permute(0, 2, 1), size=rows,
                                mode="linear").reshape(-1, rows).permute(1, 0)
    q = torch.arange(q_size, dtype=torch.float32)[:, None] * max(k_size / q_size, 1.0)
    k = torch.arange(k_size, dtype=torch.float32)[None, :] * max(q_size / k_size, 1.0)
    return rel_pos[((q - k) + (k_size - 1) * max(q_size / k_size, 1.0)).long()]


def decomposed_bias(q: torch.Tensor, rel_h: torch.Tensor, rel_w: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """Queries q (B, H, N, Dh) of an h×w grid (N = h·w, unscaled) -> the logits' bias (B, H, N, N):
    q_ij·R_h[i, k] + q_ij·R_w[j, l] for key (k, l)."""
    h, w = size
    B, heads, N, Dh = q.shape
    Rh, Rw = relative_table(rel_h, h, h), relative_table(rel_w, w, w)        # (h, h, Dh), (w, w, Dh)
    grid = q.reshape(B, heads, h, w, Dh)
    along_h = torch.einsum("bnhwc,hkc->bnhwk", grid, Rh)                        # (B, H, h, w, h)
    along_w = torch.einsum("bnhwc,wkc->bnhwk", grid, Rw)                        # (B, H, h, w, w)
    return (along_h[..., :, None] + along_w[..., None, :]).reshape(B, heads, N, N)


def window_partition(x: torch.Tensor, window: int) -> tuple[torch.Tensor, tuple[int, int]]:
    """Tokens (B, gh, gw, C) -> windows (B·nW, window, window, C), the grid padded with zero tokens at the bottom and
    right to whole windows, and the padded grid (ph, pw); windows row-major, as SAM cuts them."""
    B, gh, gw, C = x.shape
    ph, pw = math.ceil(gh / window) * window, math.ceil(gw / window) * window
    x = F.pad(x, (0, 0, 0, pw - gw, 0, ph - gh))
    x = x.view(B, ph // window, window, pw // window, window, C).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(-1, window, window, C), (ph, pw)


def window_unpartition(windows: torch.Tensor, window: int, grid: tuple[int, int],
                       padded: tuple[int, int]) -> torch.Tensor:
    """Windows (B·nW, window, window, C) -> tokens (B, gh, gw, C), the padding dropped."""
    (gh, gw), (ph, pw) = grid, padded
    B = windows.shape[0] // ((ph // window) * (pw // window))
    x = windows.view(B, ph // window, pw // window, window, window, -1).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(B, ph, pw, -1)[:, :gh, :gw]


class SamAttention(nn.Module):
    """Multi-head attention over one window or the whole grid, with the decomposed relative position term."""

    def __init__(self, cfg: SamConfig, side: tuple[int, int]):
        super().__init__()
        D = cfg.embed_dim
        self.num_heads, self.head_dim = cfg.num_heads, cfg.head_dim
        self.scale = self.head_dim ** -0.5
        self.fused_attn = True
        self.qkv = nn.Linear(D, 3 * D, bias=cfg.qkv_bias)
        self.proj = nn.Linear(D, D)
        # one table per axis for the side it was learnt on (its window, or the native grid of a global block)
        self.rel_pos_h = nn.Parameter(torch.zeros(2 * side[0] - 1, self.head_dim)) if cfg.rel_pos else None
        self.rel_pos_w = nn.Parameter(torch.zeros(2 * side[1] - 1, self.head_dim)) if cfg.rel_pos else None

    def forward(self, x: torch.Tensor, return_attn: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x (B', h, w, D) -> (B', h, w, D), and the attention (B', H, h·w, h·w) when asked."""
        Bw, h, w, D = x.shape
        q, k, v = self.qkv(x.reshape(Bw, h * w, D)).reshape(Bw, h * w, 3, self.num_heads, self.head_dim) \
            .permute(2, 0, 3, 1, 4).unbind(0)                                   # each (B', H, N, Dh)
        bias = decomposed_bias(q, self.rel_pos_h, self.rel_pos_w, (h, w)) if self.rel_pos_h is not None else None
        attn = None
        if self.fused_attn and not return_attn:
            heads = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        else:
            logits = (q * self.scale) @ k.transpose(-2, -1)
            attn = (logits if bias is None else logits + bias).softmax(dim=-1)   # (B', H, N, N)
            heads = attn @ v
        out = self.proj(heads.transpose(1, 2).reshape(Bw, h * w, D))
        return out.reshape(Bw, h, w, D), attn


class SamMlp(nn.Module):
    def __init__(self, cfg: SamConfig):
        super().__init__()
        self.fc1 = nn.Linear(cfg.embed_dim, cfg.mlp_dim)
        self.act = MLP_ACTIVATIONS[cfg.mlp_act]()
        self.fc2 = nn.Linear(cfg.mlp_dim, cfg.embed_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


class SamBlock(nn.Module):
    """One block, windowed or global: the block's computation, in one place (``step``)."""

    def __init__(self, cfg: SamConfig, index: int):
        super().__init__()
        self.index = index
        self.window = cfg.window_size if cfg.windowed(index) else 0
        self.patch_size = cfg.patch_size
        self.num_heads = cfg.num_heads
        self.norm1 = nn.LayerNorm(cfg.embed_dim, eps=cfg.layer_norm_eps)
        self.attn = SamAttention(cfg, (self.window,) * 2 if self.window else cfg.grid)
        self.norm2 = nn.LayerNorm(cfg.embed_dim, eps=cfg.layer_norm_eps)
        self.mlp = SamMlp(cfg)

    def layout(self, grid: tuple[int, int]) -> BlockLayout:
        """This block on a gh×gw token grid: windows of its side tiling the grid padded to whole windows
        (``padded_grid``), or global attention over the grid."""
        return BlockLayout(index=self.index, stage=0, block=self.index, heads=self.num_heads, grid=tuple(grid),
                           token_size=self.patch_size, window=(self.window,) * 2 if self.window else None)

    def step(self, x: torch.Tensor, return_attn: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Tokens (B, gh, gw, D) -> (B, gh, gw, D), and the attention (B, nW, H, N, N) when asked:

            a = attn(LN(x)), inside windows of the zero-padded grid or over the whole grid
            x = x + a;   x = x + MLP(LN(x))
        """
        B, gh, gw, D = x.shape
        a = self.norm1(x)
        if self.window:
            windows, padded = window_partition(a, self.window)                 # (B·nW, w, w, D)
            out, attn = self.attn(windows, return_attn)
            a = window_unpartition(out, self.window, (gh, gw), padded)
        else:
            a, attn = self.attn(a, return_attn)
        if attn is not None:                                                   # (B·nW, H, N, N) -> (B, nW, H, N, N)
            attn = attn.reshape(B, -1, *attn.shape[1:])
        x = x + a
        return x + self.mlp(self.norm2(x)), attn


class LayerNorm2d(nn.LayerNorm):
    """A LayerNorm over the channels of a (B, C, H, W) map (the neck's)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class SamPatchEmbed(nn.Module):
    def __init__(self, cfg: SamConfig):
        super().__init__()
        self.proj = nn.Conv2d(cfg.in_chans, cfg.embed_dim, kernel_size=cfg.patch_size, stride=cfg.patch_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x).permute(0, 2, 3, 1)                               # (B, gh, gw, D)


class SamHead(nn.Module):
    """The mean of the neck's features over the grid, then a Linear for a fine-tuned classifier (timm's
    ClassifierHead, ``head.fc``)."""

    def __init__(self, cfg: SamConfig, width: int):
        super().__init__()
        self.fc = nn.Linear(width, cfg.num_classes) if cfg.num_classes else nn.Identity()

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.fc(features.mean(dim=(2, 3)))


class SamImageEncoder(FusedAttentionSwitch, nn.Module):
    def __init__(self, cfg: SamConfig):
        super().__init__()
        self.cfg = cfg
        self.patch_embed = SamPatchEmbed(cfg)
        gh, gw = cfg.grid
        self.pos_embed = nn.Parameter(torch.zeros(1, gh, gw, cfg.embed_dim)) if cfg.abs_pos else None
        self.blocks = nn.ModuleList([SamBlock(cfg, i) for i in range(cfg.depth)])
        width = cfg.neck_dim or cfg.embed_dim
        if cfg.neck_dim:
            self.neck = nn.Sequential(nn.Conv2d(cfg.embed_dim, cfg.neck_dim, kernel_size=1, bias=False),
                                      LayerNorm2d(cfg.neck_dim, eps=cfg.neck_norm_eps),
                                      nn.Conv2d(cfg.neck_dim, cfg.neck_dim, kernel_size=3, padding=1, bias=False),
                                      LayerNorm2d(cfg.neck_dim, eps=cfg.neck_norm_eps))
        else:
            self.neck = LayerNorm2d(cfg.embed_dim, eps=cfg.neck_norm_eps)
        self.head = SamHead(cfg, width)

    def token_grid(self, height: int, width: int) -> tuple[int, int]:
        """The token grid of an input; ValueError unless the patch divides it."""
        P = self.cfg.patch_size
        if height % P or width % P or height < P or width < P:
            raise ValueError(f"Wrong input size! Expected height and width that are positive multiples of the patch "
                             f"size {P} (e.g. {self.cfg.img_size[0]}×{self.cfg.img_size[1]}) but got {height}×{width}!")
        return height // P, width // P

    def architecture(self, height: int, width: int) -> Architecture:
        """The description the explorer reads (``vit.architecture``): every block, windowed or global, on the token
        grid of an input of height×width pixels, one stage, no readout (the answer is the neck's feature map).
        ValueError unless the patch divides the input."""
        grid = self.token_grid(height, width)
        return Architecture("sam", tuple(block.layout(grid) for block in self.blocks), None, self.cfg.patch_size)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """Images (B, C, H, W) -> tokens (B, gh, gw, D): patches plus the position table (resized bicubically, with
        antialiasing, for another grid, as timm does)."""
        grid = self.token_grid(x.shape[-2], x.shape[-1])
        x = self.patch_embed(x)
        if self.pos_embed is None:
            return x
        pos = self.pos_embed
        if tuple(pos.shape[1:3]) != tuple(grid):
            pos = F.interpolate(pos.float().permute(0, 3, 1, 2), size=grid, mode="bicubic",
                                antialias=True).permute(0, 2, 3, 1).to(x.dtype)
        return x + pos

    def blocks_with_attention(self, x: torch.Tensor) -> Iterator[tuple[torch.Tensor, torch.Tensor, BlockLayout]]:
        """Images -> after each block in turn: (tokens (B, gh, gw, D), its attention (B, nW, H, N, N), its layout)."""
        grid = self.token_grid(x.shape[-2], x.shape[-1])
        x = self.embed(x)
        for block in self.blocks:
            x, attn = block.step(x, True)
            yield x, attn, block.layout(grid)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Images (B, C, H, W) -> the neck's feature map (B, neck_dim, gh, gw): what SAM's mask decoder reads."""
        x = self.embed(x)
        for block in self.blocks:
            x, _ = block.step(x)
        return self.neck(x.permute(0, 3, 1, 2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Images -> the mean of the neck's features (B, neck_dim), or a fine-tuned head's logits (B, K)."""
        return self.head(self.features(x))

    def forward_with_attention(self, x: torch.Tensor, return_token_norms: bool = False) -> WindowCapture:
        """The output plus every block's attention on its own layout (module docstring), from one forward pass with
        an explicit softmax; nothing is kept on the module."""
        maps, layouts, norms = [], [], [] if return_token_norms else None
        for x, attn, layout in self.blocks_with_attention(x):
            maps.append(attn)
            layouts.append(layout)
            if norms is not None:
                norms.append(x.norm(dim=-1))
        return WindowCapture(self.head(self.neck(x.permute(0, 3, 1, 2))), maps, layouts, norms)

