"""Protects the claim that the rotary families open from every layout they come in and *are* the reference model:
the same output (relative difference <= 1e-4) and, in every block, the same softmax attention the reference itself
computed, at the native input size and at another one (the rotation is computed for the photo's own grid).

- DINOv3 in timm's layout (``vit_*_patch16_dinov3`` and ``_qkvb`` with timm's default ``global_pool='avg'``, the mean
  of the patch tokens, which a bare file is assumed to have and says so; the other readouts in
  ``test_readouts.py``), in Meta's own layout (facebookresearch/dinov3: storage tokens, the masked key bias, SwiGLU's
  w1/w2/w3, the RoPE periods, local-crop norms), compared with timm loaded from the same file through its own
  converter, and transformers' DINOv3ViTModel (plain and gated MLP, with and without registers);
- timm's RoPE ViTs: Naver's RoPE-ViT with axial and with mixed (learnt, per block and head) frequencies, with and
  without absolute position embeddings, and timm's ``vit_*_rope_reg*_gap_256``.

The big DINOv3s are built with one block (ViT-B, L, H+), the 7B on the meta device by config only. Every reference
is random-init here, every parameter perturbed; no download.
"""
from __future__ import annotations

import json

import pytest
import timm
import torch
import transformers
from safetensors.torch import save_file
from timm.models.eva import checkpoint_filter_fn as timm_eva_filter

import vit
from reference_models import (assert_attention, assert_close, assert_same_as_timm, images, meta_dinov3_layout,
                              randomize_, save_timm)
from vit.checkpoints import families
from vit.checkpoints.formats import checkpoint_filter_fn
from vit.checkpoints.infer import infer_config

OTHER_SIZE = (224, 320)      # a non-square grid of 14×20 patches, another than every native size here


def timm_at(name: str, size: tuple[int, int], state: dict, **kwargs):
    """timm's model built for ``size`` with the given weights (a table of positions resampled by timm itself)."""
    model = timm.create_model(name, img_size=size, **kwargs).eval()
    model.load_state_dict(timm_eva_filter(state, model))
    return model


# --- DINOv3 in timm's layout -------------------------------------------------------------------------------------

SLOW = pytest.mark.slow          # the everyday run keeps one model of each kind; the full run has them all


@pytest.mark.parametrize("name,kwargs", [
    pytest.param("vit_small_patch16_dinov3", dict(depth=2), marks=SLOW),             # no qkv bias
    ("vit_small_patch16_dinov3_qkvb", dict(depth=2)),                               # q and v biases, none on k
    ("vit_small_plus_patch16_dinov3", dict(depth=2)),                               # SwiGLU
    pytest.param("vit_small_plus_patch16_dinov3_qkvb", dict(depth=2), marks=SLOW),
    pytest.param("vit_base_patch16_dinov3_qkvb", dict(depth=1), marks=SLOW),
    pytest.param("vit_large_patch16_dinov3", dict(depth=1), marks=SLOW),
    pytest.param("vit_huge_plus_patch16_dinov3_qkvb", dict(depth=1), marks=SLOW),    # 20 heads of 64, SwiGLU
])
def test_timm_dinov3(name, kwargs, tmp_path):
    torch.manual_seed(0)
    ref = randomize_(timm.create_model(name, **kwargs))                 # as timm makes it: global_pool='avg'
    loaded = vit.load(save_timm(ref, tmp_path))
    cfg = loaded.config
    assert loaded.format == "timm" and cfg.family == "dinov3"
    assert cfg.num_heads == ref.blocks[0].attn.num_heads and cfg.num_reg_tokens == 4 and cfg.layer_scale
    assert cfg.rope_coords == "centered" and cfg.rope_half and cfg.rope_temperature == 100
    assert cfg.layer_norm_eps == 1e-5
    assert cfg.mlp_act == ("swiglu" if "plus" in name else "gelu") and cfg.k_bias == ("qkvb" not in name)
    assert cfg.num_classes == 0 and cfg.readout == "mean"             # model(x) is the mean of the patch tokens
    assert [a.fields["pool"] for a in loaded.assumptions if a.key == "readout_timm"] == ["avg"]
    # timm's DINOv3 pretrained_cfg: 256, crop_pct 1.0, bicubic, ImageNet mean and std
    assert loaded.preprocess.crop == (256, 256) and loaded.preprocess.resize == 256
    for size in ((256, 256), OTHER_SIZE):
        assert_same_as_timm(loaded, ref, size)


