"""Protects "open what the file is": timm's ViT families whose tensors do not say everything open as timm's model
of them, from a bare file (recognised by their tensors, what was not read said) and from a timm Hub folder (saved by
timm's own save_for_hf: config.json names the architecture and its model_args, and timm builds it), with the same
output (relative difference <= 1e-4) and every block's softmax attention timm computed, at the native input size and
at another one; every load checked against timm at load time.

    Perception Encoder core   rotation counted from 1 in (x, y), a probe of 8 heads over every token, timm's head the
                              projection into the image–text space
    Perception Encoder spatial / lang   no norm after the blocks, the mean of the patches
    BEiT-3                    LayerNorm eps 1e-5
    vit_*_rpn                 the norms after each branch
    so150m                    registers that carry a position embedding
    InternViT-300M            no final norm, LayerScale
    AIMv2                     RMSNorm, a norm on the patch embeddings, no biases, 128-wide heads, SwiGLU

And DINOv3 with each readout: timm's default (the mean of the patches) on a bare file and a fine-tuned classifier,
the CLS token named in a sidecar or in a Hub folder's model_args, and the Hub name hf-hub:timm/vit_small_patch16_dinov3
from a prepared offline cache.
"""
from __future__ import annotations

import json

import pytest
import timm
import torch
from safetensors.torch import save_file
from timm.models._hub import save_for_hf

import vit
from reference_models import assert_close, assert_same_as_timm, images, randomize_

SLOW = pytest.mark.slow


def made(name: str, **kw):
    torch.manual_seed(0)
    return randomize_(timm.create_model(name, **kw), std=0.05)


def bare(model, folder) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "model.safetensors"
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(path))
    return str(path)


def hub_folder(model, folder):
    save_for_hf(model, str(folder), safe_serialization=True)    # config.json: architecture, model_args
    return folder


def at(name: str, size, model, **kw):
    """timm's model of ``name`` built for ``size`` with ``model``'s weights (timm's own filter resizes the table)."""
    import importlib
    other = timm.create_model(name, **{**kw, "img_size": size}).eval()
    convert = importlib.import_module(type(other).__module__).checkpoint_filter_fn
    other.load_state_dict(convert(model.state_dict(), other))
    return other


FAMILIES = {  # name -> (timm kwargs of a short model, another input size, what ours reads, assumptions of a bare file)
    "vit_pe_core_base_patch16_224": (dict(depth=2), (160, 192),
                                     dict(readout="map_all", pool_heads=8, rope_offset=1.0, rope_axes="xy",
                                          layer_norm_eps=1e-5, proj_dim=1024, num_classes=0),
                                     {"rotary_family", "preprocess"}),
    "vit_pe_spatial_tiny_patch16_512": (dict(depth=2), (384, 448),
                                        dict(readout="mean", final_norm=False, rope_offset=1.0, layer_norm_eps=1e-5),
                                        {"rotary_family", "preprocess"}),
    "vit_pe_lang_large_patch14_448": (dict(depth=2), (392, 336),
                                      dict(readout="mean", final_norm=False, layer_scale=True, layer_norm_eps=1e-5),
                                      {"rotary_family", "preprocess"}),
    "beit3_base_patch16_224": (dict(depth=2), (160, 192), dict(layer_norm_eps=1e-5, readout="mean", fc_norm=True),
                               {"eps_beit3"}),
    "vit_base_patch16_rpn_224": (dict(depth=2), (160, 192), dict(res_post_norm=True, readout="mean"),
                                 {"block_order_rpn"}),
    "vit_so150m_patch16_reg4_gap_256": (dict(depth=2), (192, 224),
                                        dict(pos_embed_registers=True, num_reg_tokens=4, readout="mean"), set()),
    "vit_intern300m_patch14_448": (dict(depth=2, img_size=224), (196, 168),
                                   dict(final_norm=False, layer_scale=True, readout="cls"), set()),
    "aimv2_large_patch14_224": (dict(depth=2), (196, 168),
                                dict(norm_kind="rmsnorm", patch_norm=True, linear_bias=False, num_heads=8,
                                     mlp_act="swiglu", readout="mean"), set()),
}
FAST = ("vit_pe_core_base_patch16_224", "beit3_base_patch16_224")


