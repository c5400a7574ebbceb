"""Protects a Swin's class maps: Grad-CAM equals pytorch-grad-cam's GradCAM with its Swin recipe (the tutorial's
target layer layers[-1].blocks[-1].norm1 and swinT_reshape_transform) on timm's Swin and on ours; GAE through
windows and merges equals GAE of the dense re-implementation of the same network (global attention with the window
mask, tests/dense_swin.py: the same relevance); AttnLRP and CP-LRP equal lxt's rules applied to timm's Swin v1, and
are refused for Swin v2 in one sentence; a Swin has every method of the one table but vit-explain's gradient rollout,
which says why from the description; every map lies on stage 0's patch grid."""
from __future__ import annotations

import importlib
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn as nn

import vit
from dense_swin import chain, dense_forward
from lrp_references import LRP_TOL, assert_close_relative, lxt_efficient, lxt_patched, per_patch
from swin_references import perturbed, pixels, save, small_swin, timm_swin
from viz.explain.explainer import explain_map, explain_tensor
from viz.explain.baselines import random_values
from viz.explain.gradcam import gradcam_values
from viz.explain.grad_rollout import ONE_SEQUENCE
from viz.explain.methods import METHODS, method_names, methods_for
from vit.architecture import sum_up
from viz.maps import windows as hierarchy
from vit.explain import ATTN_LRP, CP_LRP, ClassTarget, gradient_pass, relevance_pass

CAM_TOL = 1e-5       # the package's shown maps in [0, 1], and raw maps relative to their max (as for the ViT)


@pytest.fixture(scope="module")
def timm_v1(tmp_path_factory):
    """timm's Swin v1 of two stages at 56×56 (a 14×14 patch grid, then Swin-T's 7×7 last stage: the grid the
    tutorial's reshape transform takes) and the same weights in ours. timm's fused attention is switched on (timm
    leaves it off for Swin): lxt's rules wrap an attention function, and the fused one is the function timm calls."""
    ref = perturbed(timm_swin(1, img_size=(56, 56), depths=(2, 2), num_heads=(1, 2)))
    for name, m in ref.named_modules():
        if name.endswith(".attn"):
            m.fused_attn = True
    path = save(ref, "timm", tmp_path_factory.mktemp("timm"))
    return ref, vit.load(path).model


def test_a_swin_has_every_method_but_gradient_rollout(swin):
    architecture = swin.architecture(*swin.cfg.img_size)
    assert methods_for(architecture) == [m for m in METHODS if m != "grad_rollout"]
    with pytest.raises(ValueError) as e:
        method_names("gae,grad_rollout", architecture)
    assert str(e.value) == ONE_SEQUENCE and "use gae" in str(e.value)


def test_every_map_lies_on_the_patch_grid(photo):
    model = small_swin(1)
    e = explain_tensor(model, photo, ClassTarget(2))
    assert sorted(e.maps) == sorted(methods_for(model.architecture(*photo.shape[-2:])))
    assert e.grid == (16, 16) and e.num_prefix == 0
    assert e.readout == "the mean of the last stage's tokens" and e.query == "mean"
    for name, m in e.maps.items():
        assert m.shape == (16, 16) and np.isfinite(m).all(), name
    assert np.isclose(e.maps["rollout"].sum(), 1.0) and np.isclose(e.maps["attention"].sum(), 1.0, atol=1e-6)
    np.testing.assert_array_equal(e.maps["random"], random_values((16, 16)))
    np.testing.assert_array_equal(explain_map("gae", model, photo, ClassTarget(2)), e.maps["gae"])
    other = explain_tensor(model, photo, ClassTarget(0), ["gae", "gradcam"])   # class-specific: another class
    assert np.abs(other.maps["gae"] - e.maps["gae"]).max() > 1e-3 * e.maps["gae"].max()


# --- Grad-CAM: pytorch-grad-cam's Swin recipe -------------------------------------------------------------------

def package_gradcam(model: nn.Module, x: torch.Tensor, cls: int) -> tuple[np.ndarray, np.ndarray]:
    """pytorch-grad-cam's Swin tutorial: GradCAM on layers[-1].blocks[-1].norm1 with swinT_reshape_transform (7×7).
    Returns (the shown map (H, W) in [0, 1], the raw 7×7 map its get_cam_image computes, ReLU applied).

    The transform was written for tokens (B, 49, C); timm ≥ 0.9 (and our model) keep a Swin's tokens as (B, 7, 7, C),
    which are flattened to that layout first."""
    from pytorch_grad_cam import GradCAM
    from pytorch_grad_cam.utils.model_targets import ClassifierOutputTarget
    from pytorch_grad_cam.utils.reshape_transforms import swinT_reshape_transform

    def reshape_transform(t: torch.Tensor) -> torch.Tensor:
        return swinT_reshape_transform(t.reshape(t.size(0), -1, t.size(-1)))

    layer, targets = model.layers[-1].blocks[-1].norm1, [ClassifierOutputTarget(cls)]
    with GradCAM(model=model, target_layers=[layer], reshape_transform=reshape_transform) as cam:
        shown = cam(input_tensor=x, targets=targets)[0]
        captured = cam.activations_and_grads
        raw = cam.get_cam_image(x, layer, targets, captured.activations[0].numpy(), captured.gradients[0].numpy())
    return shown, np.maximum(raw[0], 0)


