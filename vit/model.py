"""A Vision Transformer written from scratch, as in "An Image is Worth 16x16 Words" (Dosovitskiy et al. 2021).

The module layout follows timm's ``VisionTransformer`` so that checkpoints map onto it with few renames:

    image (B, C, H, W)
      -> PatchEmbed: Conv2d(C, D, kernel=P, stride=P)            -> (B, N, D), N = (H/P)·(W/P)
      -> prepend prefix tokens [CLS, (DIST), (REG × R)]          -> (B, T, D), T = prefix + N
      -> + position embeddings (resampled to the input's grid)
      -> L × Block: x = x + DropPath(MHSA(LN(x)));  x = x + DropPath(MLP(LN(x)))
      -> LayerNorm -> readout (vit.readout: CLS token, mean of patches, …) -> [pre-logits Linear+Tanh] -> head

The other ViT families people use are the same network with a few features switched on, one config
field each (the defaults are the plain ViT above, whose code path is unchanged):

    CLIP image tower   norm_pre (LayerNorm before the blocks), mlp_act="quick_gelu", patch_bias=False,
                       proj_dim (bias-free projection into the image–text space: model(x) is the embedding)
    SigLIP image tower class_token=False, readout="map" (a learnt probe query attends over the patches)
    EVA-02             rope (rotary q/k), mlp_act="swiglu" with mlp_norm, k_bias=False (q and v biases only)
    BEiT               pos_embed_kind="none", rel_pos_bias (per block), layer_scale, readout="mean",
                       k_bias=False
    timm's relpos ViTs pos_embed_kind="none", rel_pos_mlp (a bias from an MLP on log-spaced offsets), layer_scale
                       or res_post_norm (the norms after each branch: *_rpn), readout="mean" or CLS
    parallel blocks    parallel=2 (timm's *_18x2: two attentions side by side, then two MLPs), held as one block
                       of 2·H heads of width head_dim = D/H and one MLP of 2·mlp_dim units (the branch norms'
                       affine parts folded into the projections when the checkpoint is read)
    NaFlex             pos_embed_grid (a learned table resized to every input's grid, whatever its aspect ratio),
                       pos_embed_interp, pos_embed_antialias, pos_embed_ar_preserving (how it is resized);
                       SigLIP 2's NaFlex tower and timm's NaFlexViT

``model(x)`` is the plain forward (fused scaled-dot-product attention when ``fused_attn``);
``model.forward_with_attention(x)`` returns the output together with every layer's attention
probabilities (and, for "map" pooling, the probe's), computed with an explicit softmax inside the call
(no hooks, no module state), so that concurrent calls never mix and the captured maps are exactly the
ones the output came from: with the relative position bias added and the rotary embedding applied.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Iterator, NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from .architecture import Architecture
from .readout import READOUT_NAMES, Readout, kind as readout_kind
from .positions import (ROPE_AXES, ROPE_COORDS, TokenPositions, apply_rope, attention_bias, mixed_rope_tables,
                        num_relative_positions, patch_coordinates, relative_log_coords, relative_position_index,
                        rope_angles, rope_tables, rotary_kernel)


POS_EMBED_KINDS = ("learned", "sincos2d", "none")
POS_EMBED_INTERPOLATIONS = ("bicubic", "bilinear")
NORM_KINDS = ("layernorm", "rmsnorm")
PROBES = ("latent", "aimv2")


@dataclass(frozen=True)
class ViTConfig:
    img_size: tuple[int, int] = (224, 224)  # native input (H, W); the position embeddings are learnt for this grid
    patch_size: int = 16           # P: side of a square patch in pixels
    in_chans: int = 3              # C: input image channels
    num_classes: int = 1000        # classifier outputs; 0 means no head (a backbone such as DINO's)
    embed_dim: int = 768           # D: token width
    depth: int = 12                # L: number of transformer blocks
    num_heads: int = 12            # H: attention heads per block (head width D/H)
    mlp_dim: int = 3072            # hidden width of each block's MLP (usually 4·D)
    qkv_bias: bool = True          # bias on the query/key/value projection
    class_token: bool = True       # prepend a learnable [CLS] token
    distilled: bool = False        # prepend DeiT's distillation token (readout "distilled" reads it through head_dist)
    num_reg_tokens: int = 0        # register tokens (Darcet et al. 2023) after CLS/DIST
    pos_embed_prefix: bool = True  # position embeddings cover the prefix tokens too (False: patches only, timm's no_embed_class)
    pos_embed_registers: bool = False  # with pos_embed_prefix, the registers get one too (timm's so150m; DINOv2's do not)
    layer_scale: bool = False      # per-channel learnable residual scale (CaiT/DINOv2 LayerScale)
    layer_norm_eps: float = 1e-6   # LayerNorm epsilon (1e-6 for Google/timm/torchvision, 1e-12 for Hugging Face)
    norm_kind: str = "layernorm"   # every norm a LayerNorm, or "rmsnorm" (AIMv2: x / rms(x) · γ, no centring, no shift)
    # Which tokens the head reads (vit.readout): "cls", "mean" of the patches, "mean_all" tokens, "cls_mean" (CLS and
    # the mean of the patches side by side), "map" / "map_all" (a learnt probe's attention pooling, SigLIP / PE),
    # "distilled" (DeiT: the mean of the CLS head and the DIST head); None: "distilled" for a distillation token, "cls"
    # with a CLS token, else "mean"
    readout: Readout | None = None
    fc_norm: bool = False          # a pooled readout: LayerNorm after pooling instead of before (timm's fc_norm)
    final_norm: bool = True        # a LayerNorm after the last block (False: InternViT, PE spatial/lang read it raw)
    pool_heads: int | None = None  # heads of the MAP probe's attention (PE: 8); None: num_heads
    pool_mlp_dim: int | None = None  # hidden width of the MAP pool's MLP; None: mlp_dim
    # the MAP pool: "latent" (timm's AttentionPoolLatent: the probe through a query projection, a LayerNorm and a
    # residual MLP after pooling) or "aimv2" (AIMv2's head: the probe itself is the query, one output projection)
    probe: str = "latent"
    representation_size: int | None = None  # width of the pre-logits Linear+Tanh layer; None: no such layer
    drop_rate: float = 0.0         # dropout on position-embedded tokens, in MLPs and before the head
    attn_drop_rate: float = 0.0    # dropout on attention probabilities
    drop_path_rate: float = 0.0    # stochastic depth, rising linearly to this rate in the last block
    # Absolute position embedding added to the tokens (the ViT paper's Appendix D.4 ablation): "learned" (the
    # paper's default, a trained table), "sincos2d" (the fixed 2-D sine-cosine table of big_vision / MAE, a buffer
    # that is saved but never trained), "none" (no absolute position information; BEiT uses relative biases).
    pos_embed_kind: str = "learned"
    # Resample the learned table for another grid with antialiasing (bicubic either way): Meta's DINOv2 register models
    # and transformers' Dinov2WithRegisters shrink their 518-pixel table this way for 224-pixel photos.
    pos_embed_antialias: bool = False
    # Features of the other ViT families (CLIP, SigLIP, EVA-02, BEiT); the defaults are the plain ViT.
    patch_bias: bool = True          # bias in the patch-embedding convolution (CLIP has none)
    patch_norm: bool = False         # a norm on each patch embedding, before the positions (AIMv2)
    linear_bias: bool = True         # biases on attention's output projection and the MLP's Linears (AIMv2: none)
    norm_pre: bool = False           # LayerNorm on the tokens before the first block (CLIP's ln_pre)
    k_bias: bool = True              # with qkv_bias, a key bias too; False: query and value biases only (BEiT, EVA-02)
    rel_pos_bias: bool = False       # BEiT: each block learns a bias per head and (query, key) offset, added to q·kᵀ/√d
    rope: bool = False               # rotary embedding of the patches' q and k (EVA-02, RoPE-ViT, DINOv3; positions.py)
    rope_ref_grid: tuple[int, int] | None = None  # grid the rotary angles are scaled to (EVA-02: 16×16); None: the input's
    rope_temperature: float = 10000.0  # base of the rotary frequencies temperature^(-b/(Dh/4)) (RoPE-ViT, DINOv3: 100)
    rope_coords: str = "index"       # "index": patch row and column; "centered": DINOv3's centres in [-1, 1] per axis
    rope_axes: str = "ij"            # the axis turning the first half of the planes: "ij" rows, "xy" columns (RoPE-ViT)
    rope_half: bool = False          # rotate channel c with c + Dh/2 (DINOv3) instead of neighbouring channel pairs
    rope_offset: float = 0.0         # added to the patch indices before any rescaling (Perception Encoder: 1)
    rope_mixed: bool = False         # RoPE-Mixed: frequencies learnt per block and head (attn.rope_freqs), axes mixed
    prefix_norm: bool = False        # DINOv3's untied final norm: CLS and registers get their own LayerNorm (cls_norm)
    attn_norm: bool = False          # LayerNorm on the heads' output before attn.proj (EVA-02 CLIP's sub-LN)
    # MLP: "gelu" (exact), "gelu_tanh" (SigLIP in Hugging Face), "quick_gelu" (x·σ(1.702x), OpenAI's CLIP) or
    # "swiglu" (EVA-02: SiLU(x·W_g) ⊙ x·W_x, each mlp_dim wide)
    mlp_act: str = "gelu"
    mlp_norm: bool = False           # LayerNorm on the MLP's hidden units before fc2 (EVA-02's scale_mlp)
    proj_dim: int | None = None      # CLIP: width of the projection into the image–text space, model(x)'s output
    proj_bias: bool = False          # that projection's bias (open_clip's timm towers without timm_proj: timm's head)
    # timm's relative-position ViTs (vit_relpos_*, vit_srelpos_*), timm's parallel blocks, NaFlex (SigLIP 2, timm's
    # NaFlexViT); the defaults are the plain ViT.
    rel_pos_mlp: bool = False        # each block's q·kᵀ bias from an MLP on the offsets' log coordinates (any grid)
    rel_pos_mlp_dim: int = 128       # hidden width of that MLP (timm's rel_pos_dim)
    res_post_norm: bool = False      # the LayerNorms after each branch: x + norm1(attn(x)), x + norm2(mlp(x)) (*_rpn)
    head_dim: int | None = None      # width of each head when heads × width ≠ D (parallel: 2·H heads of D/H); None: D/H
    parallel: int = 1                # branches each block was built of (timm's *_18x2: 2), folded into heads and MLP
    pos_embed_grid: tuple[int, int] | None = None  # grid of the learned table if not img_size's (NaFlex: per input)
    pos_embed_interp: str = "bicubic"  # how the learned table is resized for another grid: "bicubic" or "bilinear"
    pos_embed_ar_preserving: bool = False  # resized to a square of the longer side, top-left kept (NaFlexViT's par_*)

    def __post_init__(self):
        if isinstance(self.img_size, int):  # accept 224 for (224, 224)
            object.__setattr__(self, "img_size", (self.img_size, self.img_size))
        object.__setattr__(self, "img_size", tuple(int(s) for s in self.img_size))
        if self.rope_ref_grid is not None:
            object.__setattr__(self, "rope_ref_grid", tuple(int(s) for s in self.rope_ref_grid))
        if self.pos_embed_grid is not None:
            object.__setattr__(self, "pos_embed_grid", tuple(int(s) for s in self.pos_embed_grid))
        if self.probe not in PROBES:
            raise ValueError(f"probe must be one of {PROBES} but got {self.probe!r}!")
        if self.norm_kind not in NORM_KINDS:
            raise ValueError(f"norm_kind must be one of {NORM_KINDS} but got {self.norm_kind!r}!")
        if self.pos_embed_interp not in POS_EMBED_INTERPOLATIONS:
            raise ValueError(f"pos_embed_interp must be one of {POS_EMBED_INTERPOLATIONS} but got "
                             f"{self.pos_embed_interp!r}!")
        if self.rel_pos_mlp and self.rel_pos_bias:
            raise ValueError("rel_pos_mlp and rel_pos_bias are exclusive: a block's relative bias comes from a table "
                             "(BEiT) or from an MLP (timm's vit_relpos), not both!")
        if self.head_dim is not None and self.head_dim < 1:
            raise ValueError(f"head_dim must be a positive width but got {self.head_dim}!")
        if self.head_dim is None and self.embed_dim % self.num_heads:
            raise ValueError(f"embed_dim must be divisible by num_heads! Expected a multiple of {self.num_heads} "
                             f"but got {self.embed_dim}!")
        if self.readout is None:
            default = "distilled" if self.distilled else "cls" if self.class_token else "mean"
            object.__setattr__(self, "readout", default)
        if self.readout not in READOUT_NAMES:
            raise ValueError(f"readout must be one of {list(READOUT_NAMES)} but got {self.readout!r}!")
        read = readout_kind(self.readout)
        if read.class_token and not self.class_token:
            raise ValueError(f"readout={self.readout!r} reads {read.description}: it needs class_token=True!")
        if self.readout == "distilled" and not self.distilled:
            raise ValueError("readout='distilled' reads the distillation token's head: it needs distilled=True!")
        if self.fc_norm and not read.pooled:
            raise ValueError(f"fc_norm normalises a pooled vector; readout={self.readout!r} pools nothing!")
        if self.pos_embed_registers and not self.pos_embed_prefix:
            raise ValueError("pos_embed_registers gives the registers a row of the position table, which needs "
                             "pos_embed_prefix=True (the prefix tokens' rows)!")
        if self.mlp_act not in MLP_ACTIVATIONS:
            raise ValueError(f"mlp_act must be one of {sorted(MLP_ACTIVATIONS)} but got {self.mlp_act!r}!")
        if self.proj_dim and self.num_classes:
            raise ValueError(f"proj_dim (an image–text projection) and a classifier head are exclusive! Got "
                             f"proj_dim={self.proj_dim} and num_classes={self.num_classes}; set one of them to 0.")
        if read.probe and self.mlp_act == "swiglu" and self.probe == "latent":
            raise ValueError(f"readout={self.readout!r} uses a plain MLP in its pooling head; mlp_act='swiglu' is not "
                             f"supported with it!")
        if self.rope and self.attention_head_dim % 4:
            raise ValueError(f"rope needs a head width divisible by 4 but got {self.attention_head_dim}!")
        if self.rope_coords not in ROPE_COORDS or self.rope_axes not in ROPE_AXES:
            raise ValueError(f"rope_coords must be one of {ROPE_COORDS} and rope_axes one of {ROPE_AXES} but got "
                             f"{self.rope_coords!r} and {self.rope_axes!r}!")
        if self.rope_mixed and (not self.rope or self.rope_half or self.rope_coords != "index"):
            raise ValueError("rope_mixed (RoPE-Mixed) needs rope=True with patch-index coordinates and neighbouring "
                             "planes (rope_coords='index', rope_half=False)!")
        if self.prefix_norm and not self.num_prefix_tokens:
            raise ValueError("prefix_norm normalises the prefix tokens (CLS, registers) apart; this model has none!")
        for side in self.img_size:
            if side % self.patch_size:
                raise ValueError(f"img_size {self.img_size} is not divisible by patch_size {self.patch_size}!")
        if self.pos_embed_kind not in POS_EMBED_KINDS:
            raise ValueError(f"Unknown pos_embed_kind {self.pos_embed_kind!r}! Expected one of {POS_EMBED_KINDS}.")
        if self.pos_embed_kind == "sincos2d" and (self.embed_dim % 4 or self.embed_dim < 8):
            raise ValueError(f"pos_embed_kind='sincos2d' needs an embed_dim that is a multiple of 4 and at least 8 "
                             f"(a sine and a cosine per row and per column frequency) but got {self.embed_dim}!")

    @property
    def grid(self) -> tuple[int, int]:
        """Native patch grid (gh, gw)."""
        return self.img_size[0] // self.patch_size, self.img_size[1] // self.patch_size

    @property
    def pos_grid(self) -> tuple[int, int]:
        """Grid (gh, gw) of the learned position table: ``pos_embed_grid``, else the native grid."""
        return self.pos_embed_grid or self.grid

    @property
    def fixed_size(self) -> str | None:
        """Why the model runs at its own input size only, or None when its positions follow any grid: "relative_bias"
        (BEiT's relative position bias is a table learnt for its own grid)."""
        return "relative_bias" if self.rel_pos_bias else None

    @property
    def attention_head_dim(self) -> int:
        """Dh: the width of one attention head (``head_dim``, else D/H)."""
        return self.head_dim or self.embed_dim // self.num_heads

    @property
    def num_prefix_tokens(self) -> int:
        return int(self.class_token) + int(self.distilled) + self.num_reg_tokens

    @property
    def num_pos_prefix(self) -> int:
        """Prefix tokens with a row of the position table: CLS and DIST with ``pos_embed_prefix`` (and the registers
        with ``pos_embed_registers``)."""
        if not self.pos_embed_prefix:
            return 0
        return int(self.class_token) + int(self.distilled) + (self.num_reg_tokens if self.pos_embed_registers else 0)

    @property
    def family(self) -> str:
        """The family these features make: "dinov3", "eva02", "rope_vit", "beit", "relpos", "parallel", "naflex",
        "siglip", "clip" or "vit" (names defaults and descriptions)."""
        if self.rope and self.rope_coords == "centered":
            return "dinov3"
        if self.rope:
            return "eva02" if self.mlp_act == "swiglu" else "rope_vit"
        if self.rel_pos_bias:
            return "beit"
        if self.rel_pos_mlp:
            return "relpos"
        if self.parallel > 1:
            return "parallel"
        if self.pos_embed_grid is not None:
            return "naflex"
        if self.readout == "map":
            return "siglip"
        if self.norm_pre or self.proj_dim:
            return "clip"
        return "vit"


# Named variants of the paper (Table 1) and DeiT: width D, depth L, heads H, MLP width.
_SIZES = {
    "tiny": dict(embed_dim=192, depth=12, num_heads=3, mlp_dim=768),
    "small": dict(embed_dim=384, depth=12, num_heads=6, mlp_dim=1536),
    "base": dict(embed_dim=768, depth=12, num_heads=12, mlp_dim=3072),
    "large": dict(embed_dim=1024, depth=24, num_heads=16, mlp_dim=4096),
    "huge": dict(embed_dim=1280, depth=32, num_heads=16, mlp_dim=5120),
}
_SHORT = {"ti": "tiny", "s": "small", "b": "base", "l": "large", "h": "huge"}


def variant(name: str, **overrides) -> ViTConfig:
    """Config of a named variant: "base", "vit_b_16", "ViT-B/16", "tiny-14", … (size, optional patch 14/16/32)."""
    key = name.lower().replace("vit", "").replace("/", "_").replace("-", "_").strip("_")
    size, _, patch = key.partition("_")
    size = _SHORT.get(size, size)
    if size not in _SIZES:
        raise ValueError(f"Unknown ViT variant {name!r}! Expected one of {sorted(_SIZES)} with an optional "
                         f"patch size 14, 16 or 32, e.g. 'vit_b_16'.")
    patch_size = int(patch) if patch else 16
    return ViTConfig(**{**_SIZES[size], "patch_size": patch_size, **overrides})


def sincos_2d_position_embedding(grid: tuple[int, int], dim: int, temperature: float = 10_000.0) -> torch.Tensor:
    """The fixed 2-D sine-cosine position table (big_vision's ``posemb_sincos_2d``, "Better plain ViT baselines")
    -> (gh·gw, dim) float32, patches in row-major order.

    With F = dim/4 frequencies ω_k = temperature^(-k/(F-1)), k = 0…F-1, the patch in row r, column c gets
    [sin(c·ω), cos(c·ω), sin(r·ω), cos(r·ω)] (each block F wide). Every row has squared norm dim/2, and the dot
    product of two rows depends only on their offset (Δr, Δc): Σ_k cos(Δc·ω_k) + cos(Δr·ω_k).
    """
    gh, gw = grid
    if dim % 4 or dim < 8:
        raise ValueError(f"The 2-D sine-cosine table needs a width that is a multiple of 4 and at least 8 but got {dim}!")
    n_freq = dim // 4
    omega = 1.0 / temperature ** (torch.arange(n_freq, dtype=torch.float64) / (n_freq - 1))  # (F,)
    rows, cols = torch.meshgrid(torch.arange(gh, dtype=torch.float64), torch.arange(gw, dtype=torch.float64),
                                indexing="ij")
    x = cols.reshape(-1, 1) * omega  # (gh·gw, F) column angles
    y = rows.reshape(-1, 1) * omega  # (gh·gw, F) row angles
    return torch.cat([x.sin(), x.cos(), y.sin(), y.cos()], dim=1).float()  # (gh·gw, dim)


def resize_position_grid(table: torch.Tensor, grid: tuple[int, int], mode: str = "bicubic", antialias: bool = False,
                         ar_preserving: bool = False) -> torch.Tensor:
    """A learned position table laid out as a grid, (1, D, gh0, gw0) -> (1, D, gh, gw), as the families resize theirs:
    ``mode`` "bicubic" (timm, torchvision, transformers' ViTs) or "bilinear" (SigLIP 2's NaFlex tower), align_corners
    off, ``antialias`` when shrinking (SigLIP 2, NaFlexViT, DINOv2 with registers), and ``ar_preserving`` (timm's
    NaFlexViT par_* models): resized to a square of the longer side and its top-left gh×gw kept, so a row of
    patches keeps the spacing of the table's rows whatever the aspect ratio."""
    gh, gw = grid
    size = (max(grid),) * 2 if ar_preserving else (gh, gw)
    out = F.interpolate(table, size=size, mode=mode, align_corners=False, antialias=antialias)
    return out[:, :, :gh, :gw]


def make_norm(cfg: ViTConfig, dim: int) -> nn.Module:
    """The family's norm over ``dim`` channels: a LayerNorm, or an RMSNorm (``norm_kind``), with ``layer_norm_eps``."""
    if cfg.norm_kind == "rmsnorm":
        return nn.RMSNorm(dim, eps=cfg.layer_norm_eps)
    return nn.LayerNorm(dim, eps=cfg.layer_norm_eps)


class TokenLayout(NamedTuple):
    """How the T tokens of a forward pass are laid out: ``num_prefix`` tokens, then a gh×gw patch grid (row-major)."""
    num_prefix: int
    grid: tuple[int, int]

    @property
    def num_tokens(self) -> int:
        return self.num_prefix + self.grid[0] * self.grid[1]


class PatchEmbed(nn.Module):
    """Cut the image into P×P patches and project each to D dims with one strided convolution."""

    def __init__(self, cfg: ViTConfig):
        super().__init__()
        self.patch_size = cfg.patch_size
        self.proj = nn.Conv2d(cfg.in_chans, cfg.embed_dim, kernel_size=cfg.patch_size, stride=cfg.patch_size,
                              bias=cfg.patch_bias)
        self.norm = make_norm(cfg, cfg.embed_dim) if cfg.patch_norm else nn.Identity()   # AIMv2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, C, H, W = x.shape
        if H % self.patch_size or W % self.patch_size:
            P = self.patch_size
            raise ValueError(f"Input size {H}×{W} is not divisible by the patch size {P}! "
                             f"Expected height and width that are multiples of {P}, e.g. {H // P * P or P}×{W // P * P or P}.")
        x = self.proj(x)                                # (B, D, gh, gw)
        return self.norm(x.flatten(2).transpose(1, 2))  # (B, N, D) with N = gh·gw, row-major


class Attention(nn.Module):
    """Multi-head self-attention with a fused (SDPA) path and an explicit-softmax path that can return the maps.

    The computation comes in the pieces every pass reads or replaces (``Block.step`` runs them in order):
    ``project`` (q, k, v), ``positioned`` (the rotary embedding of q and k), ``logit_bias`` (BEiT's relative bias,
    a packing mask), ``attend`` (softmax(q·kᵀ/√d + bias)·v per head) and ``merge`` (heads concatenated, projected).
    ``causal``: each token attends to itself and earlier tokens only (CLIP's text tower).
    """

    def __init__(self, cfg: ViTConfig, causal: bool = False):
        super().__init__()
        D = cfg.embed_dim
        self.num_heads = cfg.num_heads
        self.head_dim = cfg.attention_head_dim
        inner = self.num_heads * self.head_dim  # D, except for folded parallel blocks (P·D)
        self.scale = self.head_dim ** -0.5
        self.causal = causal
        self.fused_attn = True  # plain forward uses F.scaled_dot_product_attention
        self.qkv = nn.Linear(D, 3 * inner, bias=cfg.qkv_bias and cfg.k_bias)
        with_qv_bias = cfg.qkv_bias and not cfg.k_bias  # BEiT / EVA-02: biases on q and v, none on k
        self.q_bias = nn.Parameter(torch.zeros(inner)) if with_qv_bias else None
        self.v_bias = nn.Parameter(torch.zeros(inner)) if with_qv_bias else None
        # BEiT: one learnt bias per head for every relative offset of the native grid (+3 rows for prefix tokens)
        self.relative_position_bias_table = nn.Parameter(
            torch.zeros(num_relative_positions(cfg.grid), cfg.num_heads)) if cfg.rel_pos_bias else None
        # timm's vit_relpos: the same table computed for any grid by an MLP (module names as timm's RelPosMlp)
        self.rel_pos = RelativePositionMlp(cfg) if cfg.rel_pos_mlp else None
        self.attn_drop = nn.Dropout(cfg.attn_drop_rate)
        self.norm = make_norm(cfg, inner) if cfg.attn_norm else nn.Identity()
        self.proj = nn.Linear(inner, D, bias=cfg.linear_bias)
        self.proj_drop = nn.Dropout(cfg.drop_rate)
        self.rope_half = cfg.rope_half  # DINOv3 rotates channel c with c + Dh/2, the others neighbouring pairs
        # RoPE-Mixed: this block's learnt frequencies (x, y) per head and plane
        self.rope_freqs = nn.Parameter(torch.zeros(2, cfg.num_heads, self.head_dim // 2)) if cfg.rope_mixed else None

    def forward(self, x: torch.Tensor, return_attn: bool = False,
                positions: TokenPositions | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x: (B, T, D) -> (out (B, T, D), attention probabilities (B, H, T, T) if return_attn else None).

        ``positions`` (rotary angles, relative-position rows, a packing mask) is only needed by EVA-02, BEiT and
        packed sequences (``vit.explain.perturb.forward_packed``).
        """
        heads, attn = self.mix(x, return_attn, positions)
        return self.merge(heads), attn

    def mix(self, x: torch.Tensor, return_attn: bool = False, positions: TokenPositions | None = None,
            queries: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Every head's output before the heads are merged: x (B, T, D) -> (attn @ v (B, H, Tq, Dh), attention
        probabilities (B, H, Tq, T) if return_attn else None).

        ``queries``: indices of the Tq tokens whose outputs are wanted (default: all T); every token is still a
        key and a value.
        """
        q, k, v = self.project(x)
        q, k = self.positioned(q, k, positions)
        return self.attend(q, k, v, self.logit_bias(positions, q.dtype), return_attn, queries)

    def project(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """x (B, T, D) -> q, k, v, each (B, H, T, Dh): the qkv projection (with BEiT's / EVA-02's q and v biases)."""
        B, T, D = x.shape
        if self.q_bias is None:
            qkv = self.qkv(x)
        else:
            qkv = F.linear(x, self.qkv.weight, torch.cat([self.q_bias, torch.zeros_like(self.q_bias), self.v_bias]))
        qkv = qkv.reshape(B, T, 3, self.num_heads, self.head_dim)  # (B, T, 3, H, Dh)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)              # each (B, H, T, Dh)
        return q, k, v

    def positioned(self, q: torch.Tensor, k: torch.Tensor,
                   positions: TokenPositions | None) -> tuple[torch.Tensor, torch.Tensor]:
        """q, k (B, H, T, Dh) as attention compares them: the patch tokens rotated by their position (the rotary
        embedding: the model's axial tables, or this block's own RoPE-Mixed frequencies); unchanged without one."""
        if positions is None:
            return q, k
        if self.rope_freqs is not None and positions.coords is not None:
            sin, cos = mixed_rope_tables(positions.coords, self.rope_freqs)   # (…, H, N, Dh): this block's own
        elif positions.rope is not None:
            sin, cos = positions.rope
        else:
            return q, k
        return (apply_rope(q, sin, cos, positions.num_prefix, self.rope_half),
                apply_rope(k, sin, cos, positions.num_prefix, self.rope_half))

    def queries_and_keys(self, normed: torch.Tensor,
                         positions: TokenPositions | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """The block's normalised input (B, T, D) -> (q, k), each (B, H, T, Dh), positions applied: all that
        ``attention_rows`` needs to recompute any rows of this block's attention later."""
        q, k, _ = self.project(normed)
        return self.positioned(q, k, positions)

    def logit_bias(self, positions: TokenPositions | None, dtype: torch.dtype) -> torch.Tensor | None:
        """What is added to q·kᵀ/√d: BEiT's relative-position bias (or timm's, from its MLP) and -inf between
        packed sequences, (H, T, T) or (B, H, T, T); None when nothing is."""
        table = self.relative_position_bias_table
        if self.rel_pos is not None and positions is not None:
            table = self.rel_pos(positions.rel_coords)                   # (R, H) for this input's grid
        return attention_bias(positions, table, dtype)

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor | None = None,
               return_attn: bool = False,
               queries: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """q, k, v (B, H, T, Dh) -> (attn @ v (B, H, Tq, Dh), the probabilities (B, H, Tq, T) if return_attn).

        The fused kernel unless the probabilities are asked for (or ``fused_attn`` is off): then the explicit
        softmax, whose rows are the maps the output came from. ``queries``: the Tq rows wanted (default all).
        """
        T = k.shape[-2]
        if queries is not None:                                    # only these rows of the attention
            if self.causal:
                raise ValueError("Attention.attend: queries cannot be chosen with a causal mask.")
            q = q[:, :, queries]                                    # (B, H, Tq, Dh)
            bias = None if bias is None else bias[..., queries, :]  # (…, Tq, T)
        attn = None
        if self.fused_attn and not return_attn:
            x = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, is_causal=self.causal,
                                               dropout_p=self.attn_drop.p if self.training else 0.0)
        else:
            attn = (q * self.scale) @ k.transpose(-2, -1)  # (B, H, Tq, T) scaled dot products
            if bias is not None:
                attn = attn + bias                          # BEiT: + the bias of each (query, key) offset; packing: −inf
            if self.causal:                                 # a query never sees later tokens
                attn = attn.masked_fill(torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
            attn = attn.softmax(dim=-1)                    # each query row sums to 1
            x = self.attn_drop(attn) @ v                   # (B, H, Tq, Dh)
        return x, attn

    def attend_with_logsumexp(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                              bias: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """q, k, v (B, H, T, Dh) -> (attn @ v (B, H, T, Dh), each row's log Σ_j exp(q_i·k_j·scale + bias_ij) (B, H, T)
        float32), in eval mode: the fused kernel's output (the plain forward's, bit for bit on the CPU) with the
        log-sum-exp it computes anyway, from which any entry of the attention is exp(logit − lse) without its row
        (``viz.analysis.recompute``); the explicit softmax where no fused kernel gives it (or ``fused_attn`` is off)."""
        if self.fused_attn and not self.causal and not self.training:
            kernel = FUSED_LOGSUMEXP.get(q.device.type)
            if kernel is not None:
                try:
                    return kernel(q, k, v, bias, self.scale)
                except RuntimeError:        # a dtype, shape or build the kernel does not take: the explicit softmax
                    pass
        logits = (q * self.scale) @ k.transpose(-2, -1)     # (B, H, T, T)
        if bias is not None:
            logits = logits + bias
        lse = logits.float().logsumexp(dim=-1)               # (B, H, T)
        return (logits.float() - lse.unsqueeze(-1)).exp().to(v.dtype) @ v, lse

    def merge(self, heads: torch.Tensor) -> torch.Tensor:
        """Heads (B, H, T, Dh) -> (B, T, D): concatenated (head h in channels h·Dh … (h+1)·Dh − 1, the columns of
        ``proj`` that read it), [EVA-02's sub-LN], projected."""
        B, H, T, Dh = heads.shape
        x = heads.transpose(1, 2).reshape(B, T, H * Dh)    # heads concatenated back to (B, T, D) (P·D: parallel)
        return self.proj_drop(self.proj(self.norm(x)))


def _cpu_logsumexp(q, k, v, bias, scale):
    """torch's fused CPU attention kernel (what ``scaled_dot_product_attention`` runs), which returns the log-sum-exp."""
    mask = None if bias is None else bias.expand(q.shape[0], q.shape[1], -1, -1)
    out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, False, attn_mask=mask,
                                                                          scale=scale)
    return out, lse.float()


def _cuda_logsumexp(q, k, v, bias, scale):
    """torch's memory-efficient CUDA kernel, asked for the log-sum-exp (padded to a multiple of 32 rows)."""
    mask = None if bias is None else bias.expand(q.shape[0], q.shape[1], -1, -1).to(q.dtype)
    out, lse = torch.ops.aten._scaled_dot_product_efficient_attention(q, k, v, mask, True, 0.0, False,
                                                                      scale=scale)[:2]
    return out, lse[..., :q.shape[-2]].float()


FUSED_LOGSUMEXP = {"cpu": _cpu_logsumexp, "cuda": _cuda_logsumexp}   # device type -> fused kernel with the lse


def attention_rows(q: torch.Tensor, k: torch.Tensor, scale: float, bias: torch.Tensor | None = None,
                   queries: torch.Tensor | None = None, chunk: int = 1024, out: torch.Tensor | None = None,
                   workspace: torch.Tensor | None = None) -> torch.Tensor:
    """Rows of a block's attention recomputed from its kept queries and keys (``Attention.queries_and_keys``).

    q, k (B, H, T, Dh) in any float dtype (16 bits to keep them small); ``bias`` as ``Attention.logit_bias``
    gives it; ``queries`` the Tq rows wanted (default all) -> probabilities (B, H, Tq, T) in float32, equal to the
    rows ``Attention.attend`` computes, up to the rounding of q and k. Computed ``chunk`` rows at a time into one
    workspace for their logits, so the memory is Tq·T plus one chunk's logits; ``out``: a float32 (B, H, Tq, T) to
    write them into, ``workspace``: a flat float32 of at least B·H·min(chunk, Tq)·T for the logits (a caller that asks
    for many chunks of rows passes the same two each time, instead of new pages each time). A column j of the
    attention is ``attention_rows(...)[..., j]``.
    """
    if queries is not None:
        q = q[:, :, queries]
        bias = None if bias is None else bias[..., queries, :]
    q, k = q.float(), k.float()
    B, H, Tq, T = *q.shape[:-1], k.shape[-2]
    out = q.new_empty(B, H, Tq, T) if out is None else out
    logits = q.new_empty(B * H * min(chunk, Tq) * T) if workspace is None else workspace   # a chunk's, then the next's
    for i in range(0, Tq, chunk):
        c = min(chunk, Tq - i)
        chunk_logits = torch.matmul(q[:, :, i:i + c] * scale, k.transpose(-2, -1),
                                    out=logits[:B * H * c * T].view(B, H, c, T))       # (B, H, c, T)
        if bias is not None:
            chunk_logits += bias[..., i:i + c, :].float()
        torch.softmax(chunk_logits, dim=-1, out=out[:, :, i:i + c])
    return out


class RelativePositionMlp(nn.Module):
    """timm's RelPosMlp ("cr" coordinates): the relative-position table of one block computed by an MLP, 2 -> hidden
    (ReLU) -> H, from every offset's log coordinates (``vit.positions.relative_log_coords``), with 3 zero rows after
    them for the prefix tokens (which get no bias). Module names follow timm's (``rel_pos.mlp.fc1``, ``fc2``)."""

    def __init__(self, cfg: ViTConfig):
        super().__init__()
        self.mlp = PositionMlp(cfg.rel_pos_mlp_dim, cfg.num_heads)

    def forward(self, coords: torch.Tensor) -> torch.Tensor:
        """coords (R - 3, 2) -> the table (R, H): one bias per head for every offset, then the 3 prefix rows."""
        table = self.mlp(coords)                                          # (R - 3, H)
        return torch.cat([table, table.new_zeros(3, table.shape[1])])   # (R, H)


class PositionMlp(nn.Module):
    """Linear(2, hidden) -> ReLU -> Linear(hidden, H) (timm's dropout on the hidden units acts in training only)."""

    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.fc1 = nn.Linear(2, hidden)
        self.fc2 = nn.Linear(hidden, heads)

    def forward(self, coords: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.relu(self.fc1(coords)))


class QuickGELU(nn.Module):
    """OpenAI CLIP's activation, x·σ(1.702·x): a sigmoid approximation of GELU its weights were trained with."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(1.702 * x)


MLP_ACTIVATIONS = {  # ViTConfig.mlp_act -> activation module ("swiglu" is a gated MLP of its own, see SwiGLU)
    "gelu": lambda: nn.GELU(),
    "gelu_tanh": lambda: nn.GELU(approximate="tanh"),
    "quick_gelu": QuickGELU,
    "swiglu": nn.SiLU,
}


class Mlp(nn.Module):
    """Linear -> activation -> Dropout -> [LayerNorm] -> Linear -> Dropout."""

    def __init__(self, cfg: ViTConfig):
        super().__init__()
        self.fc1 = nn.Linear(cfg.embed_dim, cfg.mlp_dim, bias=cfg.linear_bias)
        self.act = MLP_ACTIVATIONS[cfg.mlp_act]()
        self.drop1 = nn.Dropout(cfg.drop_rate)
        self.norm = make_norm(cfg, cfg.mlp_dim) if cfg.mlp_norm else nn.Identity()
        self.fc2 = nn.Linear(cfg.mlp_dim, cfg.embed_dim, bias=cfg.linear_bias)
        self.drop2 = nn.Dropout(cfg.drop_rate)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop2(self.fc2(self.norm(self.drop1(self.act(self.fc1(x))))))


class SwiGLU(nn.Module):
    """EVA-02's gated MLP: SiLU(x·W_g) ⊙ (x·W_x) -> Dropout -> [LayerNorm] -> Linear -> Dropout, hidden width mlp_dim."""

    def __init__(self, cfg: ViTConfig):
        super().__init__()
        self.fc1_g = nn.Linear(cfg.embed_dim, cfg.mlp_dim, bias=cfg.linear_bias)  # the gate
        self.fc1_x = nn.Linear(cfg.embed_dim, cfg.mlp_dim, bias=cfg.linear_bias)  # the value it gates
        self.act = nn.SiLU()
        self.drop1 = nn.Dropout(cfg.drop_rate)
        self.norm = make_norm(cfg, cfg.mlp_dim) if cfg.mlp_norm else nn.Identity()
        self.fc2 = nn.Linear(cfg.mlp_dim, cfg.embed_dim, bias=cfg.linear_bias)
        self.drop2 = nn.Dropout(cfg.drop_rate)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = self.act(self.fc1_g(x)) * self.fc1_x(x)  # (B, T, mlp_dim)
        return self.drop2(self.fc2(self.norm(self.drop1(hidden))))


class LayerScale(nn.Module):
    def __init__(self, dim: int, init_value: float = 1e-5):
        super().__init__()
        self.gamma = nn.Parameter(init_value * torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.gamma


class DropPath(nn.Module):
    """Stochastic depth: drop the whole residual branch per sample with probability p while training."""

    def __init__(self, p: float = 0.0):
        super().__init__()
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.p == 0.0 or not self.training:
            return x
        keep = 1.0 - self.p
        mask = x.new_empty((x.shape[0],) + (1,) * (x.ndim - 1)).bernoulli_(keep)  # (B, 1, 1)
        return x * mask / keep


TAPS = ("normed", "qk", "attn")
"""What ``Block.step`` keeps beyond what it always returns: the normalised input, q and k with positions
applied, the attention probabilities (the explicit softmax instead of the fused kernel)."""

HeadEdit = Callable[[torch.Tensor], torch.Tensor]   # heads (B, H, Tq, Dh) -> heads of the same shape


@dataclass
class BlockStep:
    """What one ``Block.step`` computed: B images, T tokens in, Tq tokens out (all T unless ``rows``), H heads."""
    out: torch.Tensor                   # (B, Tq, D) the stream after the block
    heads: torch.Tensor                 # (B, H, Tq, Dh) every head's attn @ v, before merge (edited, if asked)
    attn_branch: torch.Tensor           # (B, Tq, D) what attention adds to the stream: ls1(merge(heads))
    mlp_branch: torch.Tensor            # (B, Tq, D) what the MLP adds: ls2(mlp(norm2(x + attn_branch))) (Block.step)
    normed: torch.Tensor | None = None  # (B, T, D) norm1(x), the attention's input; tap "normed"
    q: torch.Tensor | None = None       # (B, H, T, Dh) queries, positions applied; tap "qk"
    k: torch.Tensor | None = None       # (B, H, T, Dh) keys, positions applied; tap "qk"
    attn: torch.Tensor | None = None    # (B, H, Tq, T) softmax attention; tap "attn"


class Block(nn.Module):
    """Pre-norm transformer block (``res_post_norm``: the norms after each branch instead, timm's *_rpn)."""

    def __init__(self, cfg: ViTConfig, drop_path: float, causal: bool = False):
        super().__init__()
        self.res_post_norm = cfg.res_post_norm
        self.norm1 = make_norm(cfg, cfg.embed_dim)
        self.attn = Attention(cfg, causal)
        self.ls1 = LayerScale(cfg.embed_dim) if cfg.layer_scale else nn.Identity()
        self.norm2 = make_norm(cfg, cfg.embed_dim)
        self.mlp = SwiGLU(cfg) if cfg.mlp_act == "swiglu" else Mlp(cfg)
        self.ls2 = LayerScale(cfg.embed_dim) if cfg.layer_scale else nn.Identity()
        self.drop_path = DropPath(drop_path)

    def forward(self, x: torch.Tensor, return_attn: bool = False,
                positions: TokenPositions | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x: (B, T, D) -> (B, T, D), and the block's attention (B, H, T, T) when asked."""
        step = self.step(x, positions, taps=("attn",) if return_attn else ())
        return step.out, step.attn

    def attention_input(self, x: torch.Tensor) -> torch.Tensor:
        """The stream (B, T, D) as the block's attention reads it (the "normed" tap): norm1(x), or x itself when the
        norms come after the branches (``res_post_norm``)."""
        return x if self.res_post_norm else self.norm1(x)

    def step(self, x: torch.Tensor, positions: TokenPositions | None = None, taps: tuple[str, ...] = (),
             rows: torch.Tensor | None = None, heads: torch.Tensor | HeadEdit | None = None,
             mlp: torch.Tensor | None = None, attn_branch: torch.Tensor | None = None) -> BlockStep:
        """The block's computation, the one every pass runs (the plain forward, capture, the views inside the model,
        the explanations), with the pieces they read kept and the pieces they replace replaced:

            heads = attn.attend(attn.positioned(attn.project(norm1(x))))    (B, H, Tq, Dh)
            x     = x + ls1(attn.merge(heads))
            x     = x + ls2(mlp(norm2(x)))

        (with ``res_post_norm`` the norms move after the branches: heads from x itself, x + ls1(norm1(merge(heads))),
        x + ls2(norm2(mlp(x))).)

        ``taps``: what to keep beyond ``BlockStep``'s heads and branches (``TAPS``). ``rows``: the Tq tokens whose
        outputs are wanted (every token is still a key and a value; the readout's rows of a last block). ``heads``:
        a tensor (B, H, Tq, Dh) used instead of computing attention, or a function editing the computed heads
        (ablation, patching). ``mlp``: (B, Tq, D) added instead of the MLP branch; ``attn_branch``: (B, Tq, D) added
        instead of the attention branch (give its ``heads`` too, or they are computed for nothing). Nothing given:
        the plain block, on the fused attention kernel.
        """
        unknown = set(taps) - set(TAPS)
        if unknown:
            raise ValueError(f"Unknown taps {sorted(unknown)}! Expected some of {TAPS}.")
        normed = q = k = attn = None
        if heads is None or callable(heads):
            normed = self.attention_input(x)
            q, k, v = self.attn.project(normed)
            q, k = self.attn.positioned(q, k, positions)
            h, attn = self.attn.attend(q, k, v, self.attn.logit_bias(positions, q.dtype), "attn" in taps, rows)
            heads = h if heads is None else heads(h)
        if rows is not None:
            x = x[:, rows]                                          # (B, Tq, D)
        if self.res_post_norm:                                      # timm's *_rpn: each norm after its branch
            if attn_branch is None:
                attn_branch = self.drop_path(self.ls1(self.norm1(self.attn.merge(heads))))
            x = x + attn_branch
            mlp_branch = self.drop_path(self.ls2(self.norm2(self.mlp(x)))) if mlp is None else mlp
            x = x + mlp_branch
        else:
            if attn_branch is None:
                attn_branch = self.drop_path(self.ls1(self.attn.merge(heads)))
            x = x + attn_branch
            mlp_branch = self.drop_path(self.ls2(self.mlp(self.norm2(x)))) if mlp is None else mlp
            x = x + mlp_branch
        keep = lambda name, t: t if name in taps else None      # noqa: E731
        return BlockStep(x, heads, attn_branch, mlp_branch, keep("normed", normed), keep("qk", q), keep("qk", k),
                         attn)


class AttentionPool(nn.Module):
    """Multi-head attention pooling ("MAP", SigLIP): one learnt probe query attends over the tokens, then a
    residual MLP. Module names follow timm's AttentionPoolLatent."""

    def __init__(self, cfg: ViTConfig):
        super().__init__()
        D = cfg.embed_dim
        self.num_heads = cfg.pool_heads or cfg.num_heads
        self.head_dim = D // self.num_heads
        self.scale = self.head_dim ** -0.5
        self.fused_attn = True
        self.latent = nn.Parameter(torch.zeros(1, 1, D))  # the probe: one query vector shared by every image
        latent = cfg.probe == "latent"           # AIMv2's: the probe is the query, its keys and values bias-free
        self.q = nn.Linear(D, D) if latent else nn.Identity()
        self.kv = nn.Linear(D, 2 * D, bias=latent or cfg.qkv_bias)
        self.proj = nn.Linear(D, D)
        self.norm = make_norm(cfg, D) if latent else None
        self.mlp = Mlp(dataclasses.replace(cfg, mlp_norm=False, mlp_dim=cfg.pool_mlp_dim or cfg.mlp_dim,
                                          linear_bias=True)) if latent else None

    def forward(self, x: torch.Tensor, return_attn: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Tokens (B, N, D) -> (pooled (B, D), the probe's attention over the N tokens (B, H, N) if return_attn)."""
        B, N, D = x.shape
        q = self.q(self.latent).reshape(1, 1, self.num_heads, self.head_dim).transpose(1, 2)  # (1, H, 1, Dh)
        kv = self.kv(x).reshape(B, N, 2, self.num_heads, self.head_dim)                      # (B, N, 2, H, Dh)
        k, v = kv.permute(2, 0, 3, 1, 4).unbind(0)                                           # each (B, H, N, Dh)
        q = q.expand(B, -1, -1, -1)                                                          # (B, H, 1, Dh)
        attn = None
        if self.fused_attn and not return_attn:
            x = F.scaled_dot_product_attention(q, k, v)
        else:
            attn = ((q * self.scale) @ k.transpose(-2, -1)).softmax(dim=-1)  # (B, H, 1, N): sums to 1 over tokens
            x = attn @ v                                                      # (B, H, 1, Dh)
            attn = attn[:, :, 0]                                              # (B, H, N)
        x = self.proj(x.transpose(1, 2).reshape(B, D))                        # heads concatenated: (B, D)
        return (x + self.mlp(self.norm(x)) if self.mlp is not None else x), attn


class AttentionCapture(NamedTuple):
    """What ``VisionTransformer.forward_with_attention`` returns: the output and the attention behind it."""
    output: torch.Tensor                     # (B, K) logits; (B, E) image embedding (proj_dim); (B, D) without head
    attention: torch.Tensor                  # (B, L, H, T, T) softmax attention every block used
    token_norms: torch.Tensor | None         # (B, L, T) L2 norm of every token after each block, when asked
    probe_attention: torch.Tensor | None     # (B, H', T) "map" / "map_all" pooling: the probe's attention (H' its
                                             # own heads; "map": 0 on prefix tokens)


class FusedAttentionSwitch:
    """``model.fused_attn`` of a whole model: True when every attention module in it (each one holding its own
    ``fused_attn`` flag) runs the fused kernel in its plain forward; setting it sets them all (False: the explicit
    softmax everywhere, e.g. for a reference or an autograd-safe pass). Every model class mixes it in."""

    def _attention_modules(self) -> list[nn.Module]:
        return [m for m in self.modules() if m is not self and "fused_attn" in vars(m)]

    @property
    def fused_attn(self) -> bool:
        return all(m.fused_attn for m in self._attention_modules())

    @fused_attn.setter
    def fused_attn(self, value: bool) -> None:
        for m in self._attention_modules():
            m.fused_attn = value


class VisionTransformer(FusedAttentionSwitch, nn.Module):
    def __init__(self, cfg: ViTConfig):
        super().__init__()
        self.cfg = cfg
        D = cfg.embed_dim
        self.patch_embed = PatchEmbed(cfg)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, D)) if cfg.class_token else None
        self.dist_token = nn.Parameter(torch.zeros(1, 1, D)) if cfg.distilled else None
        self.reg_token = nn.Parameter(torch.zeros(1, cfg.num_reg_tokens, D)) if cfg.num_reg_tokens else None
        if cfg.pos_embed_kind == "learned":  # for the table's grid: img_size's, or NaFlex's pos_embed_grid
            self.pos_embed = nn.Parameter(torch.zeros(1, self._pos_len(cfg.pos_grid), D))  # (1, [CLS, DIST] + gh·gw, D)
        elif cfg.pos_embed_kind == "sincos2d":  # a buffer: saved with the weights, never given to the optimizer
            self.register_buffer("pos_embed", self.sincos_table(cfg.pos_grid))
        else:                                    # "none": the tokens carry no absolute position (BEiT: relative biases)
            self.pos_embed = None
        self.pos_drop = nn.Dropout(cfg.drop_rate)
        self.norm_pre = make_norm(cfg, D) if cfg.norm_pre else nn.Identity()
        rates = [cfg.drop_path_rate * i / max(cfg.depth - 1, 1) for i in range(cfg.depth)]
        self.blocks = nn.ModuleList([Block(cfg, r) for r in rates])
        self.norm = make_norm(cfg, D) if cfg.final_norm and not cfg.fc_norm else nn.Identity()
        self.cls_norm = make_norm(cfg, D) if cfg.prefix_norm else None  # DINOv3's untied norm
        self.attn_pool = AttentionPool(cfg) if readout_kind(cfg.readout).probe else None
        pooled = D * readout_kind(cfg.readout).width                # what the head reads: D, or 2·D for cls_mean
        self.fc_norm = make_norm(cfg, pooled) if cfg.fc_norm else nn.Identity()
        R = cfg.representation_size
        self.pre_logits = nn.Sequential(nn.Linear(pooled, R), nn.Tanh()) if R else nn.Identity()
        self.head_drop = nn.Dropout(cfg.drop_rate)
        width = R or pooled
        self.proj = nn.Linear(width, cfg.proj_dim, bias=cfg.proj_bias) if cfg.proj_dim else nn.Identity()  # CLIP
        self.head = nn.Linear(width, cfg.num_classes) if cfg.num_classes else nn.Identity()
        # DeiT: the distillation token's own head (an identity on a backbone, whose output is then the mean of both)
        self.head_dist = None if cfg.readout != "distilled" else \
            nn.Linear(width, cfg.num_classes) if cfg.num_classes else nn.Identity()
        self.apply(init_weights)
        learned_pos = self.pos_embed if cfg.pos_embed_kind == "learned" else None
        for p in (self.cls_token, self.dist_token, self.reg_token, learned_pos):
            if p is not None:
                nn.init.trunc_normal_(p, std=0.02)
        if self.attn_pool is not None:
            nn.init.trunc_normal_(self.attn_pool.latent, std=D ** -0.5)

    def _pos_len(self, grid: tuple[int, int]) -> int:
        """Rows of the position table: the patches and the prefix tokens that have one (``num_pos_prefix``)."""
        return grid[0] * grid[1] + self.cfg.num_pos_prefix

    def sincos_table(self, grid: tuple[int, int]) -> torch.Tensor:
        """(1, [CLS, DIST] + gh·gw, D): zero rows for the prefix tokens (as MAE), the 2-D sine-cosine table after."""
        n_pre = self._pos_len(grid) - grid[0] * grid[1]
        table = sincos_2d_position_embedding(grid, self.cfg.embed_dim)
        return torch.cat([table.new_zeros(n_pre, table.shape[1]), table]).unsqueeze(0)

    def token_layout(self, height: int, width: int) -> TokenLayout:
        """Token layout for an input of height×width pixels; raises ValueError when the patch size does not divide it."""
        P = self.cfg.patch_size
        if height % P or width % P or height < P or width < P:
            raise ValueError(f"Wrong input size! Expected height and width that are positive multiples of the "
                             f"patch size {P} (e.g. {self.cfg.img_size[0]}×{self.cfg.img_size[1]}) but got {height}×{width}!")
        layout = TokenLayout(self.cfg.num_prefix_tokens, (height // P, width // P))
        if self.cfg.rel_pos_bias and layout.grid != self.cfg.grid:
            raise ValueError(f"Wrong input size for a relative position bias learnt on the {self.cfg.grid[0]}×"
                             f"{self.cfg.grid[1]} grid! Expected {self.cfg.img_size[0]}×{self.cfg.img_size[1]} pixels "
                             f"but got {height}×{width}.")
        return layout

    def architecture(self, height: int, width: int) -> Architecture:
        """The description the explorer reads (``vit.architecture``): L blocks of global attention over the same
        prefix + gh·gw tokens, one stage, read out as ``cfg.readout`` says. ValueError for a size it does not take."""
        layout = self.token_layout(height, width)
        cfg = self.cfg
        return Architecture.plain(cfg.depth, cfg.num_heads, layout.grid, cfg.patch_size, layout.num_prefix,
                                  cfg.readout, cfg.family)

    def patch_projection(self) -> tuple[str, int]:
        """Where an explanation's graph starts (``vit.explain.passes``): the module whose output is every patch's
        projection W·x + b, and the axis of its channels: ``patch_embed``'s (B, N, D)."""
        return "patch_embed", -1

    def gradcam_layer(self) -> str:
        """The module whose output is Grad-CAM's activation (``vit.explain.gradient_pass``): the tokens the last
        block's attention reads, its ``norm1`` (pytorch-grad-cam's ViT target layer), or with the norms after the
        branches (``res_post_norm``) the stream entering it, the block before it (``norm_pre`` for one block)."""
        last = len(self.blocks) - 1
        if not self.cfg.res_post_norm:
            return f"blocks.{last}.norm1"
        return f"blocks.{last - 1}" if last else "norm_pre"

    def eval_layout(self, x: torch.Tensor, purpose: str) -> TokenLayout:
        """Token layout of images x (B, C, H, W) for a ``purpose`` ("Explanations", "Looking inside the model") that
        must see the model as it predicts: ValueError in training mode (dropout on) or for a wrong shape."""
        if self.training:
            raise ValueError(f"{purpose} need the model in eval mode (dropout off)! Call model.eval() first.")
        if x.ndim != 4:
            raise ValueError(f"Wrong input shape! Expected images (B, C, H, W) but got {tuple(x.shape)}.")
        return self.token_layout(x.shape[-2], x.shape[-1])

    def token_positions(self, height: int, width: int, device=None) -> TokenPositions | None:
        """Rotary angles and relative-position rows for an input of height×width pixels (None for the plain ViT)."""
        cfg = self.cfg
        relative = cfg.rel_pos_bias or cfg.rel_pos_mlp
        if not (cfg.rope or relative):
            return None
        layout = self.token_layout(height, width)
        rope = coords = None
        if cfg.rope and cfg.rope_mixed:     # each block turns the coordinates by its own frequencies
            coords = patch_coordinates(layout.grid, device)
        elif cfg.rope:
            rope = rope_tables(layout.grid, cfg.attention_head_dim, cfg.rope_ref_grid, cfg.rope_temperature,
                               device, cfg.rope_coords, cfg.rope_axes, cfg.rope_half, cfg.rope_offset)
        rel_index = relative_position_index(layout.grid, layout.num_prefix, device) if relative else None
        rel_coords = relative_log_coords(layout.grid, device) if cfg.rel_pos_mlp else None
        return TokenPositions(layout.num_prefix, rope, rel_index, coords=coords, rel_coords=rel_coords)

    def position_table(self) -> tuple[torch.Tensor | None, str, tuple[int, int]]:
        """(the absolute position embedding ([CLS, DIST] rows, then the patches') (prefix_with_pos + N, D) or None
        without one, its kind ("learned", "sincos2d" or "none"), the grid it was made for): Figure 7's centre."""
        table = None if self.pos_embed is None else self.pos_embed[0]
        return table, self.cfg.pos_embed_kind, self.cfg.pos_grid

    def rotary_kernel(self, grid: tuple[int, int] | None = None, axis: str = "both") -> torch.Tensor | None:
        """(N, N) float32 for the N patches of a gh×gw grid (default: the native one): how alike the rotary embedding
        leaves one vector at two patches, the mean over its planes of cos(θ_i − θ_j) (``positions.rotary_kernel``),
        the position similarity the rotation itself implies; None for a model without a rotation.

        ``axis``: "both", or "rows" / "columns" for the planes that turn with that axis only (axial RoPE: the kernel
        of the rows' planes depends on the rows alone). RoPE-Mixed's planes mix both axes, each block and head its
        own: the mean over all of them ("both" only)."""
        cfg = self.cfg
        if not cfg.rope:
            return None
        if axis not in ("both", "rows", "columns"):
            raise ValueError(f"axis must be 'both', 'rows' or 'columns' but got {axis!r}!")
        grid = tuple(grid or cfg.grid)
        if cfg.rope_mixed:
            if axis != "both":
                raise ValueError("RoPE-Mixed turns every plane with both axes: its kernel has no rows' or columns' "
                                 "part.")
            coords = patch_coordinates(grid, self.patch_embed.proj.weight.device)
            angles = torch.stack([coords[:, 0, None] * b.attn.rope_freqs[0][:, None] +
                                  coords[:, 1, None] * b.attn.rope_freqs[1][:, None] for b in self.blocks])
            return rotary_kernel(angles.detach().float())                        # angles (L, H, N, Dh/2)
        Dh = cfg.attention_head_dim
        angles = rope_angles(grid, Dh, cfg.rope_ref_grid, cfg.rope_temperature, None, cfg.rope_coords, cfg.rope_axes,
                             cfg.rope_offset)
        if axis != "both":                                                        # the first Dh/4 planes: rows for "ij"
            first = (axis == "rows") == (cfg.rope_axes == "ij")
            angles = angles[:, :Dh // 4] if first else angles[:, Dh // 4:]
        return rotary_kernel(angles)

    def resampled_pos_embed(self, grid: tuple[int, int]) -> torch.Tensor | None:
        """Position embeddings for a gh×gw grid: the patch part resized as the family resizes it (bicubic by default;
        ``pos_embed_interp``, ``pos_embed_antialias``, ``pos_embed_ar_preserving``), prefix part untouched.

        Returns (1, prefix_with_pos + gh·gw, D); the fixed sine-cosine table is computed for the new grid instead of
        resized; None when the model has no absolute position embedding.
        """
        cfg = self.cfg
        if self.pos_embed is None or tuple(grid) == cfg.pos_grid:
            return self.pos_embed
        if cfg.pos_embed_kind == "sincos2d":
            return self.sincos_table(tuple(grid)).to(self.pos_embed)
        gh0, gw0 = cfg.pos_grid
        n_pre = self.pos_embed.shape[1] - gh0 * gw0
        prefix, patches = self.pos_embed[:, :n_pre], self.pos_embed[:, n_pre:]
        D = patches.shape[-1]
        patches = patches.reshape(1, gh0, gw0, D).permute(0, 3, 1, 2)  # (1, D, gh0, gw0)
        patches = resize_position_grid(patches, tuple(grid), cfg.pos_embed_interp, cfg.pos_embed_antialias,
                                       cfg.pos_embed_ar_preserving)
        patches = patches.permute(0, 2, 3, 1).reshape(1, grid[0] * grid[1], D)  # (1, gh·gw, D)
        return torch.cat([prefix, patches], dim=1)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """Images (B, C, H, W) -> the tokens entering the first block (B, T, D): [CLS, DIST, REG…, patches],
        position-embedded (and LayerNorm-ed for CLIP's norm_pre)."""
        B, C, H, W = x.shape
        if C != self.cfg.in_chans:
            raise ValueError(f"Wrong number of channels! Expected {self.cfg.in_chans} but got {C}!")
        layout = self.token_layout(H, W)
        x = self.patch_embed(x)  # (B, N, D)
        placed = (self.cls_token, self.dist_token, self.reg_token if self.cfg.pos_embed_registers else None)
        with_pos = [t.expand(B, -1, -1) for t in placed if t is not None]
        pos = self.resampled_pos_embed(layout.grid)
        if pos is None:                                  # pos_embed_kind "none": positions act inside attention, if at all
            x = torch.cat(with_pos + [x], dim=1)        # (B, [CLS, DIST] + N, D)
        elif self.cfg.pos_embed_prefix:
            x = torch.cat(with_pos + [x], dim=1) + pos  # (B, [CLS, DIST] + N, D)
        else:
            x = torch.cat(with_pos + [x + pos], dim=1)
        if self.reg_token is not None and not self.cfg.pos_embed_registers:  # after CLS/DIST, without a position
            n = len(with_pos)
            x = torch.cat([x[:, :n], self.reg_token.expand(B, -1, -1), x[:, n:]], dim=1)  # (B, T, D)
        return self.norm_pre(self.pos_drop(x))

    def forward_head(self, x: torch.Tensor, return_probe: bool = False):
        """Final tokens (B, T, D) -> logits (B, num_classes), the image embedding (B, proj_dim) of a CLIP tower,
        or pooled features (B, D) when there is neither, read out as ``cfg.readout`` says (``vit.readout``).

        With ``return_probe``: ``(output, probe)``, the MAP probe's attention (B, H, T) for "map" / "map_all" pooling
        ("map" attends over the patch tokens only, as timm's attn_pool, so it reads 0 on the prefix), else None.
        """
        pooled, probe = self.pool(x, return_probe)
        features = self.head_drop(self.pre_logits(pooled))
        logits = self.head(self.proj(features))                      # proj: CLIP's image projection
        if self.head_dist is not None:  # DeiT: average the class and distillation heads at inference
            dist_logits = self.head_dist(self.head_drop(self.pre_logits(self.final_norm(x[:, 1:2])[:, 0])))
            logits = (logits + dist_logits) / 2
        return (logits, probe) if return_probe else logits

    def pool(self, x: torch.Tensor, return_probe: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Final tokens (B, T, D) -> (what the head reads (B, D), or (B, 2D) for "cls_mean"; the MAP probe's attention
        (B, H, T) with ``return_probe``, else None): the final norm, the readout, and fc_norm after pooling."""
        n, readout = self.cfg.num_prefix_tokens, self.cfg.readout
        x = self.final_norm(x)
        probe = None
        if self.attn_pool is not None:
            pooled, probe = self.attn_pool(x if readout == "map_all" else x[:, n:], return_probe)  # probe: (B, H, N)
            if probe is not None and readout == "map":
                probe = F.pad(probe, (n, 0))                         # (B, H, T)
        elif readout == "mean":
            pooled = x[:, n:].mean(dim=1)                            # (B, D) mean of patch tokens
        elif readout == "mean_all":
            pooled = x.mean(dim=1)                                   # (B, D) mean of every token
        elif readout == "cls_mean":
            pooled = torch.cat([x[:, 0], x[:, n:].mean(dim=1)], dim=-1)   # (B, 2D) CLS beside the patches' mean
        else:
            pooled = x[:, 0]                                         # (B, D) the CLS token
        return self.fc_norm(pooled), probe

    def final_norm(self, x: torch.Tensor) -> torch.Tensor:
        """The last tokens (B, T, D) normalised as ``forward_head`` reads them: ``norm`` on every token (an identity
        without ``final_norm``, or with ``fc_norm`` after pooling), or with DINOv3's untied norms (``prefix_norm``)
        ``cls_norm`` on the prefix tokens and ``norm`` on the patches."""
        if self.cls_norm is None:
            return self.norm(x)
        n = self.cfg.num_prefix_tokens
        return torch.cat([self.cls_norm(x[:, :n]), self.norm(x[:, n:])], dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Images (B, C, H, W) -> logits (B, num_classes) (or the embedding / features, see ``forward_head``)."""
        positions = self.token_positions(x.shape[-2], x.shape[-1], x.device)  # None for the plain ViT
        x = self.embed(x)
        for blk in self.blocks:
            x, _ = blk(x, False, positions)
        return self.forward_head(x)

    def forward_with_attention(self, x: torch.Tensor, return_token_norms: bool = False) -> AttentionCapture:
        """The output plus every layer's attention, from one forward pass with an explicit softmax.

        Returns ``AttentionCapture(output (B, K), attention (B, L, H, T, T), token_norms, probe_attention)``
        where T = prefix tokens + patches (see ``token_layout``); ``token_norms`` (B, L, T), the L2 norm of
        every token after each block, only with ``return_token_norms``; ``probe_attention`` (B, H, T) only for
        "map" pooling. The attention is the one each block really used (BEiT's relative bias added, EVA-02's
        rotary embedding applied before q·kᵀ). The maps live only in this call's locals, so concurrent calls
        are independent.
        """
        B, T = x.shape[0], self.token_layout(x.shape[-2], x.shape[-1]).num_tokens
        # Filled block by block: stacking a list of maps would hold every map twice at the end (ViT-B/14 at 518:
        # 1 GB each time).
        attn = x.new_empty(B, len(self.blocks), self.cfg.num_heads, T, T)  # (B, L, H, T, T)
        norms = x.new_empty(B, len(self.blocks), T) if return_token_norms else None  # (B, L, T)
        for i, (x, maps) in enumerate(self.blocks_with_attention(x)):       # x: (B, T, D), maps: (B, H, T, T)
            attn[:, i] = maps
            if return_token_norms:
                norms[:, i] = x.norm(dim=-1)
        output, probe = self.forward_head(x, return_probe=True)
        return AttentionCapture(output, attn, norms, probe)

    def blocks_with_attention(self, x: torch.Tensor) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """Images (B, C, H, W) -> after each block in turn, ``(tokens (B, T, D), its attention (B, H, T, T))``.

        The forward pass of ``forward_with_attention`` one block at a time, for callers that reduce each block's
        maps as soon as it has run (``viz.analysis.capture``) instead of keeping all L of them; pass the last
        tokens to ``forward_head``. Nothing is kept between calls.
        """
        positions = self.token_positions(x.shape[-2], x.shape[-1], x.device)
        x = self.embed(x)
        for blk in self.blocks:
            x, maps = blk(x, True, positions)
            yield x, maps


def init_weights(m: nn.Module) -> None:
    """Truncated-normal(0.02) for Linear and patch (or tubelet) weights, zeros for biases, ones/zeros for LayerNorm:
    how timm initialises a ViT, and every model file here its shared modules."""
    if isinstance(m, (nn.Linear, nn.Conv2d, nn.Conv3d)):
        nn.init.trunc_normal_(m.weight, std=0.02)
        if m.bias is not None:
            nn.init.zeros_(m.bias)
    elif isinstance(m, nn.LayerNorm):
        nn.init.ones_(m.weight)
        nn.init.zeros_(m.bias)