def test_timm_dinov3_7b_by_config():
    """ViT-7B/16 (6.7 B parameters) on the meta device: its tensors identify it, its 32 heads of 128 come from the
    family's table, SwiGLU's width (aligned to 64) and the missing qkv bias from the tensors, and our model built
    from that config has exactly timm's tensors."""
    with torch.device("meta"):
        ref = timm.create_model("vit_7b_patch16_dinov3", global_pool="token")
        state = dict(ref.state_dict())
    identified = families.identify(state, "timm", {})
    cfg = infer_config(checkpoint_filter_fn(state, "timm"), **identified.convention, **identified.read)
    assert (cfg.embed_dim, cfg.depth, cfg.num_heads) == (4096, 40, 32) and cfg.embed_dim // cfg.num_heads == 128
    assert cfg.mlp_act == "swiglu" and cfg.mlp_dim == ref.blocks[0].mlp.fc1_g.out_features == 8192
    assert not cfg.qkv_bias and cfg.family == "dinov3"
    with torch.device("meta"):
        ours = vit.VisionTransformer(cfg)
    theirs = {k: tuple(v.shape) for k, v in checkpoint_filter_fn(state, "timm").items()}
    assert {k: tuple(v.shape) for k, v in ours.state_dict().items()} == theirs


# --- DINOv3 in Meta's own layout -------------------------------------------------------------------------------

@pytest.mark.parametrize("name,local_norm", [
    ("vit_small_patch16_dinov3_qkvb", False),                               # ViT-S/16: masked key bias
    pytest.param("vit_small_plus_patch16_dinov3_qkvb", False, marks=SLOW),   # ViT-S+/16: SwiGLU
    pytest.param("vit_small_patch16_dinov3", True, marks=SLOW),              # as ViT-7B/16: no qkv bias, local norm
])
def test_meta_dinov3_layout_equals_timm_reading_the_same_file(name, local_norm, tmp_path):
    torch.manual_seed(0)
    source = randomize_(timm.create_model(name, depth=2, global_pool="token"))
    meta = meta_dinov3_layout(source.state_dict(), heads=6, local_norm=local_norm)
    path = tmp_path / "dinov3_vits16_pretrain_lvd1689m-08c60483.pth"
    torch.save(meta, path)
    loaded = vit.load(path)
    assert loaded.format == "dinov3" and loaded.name == "dinov3_vits16" and loaded.config.num_heads == 6
    assert loaded.config.k_bias == ("qkvb" not in name)               # the masked key bias: q and v biases only
    # facebookresearch/dinov3's make_transform: squashed to 256 × 256, bilinear, ImageNet's mean and std
    assert (loaded.preprocess.resize_mode, loaded.preprocess.crop, loaded.preprocess.interpolation) == \
        ("squash", (256, 256), "bilinear")
    for size in ((256, 256), OTHER_SIZE):
        assert_same_as_timm(loaded, timm_at(name, size, meta, depth=2, global_pool="token"), size)


def test_meta_dinov3_untied_norms_normalise_cls_and_registers_apart(tmp_path):
    """untie_cls_and_patch_norms: cls_norm for the CLS and storage tokens, norm for the patches (DINOv3's
    forward_features), computed here from timm's pre-norm tokens."""
    torch.manual_seed(0)
    source = randomize_(timm.create_model("vit_small_patch16_dinov3_qkvb", depth=2, global_pool="token"))
    meta = meta_dinov3_layout(source.state_dict(), heads=6)
    g = torch.Generator().manual_seed(9)
    meta["cls_norm.weight"] = 1 + 0.1 * torch.randn(384, generator=g)
    meta["cls_norm.bias"] = torch.randn(384, generator=g)
    torch.save(meta, tmp_path / "untied.pth")
    loaded = vit.load(tmp_path / "untied.pth")
    assert loaded.config.prefix_norm
    x = images(2, (256, 256))
    source.norm = torch.nn.Identity()
    with torch.no_grad():
        tokens = source.forward_features(x)                                   # (B, T, D) before the final norm
        want = torch.nn.functional.layer_norm(tokens[:, 0], (384,), meta["cls_norm.weight"], meta["cls_norm.bias"],
                                              1e-5)
        capture = loaded.model.forward_with_attention(x)
    assert_close(capture.output, want)
    assert_close(loaded.model(x), want, "fused forward")


