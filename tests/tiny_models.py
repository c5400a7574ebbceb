"""Tiny random models for the tests that check formulas and token layouts on every family (2 blocks of width 32,
a 32×32 input cut into 4×4 patches of 8 px, 5 classes), with every parameter perturbed so that no zero bias,
identity LayerNorm, zero probe or zero table can hide a mistake."""
from __future__ import annotations

import torch

import vit

TINY = dict(embed_dim=32, depth=2, num_heads=2, mlp_dim=64, num_classes=5, img_size=32, patch_size=8)  # 4×4 patches


def tiny(seed: int = 0, **kw) -> vit.VisionTransformer:
    """A random ``TINY`` model with ``kw`` overriding its config, every parameter perturbed, in eval mode."""
    torch.manual_seed(seed)
    model = vit.VisionTransformer(vit.ViTConfig(**{**TINY, **kw}))
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return model.eval()


FAMILIES = {  # one tiny model of every family and token layout the explorer runs
    "vit": dict(),
    "registers": dict(num_reg_tokens=2),
    "distilled": dict(distilled=True),
    "avg_no_cls": dict(readout="mean", class_token=False),
    "sincos2d": dict(pos_embed_kind="sincos2d"),
    "no_prefix_pos": dict(pos_embed_prefix=False, num_reg_tokens=1),
    "clip": dict(norm_pre=True, mlp_act="quick_gelu", patch_bias=False),
    "siglip": dict(readout="map", class_token=False, mlp_act="gelu_tanh"),
    "eva02": dict(rope=True, k_bias=False, mlp_act="swiglu", mlp_norm=True, attn_norm=True),
    "beit": dict(rel_pos_bias=True, pos_embed_kind="none", layer_scale=True, k_bias=False, readout="mean",
                 fc_norm=True),
    "dinov3": dict(rope=True, rope_coords="centered", rope_temperature=100.0, rope_half=True, pos_embed_kind="none",
                   num_reg_tokens=4, layer_scale=True, k_bias=False, mlp_act="swiglu", layer_norm_eps=1e-5,
                   prefix_norm=True),   # untied: the CLS and registers' own final norm
    "rope_vit": dict(rope=True, rope_axes="xy", rope_temperature=100.0, pos_embed_kind="none", layer_scale=True),
    "rope_mixed_ape": dict(rope=True, rope_mixed=True, rope_axes="xy", pos_embed_prefix=False, layer_scale=True),
    "rope_gap": dict(rope=True, rope_ref_grid=(16, 16), pos_embed_kind="none", class_token=False, num_reg_tokens=1,
                     readout="mean", fc_norm=True, layer_scale=True, k_bias=False),
    "relpos": dict(rel_pos_mlp=True, rel_pos_mlp_dim=16, pos_embed_kind="none", layer_scale=True, qkv_bias=False,
                   class_token=False, readout="mean", fc_norm=True),        # timm's vit_relpos_*
    "relpos_rpn": dict(rel_pos_mlp=True, rel_pos_mlp_dim=16, pos_embed_kind="none", res_post_norm=True,
                       class_token=False, readout="mean"),                    # timm's *_rpn: norms after branches
    "relpos_cls": dict(rel_pos_mlp=True, rel_pos_mlp_dim=16, pos_embed_kind="none", layer_scale=True),  # CLS token
    "parallel": dict(parallel=2, num_heads=4, head_dim=16, mlp_dim=128),     # timm's *_18x2, folded: 2 × 2 heads
    "naflex": dict(pos_embed_grid=(3, 3), pos_embed_prefix=False, pos_embed_interp="bilinear",
                   pos_embed_antialias=True, class_token=False, readout="map", mlp_act="gelu_tanh"),  # SigLIP 2
    "naflex_reg": dict(pos_embed_grid=(6, 6), pos_embed_prefix=False, pos_embed_antialias=True,
                       pos_embed_ar_preserving=True, num_reg_tokens=1, layer_scale=True, class_token=False,
                       readout="mean", fc_norm=True),                         # timm's NaFlexViT par_gap
    # the readouts (vit.readout) beyond the CLS token, the mean of the patches and SigLIP's probe
    "cls_mean": dict(readout="cls_mean", layer_scale=True),                  # transformers' DINOv2 classifiers
    "mean_all": dict(readout="mean_all", num_reg_tokens=2),                  # timm's pool_include_prefix
    "map_all": dict(readout="map_all", norm_pre=True, patch_bias=False, pool_heads=4, pool_mlp_dim=48,
                    rope=True, rope_axes="xy"),                              # Perception Encoder's core towers
    "no_final_norm": dict(final_norm=False, layer_scale=True),               # InternViT, PE spatial / lang
    "registers_pos": dict(class_token=False, num_reg_tokens=2, pos_embed_registers=True),   # timm's so150m
}
