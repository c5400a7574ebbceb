"""Video Vision Transformers written from scratch: the tokens are patches of several frames, and attention runs through
space and time. Four families, one config field per feature (``VideoConfig``):

    VideoMAE   (Tong et al. 2022)   tubelets of 2 frames, a fixed 1-D sine-cosine table over every token, q and v
                                    biases only, joint space-time attention, the mean of the tokens read by fc_norm
    ViViT      (Arnab et al. 2021)  tubelets, a CLS token, one learnt table over CLS and every token, joint
                                    attention (the "spatio-temporal" model 1), the CLS token read
    TimeSformer (Bertasius et al.)  one frame per token, a CLS token, a learnt table over one frame's patches plus one
                                    over the frames, *divided* attention: in every block first each patch attends to
                                    itself in the other frames (time), then each frame's patches attend within
                                    their frame, with the CLS token (space); the CLS token read
    V-JEPA 2   (Assran et al. 2025) tubelets, no CLS token, no position table: 3-D rotary positions (frame, row,
                                    column) on q and k; read by the attentive probe (blocks over the tokens, then
                                    one learnt query attending over them)

    video (B, F, C, H, W), F frames
      -> TubeletEmbed: Conv3d(C, D, kernel=(t, P, P), stride=(t, P, P))   -> (B, N, D), N = F/t · H/P · W/P
         tokens in frame-major order: time position τ, then patch row, then patch column
      -> [CLS] prepended, position embeddings added (or rotary positions handed to every block)
      -> L × Block (joint: vit.model.Block, whose Block.step is the block's arithmetic) or L × DividedBlock
      -> LayerNorm -> readout (CLS, mean of tokens + fc_norm, or the attentive probe) -> head

``model(x)`` is the plain forward (fused attention). ``model.forward_with_attention(x)`` returns the output with the
attention of every step (``VideoCapture``): a joint block is one step, a divided block two (time, then space),
each on its layout in the model's description (``model.architecture(H, W, frames)``, ``vit.architecture``):
(B, H, T, T) where every token attends to every token, (B, G, H, n, n) inside G groups of n tokens
(``BlockLayout.groups`` says which). The maps are computed inside the call (explicit softmax, no hooks, no module
state), so concurrent calls never mix.
"""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from typing import Callable, Iterator, NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from .architecture import Architecture, BlockLayout
from .model import (Attention, Block, DropPath, FusedAttentionSwitch, Mlp, TokenLayout, ViTConfig, attention_rows,
                    init_weights)
from .positions import TokenPositions

ATTENTION_KINDS = ("joint", "divided")
VIDEO_POS_EMBEDS = ("sincos", "learned", "space_time", "rope3d")
VIDEO_POOLS = ("token", "avg", "probe")
VIDEO_FAMILIES = ("videomae", "vivit", "timesformer", "vjepa2")   # VideoConfig.family
READOUT_OF_POOL = {"token": "cls", "avg": "mean", "probe": "map"}   # VideoConfig.global_pool -> Architecture.readout
# How a caller computes a step's attention itself: (q, k, v (B·G, H, n, Dh) inside the step's groups, batch-major, the
# step: its BlockLayout, or "time"/"space" inside DividedBlock.step) -> attn @ v (B·G, H, n, Dh)
Attend = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, object], torch.Tensor]


