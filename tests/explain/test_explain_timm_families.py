"""Protects the explanations of timm's relative-position ViTs (the MLP bias, LayerScale blocks, the shared bias, the
res-post-norm blocks), its parallel-block ViTs and its NaFlexViT, loaded from timm's own state dicts: every one of
the 8 class-map methods runs on the grid of the input (a non-square one for the families that take any grid), and
AttnLRP and CP-LRP equal lxt's rules applied to timm's own model.

lxt has no patch map for timm, and timm's attention has no module-level attention function for lxt's wrapper to
replace (it calls ``F.scaled_dot_product_attention`` inside ``Attention.forward``): so lxt's own attention wrappers
(``wrap_attention_forward``: q, k gradients / 4 and v / 2; ``cp_wrap_attention_forward``: no gradient to q and k)
are put around that call for the duration of the test, and lxt's LayerNorm and GELU rules patched into timm's
classes; then lxt's recipe, gradient × input of the pixels summed per patch. The relative-position bias is computed
from the grid alone and gets no relevance in either. MAP pooling is left out: lxt's wrapper would divide the
probe's constant query's gradient too, a rule lxt does not define for a pooling probe.
"""
from __future__ import annotations

import importlib
from contextlib import contextmanager
from functools import partial

import numpy as np
import pytest
import timm
import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file
from timm.layers import LayerNorm as TimmLayerNorm

import vit
from lrp_references import LRP_TOL, assert_close_relative, lxt_efficient, lxt_patched, per_patch
from reference_models import images, randomize_
from viz.explain.explainer import explain_tensor
from viz.explain import METHODS
from vit.explain import ATTN_LRP, CP_LRP, ClassTarget, relevance_pass

FAMILIES = {  # timm architecture -> (small model's kwargs, sidecar facts, an input size of the family)
    "vit_relpos_small_patch16_224": (dict(img_size=(48, 80)), {}, (48, 80)),
    "vit_srelpos_small_patch16_224": (dict(img_size=(48, 80)), {}, (48, 80)),
    "vit_relpos_small_patch16_rpn_224": (dict(img_size=(48, 80)), {}, (48, 80)),
    "vit_small_patch16_18x2_224": (dict(img_size=64), {}, (64, 64)),
    "naflexvit_base_patch16_par_gap": (dict(embed_dim=192, num_heads=3), {"pos_embed_ar_preserving": True},
                                       (48, 80)),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    cache = {}

    def get(name):
        if name not in cache:
            kw, facts, _ = FAMILIES[name]
            torch.manual_seed(0)
            ref = randomize_(timm.create_model(name, pretrained=False, depth=2, num_classes=5, **kw), std=0.05)
            path = tmp_path_factory.mktemp("timm") / "model.safetensors"
            save_file({k: v.contiguous() for k, v in ref.state_dict().items()}, str(path))
            cache[name] = ref, vit.load(path, **facts)
        return cache[name]
    return get


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_every_class_map_method_runs(name, built):
    _, loaded = built(name)
    size = FAMILIES[name][2]
    e = explain_tensor(loaded.model, images(1, size), ClassTarget(2))
    grid = (size[0] // 16, size[1] // 16)
    assert set(e.maps) == set(METHODS)
    for method, values in e.maps.items():
        assert values.shape == grid and np.isfinite(values).all(), method


@contextmanager
def lxt_attention(rules: str):
    """timm's scaled_dot_product_attention wrapped by lxt's own attention wrapper for ``rules``, then restored."""
    patches = importlib.import_module("lxt.efficient.patches")
    wrap = patches.wrap_attention_forward if rules == "attnlrp" else patches.cp_wrap_attention_forward
    plain = F.scaled_dot_product_attention
    wrapped = wrap(lambda module, q, k, v, *args, **kwargs: plain(q, k, v, *args, **kwargs))
    torch.nn.functional.scaled_dot_product_attention = lambda q, k, v, *a, **kw: wrapped(None, q, k, v, *a, **kw)
    try:
        yield
    finally:
        torch.nn.functional.scaled_dot_product_attention = plain


@pytest.mark.parametrize("rules", ["attnlrp", "cp_lrp"])
@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_lrp_equals_lxts_rules_in_timm(name, rules, built):
    ref, loaded = built(name)
    lxt_efficient()
    patches = importlib.import_module("lxt.efficient.patches")
    rule = partial(patches.patch_method, patches.layer_norm_forward)
    patch_map = {nn.LayerNorm: rule, TimmLayerNorm: rule,
                 nn.GELU: partial(patches.patch_method, patches.non_linear_forward, keep_original=True)}
    size = FAMILIES[name][2]
    x = images(1, size, seed=3)
    for p in ref.parameters():
        p.requires_grad_(False)
    try:
        with lxt_patched(patch_map), lxt_attention(rules):
            pixels = x.clone().requires_grad_()
            ref(pixels)[0, 2].backward()
            heat = (pixels * pixels.grad).sum(1)[0].detach()
    finally:
        for p in ref.parameters():
            p.requires_grad_(True)
    got = relevance_pass(loaded.model, x, ClassTarget(2), ATTN_LRP if rules == "attnlrp" else CP_LRP).relevance[0]
    assert_close_relative(got, per_patch(heat, 16), LRP_TOL)
