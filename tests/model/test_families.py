"""Protects the claim that CLIP, SigLIP, EVA-02 and BEiT image towers load from every usual layout and *are* the
reference model: same output (relative difference <= 1e-4) and, in every block, the same softmax attention
the reference itself computed (timm's explicit path with fused attention off, transformers' eager attention,
torch's nn.MultiheadAttention weights), relative bias and rotary embedding included.

Every reference is a tiny random-init model built here with timm, open_clip or transformers and saved in its
own layout; no download. The CLIP text tower and zero-shot are in test_clip.py.
"""
from __future__ import annotations

import json

import open_clip
import pytest
import timm
import torch
import transformers
from safetensors.torch import save_file

import vit
from reference_models import (assert_attention, assert_close, assert_same_as_timm, images, open_clip_tiny, randomize_,
                              save_timm)


def check_timm(ref, tmp_path, size: tuple[int, int], family: str, **config) -> vit.LoadedModel:
    loaded = vit.load(save_timm(ref, tmp_path, **config))
    assert loaded.format == "timm" and loaded.config.family == family
    assert_same_as_timm(loaded, ref, size)
    return loaded


# --- timm ------------------------------------------------------------------------------------------------------

def test_timm_clip_quickgelu_tower(tmp_path):
    """vit_*_clip_quickgelu_*: LayerNorm before the blocks, QuickGELU, no patch bias, eps 1e-5; its head, which
    timm fills with OpenAI's projection and a zero bias, comes back as the bias-free projection."""
    torch.manual_seed(0)
    ref = randomize_(timm.create_model("vit_base_patch16_clip_quickgelu_224", depth=2, embed_dim=64, num_heads=4,
                                       img_size=64, num_classes=32))
    with torch.no_grad():
        ref.head.bias.zero_()
    loaded = check_timm(ref, tmp_path, (64, 64), "clip", num_heads=4, mlp_act="quick_gelu")
    cfg = loaded.config
    assert cfg.norm_pre and not cfg.patch_bias and cfg.layer_norm_eps == 1e-5 and cfg.mlp_act == "quick_gelu"
    assert cfg.proj_dim == 32 and cfg.num_classes == 0 and loaded.labels == []
    assert loaded.preprocess.mean == (0.48145466, 0.4578275, 0.40821073)   # CLIP's, as timm's pretrained config


def test_timm_clip_head_with_a_trained_bias_stays_a_classifier(tmp_path):
    torch.manual_seed(0)
    ref = randomize_(timm.create_model("vit_base_patch16_clip_224", depth=2, embed_dim=64, num_heads=4,
                                       img_size=64, num_classes=10))
    loaded = check_timm(ref, tmp_path, (64, 64), "clip", num_heads=4)
    assert loaded.config.num_classes == 10 and loaded.config.proj_dim is None and loaded.config.mlp_act == "gelu"


def test_timm_hub_folder_names_quickgelu_and_preprocessing(tmp_path):
    """A timm Hub folder (config.json with architecture and pretrained_cfg) needs no sidecar."""
    torch.manual_seed(0)
    ref = randomize_(timm.create_model("vit_base_patch16_clip_quickgelu_224", depth=2, embed_dim=64, num_heads=4,
                                       img_size=64, num_classes=0))
    save_timm(ref, tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({   # as timm's save_for_hf writes it: what it was made with
        "architecture": "vit_base_patch16_clip_quickgelu_224", "num_classes": 0,
        "model_args": {"depth": 2, "embed_dim": 64, "num_heads": 4, "img_size": 64, "num_classes": 0},
        "pretrained_cfg": {"input_size": [3, 64, 64], "crop_pct": 1.0, "interpolation": "bicubic",
                           "mean": [0.48145466, 0.4578275, 0.40821073], "std": [0.26862954, 0.26130258, 0.27577711]}}))
    loaded = vit.load(tmp_path)
    assert loaded.config.mlp_act == "quick_gelu" and loaded.preprocess.resize == 64
    x = images(1, (64, 64))
    with torch.no_grad():
        assert_close(loaded.model(x), ref(x))


