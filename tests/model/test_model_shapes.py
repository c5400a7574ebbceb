"""Protects the model's shapes (every module, every variant, any input size) and its parameter counts.

Large variants are built on the meta device: shapes propagate without memory or compute, so this stays fast.
"""
from __future__ import annotations

import pytest
import torch

import vit
from vit.model import Block, Mlp, PatchEmbed

VARIANTS = ["ti_16", "s_16", "b_16", "b_32", "l_16", "l_32", "h_14", "b_14", "s_32"]

# Published parameter counts (torchvision's model cards for B/L/H, timm's for Ti/S) at 224×224, 1000 classes.
PARAMS = {
    "ti_16": 5_717_416,
    "s_16": 22_050_664,
    "b_16": 86_567_656,
    "b_32": 88_224_232,
    "l_16": 304_326_632,
    "l_32": 306_535_400,
    "h_14": 632_045_800,
}


def analytic_params(cfg: vit.ViTConfig) -> int:
    """Parameter count of a plain ViT from the paper's formulas."""
    D, M, P, C, K = cfg.embed_dim, cfg.mlp_dim, cfg.patch_size, cfg.in_chans, cfg.num_classes
    gh, gw = cfg.grid
    patch = D * C * P * P + D
    tokens = D + (1 + gh * gw) * D                      # CLS + position embeddings
    block = 2 * 2 * D + (3 * D * D + 3 * D) + (D * D + D) + (D * M + M) + (M * D + D)
    return patch + tokens + cfg.depth * block + 2 * D + (D * K + K)


def meta_model(cfg: vit.ViTConfig) -> vit.VisionTransformer:
    with torch.device("meta"):
        return vit.VisionTransformer(cfg)


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_parameter_count_matches_published_number(name):
    cfg = vit.variant(name)
    model = meta_model(cfg)
    counted = sum(p.numel() for p in model.parameters())
    assert counted == PARAMS[name]
    assert analytic_params(cfg) == PARAMS[name]


def test_vit_b_16_has_torchvisions_parameter_count():
    assert sum(p.numel() for p in meta_model(vit.variant("vit_b_16")).parameters()) == 86_567_656


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("name", VARIANTS)
def test_every_module_output_shape(name, wide):
    """Each submodule's output shape, recorded with forward hooks on a meta-device forward pass, square and wide."""
    cfg = vit.variant(name)
    model = meta_model(cfg).eval()
    B, H, W = 2, 224, 20 * cfg.patch_size if wide else 224
    D, M, P = cfg.embed_dim, cfg.mlp_dim, cfg.patch_size
    gh, gw = H // P, W // P
    T = 1 + gh * gw
    expected = {
        PatchEmbed: (B, gh * gw, D),
        torch.nn.Conv2d: (B, D, gh, gw),
        Block: (B, T, D),
        Mlp: (B, T, D),
        torch.nn.LayerNorm: (B, T, D),
        torch.nn.GELU: (B, T, M),
    }
    seen = {}

    def record(module, inputs, output):
        out = output[0] if isinstance(output, tuple) else output
        seen.setdefault(type(module), set()).add(tuple(out.shape))

    handles = [m.register_forward_hook(record) for m in model.modules()
               if type(m) in expected or type(m) is torch.nn.Linear]
    try:
        with torch.no_grad():
            logits = model(torch.empty(B, 3, H, W, device="meta"))
    finally:
        for h in handles:
            h.remove()
    for kind, shape in expected.items():
        assert seen[kind] == {shape}, kind.__name__
    linear_shapes = seen[torch.nn.Linear]
    assert {(B, T, 3 * D), (B, T, D), (B, T, M), (B, 1000)} == linear_shapes  # qkv, proj/fc2, fc1, head
    assert logits.shape == (B, 1000)
    assert model.token_layout(H, W) == vit.TokenLayout(1, (gh, gw))
    attn = model.blocks[0].attn       # Block.step runs its pieces; called as a module it is merge(mix(x))
    assert attn(torch.empty(B, T, D, device="meta"))[0].shape == (B, T, D)
    assert model.resampled_pos_embed((gh, gw)).shape == (1, T, D)


def test_capture_shapes_on_a_non_square_input():
    """224×320 with P=16 gives 1 + 14·20 tokens; attention is (B, L, H, T, T)."""
    cfg = vit.variant("tiny", depth=2)
    model = vit.VisionTransformer(cfg).eval()
    x = torch.randn(2, 3, 224, 320)
    with torch.no_grad():
        logits, attn, norms = model.forward_with_attention(x, return_token_norms=True)[:3]
    T = 1 + 14 * 20
    assert model.token_layout(224, 320).num_tokens == T == 281
    assert logits.shape == (2, 1000)
    assert attn.shape == (2, 2, 3, T, T)
    assert norms.shape == (2, 2, T)
    torch.testing.assert_close(attn.sum(-1), torch.ones(2, 2, 3, T), atol=1e-5, rtol=0)


def test_prefix_tokens_count_in_the_layout():
    cfg = vit.variant("tiny", depth=1, distilled=True, num_reg_tokens=4, pos_embed_prefix=False)
    model = vit.VisionTransformer(cfg).eval()
    with torch.no_grad():
        _, attn = model.forward_with_attention(torch.randn(1, 3, 32, 48))[:2]
    assert model.token_layout(32, 48) == vit.TokenLayout(6, (2, 3))
    assert attn.shape == (1, 1, 3, 12, 12)


@pytest.mark.parametrize("size", [(225, 224), (224, 100), (8, 224)])
def test_bad_input_size_says_what_works(size):
    model = vit.VisionTransformer(vit.variant("tiny", depth=1)).eval()
    with pytest.raises(ValueError, match=r"multiples of the patch size 16.*224×224.*but got " + f"{size[0]}×{size[1]}"):
        model(torch.randn(1, 3, *size))


def test_wrong_channel_count_is_a_clear_error():
    model = vit.VisionTransformer(vit.variant("tiny", depth=1)).eval()
    with pytest.raises(ValueError, match="Expected 3 but got 1"):
        model(torch.randn(1, 1, 224, 224))


def _random_tiny(**kw) -> vit.VisionTransformer:
    torch.manual_seed(0)
    model = vit.VisionTransformer(vit.variant("tiny", depth=2, **kw)).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))  # also make LayerNorms and biases non-trivial
    return model


@pytest.mark.parametrize("kw", [{}, dict(distilled=True), dict(num_reg_tokens=4, pos_embed_prefix=False),
                                dict(class_token=False, readout="mean", fc_norm=True, layer_scale=True)])
def test_fused_equals_unfused(kw):
    model = _random_tiny(**kw)
    x = torch.randn(2, 3, 96, 64)
    with torch.no_grad():
        model.fused_attn = True
        fused = model(x)
        model.fused_attn = False
        explicit = model(x)
    assert model.fused_attn is False
    torch.testing.assert_close(fused, explicit, atol=1e-5, rtol=0)


@pytest.mark.parametrize("kw", [{}, dict(distilled=True, num_reg_tokens=2)])
def test_capture_logits_equal_plain_logits(kw):
    model = _random_tiny(**kw)
    x = torch.randn(2, 3, 224, 224)
    with torch.no_grad():
        plain = model(x)
        captured, attn = model.forward_with_attention(x)[:2]
    torch.testing.assert_close(captured, plain, atol=1e-5, rtol=0)
    T = model.token_layout(224, 224).num_tokens
    assert attn.shape == (2, 2, 3, T, T)
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())  # capture leaves no hooks