@dataclass(frozen=True)
class VideoConfig:
    img_size: tuple[int, int] = (224, 224)  # frame size (H, W) the model takes
    num_frames: int = 16           # F: input frames of a clip (the learnt tables are for this many)
    tubelet_size: int = 2          # t: input frames one token covers (1: one frame per token, TimeSformer)
    patch_size: int = 16           # P: side of a square patch in pixels
    in_chans: int = 3
    num_classes: int = 400         # classifier outputs (Kinetics-400 by default); 0: no head
    embed_dim: int = 768           # D
    depth: int = 12                # L: blocks
    num_heads: int = 12            # H
    mlp_dim: int = 3072            # hidden width of each block's MLP
    qkv_bias: bool = True
    k_bias: bool = True            # with qkv_bias: a key bias too; False: q and v biases only (VideoMAE)
    attention: str = "joint"       # "joint" (every token attends to every token) or "divided" (TimeSformer)
    class_token: bool = False      # prepend a CLS token (ViViT, TimeSformer)
    # "sincos": VideoMAE's fixed 1-D sine-cosine table over the token index; "learned": one table over CLS and every
    # token (ViViT); "space_time": a table over CLS and one frame's patches plus one over the frames (TimeSformer);
    # "rope3d": V-JEPA 2's rotary positions (frame, row, column), no table
    pos_embed: str = "sincos"
    global_pool: str = "avg"       # "token": CLS; "avg": mean of the tokens, then fc_norm; "probe": attentive probe
    layer_norm_eps: float = 1e-6   # every LayerNorm but fc_norm
    fc_norm_eps: float = 1e-5      # "avg": fc_norm's epsilon (transformers' VideoMAE uses torch's default)
    mlp_act: str = "gelu"          # vit.model.MLP_ACTIVATIONS: "gelu", "gelu_tanh" (ViViT's gelu_fast), …
    probe_depth: int = 3           # "probe": self-attention blocks before the probe's query
    probe_mlp_dim: int = 4096      # "probe": MLP width of the probe's blocks and cross-attention (4·D in V-JEPA 2)
    drop_rate: float = 0.0
    attn_drop_rate: float = 0.0
    drop_path_rate: float = 0.0

    def __post_init__(self):
        if isinstance(self.img_size, int):
            object.__setattr__(self, "img_size", (self.img_size, self.img_size))
        object.__setattr__(self, "img_size", tuple(int(s) for s in self.img_size))
        if self.attention not in ATTENTION_KINDS:
            raise ValueError(f"attention must be one of {ATTENTION_KINDS} but got {self.attention!r}!")
        if self.pos_embed not in VIDEO_POS_EMBEDS:
            raise ValueError(f"pos_embed must be one of {VIDEO_POS_EMBEDS} but got {self.pos_embed!r}!")
        if self.global_pool not in VIDEO_POOLS:
            raise ValueError(f"global_pool must be one of {VIDEO_POOLS} but got {self.global_pool!r}!")
        if self.global_pool == "token" and not self.class_token:
            raise ValueError("global_pool='token' needs class_token=True!")
        if self.attention == "divided" and (self.tubelet_size != 1 or not self.class_token):
            raise ValueError("Divided attention (TimeSformer) needs one frame per token (tubelet_size=1) and a CLS "
                             "token!")
        if (self.pos_embed == "space_time") != (self.attention == "divided"):
            raise ValueError("pos_embed='space_time' (a table per frame's patches and one over frames) goes with "
                             "divided attention, and divided attention with it!")
        if self.pos_embed == "rope3d" and self.class_token:
            raise ValueError("pos_embed='rope3d' (V-JEPA 2) rotates every token by its place: no CLS token!")
        if self.embed_dim % self.num_heads:
            raise ValueError(f"embed_dim {self.embed_dim} is not divisible by num_heads {self.num_heads}!")
        if self.num_frames % self.tubelet_size or self.num_frames < 1:
            raise ValueError(f"num_frames {self.num_frames} is not a positive multiple of tubelet_size "
                             f"{self.tubelet_size}!")
        for side in self.img_size:
            if side % self.patch_size:
                raise ValueError(f"img_size {self.img_size} is not divisible by patch_size {self.patch_size}!")

    @property
    def grid(self) -> tuple[int, int]:
        """Native patch grid (gh, gw) of one frame."""
        return self.img_size[0] // self.patch_size, self.img_size[1] // self.patch_size

    @property
    def time_positions(self) -> int:
        """T': tokens along time for the native clip (num_frames / tubelet_size)."""
        return self.num_frames // self.tubelet_size

    @property
    def num_prefix_tokens(self) -> int:
        return int(self.class_token)

    @property
    def family(self) -> str:
        """"timesformer", "vjepa2", "vivit" or "videomae": the family these features make."""
        if self.attention == "divided":
            return "timesformer"
        if self.pos_embed == "rope3d":
            return "vjepa2"
        return "vivit" if self.class_token else "videomae"

    def block_config(self, mlp_dim: int | None = None) -> ViTConfig:
        """The ViTConfig a block of this model is built from (vit.model's Block, Attention and Mlp read it)."""
        return ViTConfig(embed_dim=self.embed_dim, depth=self.depth, num_heads=self.num_heads,
                         mlp_dim=mlp_dim or self.mlp_dim, qkv_bias=self.qkv_bias, k_bias=self.k_bias,
                         layer_norm_eps=self.layer_norm_eps, mlp_act=self.mlp_act, drop_rate=self.drop_rate,
                         attn_drop_rate=self.attn_drop_rate, patch_size=self.patch_size, img_size=self.img_size)


