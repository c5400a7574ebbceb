"""Protects the maps of models without a CLS token (viz/maps/readout.py) and every family through every panel.

SigLIP: the MAP probe's map is the probe's attention (sums to 1 over the patches), its rollout the probe's
head-fused row times the blocks' rollout matrix. Mean-pooled models (BEiT): the query is the mean of the patch
rows. CLS models: the same numbers as before. One tiny random model of each family (ViT, CLIP, SigLIP,
EVA-02, BEiT) runs through the analysis, every panel and the architecture table.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

import vit
from viz import panels
from viz.analysis import analyze, model_arrays
from viz.model.view import block_params, family_summary, stages, total_params
from viz.maps.attention import token_attention_map
from viz.maps.readout import (readout_all_heads_maps, readout_attention_map, readout_rollout_map, readout_weights,
                              fuse_probe)
from oracles import render_all, rollout_matrix
from viz.maps.rollout import fused_rollout_map, fuse_heads
from viz.cli.pictures import captions

BASE = dict(img_size=(64, 48), patch_size=16, embed_dim=32, depth=3, num_heads=4, mlp_dim=64, num_classes=5)
FAMILIES = {  # family -> the ViTConfig features that make it (see vit/model.py)
    "vit": dict(),
    "clip": dict(norm_pre=True, patch_bias=False, mlp_act="quick_gelu", layer_norm_eps=1e-5, num_classes=0,
                 proj_dim=16),
    "siglip": dict(class_token=False, readout="map", mlp_act="gelu_tanh", num_classes=0),
    "eva02": dict(rope=True, rope_ref_grid=(16, 16), mlp_act="swiglu", mlp_norm=True, attn_norm=True,
                  k_bias=False, readout="mean", fc_norm=True),
    "beit": dict(pos_embed_kind="none", rel_pos_bias=True, layer_scale=True, k_bias=False, readout="mean",
                 fc_norm=True),
}
READOUT = {"vit": "cls", "clip": "cls", "siglip": "map", "eva02": "mean", "beit": "mean"}
QUERY = {"cls": "CLS", "map": "MAP probe", "mean": "mean of patches"}


def family_model(family: str) -> vit.VisionTransformer:
    torch.manual_seed(0)
    model = vit.VisionTransformer(vit.ViTConfig(**{**BASE, **FAMILIES[family]})).eval()
    with torch.no_grad():  # random, not the init: zero biases and tables would hide a wrong readout
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return model


def family_loaded(family: str):
    model = family_model(family)
    return SimpleNamespace(model=model, preprocess=vit.Preprocess(resize=48, crop=(64, 48)),
                           labels=[f"c{i}" for i in range(model.cfg.num_classes)], name=family)


@pytest.fixture(scope="module")
def photo():
    from PIL import Image
    return Image.fromarray(np.random.default_rng(0).integers(0, 256, (80, 60, 3), dtype=np.uint8))


@pytest.mark.parametrize("family", FAMILIES)
def test_every_map_and_panel_runs_on_each_family(family, photo):
    loaded = family_loaded(family)
    assert loaded.model.cfg.family == family
    a = analyze(loaded, photo)
    gh, gw = a.grid
    T = a.num_prefix + gh * gw
    assert a.readout == READOUT[family] and (a.probe_attention is not None) == (family == "siglip")
    K = loaded.model.cfg.num_classes                                 # 0 for the CLIP and SigLIP towers
    assert a.probabilities.size == K and len(a.top_k(3)) == min(3, K)
    images, arrays = render_all(a, model_arrays(loaded.model, family), panels.MapOptions(colorbar=True))
    for key in ("rollout", "cls_attention", "query_row", "query_column"):
        assert arrays[key].shape == (gh, gw) and np.isfinite(arrays[key]).all(), key
    assert arrays["mean_distance"].shape == (3, 4) and a.token_norms.shape == (3, T)
    assert ("pos_similarity" in arrays) == (family != "beit")          # BEiT has no absolute position embeddings
    for key in ("input", "rollout", "attention", "threshold", "query_row", "query_column", "heads", "filters",
                "pos_similarity", "mean_distance", "token_norms", "token_norm_curves"):
        assert images[key].mode == "RGB", key
    named = captions(a, panels.MapOptions())
    assert all(QUERY[a.readout] in named[k] for k in ("rollout", "attention", "threshold"))
    rolled = panels.query_maps(a, 1, 1, rolled=True)
    assert rolled[0].shape == (gh, gw)


@pytest.mark.parametrize("family", FAMILIES)
def test_architecture_table_counts_every_family_s_parameters(family):
    cfg = vit.ViTConfig(**{**BASE, **FAMILIES[family]})
    with torch.device("meta"):
        model = vit.VisionTransformer(cfg)
    assert total_params(stages(cfg)) == sum(p.numel() for p in model.parameters())
    assert block_params(cfg) == sum(p.numel() for p in model.blocks[0].parameters())
    assert family_summary(cfg).startswith("**" + {"vit": "Vision Transformer", "clip": "CLIP", "siglip": "SigLIP",
                                                  "eva02": "EVA-02", "beit": "BEiT"}[family])


def test_siglip_probe_map_sums_to_one_and_is_the_probe_attention(photo):
    loaded = family_loaded("siglip")
    x = loaded.preprocess(photo)
    with torch.no_grad():
        probe = loaded.model.forward_with_attention(x).probe_attention[0].numpy()   # (H, T)
    a = analyze(loaded, photo)
    np.testing.assert_allclose(a.probe_attention, probe, rtol=1e-5)
    assert a.num_prefix == 0
    for head in (None, 0, 3):
        values = panels.attention_of(a, layer=1, head=head)           # the probe reads after the last block
        expected = probe.mean(axis=0) if head is None else probe[head]
        np.testing.assert_allclose(values.ravel(), expected, rtol=1e-5)
        assert values.sum() == pytest.approx(1.0, abs=1e-5)


def test_probe_rollout_is_the_probe_row_times_the_rollout_matrix(photo):
    a = analyze(family_loaded("siglip"), photo)
    for fusion, discard in (("mean", 0.0), ("max", 0.5)):
        p = fuse_probe(a.probe_attention, fusion)
        p = p / p.sum()                              # max fusion: renormalised, as rollout renormalises its rows
        expected = p @ rollout_matrix(a.attention, fusion, discard, protect=())
        got = panels.rollout_of(a, fusion=fusion, discard_ratio=discard)
        np.testing.assert_allclose(got.ravel(), expected, rtol=1e-5, atol=1e-7)
    assert panels.rollout_of(a).sum() == pytest.approx(1.0, abs=1e-5)


def test_mean_readout_is_the_mean_of_the_patch_rows():
    rng = np.random.default_rng(1)
    L, H, prefix, grid = 2, 3, 1, (2, 3)
    T = prefix + 6
    attn = rng.random((L, H, T, T)).astype(np.float32)
    attn /= attn.sum(-1, keepdims=True)
    expected = attn[1, 2, prefix:, :].mean(axis=0)[prefix:].reshape(grid)     # block 1, head 2, by hand
    np.testing.assert_allclose(readout_attention_map(attn, prefix, grid, "mean", None, 1, 2), expected, rtol=1e-5)
    expected = rollout_matrix(attn, protect=())[prefix:].mean(axis=0)[prefix:].reshape(grid)
    np.testing.assert_allclose(readout_rollout_map(fuse_heads(attn), prefix, grid, "mean"), expected, rtol=1e-5)
    heads = readout_all_heads_maps(attn, prefix, grid, "map")                   # blocks have no probe: mean rows
    np.testing.assert_allclose(heads[0, 1], attn[0, 1, prefix:, prefix:].mean(axis=0).reshape(grid), rtol=1e-5)


def test_cls_readout_keeps_the_cls_numbers():
    rng = np.random.default_rng(2)
    attn = rng.random((3, 2, 1 + 12, 1 + 12)).astype(np.float32)
    attn /= attn.sum(-1, keepdims=True)
    drop = np.zeros((3, 4), dtype=bool)
    drop[0, 0] = True
    assert np.array_equal(readout_attention_map(attn, 1, (3, 4), "cls", None, 1, None),
                          token_attention_map(attn, 1, (3, 4), 1, None))
    assert np.array_equal(readout_rollout_map(fuse_heads(attn), 1, (3, 4), "cls", None, "mean", 0.5, 1, drop),
                          fused_rollout_map(fuse_heads(attn), 1, (3, 4), 0, 0.5, 1, drop))
    assert np.array_equal(readout_weights(13, 1, "cls") @ np.eye(13), np.eye(13)[0])
    assert np.allclose(readout_weights(13, 1, "mean") @ np.eye(13), np.r_[0, np.full(12, 1 / 12)])


def test_dropped_patches_leave_the_probe_row_renormalised():
    rng = np.random.default_rng(3)
    grid, T = (2, 2), 4
    attn = rng.random((1, 2, T, T)).astype(np.float32)
    attn /= attn.sum(-1, keepdims=True)
    probe = np.array([[0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1]], dtype=np.float32)
    drop = np.array([[True, False], [False, False]])
    got = readout_rollout_map(fuse_heads(attn), 0, grid, "map", probe, drop_patches=drop)
    keep = [1, 2, 3]
    p = probe.mean(axis=0)[keep] / probe.mean(axis=0)[keep].sum()
    kept = fuse_heads(attn)[0][np.ix_(keep, keep)]
    R = 0.5 * kept + 0.5 * np.eye(3)
    R /= R.sum(-1, keepdims=True)
    assert got[0, 0] == 0 and got.sum() == pytest.approx(1.0, abs=1e-6)
    np.testing.assert_allclose(got.ravel()[keep], p @ R, rtol=1e-5)


def test_readouts_refuse_what_does_not_fit():
    attn = np.full((1, 1, 5, 5), 0.2, dtype=np.float32)
    with pytest.raises(ValueError, match="needs the probe's attention"):
        readout_attention_map(attn, 1, (2, 2), "map", None)
    with pytest.raises(ValueError, match="Unknown readout 'token'"):
        readout_attention_map(attn, 1, (2, 2), "token", None)
    with pytest.raises(ValueError, match="reads the CLS token, but this layout has 0 prefix tokens"):
        readout_attention_map(np.full((1, 1, 4, 4), 0.25, dtype=np.float32), 0, (2, 2), "cls", None)