def test_timm_siglip_map_pooling_and_probe_attention(tmp_path):
    """No CLS token, pooled by a multi-head attention probe; the probe's attention equals the one recomputed from
    timm's attn_pool weights on the tokens it received."""
    torch.manual_seed(0)
    ref = randomize_(timm.create_model("vit_base_patch16_siglip_224", depth=2, embed_dim=64, num_heads=4,
                                       img_size=64))
    loaded = check_timm(ref, tmp_path, (64, 64), "siglip", num_heads=4)
    assert not loaded.config.class_token and loaded.config.readout == "map"
    assert loaded.preprocess.mean == (0.5, 0.5, 0.5)
    x = images(2, (64, 64))
    seen = []
    hook = ref.attn_pool.register_forward_pre_hook(lambda m, args: seen.append(args[0]))
    with torch.no_grad():
        ref(x)
        probe = loaded.model.forward_with_attention(x).probe_attention       # (B, H, T)
    hook.remove()
    pool, tokens = ref.attn_pool, seen[0]
    H, Dh = pool.num_heads, pool.head_dim
    q = pool.q(pool.latent).reshape(1, H, Dh)                                  # (1, H, Dh)
    k = pool.kv(tokens).reshape(tokens.shape[0], tokens.shape[1], 2, H, Dh)[:, :, 0]  # (B, N, H, Dh)
    expected = torch.einsum("ohd,bnhd->bhn", q, k).mul(Dh ** -0.5).softmax(dim=-1)
    assert_close(probe, expected, "probe attention")


@pytest.mark.parametrize("name,kwargs,config", [
    ("eva02_tiny_patch14_224", dict(img_size=56), {}),                                   # packed SwiGLU, fused qkv
    ("eva02_base_patch14_448", dict(embed_dim=64, num_heads=4, img_size=56), {"num_heads": 4}),  # q/k/v, MLP norm
    ("eva02_base_patch16_clip_224", dict(embed_dim=64, num_heads=4, img_size=64), {"num_heads": 4}),  # + attn norm
])
def test_timm_eva02_rotary_swiglu(name, kwargs, config, tmp_path):
    """Rotary embedding on q and k (scaled to the 16×16 reference grid at any input size), SwiGLU with its inner
    LayerNorm, q/v biases without a k bias, EVA-CLIP's attention sub-LN: the maps include the rotation."""
    torch.manual_seed(0)
    ref = randomize_(timm.create_model(name, depth=2, **kwargs))
    loaded = check_timm(ref, tmp_path, (kwargs["img_size"],) * 2, "eva02", **config)
    cfg = loaded.config
    assert cfg.rope and cfg.rope_ref_grid == (16, 16) and cfg.mlp_act == "swiglu" and not cfg.k_bias
    assert cfg.mlp_norm == (name != "eva02_tiny_patch14_224") and cfg.attn_norm == name.endswith("clip_224")


def test_timm_beit_relative_position_bias(tmp_path):
    """No absolute position embedding, a relative position bias table per block (heads read off it), layer
    scale, q/v biases, mean pooling with fc_norm."""
    torch.manual_seed(0)
    ref = randomize_(timm.create_model("beit_base_patch16_224", depth=2, embed_dim=64, num_heads=4, img_size=64,
                                       num_classes=7))
    loaded = check_timm(ref, tmp_path, (64, 64), "beit")
    cfg = loaded.config
    assert cfg.pos_embed_kind == "none" and loaded.model.pos_embed is None and cfg.rel_pos_bias
    assert cfg.num_heads == 4 and cfg.layer_scale and cfg.readout == "mean" and not cfg.k_bias
    with pytest.raises(ValueError, match="relative position bias learnt on the 4×4 grid"):
        loaded.model(images(1, (96, 64)))


# --- Hugging Face ----------------------------------------------------------------------------------------------

def hf_attention_config(**fields) -> dict:
    return dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, image_size=32,
                patch_size=8, **fields)