def test_meta_dinov3_satellite_file_gets_its_own_mean_and_std(tmp_path):
    torch.manual_seed(0)
    source = randomize_(timm.create_model("vit_small_patch16_dinov3_qkvb", depth=1, global_pool="token"))
    path = tmp_path / "dinov3_vitl16_pretrain_sat493m-eadcf0ff.pth"       # the name says SAT-493M
    torch.save(meta_dinov3_layout(source.state_dict(), heads=6), path)
    loaded = vit.load(path)
    assert loaded.preprocess.mean == families.SAT493M_MEAN and loaded.preprocess.std == families.SAT493M_STD


# --- DINOv3 in transformers ------------------------------------------------------------------------------------

@pytest.mark.parametrize("gated,registers", [(False, 4), (True, 4), (False, 0)])
def test_transformers_dinov3(gated, registers, tmp_path):
    """DINOv3ViTModel saved with save_pretrained; its pooler_output (the normed CLS token) and eager attentions."""
    config = transformers.DINOv3ViTConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                          num_attention_heads=4, image_size=64, patch_size=16,
                                          num_register_tokens=registers, use_gated_mlp=gated,
                                          hidden_act="silu" if gated else "gelu", rope_theta=100.0)
    torch.manual_seed(0)
    ref = randomize_(transformers.DINOv3ViTModel(config), std=0.05)
    ref.config._attn_implementation = "eager"
    ref.save_pretrained(tmp_path)
    loaded = vit.load(tmp_path)
    cfg = loaded.config
    assert loaded.format == "huggingface-dinov3" and cfg.family == "dinov3" and cfg.num_reg_tokens == registers
    assert cfg.mlp_act == ("swiglu" if gated else "gelu") and not cfg.k_bias and cfg.num_heads == 4
    # DINOv3ViTImageProcessor: squashed to the model's size, bilinear, ImageNet's mean and std
    assert (loaded.preprocess.resize_mode, loaded.preprocess.crop, loaded.preprocess.interpolation) == \
        ("squash", (64, 64), "bilinear")
    for size in ((64, 64), (96, 128)):
        x = images(2, size)
        with torch.no_grad():
            capture = loaded.model.forward_with_attention(x)
            out = ref(pixel_values=x, output_attentions=True)
        assert_close(capture.output, out.pooler_output)
        assert_close(loaded.model(x), out.pooler_output, "fused forward")
        assert_attention(capture.attention, list(out.attentions))


# --- timm's RoPE ViTs --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,kwargs,family_name", [
    ("vit_small_patch16_rope_224", {}, "RoPE-ViT (axial)"),                    # temperature 100, columns first
    ("vit_small_patch16_rope_mixed_224", {}, "RoPE-ViT (mixed)"),              # learnt frequencies, rope.freqs
    pytest.param("vit_small_patch16_rope_mixed_ape_224", {}, "RoPE-ViT (mixed)", marks=SLOW),   # + a patches' table
    ("vit_medium_patch16_rope_reg1_gap_256", dict(num_classes=5), "timm RoPE ViT (rope_reg_gap)"),
    pytest.param("vit_betwixt_patch16_rope_reg4_gap_256", dict(num_classes=5), "timm RoPE ViT (rope_reg_gap)",
                 marks=SLOW),
    pytest.param("vit_mediumd_patch16_rope_reg1_gap_256", dict(num_classes=5), "timm RoPE ViT (rope_reg_gap)",
                 marks=SLOW),                                                  # no qkv bias
])
def test_timm_rope_vits(name, kwargs, family_name, tmp_path):
    torch.manual_seed(0)
    ref = randomize_(timm.create_model(name, depth=2, **kwargs))
    path = save_timm(ref, tmp_path)
    loaded = vit.load(path)
    family = families.FAMILIES[family_name]
    assert loaded.format == "timm" and loaded.config.family == "rope_vit"
    assert all(getattr(loaded.config, k) == v for k, v in family.config.items())
    assert loaded.config.num_heads == ref.blocks[0].attn.num_heads
    native = tuple(ref.patch_embed.img_size)
    assert loaded.config.img_size == native and loaded.preprocess == family.preprocess
    assert_same_as_timm(loaded, ref, native)
    other = vit.load(path, img_size=OTHER_SIZE)      # timm builds these for one size: its model at the other
    assert_same_as_timm(other, timm_at(name, OTHER_SIZE, ref.state_dict(), depth=2, **kwargs), OTHER_SIZE)


