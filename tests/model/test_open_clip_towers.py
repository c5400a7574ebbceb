"""Protects the claim that open_clip's image towers open as open_clip runs them, from open_clip's Hub folders
(open_clip_config.json + open_clip_model.safetensors), with the same image embedding (``encode_image``, relative
difference <= 1e-4) and every block's softmax attention, checked at load time:

- EVA-02 CLIP and Perception Encoder (``EVA02-B-16``, ``PE-Core-B-16``): a timm tower whose timm head is the
  projection into the image–text space (``timm_proj: null``), CLS-pooled or pooled by PE's probe of 8 heads over
  every token (timm's model, made by timm from its name);
- CLIPA (``ViT-L-14-CLIPA``'s settings): open_clip's own tower without a LayerNorm before the blocks, the mean of the
  patches, its LayerNorm after pooling; its text tower (a BERT tokenizer, no causal mask) is not CLIP's, so only the
  image tower opens.

Towers are made short (2 blocks) as open_clip's configs build them otherwise; text towers small; every parameter
perturbed.
"""
from __future__ import annotations

import json

import open_clip
import pytest
import timm
import torch
import torch.nn as nn
from safetensors.torch import save_file

import vit
from reference_models import assert_attention, assert_close, images, randomize_

TEXT = dict(context_length=16, vocab_size=100, width=64, heads=2, layers=1)


def timm_tower(timm_name: str, pool: str, embed_dim: int, image_size: int):
    """open_clip's CustomTextCLIP as its config builds it (timm_proj null: timm's head projects), the tower short."""
    vision = dict(image_size=image_size, timm_model_name=timm_name, timm_model_pretrained=False, timm_pool=pool,
                  timm_proj=None)
    with torch.device("meta"):
        model = open_clip.CustomTextCLIP(embed_dim=embed_dim, vision_cfg=vision, text_cfg=TEXT)
    model = model.to_empty(device="cpu")
    model.visual.trunk = timm.create_model(timm_name, depth=2, num_classes=embed_dim, global_pool=pool,
                                           img_size=image_size)
    torch.manual_seed(0)
    for p in model.parameters():
        nn.init.normal_(p, std=0.02)
    config = {"model_cfg": {"embed_dim": embed_dim, "vision_cfg": vision, "text_cfg": TEXT, "custom_text": True},
              "preprocess_cfg": {"mean": [0.5] * 3, "std": [0.5] * 3, "interpolation": "bicubic"}}
    return randomize_(model, std=0.05), config, model.visual.trunk


def folder_of(model, config, folder):
    folder.mkdir()
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(folder / "open_clip_model.safetensors"))
    (folder / "open_clip_config.json").write_text(json.dumps(config))
    return folder


def timm_maps(trunk) -> list:
    maps = []
    for block in trunk.blocks:
        block.attn.fused_attn = False
        block.attn.attn_drop.register_forward_hook(lambda m, i, o: maps.append(i[0]))
    return maps


@pytest.mark.parametrize("timm_name,pool,embed_dim,size,readout", [
    ("eva02_base_patch16_clip_224", "token", 512, 64, "cls"),                       # EVA02-B-16
    ("vit_pe_core_base_patch16_224", "map", 1024, 64, "map_all"),                   # PE-Core-B-16
])
def test_an_open_clip_timm_tower_whose_timm_head_projects(timm_name, pool, embed_dim, size, readout, tmp_path):
    ref, config, trunk = timm_tower(timm_name, pool, embed_dim, size)
    loaded = vit.load(folder_of(ref, config, tmp_path / "oc"))
    cfg = loaded.config
    assert loaded.format == "open-clip-timm" and cfg.readout == readout and cfg.num_classes == 0
    assert (cfg.proj_dim, cfg.proj_bias) == (embed_dim, True)                        # timm's head, with its bias
    assert loaded.verified.library == "timm" and loaded.assumptions == []
    maps = timm_maps(trunk)
    x = images(2, (size, size))
    with torch.no_grad():
        expected = ref.encode_image(x)
        capture = loaded.model.forward_with_attention(x)
    assert_close(capture.output, expected)
    assert_attention(capture.attention, maps)


def test_clipas_image_tower(tmp_path):
    vision = dict(layers=2, width=128, head_width=64, patch_size=16, image_size=64, no_ln_pre=True, pool_type="avg",
                  final_ln_after_pool=True)
    text = dict(context_length=16, vocab_size=320, width=64, heads=2, layers=1, hf_tokenizer_name="bert-base-uncased",
                no_causal_mask=True, pool_type="last")
    torch.manual_seed(0)
    ref = randomize_(open_clip.CLIP(embed_dim=32, vision_cfg=open_clip.CLIPVisionCfg(**vision),
                                    text_cfg=open_clip.CLIPTextCfg(**text)))
    config = {"model_cfg": {"embed_dim": 32, "vision_cfg": vision, "text_cfg": text},
              "preprocess_cfg": {"mean": [0.5] * 3, "std": [0.5] * 3}}
    loaded = vit.load(folder_of(ref, config, tmp_path / "clipa"))
    cfg = loaded.config
    assert (cfg.readout, cfg.fc_norm, cfg.norm_pre, loaded.text) == ("mean", True, False, None)
    assert loaded.verified.library == "open_clip"
    maps = []
    for block in ref.visual.transformer.resblocks:
        block.ln_1.register_forward_hook(lambda m, i, o, b=block: maps.append(
            b.attn(o, o, o, need_weights=True, average_attn_weights=False)[1]))
    x = images(2, (64, 64))
    with torch.no_grad():
        expected = ref.encode_image(x)
        capture = loaded.model.forward_with_attention(x)
    assert_close(capture.output, expected)
    assert_attention(capture.attention, maps)