def test_huggingface_siglip_vision_model(tmp_path):
    torch.manual_seed(0)
    ref = randomize_(transformers.SiglipVisionModel(transformers.SiglipVisionConfig(
        **hf_attention_config(), attn_implementation="eager")))
    ref.save_pretrained(tmp_path / "siglip")
    loaded = vit.load(tmp_path / "siglip")
    assert loaded.format == "huggingface-clip" and loaded.config.family == "siglip"
    assert loaded.config.mlp_act == "gelu_tanh" and loaded.config.num_heads == 4
    x = images(2, (32, 32))
    seen = []
    hook = ref.head.register_forward_pre_hook(lambda m, args: seen.append(args[0]))
    with torch.no_grad():
        capture = loaded.model.forward_with_attention(x)
        out = ref(pixel_values=x, output_attentions=True)
        probe = ref.head.attention(ref.head.probe.expand(2, -1, -1), seen[0], seen[0], need_weights=True,
                                   average_attn_weights=False)[1][:, :, 0]   # (B, H, N): torch's own softmax
    hook.remove()
    assert_close(capture.output, out.pooler_output)
    assert_attention(capture.attention, list(out.attentions))
    assert_close(capture.probe_attention, probe, "probe attention")


@pytest.mark.parametrize("with_projection", [True, False])
def test_huggingface_clip_vision_model(with_projection, tmp_path):
    cls = transformers.CLIPVisionModelWithProjection if with_projection else transformers.CLIPVisionModel
    torch.manual_seed(0)
    ref = randomize_(cls(transformers.CLIPVisionConfig(**hf_attention_config(), projection_dim=16,
                                                       attn_implementation="eager")))
    ref.save_pretrained(tmp_path / "clip")
    loaded = vit.load(tmp_path / "clip")
    assert loaded.format == "huggingface-clip" and loaded.config.family == "clip"
    assert loaded.config.proj_dim == (16 if with_projection else None) and loaded.config.mlp_act == "quick_gelu"
    x = images(2, (32, 32))
    with torch.no_grad():
        capture = loaded.model.forward_with_attention(x)
        out = ref(pixel_values=x, output_attentions=True)
    assert_close(capture.output, out.image_embeds if with_projection else out.pooler_output)
    assert_attention(capture.attention, list(out.attentions))


def test_huggingface_beit_for_image_classification(tmp_path):
    torch.manual_seed(0)
    ref = randomize_(transformers.BeitForImageClassification(transformers.BeitConfig(
        **hf_attention_config(), use_relative_position_bias=True, use_absolute_position_embeddings=False,
        use_mean_pooling=True, layer_scale_init_value=0.1, num_labels=5, attn_implementation="eager",
        id2label={i: f"kind {i}" for i in range(5)})))
    ref.save_pretrained(tmp_path / "beit")
    loaded = vit.load(tmp_path / "beit")
    assert loaded.format == "huggingface" and loaded.config.family == "beit"
    assert loaded.labels == [f"kind {i}" for i in range(5)] and loaded.config.layer_norm_eps == 1e-12
    x = images(2, (32, 32))
    with torch.no_grad():
        capture = loaded.model.forward_with_attention(x)
        out = ref(pixel_values=x, output_attentions=True)
    assert_close(capture.output, out.logits)
    assert_attention(capture.attention, list(out.attentions))


# --- OpenAI / open_clip layout: image tower (the text tower: test_clip.py) -------------------------------------

def open_clip_attention(model: open_clip.CLIP, x: torch.Tensor) -> list[torch.Tensor]:
    """Every visual block's attention per head, from open_clip's own nn.MultiheadAttention on its ln_1 output."""
    inputs = []
    blocks = model.visual.transformer.resblocks
    hooks = [blk.ln_1.register_forward_hook(lambda m, i, o: inputs.append(o)) for blk in blocks]
    try:
        with torch.no_grad():
            model.encode_image(x)
            return [blk.attn(y, y, y, need_weights=True, average_attn_weights=False)[1]
                    for blk, y in zip(blocks, inputs)]
    finally:
        for h in hooks:
            h.remove()


def test_openai_layout_image_tower_equals_encode_image(tmp_path):
    ref = open_clip_tiny()
    torch.save(ref.state_dict(), tmp_path / "clip.pt")
    loaded = vit.load(tmp_path / "clip.pt")
    cfg = loaded.config
    assert loaded.format == "openai-clip" and cfg.family == "clip" and cfg.mlp_act == "quick_gelu"
    assert (cfg.proj_dim, cfg.num_heads, cfg.layer_norm_eps) == (16, 2, 1e-5)   # heads: width / 64, as OpenAI's
    assert loaded.preprocess.resize == 64 and loaded.preprocess.crop == (64, 64)  # CLIP: resize to the crop
    x = images(2, (64, 64))
    with torch.no_grad():
        capture = loaded.model.forward_with_attention(x)
        expected = ref.encode_image(x)
    assert_close(capture.output, expected)
    assert_close(loaded.model(x), expected, "fused forward")
    assert_attention(capture.attention, open_clip_attention(ref, x))


