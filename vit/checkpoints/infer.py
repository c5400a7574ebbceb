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

# Heads of the published ViTs by width, where 64 dims per head would be wrong: H/14 uses 80 dims per head (1280),
# ViT-g/14 88 (1408), SigLIP's So400m 72 (1152), CLIP's ViT-bigG/14 104 (1664) and ViT-e 112 (1792), DINOv2's ViT-g/14
# 64 of 1536 (24 heads) but SigLIP 2's g-opt, which has no CLS token, 96 (16 heads). tests/checkpoints/
# test_assumptions.py checks the rule against every ViT architecture of timm and every ViT tower of open_clip.
STANDARD_HEADS = {192: 3, 384: 6, 768: 12, 1024: 16, 1152: 16, 1280: 16, 1408: 16, 1536: 24, 1664: 16, 1792: 16}
HEADS_WITHOUT_CLS = {1536: 16}  # SigLIP 2's g-opt towers
HEAD_DIM = 64
EVA02_ROPE_REF_GRID = (16, 16)  # timm's ref_feat_shape of every eva02_* model: the 224/14 grid it was pretrained on
CLIP_LAYER_NORM_EPS = 1e-5      # OpenAI's, open_clip's, timm's and Hugging Face's CLIP towers use torch's default


def default_num_heads(embed_dim: int, class_token: bool = True, pooled_classifier: bool = False) -> int:
    """The heads a ViT of this width has when nothing says otherwise: the published models' (``STANDARD_HEADS``;
    without a CLS token ``HEADS_WITHOUT_CLS``), else 64 dims per head. ``pooled_classifier``: a classifier on the
    mean of the patches without CLS token, registers or fc_norm, which at width 768 is timm's vit_base_patch16_gap_224
    (16 heads of 48)."""
    if not class_token and embed_dim in HEADS_WITHOUT_CLS:
        return HEADS_WITHOUT_CLS[embed_dim]
    if pooled_classifier and embed_dim == 768:
        return 16
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
    pooled_classifier = not class_token and fields["num_classes"] > 0 and not fields["num_reg_tokens"] \
        and fields.get("global_pool") == "avg" and not fields.get("fc_norm")
    fields["num_heads"] = int(table.shape[1]) if table is not None else \
        default_num_heads(int(D), class_token, pooled_classifier)
    known = {f.name for f in dataclasses.fields(ViTConfig)}
    unknown = set(overrides) - known
    if unknown:
        raise ValueError(f"Unknown config fields {sorted(unknown)}! Expected some of {sorted(known)}.")
    return ViTConfig(**{**fields, **overrides})


def _grid_without_pos_embed(sd: dict, P: int, overrides: dict) -> dict:
    """img_size of a model without absolute position embeddings (BEiT): from its relative-position table. Without
    one, the file says nothing of its tokens' positions: it opens only when the caller says it has none
    (``pos_embed_kind="none"``) and gives its size, or says how its positions work (the rotary features)."""
    table = sd.get("blocks.0.attn.relative_position_bias_table")
    positions_given = overrides.get("pos_embed_kind") == "none" or overrides.get("rope")
    if "img_size" in overrides and (table is not None or positions_given):
        return {}
    if table is None:
        raise ValueError("Cannot infer the image size: the checkpoint has neither position embeddings (pos_embed) "
                         "nor a relative position bias table, so where its tokens are is not in the file. A RoPE ViT "
                         "(timm's vit_*_rope_*, DINOv3) rotates them by a rule no tensor holds: open it by its Hugging "
                         "Face Hub name or folder, whose config names its architecture. Only for a ViT trained without "
                         "any position information, pass img_size=(H, W) and pos_embed_kind='none', e.g. in a sidecar "
                         "JSON.")
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
        raise ValueError(_grid_mismatch(n, cfg.grid, cfg.img_size))
    return side, side


def _grid_mismatch(n: int, grid: tuple[int, int], img_size) -> str:
    return (f"The checkpoint has {n} patch position embeddings, which is not a square grid and not the "
            f"{grid[0]}×{grid[1]} grid of img_size {tuple(img_size)}: its own grid is not known. Pass the img_size it "
            f"was trained at (H/P × W/P = {n} patches), e.g. in a sidecar JSON.")


def _prefix_with_pos(cfg: ViTConfig) -> int:
    return int(cfg.class_token) + int(cfg.distilled) if cfg.pos_embed_prefix else 0


def _pos_embed_fields(sd: dict, n_prefix: int, P: int, overrides: dict) -> dict:
    """img_size and pos_embed_prefix from the number of position embeddings (square grid unless img_size given)."""
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
        raise ValueError(_grid_mismatch(candidates[0][1], (gh // P, gw // P), (gh, gw)))
    for prefix, n in candidates:
        side = math.isqrt(max(n, 0))
        if n > 0 and side * side == n:
            return dict(pos_embed_prefix=prefix, img_size=(side * P, side * P))
    raise ValueError(f"Cannot infer the image size from {total} position embeddings (not a square grid plus "
                     f"{n_prefix} prefix tokens). Pass img_size=(H, W), e.g. in a sidecar JSON.")