class VideoCapture(NamedTuple):
    """What ``VideoTransformer.forward_with_attention`` returns: the output and the attention behind it."""
    output: torch.Tensor                     # (B, K) logits; (B, D) pooled features without a head
    attention: list[torch.Tensor]            # per step (block of the description), in forward order, on its layout:
    # (B, H, T, T) for a step where every token attends to every token, (B, G, H, n, n) inside the step's G groups of
    # n tokens (TimeSformer's time and space steps: ``BlockLayout.groups``)
    architecture: Architecture               # the steps' layouts (``architecture.blocks[i]`` for step i)
    probe_attention: torch.Tensor | None     # (B, H, T'·N) V-JEPA 2: the probe query's attention over the patches
    token_norms: list[torch.Tensor] | None   # per step: (B, T) L2 norm of every token after it, when asked


def sincos_1d_table(length: int, dim: int) -> torch.Tensor:
    """VideoMAE's fixed table (1, length, dim) float32: token i, channel j gets sin(i / 10000^(2⌊j/2⌋/dim)) for even j,
    cos of the same angle for odd j (the Transformer's table, over the flattened token index)."""
    i = torch.arange(length, dtype=torch.float64)[:, None]
    j = torch.arange(dim, dtype=torch.float64)[None, :]
    angle = i / torch.pow(torch.tensor(10000.0, dtype=torch.float64), 2 * torch.div(j, 2, rounding_mode="floor") / dim)
    table = torch.where(j.long() % 2 == 0, angle.sin(), angle.cos())
    return table.float().unsqueeze(0)