def test_open_clip_hub_folder_with_gelu(tmp_path):
    """open_clip's Hub layout: open_clip_config.json says the model uses exact GELU (LAION-trained ones do)."""
    ref = open_clip_tiny(quick_gelu=False)
    save_file({k: v.contiguous() for k, v in ref.state_dict().items()}, str(tmp_path / "open_clip_model.safetensors"))
    (tmp_path / "open_clip_config.json").write_text(json.dumps({
        "model_cfg": {"embed_dim": 16, "quick_gelu": False, "vision_cfg": {"image_size": 64}},
        "preprocess_cfg": {"mean": [0.5, 0.5, 0.5], "std": [0.5, 0.5, 0.5]}}))
    loaded = vit.load(tmp_path)
    assert loaded.config.mlp_act == "gelu" and loaded.text.model.cfg.mlp_act == "gelu"
    assert loaded.preprocess.mean == (0.5, 0.5, 0.5)
    x = images(1, (64, 64))
    with torch.no_grad():
        assert_close(loaded.model(x), ref.encode_image(x))


def test_strict_loading_names_what_does_not_match(tmp_path):
    """A family checkpoint with a tensor too many is refused, naming it."""
    torch.manual_seed(0)
    ref = timm.create_model("beit_base_patch16_224", depth=1, embed_dim=64, num_heads=4, img_size=64, num_classes=3)
    state = {**ref.state_dict(), "blocks.0.attn.extra_bias": torch.zeros(4)}
    save_file({k: v.contiguous() for k, v in state.items()}, str(tmp_path / "beit.safetensors"))
    with pytest.raises(ValueError, match=r"unexpected keys \(1\): blocks\.0\.attn\.extra_bias"):
        vit.load(tmp_path / "beit.safetensors")


def test_a_torchscript_archive_is_refused_with_what_to_do(tmp_path):
    """OpenAI released CLIP as TorchScript: code that would run on loading. The message says how to get the weights."""
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), str(tmp_path / "ViT-B-32.pt"))
    with pytest.raises(ValueError, match=r"TorchScript archive.*torch\.jit\.load\(path\)\.state_dict\(\)"):
        vit.load(tmp_path / "ViT-B-32.pt")


def test_a_clip_tower_fine_tunes_with_a_head_instead_of_its_projection():
    """python -m vit.train --init on a CLIP tower: the new head reads the pooled features; everything else is kept."""
    from vit.train.build import fine_tune_model
    cfg = vit.ViTConfig(img_size=32, embed_dim=32, depth=1, num_heads=2, mlp_dim=64, num_classes=0, proj_dim=16,
                        norm_pre=True, patch_bias=False, mlp_act="quick_gelu")
    tower = vit.VisionTransformer(cfg).eval()
    tuned = fine_tune_model(tower, num_classes=3, drop_path=0.0).eval()
    assert (tuned.cfg.num_classes, tuned.cfg.proj_dim) == (3, None)
    assert torch.equal(tuned.norm_pre.weight, tower.norm_pre.weight) and tuned(images(1, (32, 32))).shape == (1, 3)


def test_huggingface_siglip_model_loads_its_image_tower(tmp_path):
    """A whole SiglipModel folder (as google/siglip-* on the Hub): its image tower; the text tower is not CLIP's."""
    torch.manual_seed(0)
    ref = randomize_(transformers.SiglipModel(transformers.SiglipConfig(
        vision_config=hf_attention_config(), text_config=dict(hidden_size=32, intermediate_size=64,
                                                               num_hidden_layers=1, num_attention_heads=2))))
    ref.save_pretrained(tmp_path / "siglip")
    loaded = vit.load(tmp_path / "siglip")
    assert loaded.config.family == "siglip" and loaded.text is None
    x = images(2, (32, 32))
    with torch.no_grad():
        assert_close(loaded.model(x), ref.vision_model(pixel_values=x).pooler_output)