@pytest.mark.parametrize("reference", ["timm", "ours"])
def test_gradcam_equals_pytorch_grad_cam(timm_v1, reference):
    from pytorch_grad_cam.utils.image import scale_cam_image
    timm_model, ours = timm_v1
    x, cls = pixels((56, 56), batch=1, seed=3), 3
    shown, raw = package_gradcam(timm_model if reference == "timm" else ours, x, cls)
    got = explain_map("gradcam", ours, x, ClassTarget(cls))                     # (14, 14): 7×7 shared down
    native = sum_up(got.reshape(-1), (14, 14), (7, 7)).reshape(7, 7)
    assert native.max() > 0
    np.testing.assert_allclose(native, raw, atol=CAM_TOL * raw.max())
    as_shown = scale_cam_image(scale_cam_image(native[None], (56, 56)))[0]     # the package's own display steps
    assert np.abs(as_shown - shown).max() <= CAM_TOL
    p = gradient_pass(ours, x, ClassTarget(cls))                                # tokens (1, 7·7, C)
    np.testing.assert_allclose(gradcam_values(p.tokens[0], p.tokens_grad[0], 0, (7, 7)), native, rtol=1e-5, atol=1e-7)


# --- GAE: the dense network's ---------------------------------------------------------------------------------

@pytest.mark.parametrize("cls", [0, 3])
def test_gae_equals_the_dense_networks(swin, photo, cls):
    """GAE of the dense network: its (T, T) attention and their gradients from its own backward, I + mean_h((∇A ⊙ A)⁺)
    multiplied per stage, merges as M, the last stage's mean row."""
    x = photo.clone().requires_grad_()
    logits, maps, geometry = dense_forward(swin, x)
    grads = torch.autograd.grad(logits[0, cls], maps)
    stages, grids = [], []
    for a, g, (grid, _, _) in zip(maps, grads, geometry):
        if not grids or grid != grids[-1]:
            stages.append([])
            grids.append(grid)
        bar = (a[0] * g[0]).clamp(min=0).mean(dim=0).detach().double()
        stages[-1].append(torch.eye(bar.shape[0], dtype=torch.float64) + bar)
    want = chain(stages, grids).reshape(16, 16).numpy()
    got = explain_map("gae", swin, photo, ClassTarget(cls))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6 * want.max())   # float32 against float64
    p = gradient_pass(swin, photo, ClassTarget(cls))                            # the windows' gradients are the
    for l, (g_win, g_dense, layout) in enumerate(zip(p.attention_grad, grads, p.architecture.blocks)):  # dense ones
        np.testing.assert_allclose(hierarchy.expand(g_win[0].numpy() * p.attention[l][0].numpy(), layout),
                                   (g_dense[0] * maps[l][0]).detach().numpy(), atol=1e-6, err_msg=f"block {l}")


# --- AttnLRP and CP-LRP: lxt's rules on timm's Swin ---------------------------------------------------------------

@contextmanager
def lxt_attention(rule: str):
    """lxt's attention wrapper around the fused attention timm's WindowAttention calls (q, k / 4 and v / 2 for
    AttnLRP, no gradient through q and k for CP-LRP): lxt wraps attention functions, and timm's is
    torch.nn.functional.scaled_dot_product_attention."""
    patches = importlib.import_module("lxt.efficient.patches")
    original = torch.nn.functional.scaled_dot_product_attention
    wrap = patches.wrap_attention_forward if rule == "attnlrp" else patches.cp_wrap_attention_forward
    wrapped = wrap(lambda module, q, k, v, **kwargs: original(q, k, v, **kwargs))
    torch.nn.functional.scaled_dot_product_attention = lambda q, k, v, **kwargs: wrapped(None, q, k, v, **kwargs)
    try:
        yield
    finally:
        torch.nn.functional.scaled_dot_product_attention = original


