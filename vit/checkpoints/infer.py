"""A ViTConfig read off a state dict in our key names: widths, depth, patch, tokens and head from tensor shapes.

Only the number of heads is invisible in the shapes (qkv is (3D, D) for any H); it comes from metadata
(a Hugging Face config, a Google kernel, a sidecar JSON) or the paper's variants, else 64 dims per head.
"""
from __future__ import annotations

import dataclasses
import math
import re

from ..model import ViTConfig

# Heads of the paper's and DeiT's variants by width; H/14 uses 80 dims per head, so 1280 // 64 would be wrong.
STANDARD_HEADS = {192: 3, 384: 6, 768: 12, 1024: 16, 1280: 16}
HEAD_DIM = 64


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
    fields = dict(
        patch_size=int(P), in_chans=int(C), embed_dim=int(D), depth=max(blocks) + 1,
        mlp_dim=int(sd["blocks.0.mlp.fc1.weight"].shape[0]) if "blocks.0.mlp.fc1.weight" in sd else 4 * int(D),
        qkv_bias="blocks.0.attn.qkv.bias" in sd,
        class_token=class_token, distilled=distilled,
        num_reg_tokens=int(sd["reg_token"].shape[1]) if "reg_token" in sd else 0,
        layer_scale="blocks.0.ls1.gamma" in sd,
        num_classes=int(sd["head.weight"].shape[0]) if "head.weight" in sd else 0,
        representation_size=int(sd["pre_logits.0.weight"].shape[0]) if "pre_logits.0.weight" in sd else None,
    )
    if "fc_norm.weight" in sd:
        fields.update(global_pool="avg", fc_norm=True)
    elif not class_token:
        fields.update(global_pool="avg")
    fields.update(_pos_embed_fields(sd, class_token + distilled, int(P), overrides))
    fields["num_heads"] = default_num_heads(int(D))
    known = {f.name for f in dataclasses.fields(ViTConfig)}
    unknown = set(overrides) - known
    if unknown:
        raise ValueError(f"Unknown config fields {sorted(unknown)}! Expected some of {sorted(known)}.")
    return ViTConfig(**{**fields, **overrides})


def checkpoint_grid(sd: dict, cfg: ViTConfig) -> tuple[int, int]:
    """The patch grid the checkpoint's position embeddings were learnt for (may differ from ``cfg.grid``)."""
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