def rope3d_tables(frames: int, grid: tuple[int, int], head_dim: int, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """V-JEPA 2's rotary positions as (sin, cos), each (T'·gh·gw, Dh) in ``apply_rope``'s neighbouring-plane layout.

    The head is cut into three parts of d = 2⌊⌊Dh/3⌋/2⌋ channels, turned by the token's time position, row and column;
    the last Dh − 3d channels are not turned. Inside a part, channel k turns by pos · ω_(k mod d/2) with
    ω_i = 10000^(−i/(d/2)): the d/2 frequencies laid out twice ([ω_0 … ω_(d/2−1), ω_0 … ω_(d/2−1)]) while the channels
    are paired with their neighbours (x_2i, x_2i+1), exactly V-JEPA 2's arithmetic (a pair's two channels may turn
    by different angles)."""
    gh, gw = grid
    d = 2 * ((head_dim // 3) // 2)
    omega = torch.arange(d // 2, dtype=torch.float32, device=device) / (d / 2.0)
    omega = 1.0 / 10000 ** omega                                               # (d/2,)
    ids = torch.arange(frames * gh * gw, device=device)
    places = (ids // (gh * gw), (ids % (gh * gw)) // gw, ids % gw)              # time, row, column of every token
    sin = torch.zeros(ids.numel(), head_dim, device=device)
    cos = torch.ones(ids.numel(), head_dim, device=device)
    for part, pos in enumerate(places):
        angle = pos.float()[:, None] * omega                                   # (N, d/2)
        sin[:, part * d:(part + 1) * d] = angle.sin().repeat(1, 2)
        cos[:, part * d:(part + 1) * d] = angle.cos().repeat(1, 2)
    return sin, cos


class TubeletEmbed(nn.Module):
    """Cut the clip into t×P×P tubelets and project each to D dims with one strided Conv3d."""

    def __init__(self, cfg: VideoConfig):
        super().__init__()
        t, P = cfg.tubelet_size, cfg.patch_size
        self.proj = nn.Conv3d(cfg.in_chans, cfg.embed_dim, kernel_size=(t, P, P), stride=(t, P, P))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.proj(x.transpose(1, 2))          # (B, F, C, H, W) -> (B, D, T', gh, gw)
        return x.flatten(2).transpose(1, 2)       # (B, T'·gh·gw, D), frame-major


@dataclass
class DividedStep:
    """What one ``DividedBlock.step`` computed (B clips, T' frames, N patches per frame, H heads)."""
    out: torch.Tensor                        # (B, 1 + T'·N, D) the stream after the block
    after_time: torch.Tensor                 # (B, 1 + T'·N, D) the stream after the time step
    time_attn: torch.Tensor | None           # (B, N, H, T', T') each patch place's attention through time
    space_attn: torch.Tensor | None          # (B, T', H, 1 + N, 1 + N) each frame's attention, CLS first
    time_qk: tuple[torch.Tensor, torch.Tensor] | None = None    # (q, k), each (B, N, H, T', Dh), with "qk"
    space_qk: tuple[torch.Tensor, torch.Tensor] | None = None   # (q, k), each (B, T', H, 1 + N, Dh), with "qk"


class DividedBlock(nn.Module):
    """TimeSformer's block: time attention, space attention, MLP (module names as the original TimeSformer's)."""

    def __init__(self, cfg: VideoConfig, drop_path: float):
        super().__init__()
        block = cfg.block_config()
        D, eps = cfg.embed_dim, cfg.layer_norm_eps
        self.temporal_norm1 = nn.LayerNorm(D, eps=eps)
        self.temporal_attn = Attention(block)
        self.temporal_fc = nn.Linear(D, D)
        self.norm1 = nn.LayerNorm(D, eps=eps)
        self.attn = Attention(block)
        self.norm2 = nn.LayerNorm(D, eps=eps)
        self.mlp = Mlp(block)
        self.drop_path = DropPath(drop_path)

    def forward(self, x: torch.Tensor, frames: int, return_attn: bool = False) -> tuple[torch.Tensor, None]:
        return self.step(x, frames, ("attn",) if return_attn else ()).out, None

    def step(self, x: torch.Tensor, frames: int, taps: tuple[str, ...] = (), attend: Attend | None = None
             ) -> DividedStep:
        """The block's computation, the one every pass runs; x (B, 1 + T'·N, D), CLS first, patches frame-major:

            time:   each patch place's T' tokens attend to each other:
                    x_p = x_p + temporal_fc(temporal_attn(temporal_norm1(x_p)))
            space:  each frame's N patches attend together with the CLS token:
                    patches += attn(norm1([CLS, frame]))[patches];  CLS += mean over frames of its per-frame output
            MLP:    x = x + mlp(norm2(x))

        ``taps``: "attn" keeps both steps' attention (the explicit softmax), "qk" their queries and keys (the fused
        kernel runs; ``vit.model.attention_rows`` recomputes any rows from them). ``attend(q, k, v, "time" or
        "space")``: computes each step's attn @ v instead of its Attention (a caller reducing the maps as they come)."""
        B, T, D = x.shape
        N = (T - 1) // frames
        explicit = "attn" in taps
        cls, patches = x[:, :1], x[:, 1:]
        places = patches.reshape(B, frames, N, D).transpose(1, 2).reshape(B * N, frames, D)
        q, k, v = self.temporal_attn.project(self.temporal_norm1(places))              # (B·N, H, T', Dh)
        h, time_attn = (attend(q, k, v, "time"), None) if attend else self.temporal_attn.attend(q, k, v, None, explicit)
        time_qk = (q, k) if "qk" in taps else None
        h = self.temporal_fc(self.drop_path(self.temporal_attn.merge(h)))              # (B·N, T', D)
        h = h.reshape(B, N, frames, D).transpose(1, 2).reshape(B, frames * N, D)
        patches = patches + h                                                          # (B, T'·N, D)
        per_frame = torch.cat([cls.expand(B, frames, D).reshape(B * frames, 1, D),
                               patches.reshape(B * frames, N, D)], dim=1)              # (B·T', 1 + N, D)
        q, k, v = self.attn.project(self.norm1(per_frame))                             # (B·T', H, 1 + N, Dh)
        s, space_attn = (attend(q, k, v, "space"), None) if attend else self.attn.attend(q, k, v, None, explicit)
        space_qk = (q, k) if "qk" in taps else None
        s = self.attn.merge(s).reshape(B, frames, 1 + N, D)
        space = torch.cat([s[:, :, 0].mean(dim=1, keepdim=True), s[:, :, 1:].reshape(B, frames * N, D)], dim=1)
        after_time = torch.cat([cls, patches], dim=1)
        x = after_time + self.drop_path(space)
        x = x + self.drop_path(self.mlp(self.norm2(x)))
        grouped = lambda t, G: t.reshape(B, G, *t.shape[1:])                          # noqa: E731  (B, G, H, …)
        if explicit and not attend:
            time_attn, space_attn = grouped(time_attn, N), grouped(space_attn, frames)
        if time_qk is not None:
            time_qk = tuple(grouped(t, N) for t in time_qk)
            space_qk = tuple(grouped(t, frames) for t in space_qk)
        return DividedStep(x, after_time, time_attn, space_attn, time_qk, space_qk)


class AttentiveProbe(nn.Module):
    """V-JEPA 2's attentive probe: ``probe_depth`` pre-norm self-attention blocks over the tokens (vit.model.Block),
    then one learnt query attending over them (cross-attention without an output projection, the query itself as the
    residual) and an MLP: the pooled feature the head reads."""

    def __init__(self, cfg: VideoConfig):
        super().__init__()
        D = cfg.embed_dim
        block = cfg.block_config(cfg.probe_mlp_dim)
        self.num_heads, self.head_dim = cfg.num_heads, D // cfg.num_heads
        self.blocks = nn.ModuleList([Block(block, 0.0) for _ in range(cfg.probe_depth)])
        self.query = nn.Parameter(torch.zeros(1, 1, D))
        self.kv_norm = nn.LayerNorm(D, eps=cfg.layer_norm_eps)
        self.q = nn.Linear(D, D)
        self.kv = nn.Linear(D, 2 * D)
        self.mlp_norm = nn.LayerNorm(D, eps=cfg.layer_norm_eps)
        self.mlp = Mlp(block)
        self.fused_attn = True

    def read(self, x: torch.Tensor, return_attn: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Tokens after the probe's blocks (B, N, D) -> (pooled (B, D), the query's attention (B, H, N) if asked)."""
        B, N, D = x.shape
        H, Dh = self.num_heads, self.head_dim
        q = self.q(self.query).reshape(1, H, 1, Dh).expand(B, -1, -1, -1)              # (B, H, 1, Dh)
        k, v = self.kv(self.kv_norm(x)).reshape(B, N, 2, H, Dh).permute(2, 0, 3, 1, 4).unbind(0)  # (B, H, N, Dh)
        attn = None
        if self.fused_attn and not return_attn:
            out = F.scaled_dot_product_attention(q, k, v)
        else:
            attn = ((q * Dh ** -0.5) @ k.transpose(-2, -1)).softmax(dim=-1)              # (B, H, 1, N)
            out = attn @ v
            attn = attn[:, :, 0]
        pooled = self.query[:, 0] + out.transpose(1, 2).reshape(B, D)                  # (B, D)
        return pooled + self.mlp(self.mlp_norm(pooled)), attn


class VideoTransformer(FusedAttentionSwitch, nn.Module):
    def __init__(self, cfg: VideoConfig):
        super().__init__()
        self.cfg = cfg
        D = cfg.embed_dim
        self.patch_embed = TubeletEmbed(cfg)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, D)) if cfg.class_token else None
        N, Tp = cfg.grid[0] * cfg.grid[1], cfg.time_positions
        self.pos_embed = self.time_embed = None
        if cfg.pos_embed == "learned":                       # (1, [CLS] + T'·N, D)
            self.pos_embed = nn.Parameter(torch.zeros(1, cfg.num_prefix_tokens + Tp * N, D))
        elif cfg.pos_embed == "space_time":                  # (1, CLS + N, D) per frame, (1, T', D) per frame index
            self.pos_embed = nn.Parameter(torch.zeros(1, 1 + N, D))
            self.time_embed = nn.Parameter(torch.zeros(1, Tp, D))
        self.pos_drop = nn.Dropout(cfg.drop_rate)
        rates = [cfg.drop_path_rate * i / max(cfg.depth - 1, 1) for i in range(cfg.depth)]
        if cfg.attention == "divided":
            self.blocks = nn.ModuleList([DividedBlock(cfg, r) for r in rates])
        else:
            self.blocks = nn.ModuleList([Block(cfg.block_config(), r) for r in rates])
        self.norm = nn.Identity() if cfg.global_pool == "avg" else nn.LayerNorm(D, eps=cfg.layer_norm_eps)
        self.fc_norm = nn.LayerNorm(D, eps=cfg.fc_norm_eps) if cfg.global_pool == "avg" else nn.Identity()
        self.probe = AttentiveProbe(cfg) if cfg.global_pool == "probe" else None
        self.head_drop = nn.Dropout(cfg.drop_rate)
        self.head = nn.Linear(D, cfg.num_classes) if cfg.num_classes else nn.Identity()
        self.apply(init_weights)
        for p in (self.cls_token, self.pos_embed, self.time_embed):
            if p is not None:
                nn.init.trunc_normal_(p, std=0.02)
        if self.probe is not None:
            nn.init.trunc_normal_(self.probe.query, std=0.02)

    def check_clip(self, frames: int, height: int, width: int) -> tuple[int, tuple[int, int]]:
        """(time positions, patch grid) of a clip of ``frames`` frames of height×width pixels; ValueError with the
        sizes this model takes when it does not take this one."""
        cfg = self.cfg
        P, t = cfg.patch_size, cfg.tubelet_size
        if (height, width) != cfg.img_size:
            raise ValueError(f"Wrong frame size! This model's position {'rotation' if cfg.pos_embed == 'rope3d' else 'table'}"
                             f" is for {cfg.img_size[0]}×{cfg.img_size[1]} frames but got {height}×{width}.")
        fixed = cfg.pos_embed in ("learned", "space_time")
        if frames < t or frames % t or (fixed and frames != cfg.num_frames):
            expect = f"exactly {cfg.num_frames} frames" if fixed else f"a positive multiple of {t} frames"
            raise ValueError(f"Wrong number of frames! Expected {expect} (the model's tubelets are {t} frame"
                             f"{'s' if t > 1 else ''} deep) but got {frames}.")
        return frames // t, (height // P, width // P)

    def architecture(self, height: int, width: int, frames: int | None = None) -> Architecture:
        """The description of this model for clips of ``frames`` frames (default: its own count) of height×width
        pixels: one block per attention step, in forward order (``vit.architecture``): a joint block attends over
        every token; a divided block is two steps, "time" then "space"; V-JEPA 2's probe blocks follow the encoder's.
        The readout: the CLS token, the mean of the tokens, or the attentive probe ("map")."""
        cfg = self.cfg
        time_positions, grid = self.check_clip(frames or cfg.num_frames, height, width)
        steps = ("time", "space") if cfg.attention == "divided" else ("all",)
        kinds = [s for _ in self.blocks for s in steps] + ["all"] * (len(self.probe.blocks) if self.probe else 0)
        blocks = tuple(BlockLayout(index=i, stage=0, block=i, heads=cfg.num_heads, grid=grid,
                                   token_size=cfg.patch_size, prefix=cfg.num_prefix_tokens, frames=time_positions,
                                   tubelet=cfg.tubelet_size, attends=kind) for i, kind in enumerate(kinds))
        return Architecture(cfg.family, blocks, READOUT_OF_POOL[cfg.global_pool], cfg.patch_size)

    def token_layout(self, height: int, width: int) -> TokenLayout:
        """The prefix tokens and the patch grid of one frame (the stream holds frames × that grid)."""
        return TokenLayout(self.cfg.num_prefix_tokens, self.cfg.grid if (height, width) == self.cfg.img_size
                           else self.check_clip(self.cfg.num_frames, height, width)[1])

    def eval_layout(self, x: torch.Tensor, purpose: str) -> TokenLayout:
        """Token layout of clips x (B, F, C, H, W) for a ``purpose`` ("Explanations") that must see the model as it
        predicts: ValueError in training mode (dropout on) or for a wrong shape."""
        if self.training:
            raise ValueError(f"{purpose} need the model in eval mode (dropout off)! Call model.eval() first.")
        if x.ndim != 5:
            raise ValueError(f"Wrong input shape! Expected clips (B, frames, channels, H, W) but got {tuple(x.shape)}.")
        self.check_clip(x.shape[1], x.shape[-2], x.shape[-1])
        return self.token_layout(x.shape[-2], x.shape[-1])

    def position_table(self) -> tuple[None, str, tuple[int, int]]:
        """(None, "none", the frame's grid): a photo's position table (Figure 7's centre) has no counterpart here (the
        positions run through space and time, or are rotations); the image-free arrays read this (``model_arrays``)."""
        return None, "none", self.cfg.grid

    def rotary_kernel(self) -> None:
        """None: no photo-grid similarity of positions is drawn for a video model."""
        return None

    def patch_projection(self) -> tuple[str, int]:
        """Where an explanation's graph starts (``vit.explain.passes``): the tubelet embedding's output (B, N, D)."""
        return "patch_embed", -1

    def gradcam_layer(self) -> str:
        """Grad-CAM's activation (``vit.explain.gradient_pass``): the tokens the last attention step reads, its
        LayerNorm's output: the last block's ``norm1`` (TimeSformer's: the space step's, over each frame's group,
        ``BlockLayout.groups``), or the last probe block's for V-JEPA 2."""
        if self.probe is not None:
            return f"probe.blocks.{len(self.probe.blocks) - 1}.norm1"
        return f"blocks.{len(self.blocks) - 1}.norm1"

    def token_positions(self, frames: int, grid: tuple[int, int], device=None) -> TokenPositions | None:
        """V-JEPA 2's rotary tables for ``frames`` time positions of a gh×gw grid; None for the other families."""
        if self.cfg.pos_embed != "rope3d":
            return None
        return TokenPositions(0, rope3d_tables(frames, grid, self.cfg.embed_dim // self.cfg.num_heads, device), None)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """Clips (B, F, C, H, W) -> the tokens entering the first block (B, T, D): [CLS], then frame-major patches,
        position-embedded."""
        if x.ndim != 5:
            raise ValueError(f"Wrong input shape! Expected clips (B, frames, channels, H, W) but got {tuple(x.shape)}.")
        B, Fr, C, H, W = x.shape
        if C != self.cfg.in_chans:
            raise ValueError(f"Wrong number of channels! Expected {self.cfg.in_chans} but got {C}.")
        frames, (gh, gw) = self.check_clip(Fr, H, W)
        x = self.patch_embed(x)                                               # (B, T'·N, D)
        kind = self.cfg.pos_embed
        if kind == "sincos":
            x = x + sincos_1d_table(x.shape[1], x.shape[2]).to(x)
        if self.cls_token is not None:
            x = torch.cat([self.cls_token.expand(B, -1, -1), x], dim=1)       # (B, 1 + T'·N, D)
        if kind == "learned":
            x = x + self.pos_embed
        elif kind == "space_time":
            N, D = gh * gw, x.shape[2]
            patches = x[:, 1:].reshape(B, frames, N, D) + self.pos_embed[:, None, 1:]          # + place
            patches = patches + self.time_embed[:, :, None]                                    # + frame
            x = torch.cat([x[:, :1] + self.pos_embed[:, :1], patches.reshape(B, -1, D)], dim=1)
        return self.pos_drop(x)

    def steps(self, x: torch.Tensor, keep: str | None = "attn", attend: Attend | None = None) -> Iterator[StepOutput]:
        """Clips (B, F, C, H, W) -> a ``StepOutput`` after each attention step in turn (each block of the
        description): the stream (B, T, D) after a joint block, a divided block's time step and its space step (with
        the MLP); then the probe's blocks' tokens (B, T'·N, D) after the final norm. ``keep``: "attn" each step's
        attention (explicit softmax), "qk" its queries and keys (the fused kernel runs), None nothing. ``attend``:
        computes every step's attn @ v from its q, k, v instead (``Attend``; a caller that reduces each step's maps
        as they come, a chunk of rows at a time). The forward pass of every call below."""
        blocks = iter(self.architecture(x.shape[3], x.shape[4], x.shape[1]).blocks)
        frames, grid = self.check_clip(x.shape[1], x.shape[3], x.shape[4])
        positions = self.token_positions(frames, grid, x.device)
        taps = (keep,) if keep else ()
        x = self.embed(x)

        def joint(blk: Block, x: torch.Tensor, block: BlockLayout, positions) -> StepOutput:
            if attend is None:
                s = blk.step(x, positions, taps)
                return StepOutput(s.out, s.attn, _group(s.q), _group(s.k), block)
            q, k, v = blk.attn.project(blk.attention_input(x))
            q, k = blk.attn.positioned(q, k, positions)
            s = blk.step(x, positions, heads=attend(q, k, v, block))
            return StepOutput(s.out, None, _group(q), _group(k), block)

        for blk in self.blocks:
            if isinstance(blk, DividedBlock):
                time, space = next(blocks), next(blocks)
                steps = {"time": time, "space": space}
                s = blk.step(x, frames, taps, attend and (lambda q, k, v, which: attend(q, k, v, steps[which])))
                yield StepOutput(s.after_time, s.time_attn, *(s.time_qk or (None, None)), time)
                x = s.out
                yield StepOutput(x, s.space_attn, *(s.space_qk or (None, None)), space)
            else:
                out = joint(blk, x, next(blocks), positions)
                x = out.tokens
                yield out
        if self.probe is not None:
            x = self.norm(x)
            for blk in self.probe.blocks:
                out = joint(blk, x, next(blocks), None)
                x = out.tokens
                yield out

    def blocks_with_attention(self, x: torch.Tensor) -> Iterator[tuple[torch.Tensor, torch.Tensor, BlockLayout]]:
        """After each attention step in turn ``(tokens, its attention on its layout, its BlockLayout)``: (B, H, T, T)
        where every token attends to every token, (B, G, H, n, n) inside groups; for callers that reduce each step's
        maps as soon as it has run; pass the last tokens to ``forward_head``."""
        for step in self.steps(x, keep="attn"):
            yield step.tokens, step.attention, step.block

    def blocks_with_queries_and_keys(self, x: torch.Tensor
                                     ) -> Iterator[tuple[torch.Tensor, torch.Tensor, torch.Tensor, BlockLayout]]:
        """After each attention step in turn ``(tokens, q, k, its BlockLayout)``, q and k (B, G, H, n, Dh) inside the
        step's groups (one group of every token for a joint step) with the positions applied: the plain forward's
        speed (the fused kernel), and any rows of the step's attention recomputable later, ``step_attention(q, k,
        scale)`` (attention on demand: 1,568 tokens' maps need not all exist at once)."""
        for step in self.steps(x, keep="qk"):
            yield step.tokens, step.q, step.k, step.block

    @property
    def attention_scale(self) -> float:
        """1/√Dh: the scale of every step's q·kᵀ."""
        return (self.cfg.embed_dim // self.cfg.num_heads) ** -0.5

    def forward_head(self, x: torch.Tensor, return_probe: bool = False):
        """The last tokens -> logits (B, K) (pooled features without a head); with ``return_probe`` also the probe
        query's attention (B, H, T'·N) (None without a probe). For a probe, ``x`` is the output of its last block."""
        readout = None
        if self.probe is not None:
            pooled, readout = self.probe.read(x, return_probe)
        elif self.cfg.global_pool == "avg":
            pooled = self.fc_norm(self.norm(x)[:, self.cfg.num_prefix_tokens:].mean(dim=1))
        else:
            pooled = self.norm(x)[:, 0]
        logits = self.head(self.head_drop(pooled))
        return (logits, readout) if return_probe else logits

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Clips (B, F, C, H, W) -> logits (B, num_classes)."""
        for step in self.steps(x, keep=None):
            x = step.tokens
        return self.forward_head(x)

    def forward_with_attention(self, x: torch.Tensor, return_token_norms: bool = False) -> VideoCapture:
        """The output plus every step's attention on its layout, from one forward pass with an explicit softmax
        (``VideoCapture``), and V-JEPA 2's probe attention. Nothing is kept on the module."""
        architecture = self.architecture(x.shape[3], x.shape[4], x.shape[1])
        maps, norms = [], [] if return_token_norms else None
        for x, attn, _ in self.blocks_with_attention(x):
            maps.append(attn)
            if norms is not None:
                norms.append(x.norm(dim=-1))
        output, probe = self.forward_head(x, return_probe=True)
        return VideoCapture(output, maps, architecture, probe, norms)


class StepOutput(NamedTuple):
    """One attention step of ``VideoTransformer.steps``: the stream after it, what it kept, its layout."""
    tokens: torch.Tensor                 # (B, T, D) the stream after the step (the probe's: (B, T'·N, D))
    attention: torch.Tensor | None       # softmax attention on the step's layout, when kept ((B, H, T, T) or
    #                                      (B, G, H, n, n) inside groups)
    q: torch.Tensor | None               # (B, G, H, n, Dh) queries, positions applied, when kept
    k: torch.Tensor | None               # (B, G, H, n, Dh) keys, positions applied, when kept
    block: BlockLayout                   # the step in the model's description


def _group(t: torch.Tensor | None) -> torch.Tensor | None:
    """A joint step's (B, H, …) as one group: (B, 1, H, …)."""
    return None if t is None else t.unsqueeze(1)


def step_attention(q: torch.Tensor, k: torch.Tensor, scale: float, rows: torch.Tensor | None = None) -> torch.Tensor:
    """A step's attention recomputed from its kept queries and keys (B, G, H, n, Dh) -> (B, G, H, n or rows, n)
    float32, equal to the explicit softmax of the forward up to the rounding of q and k (``vit.model.attention_rows``,
    a chunk of rows at a time)."""
    B, G = q.shape[:2]
    flat = attention_rows(q.flatten(0, 1), k.flatten(0, 1), scale, queries=rows)
    return flat.reshape(B, G, *flat.shape[1:])




def in_turns(steps: Iterator, turn=None) -> Iterator:
    """``steps`` (``VideoTransformer.steps`` or ``blocks_with_attention``) each computed inside ``turn``, a context
    manager taken once per attention step (a server's model turn, which stops a job whose visitor has gone before its
    next step); None: no turn."""
    turn = nullcontext() if turn is None else turn
    while True:
        with turn:
            step = next(steps, None)
        if step is None:
            return
        yield step