def lxt_relevance(model: nn.Module, x: torch.Tensor, cls: int, rule: str) -> torch.Tensor:
    """lxt's recipe on timm's Swin: its LayerNorm and GELU rules, its attention wrapper, gradient × input of the
    pixels summed per 4×4 patch -> (14·14,)."""
    from functools import partial
    lxt_efficient()
    patches = importlib.import_module("lxt.efficient.patches")
    patch_map = {nn.LayerNorm: partial(patches.patch_method, patches.layer_norm_forward),
                 nn.GELU: partial(patches.patch_method, patches.non_linear_forward, keep_original=True)}
    flags = [p.requires_grad for p in model.parameters()]
    for p in model.parameters():
        p.requires_grad_(False)
    x = x.clone().requires_grad_()
    try:
        with lxt_patched(patch_map), lxt_attention(rule):
            model(x)[0, cls].backward()
    finally:                                   # the fixture's model is shared with the Grad-CAM test
        for p, flag in zip(model.parameters(), flags):
            p.requires_grad_(flag)
    return per_patch((x * x.grad).sum(1)[0].detach(), 4)


@pytest.mark.parametrize("rule", ["attnlrp", "cp_lrp"])
def test_lrp_equals_lxt_on_timms_swin(timm_v1, rule):
    timm_model, ours = timm_v1
    x, cls = pixels((56, 56), batch=1, seed=4), 1
    reference = lxt_relevance(timm_model, x, cls, rule)
    got = relevance_pass(ours, x, ClassTarget(cls), ATTN_LRP if rule == "attnlrp" else CP_LRP).relevance[0]
    assert_close_relative(got, reference, LRP_TOL)
    other = relevance_pass(ours, x, ClassTarget(cls), CP_LRP if rule == "attnlrp" else ATTN_LRP).relevance[0]
    assert float((other - reference).abs().max()) > 0.05 * float(reference.abs().max())   # the rules matter
    np.testing.assert_allclose(explain_map(rule, ours, x, ClassTarget(cls)), got.reshape(14, 14).numpy())


def test_lrp_is_refused_for_swin_v2_in_one_sentence(photo):
    model = small_swin(2)
    with pytest.raises(ValueError) as e:
        relevance_pass(model, photo, ClassTarget(0), ATTN_LRP)
    assert str(e.value).startswith("AttnLRP and CP-LRP are not defined for Swin v2: lxt has no rule for its scaled "
                                   "cosine attention") and str(e.value).count(". ") == 0
    from viz.trust.job import unsupported
    architecture = model.architecture(*model.cfg.img_size)
    assert set(unsupported(model, methods_for(architecture))) == {"attnlrp", "cp_lrp"}
    assert unsupported(small_swin(1), methods_for(architecture)) == {}


def test_the_passes_give_every_block_on_its_own_layout(photo):
    """The one gradient pass on a Swin: each block's window attention and gradient (nW, H, N, N) as its description
    says, Grad-CAM's tokens over the last stage; the relevance over stage 0's patches."""
    model = small_swin(1)
    p = gradient_pass(model, photo, ClassTarget(0))
    assert len(p.attention) == len(p.attention_grad) == p.architecture.depth == 6
    for a, g, block in zip(p.attention, p.attention_grad, p.architecture.blocks):
        assert a.shape == g.shape == (1, block.num_windows, block.heads, block.window_area, block.window_area)
    last = p.architecture.blocks[-1]
    assert p.tokens.shape == p.tokens_grad.shape == (1, last.grid[0] * last.grid[1], model.cfg.num_features)
    assert relevance_pass(model, photo).relevance.shape == (1, 256)


def test_relevance_sums_to_the_logit_up_to_the_biases(photo):
    """AttnLRP's conservation, checked loosely: the patches' relevance has the logit's sign and size (the biases and
    the LayerNorms' means keep their share)."""
    model = small_swin(1)
    p = relevance_pass(model, photo, ClassTarget(1), ATTN_LRP)
    assert p.relevance.shape == (1, 256)
    assert abs(float(p.relevance.sum()) - float(p.score[0])) < abs(float(p.score[0])) + 1.0


def test_swin_parameters_are_untouched(photo):
    model = small_swin(1)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    gradient_pass(model, photo)
    relevance_pass(model, photo)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert all(p.grad is None for p in model.parameters())


def test_a_checkpoint_file_explains_as_its_model(tmp_path, photo):
    model = small_swin(1)
    vit.save_checkpoint(tmp_path / "s.pt", model, ["a", "b", "c", "d"], vit.Preprocess(resize=32, crop=(32, 32)))
    loaded = vit.load(tmp_path / "s.pt")
    np.testing.assert_array_equal(explain_map("gae", loaded.model, photo), explain_map("gae", model, photo))
    assert Path(loaded.source).name == "s.pt"