@pytest.mark.parametrize("name", [n if n in FAST else pytest.param(n, marks=SLOW) for n in FAMILIES])
def test_a_bare_file_and_a_hub_folder_open_as_timms_model(name, tmp_path):
    kw, other, reads, said = FAMILIES[name]
    ref = made(name, **kw)
    native = tuple(ref.patch_embed.img_size)
    for source in (bare(ref, tmp_path / "bare"), hub_folder(ref, tmp_path / "hub")):
        loaded = vit.load(source)
        cfg = loaded.config
        assert all(getattr(cfg, k) == v for k, v in reads.items()), {k: getattr(cfg, k) for k in reads}
        assert loaded.verified.status == "verified" and loaded.verified.library == "timm"
        keys = {a.key for a in loaded.assumptions}
        assert said <= keys if source != tmp_path / "hub" else not keys & said   # the folder names it: nothing said
        assert_same_as_timm(loaded, ref, native)
    assert_same_as_timm(vit.load(tmp_path / "hub"), at(name, other, ref, **kw), other)


@SLOW
def test_a_fine_tuned_dinov3_with_timms_default_pool_gives_timms_logits(tmp_path):
    """timm's DINOv3 fine-tuned with its own head keeps timm's default global_pool='avg': the logits are the mean of
    the patch tokens through the head, as timm computes them, from a bare file (assumed and said) and from its Hub
    folder (read), at two sizes."""
    ref = made("vit_small_patch16_dinov3", depth=2, num_classes=10)
    for source in (bare(ref, tmp_path / "bare"), hub_folder(ref, tmp_path / "hub")):
        loaded = vit.load(source)
        assert loaded.config.readout == "mean" and loaded.config.num_classes == 10
        assert loaded.verified.library == "timm"
        assert ("readout_timm" in [a.key for a in loaded.assumptions]) == (source != tmp_path / "hub")
        for size in ((256, 256), (224, 320)):
            assert_same_as_timm(loaded, ref, size)


@pytest.mark.parametrize("how", ["sidecar", "model_args"])
def test_dinov3_read_by_its_cls_token_when_the_file_says_so(how, tmp_path):
    """A DINOv3 made to pool its CLS token (DINOv3's own readout): said in a sidecar's config, or recorded in its
    Hub folder's model_args (timm's save_for_hf writes global_pool)."""
    ref = made("vit_small_patch16_dinov3", depth=2, global_pool="token", num_classes=4)
    if how == "sidecar":
        path = bare(ref, tmp_path)
        (tmp_path / "model.json").write_text(json.dumps({"architecture": "vit_small_patch16_dinov3",
                                                         "config": {"readout": "cls"}}))
        loaded = vit.load(path)
    else:
        loaded = vit.load(hub_folder(ref, tmp_path / "hub"))
    assert loaded.config.readout == "cls" and loaded.verified.library == "timm"
    assert [a.key for a in loaded.assumptions] == (["preprocess"] if how == "sidecar" else [])
    assert_same_as_timm(loaded, ref, (256, 256))


def test_dinov3_by_its_hf_hub_name_from_an_offline_cache(tmp_path, monkeypatch):
    """hf-hub:timm/vit_small_patch16_dinov3.lvd1689m as timm's Hub repository holds it (save_for_hf's config.json and
    weights), from a Hub cache prepared here, offline: opened with timm's default pool, checked against timm; its
    pooled output is timm's."""
    from hub_cache import offline_hub, put_in_cache
    ref = made("vit_small_patch16_dinov3", depth=2, num_classes=0)
    put_in_cache(tmp_path / "cache", "timm/vit_small_patch16_dinov3.lvd1689m", hub_folder(ref, tmp_path / "repo"))
    offline_hub(monkeypatch, tmp_path / "cache")
    loaded = vit.load("hf-hub:timm/vit_small_patch16_dinov3.lvd1689m")
    assert loaded.config.readout == "mean" and loaded.verified.library == "timm" and loaded.assumptions == []
    x = images(2, (256, 256))
    with torch.no_grad():
        assert_close(loaded.model(x), ref(x))


def test_without_timm_the_table_stands_in_and_says_so(tmp_path, monkeypatch):
    """timm not installed (simulated): a Hub folder naming BEiT-3 opens from the explorer's own table, the load says
    it read the table, and it is not verified, with the reason."""
    from vit.checkpoints import references, timm_library
    ref = made("beit3_base_patch16_224", depth=2)
    folder = hub_folder(ref, tmp_path / "hub")
    monkeypatch.setattr(timm_library, "timm_version", lambda: None)
    monkeypatch.setattr(references, "installed", lambda library: None)
    loaded = vit.load(folder)
    assert loaded.config.layer_norm_eps == 1e-5 and "timm_table" in [a.key for a in loaded.assumptions]
    assert str(loaded.verified) == "not verified (timm is not installed)"
    x = images(2, (224, 224))
    with torch.no_grad():
        assert_close(loaded.model(x), ref(x))
