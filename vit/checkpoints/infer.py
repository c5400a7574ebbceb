"""A ViTConfig read off a state dict in our key names: widths, depth, patch, tokens and head from tensor shapes.

Only the number of heads is invisible in the shapes (qkv is (3D, D) for any H); it comes from metadata
(a Hugging Face config, a Google kernel, a sidecar JSON) or the paper's variants, else 64 dims per head.
The family features are read off their tensors too (norm_pre, attn_pool, q_bias, a relative-position
table, SwiGLU's fc1_g, proj); what no tensor shows (QuickGELU, EVA-02's rotary embedding) follows the
family's convention, see ``infer_config``.
"""
from __future__ import annotations

import dataclasses
import math
import re

from ..model import ViTConfig
from ..positions import grid_from_relative_positions

# Heads of the paper's and DeiT's variants by width; H/14 uses 80 dims per head, so 1280 // 64 would be wrong
# (as would 1664 // 64 for CLIP's ViT-bigG/14, 16 heads of 104).
STANDARD_HEADS = {192: 3, 384: 6, 768: 12, 1024: 16, 1280: 16, 1664: 16}
HEAD_DIM = 64
EVA02_ROPE_REF_GRID = (16, 16)  # timm's ref_feat_shape of every eva02_* model: the 224/14 grid it was pretrained on
CLIP_LAYER_NORM_EPS = 1e-5      # OpenAI's, open_clip's, timm's and Hugging Face's CLIP towers use torch's default


