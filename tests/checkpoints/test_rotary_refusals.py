"""Protects "nothing opens wrong" for the rotary families: a file whose tensors fit a rotary family and another model
alike, or that holds no position information and does not say how it rotates, is refused with a message that names
the missing fact and how to give it; the advice, followed, gives a model equal to its reference (or a plain model,
when the file says it is one). Files whose rotation this explorer does not reproduce are refused, saying so."""
from __future__ import annotations

import json

import pytest
import timm
import torch
import transformers

import vit
from reference_models import assert_same_as_timm, meta_dinov3_layout, randomize_, save_timm


def sidecar(path: str, **fields) -> None:
    with open(path.removesuffix(".safetensors") + ".json", "w") as f:
        json.dump(fields, f)


def test_rope_vit_with_absolute_positions_is_not_taken_for_a_plain_vit(tmp_path):
    """timm's vit_*_patch16_rope_ape_224 has DeiT III's tensors exactly (EVA-style LayerScale, a table of the patches
    only, a key bias): loaded as a plain ViT it would run without its rotation, so it is refused until named."""
    torch.manual_seed(0)
    ref = randomize_(timm.create_model("vit_small_patch16_rope_ape_224", depth=2, num_classes=5))
    path = save_timm(ref, tmp_path)
    with pytest.raises(ValueError, match=r"DeiT III .* RoPE-ViT .*\"architecture\": \"deit3_small_patch16_224\" or "
                                         r"\"vit_small_patch16_rope_ape_224\""):
        vit.load(path)
    sidecar(path, architecture="vit_small_patch16_rope_ape_224.naver_in1k")         # the advice, followed
    loaded = vit.load(path)
    assert loaded.config.family == "rope_vit" and loaded.config.rope_axes == "xy"
    assert_same_as_timm(loaded, ref, (224, 224))
    sidecar(path, architecture="deit3_small_patch16_224")                          # or: it is DeiT III
    plain = vit.load(path)
    assert not plain.config.rope and plain.config.layer_scale and not plain.config.pos_embed_prefix


def test_a_file_without_positions_that_no_family_explains_is_refused_until_named(tmp_path):
    """A DINOv3 without registers (no timm model, but a DINOv3 all the same) has no position tensor and none of the
    features that tell the families apart; named, it opens with DINOv3's rotation."""
    torch.manual_seed(0)
    ref = randomize_(timm.create_model("vit_small_patch16_dinov3", depth=2, num_reg_tokens=0, global_pool="token"))
    path = save_timm(ref, tmp_path)
    with pytest.raises(ValueError, match=r"holds no position information .* rotary embedding, whose settings are not "
                                         r"in the file\. .*\"architecture\""):
        vit.load(path)
    sidecar(path, architecture="vit_small_patch16_dinov3")
    loaded = vit.load(path)
    assert loaded.config.family == "dinov3" and loaded.config.num_reg_tokens == 0
    assert_same_as_timm(loaded, ref, (256, 256))


def test_position_free_files_never_ask_for_an_image_size(tmp_path):
    """The rotary families have no table to size: each opens at its family's input size, none asks for img_size."""
    for name in ("vit_small_patch16_dinov3", "vit_small_patch16_rope_224", "vit_medium_patch16_rope_reg1_gap_256"):
        torch.manual_seed(0)
        folder = tmp_path / name
        folder.mkdir()
        loaded = vit.load(save_timm(randomize_(timm.create_model(name, depth=1)), folder))
        assert loaded.config.rope and loaded.preprocess.crop == loaded.config.img_size


def meta_file(tmp_path, **changes) -> str:
    """A minimal DINOv3 file in Meta's layout (one block), with ``changes`` to its tensors."""
    torch.manual_seed(0)
    ref = randomize_(timm.create_model("vit_small_patch16_dinov3_qkvb", depth=1, global_pool="token"))
    state = {**meta_dinov3_layout(ref.state_dict(), heads=6), **changes}
    torch.save(state, tmp_path / "model.pth")
    return str(tmp_path / "model.pth")


def test_meta_files_with_a_rotation_we_do_not_reproduce_are_refused(tmp_path):
    other_base = (1000.0 ** (2 * torch.arange(16) / 32)).to(torch.bfloat16)      # 64-wide heads, base 1000
    with pytest.raises(ValueError, match="not DINOv3's base-100 schedule"):
        vit.load(meta_file(tmp_path, **{"rope_embed.periods": other_base}))
    with pytest.raises(ValueError, match="bias_mask holds NaN"):
        vit.load(meta_file(tmp_path, **{"blocks.0.attn.qkv.bias_mask": torch.full((1152,), float("nan"))}))


def test_transformers_dinov3_without_the_published_biases_is_refused(tmp_path):
    config = transformers.DINOv3ViTConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                                          num_attention_heads=4, image_size=32, patch_size=16, proj_bias=False)
    transformers.DINOv3ViTModel(config).save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="proj bias"):
        vit.load(tmp_path)