def test_timm_rope_vit_hub_folder_names_its_family(tmp_path):
    """A timm Hub folder: config.json's architecture names the family, its pretrained_cfg the preprocessing."""
    torch.manual_seed(0)
    ref = randomize_(timm.create_model("vit_small_patch16_rope_ape_224", depth=2, num_classes=5))
    save_file({k: v.contiguous() for k, v in ref.state_dict().items()}, str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text(json.dumps({
        "architecture": "vit_small_patch16_rope_ape_224", "num_classes": 5,
        "pretrained_cfg": {"input_size": [3, 224, 224], "crop_pct": 0.9, "interpolation": "bicubic",
                           "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}}))
    loaded = vit.load(tmp_path)
    assert loaded.config.family == "rope_vit" and loaded.config.rope_axes == "xy" and not loaded.config.pos_embed_prefix
    assert_same_as_timm(loaded, ref, (224, 224))


# --- what a rotary file opens with, and what is said of it -------------------------------------------------------

def test_position_free_files_never_ask_for_an_image_size(tmp_path):
    """The rotary families have no table to size: each opens at its family's input size, none asks for img_size."""
    for name in ("vit_small_patch16_dinov3", "vit_small_patch16_rope_224", "vit_medium_patch16_rope_reg1_gap_256"):
        torch.manual_seed(0)
        folder = tmp_path / name
        folder.mkdir()
        loaded = vit.load(save_timm(randomize_(timm.create_model(name, depth=1)), folder))
        assert loaded.config.rope and loaded.preprocess.crop == loaded.config.img_size


def test_what_was_identified_is_said_and_what_was_named_is_not(tmp_path):
    """A bare timm DINOv3 file: its rotation, its readout, its heads and its preprocessing were the family's, and the
    loader says so; named in a sidecar with its own preprocessing, nothing is assumed: timm builds it and says."""
    torch.manual_seed(0)
    path = save_timm(randomize_(timm.create_model("vit_small_patch16_dinov3", depth=1)), tmp_path)
    keys = [a.key for a in vit.load(path).assumptions]
    assert keys[:3] == ["rotary_family", "readout_timm", "preprocess"] and "heads_known" in keys
    (tmp_path / "model.json").write_text(json.dumps({"architecture": "vit_small_patch16_dinov3.lvd1689m",
                                                     "preprocess": {"timm": {"input_size": [3, 256, 256],
                                                                             "crop_pct": 1.0}}}))
    assert [a.key for a in vit.load(path).assumptions] == []


def test_dinov3_by_hub_name_from_the_offline_cache(tmp_path, monkeypatch):
    """What a researcher types first: timm's DINOv3 by its Hub name (config.json names the architecture, so the
    rotation is read, not assumed) and transformers' DINOv3 by its name, from a Hub cache prepared here, offline."""
    from hub_cache import offline_hub, put_in_cache

    cache = tmp_path / "hub"
    offline_hub(monkeypatch, cache)
    torch.manual_seed(0)
    ref = randomize_(timm.create_model("vit_small_patch16_dinov3", depth=2))
    timm_folder = tmp_path / "timm"
    timm_folder.mkdir()
    save_file({k: v.contiguous() for k, v in ref.state_dict().items()}, str(timm_folder / "model.safetensors"))
    (timm_folder / "config.json").write_text(json.dumps({
        "architecture": "vit_small_patch16_dinov3", "num_classes": 0, "pretrained_cfg": {
            "tag": "lvd1689m", "input_size": [3, 256, 256], "crop_pct": 1.0, "interpolation": "bicubic",
            "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}}))
    put_in_cache(cache, "timm/vit_small_patch16_dinov3.lvd1689m", timm_folder)
    loaded = vit.load("timm/vit_small_patch16_dinov3.lvd1689m")
    assert loaded.config.family == "dinov3" and "rotary_family" not in [a.key for a in loaded.assumptions]
    assert_same_as_timm(loaded, ref, (256, 256))

    config = transformers.DINOv3ViTConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                          num_attention_heads=4, image_size=64, patch_size=16, num_register_tokens=4)
    hf = randomize_(transformers.DINOv3ViTModel(config), std=0.05)
    hf.save_pretrained(tmp_path / "hf")
    put_in_cache(cache, "facebook/dinov3-vits16-pretrain-lvd1689m", tmp_path / "hf")
    loaded = vit.load("facebook/dinov3-vits16-pretrain-lvd1689m")
    x = images(2, (64, 64))
    with torch.no_grad():
        assert_close(loaded.model(x), hf(pixel_values=x).pooler_output)