def default_num_heads(embed_dim: int) -> int:
    return STANDARD_HEADS.get(embed_dim) or max(embed_dim // HEAD_DIM, 1)


def infer_config(sd: dict, **overrides) -> ViTConfig:
    """Config for a state dict in our (timm's) key names; ``overrides`` (any ViTConfig field) win.

    ``img_size`` may differ from the checkpoint's own grid; ``checkpoint_grid`` then tells where the
    position embeddings come from so the loader can resample them.
    """
    if "patch_embed.proj.weight" not in sd:
        raise ValueError("Cannot infer a ViT config: no patch embedding (patch_embed.proj.weight) in the checkpoint.")
    D, C, P, P2 = sd["patch_embed.proj.weight"].shape
    if P != P2:
        raise ValueError(f"Only square patches are supported! Got a {P}×{P2} patch embedding.")
    blocks = {int(m[1]) for k in sd if (m := re.match(r"blocks\.(\d+)\.", k))}
    if not blocks:
        raise ValueError("Cannot infer a ViT config: the checkpoint has no transformer blocks (blocks.N.*).")
    class_token, distilled = "cls_token" in sd, "dist_token" in sd
    swiglu = "blocks.0.mlp.fc1_g.weight" in sd
    qv_bias_only = "blocks.0.attn.q_bias" in sd                 # BEiT / EVA-02: no key bias
    fc1 = sd.get("blocks.0.mlp.fc1_g.weight" if swiglu else "blocks.0.mlp.fc1.weight")
    fields = dict(
        patch_size=int(P), in_chans=int(C), embed_dim=int(D), depth=max(blocks) + 1,
        mlp_dim=int(fc1.shape[0]) if fc1 is not None else 4 * int(D),
        qkv_bias="blocks.0.attn.qkv.bias" in sd or qv_bias_only, k_bias=not qv_bias_only,
        class_token=class_token, distilled=distilled,
        num_reg_tokens=int(sd["reg_token"].shape[1]) if "reg_token" in sd else 0,
        layer_scale="blocks.0.ls1.gamma" in sd,
        num_classes=int(sd["head.weight"].shape[0]) if "head.weight" in sd else 0,
        representation_size=int(sd["pre_logits.0.weight"].shape[0]) if "pre_logits.0.weight" in sd else None,
        patch_bias="patch_embed.proj.bias" in sd,
        norm_pre="norm_pre.weight" in sd,
        rel_pos_bias="blocks.0.attn.relative_position_bias_table" in sd,
        attn_norm="blocks.0.attn.norm.weight" in sd,
        mlp_norm="blocks.0.mlp.norm.weight" in sd,
        proj_dim=int(sd["proj.weight"].shape[0]) if "proj.weight" in sd else None,
        prefix_norm="cls_norm.weight" in sd,                     # DINOv3's untied norm of CLS and registers
    )
    if swiglu:
        fields.update(mlp_act="swiglu")
        if qv_bias_only:  # EVA-02's signature (SwiGLU + q/v biases); its rotary angles are not in the file
            fields.update(rope=True, rope_ref_grid=EVA02_ROPE_REF_GRID)
    if fields["norm_pre"]:  # a CLIP tower
        fields.update(layer_norm_eps=CLIP_LAYER_NORM_EPS)
    if "attn_pool.latent" in sd:
        fields.update(global_pool="map")
    elif "fc_norm.weight" in sd:
        fields.update(global_pool="avg", fc_norm=True)
    elif not class_token:
        fields.update(global_pool="avg")
    if "pos_embed" in sd:
        fields.update(_pos_embed_fields(sd, class_token + distilled, int(P), overrides))
    else:
        fields.update(pos_embed_kind="none", **_grid_without_pos_embed(sd, int(P), overrides))
    table = sd.get("blocks.0.attn.relative_position_bias_table")  # BEiT's table has one column per head
    fields["num_heads"] = int(table.shape[1]) if table is not None else default_num_heads(int(D))
    known = {f.name for f in dataclasses.fields(ViTConfig)}
    unknown = set(overrides) - known
    if unknown:
        raise ValueError(f"Unknown config fields {sorted(unknown)}! Expected some of {sorted(known)}.")
    return ViTConfig(**{**fields, **overrides})


def _grid_without_pos_embed(sd: dict, P: int, overrides: dict) -> dict:
    """img_size of a model without absolute position embeddings (BEiT): from its relative-position table."""
    if "img_size" in overrides:
        return {}
    table = sd.get("blocks.0.attn.relative_position_bias_table")
    if table is None:
        raise ValueError("Cannot infer the image size: the checkpoint has neither position embeddings (pos_embed) "
                         "nor a relative position bias table. Pass img_size=(H, W), e.g. in a sidecar JSON.")
    gh, gw = grid_from_relative_positions(int(table.shape[0]))
    return dict(img_size=(gh * P, gw * P))


def checkpoint_grid(sd: dict, cfg: ViTConfig) -> tuple[int, int]:
    """The patch grid the checkpoint's position embeddings were learnt for (may differ from ``cfg.grid``)."""
    if "pos_embed" not in sd:
        return cfg.grid
    n = sd["pos_embed"].shape[1] - (_prefix_with_pos(cfg))
    if n == cfg.grid[0] * cfg.grid[1]:
        return cfg.grid
    side = math.isqrt(n)
    if side * side != n:
        raise ValueError(f"The checkpoint has {n} patch position embeddings, which is not a square grid and not "
                         f"the {cfg.grid[0]}×{cfg.grid[1]} grid of img_size {cfg.img_size}.")
    return side, side


def _prefix_with_pos(cfg: ViTConfig) -> int:
    return int(cfg.class_token) + int(cfg.distilled) if cfg.pos_embed_prefix else 0


def _pos_embed_fields(sd: dict, n_prefix: int, P: int, overrides: dict) -> dict:
    """img_size and pos_embed_prefix from the number of position embeddings (square grid unless img_size given)."""
    if "pos_embed" not in sd:
        raise ValueError("Cannot infer a ViT config: no position embeddings (pos_embed) in the checkpoint.")
    total = sd["pos_embed"].shape[1]
    if "pos_embed_prefix" in overrides:
        candidates = [(overrides["pos_embed_prefix"], total - (n_prefix if overrides["pos_embed_prefix"] else 0))]
    else:  # timm's no_embed_class: position embeddings for patches only (register models)
        candidates = [(True, total - n_prefix), (False, total)]
    if "img_size" in overrides:
        size = overrides["img_size"]
        gh, gw = (size, size) if isinstance(size, int) else size
        for prefix, n in candidates:  # the prefix layout that fits the given size, or a square to resample from
            if n == (gh // P) * (gw // P) or math.isqrt(n) ** 2 == n:
                return dict(pos_embed_prefix=prefix)
    for prefix, n in candidates:
        side = math.isqrt(max(n, 0))
        if n > 0 and side * side == n:
            return dict(pos_embed_prefix=prefix, img_size=(side * P, side * P))
    raise ValueError(f"Cannot infer the image size from {total} position embeddings (not a square grid plus "
                     f"{n_prefix} prefix tokens). Pass img_size=(H, W), e.g. in a sidecar JSON.")
