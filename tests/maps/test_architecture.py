"""Protects the Model tab (viz/architecture.py): parameter counts equal the real module's, shapes follow the input,
and every family's table and summary is in Chinese on a Chinese page (the same counts, no English outside the
allow-list of names and symbols)."""
from __future__ import annotations

import pytest
import torch

import vit
from allowed_english import NAMES, english_words
from tiny_models import FAMILIES
from viz.model.view import block_params, family_summary, stages, to_markdown, total_params
from viz.i18n import t


CONFIGS = [
    ("vit_b_16", {}),
    ("tiny", {}),
    ("small", dict(distilled=True)),
    ("tiny", dict(num_reg_tokens=4, layer_scale=True)),
    ("tiny", dict(class_token=False, readout="mean", fc_norm=True, representation_size=96)),
    ("tiny-32", dict(pos_embed_prefix=False, qkv_bias=False, num_classes=10)),
    ("tiny", dict(num_classes=0)),
    # DINOv3 (untied final norms, SwiGLU), RoPE-Mixed with its learnt frequencies
    ("small", dict(rope=True, rope_coords="centered", rope_half=True, pos_embed_kind="none", num_reg_tokens=4,
                   layer_scale=True, k_bias=False, mlp_act="swiglu", prefix_norm=True, num_classes=0)),
    ("small", dict(rope=True, rope_mixed=True, rope_axes="xy", pos_embed_kind="none", layer_scale=True)),
    *[("tiny", FAMILIES[f]) for f in ("relpos", "relpos_rpn", "relpos_cls", "parallel", "naflex", "naflex_reg")],
    # every other family of the explorer's tiny models, and CLIP's image projection
    *[("tiny", FAMILIES[f]) for f in ("sincos2d", "clip", "siglip", "eva02", "beit", "dinov3", "rope_vit", "rope_gap")],
    ("tiny", dict(norm_pre=True, mlp_act="quick_gelu", patch_bias=False, proj_dim=32, num_classes=0)),
]


def config(name, overrides):
    cfg = vit.variant(name, **{k: v for k, v in overrides.items() if k != "head_dim"})
    if cfg.parallel > 1:   # two branches of the width's 3 heads: 6 heads of 64
        cfg = vit.variant(name, **{**overrides, "num_heads": 6, "head_dim": 64})
    return cfg


@pytest.mark.parametrize("name, overrides", CONFIGS)
def test_parameter_counts_match_the_model(name, overrides):
    cfg = config(name, overrides)
    with torch.device("meta"):  # shapes only: no memory, no initialisation cost
        model = vit.VisionTransformer(cfg)
    assert total_params(stages(cfg)) == sum(p.numel() for p in model.parameters())
    assert block_params(cfg) == sum(p.numel() for p in model.blocks[0].parameters())
    assert family_summary(cfg).startswith(f"**{t('arch.family.' + cfg.family, 'en')}**")


@pytest.mark.parametrize("name, overrides", CONFIGS)
def test_every_familys_table_is_chinese_on_a_chinese_page(name, overrides):
    cfg = config(name, overrides)
    size = (160, 96) if cfg.pos_embed_grid is not None or cfg.rel_pos_mlp else None   # a resized grid's rows too
    english, chinese = stages(cfg, size), stages(cfg, size, "zh-CN")
    assert [(r.shape, r.params) for r in chinese] == [(r.shape, r.params) for r in english]
    text = to_markdown(chinese, "", family_summary(cfg, "zh-CN"), "zh-CN").replace("&nbsp;", " ")
    assert english_words(text) <= NAMES, sorted(english_words(text) - NAMES)
    assert f"共 {total_params(english):,} 个参数" in text


def test_the_new_families_rows_say_how_positions_and_norms_act():
    relpos = {r.name.strip(" ├└"): r for r in stages(vit.variant("tiny", **FAMILIES["relpos_rpn"]), (160, 96))}
    assert "MLP (2 → 16 → 3)" in relpos["softmax(q·kᵀ/√d + B) — the attention maps"].note
    assert "attention · v → proj Linear → LayerNorm, + residual" in relpos
    naflex = stages(vit.variant("tiny", **FAMILIES["naflex"]), (160, 96))
    assert "for a 3×3 grid, resampled bilinearly with antialiasing to 10×6" in naflex[2].note


def test_vit_b16_shapes_at_224_are_the_papers():
    rows = {r.name.split(":")[0].strip(" ├└"): r for r in stages(vit.variant("vit_b_16"))}
    assert rows["Input image (center crop)"].shape == "224×224×3"
    assert rows["Patch embedding"].shape == "196×768"
    assert rows["Prepend CLS token"].shape == "197×768"
    assert rows["12 × transformer block"].shape == "197×768"
    assert rows["softmax(q·kᵀ/√d) — the attention maps"].shape == "12×197×197"
    assert rows["Classifier head"].shape == "1000"
    assert total_params(stages(vit.variant("vit_b_16"))) == 86_567_656  # torchvision's vit_b_16 has the same count


def test_shapes_follow_the_input_size_and_match_a_forward_pass():
    cfg = vit.variant("tiny", distilled=True)
    model = vit.VisionTransformer(cfg).eval()
    with torch.inference_mode():
        _, attn = model.forward_with_attention(torch.zeros(1, 3, 160, 96))[:2]
    L, H, T = attn.shape[1], attn.shape[2], attn.shape[3]
    rows = stages(cfg, (160, 96))
    assert [r.shape for r in rows[:4]] == ["160×96×3", "60×192", "62×192", "62×192"]
    assert any(r.shape == f"{H}×{T}×{T}" for r in rows) and L == cfg.depth
    assert "resampled bicubically to 10×6" in rows[3].note


def test_indivisible_input_is_refused_with_expected_and_got():
    with pytest.raises(ValueError, match="225×224 is not divisible by the patch size 16"):
        stages(vit.variant("tiny"), (225, 224))


def test_markdown_lists_every_stage_and_the_total():
    rows = stages(vit.variant("tiny"))
    text = to_markdown(rows, "ViT-Ti/16")
    assert text.startswith("### ViT-Ti/16")
    assert text.count("\n| ") == len(rows) + 1  # header + one line per stage (separator starts with "|-")
    assert f"**Total: {total_params(rows):,} parameters.**" in text
