"""Protects the claim that each explanation method equals its authors' package on the same weights.

- ``attnlrp`` vs ``lxt`` (AttnLRP's authors): a Hugging Face ViT patched with a patch map built from lxt's
  own rule functions (``layer_norm_forward``, ``non_linear_forward``, ``wrap_attention_forward``), then
  lxt's recipe: gradient × input of the pixels, here summed per patch;
- ``cp_lrp`` vs ``lxt``'s default patch map for torchvision's ViT (which is CP-LRP inside the attention);
- ``gradcam`` vs ``pytorch-grad-cam`` (``GradCAM`` with its ViT ``reshape_transform``, target layer
  ``blocks[-1].norm1``), on a timm ViT and on our own model, compared like with like: our raw map taken
  through the package's ReLU (already in ours), min-max scaling and OpenCV resize;
- ``grad_rollout`` vs vit-explain's hook recipe: its hooks collect the gradients in reverse block order
  (its issue #6); reversed they equal ours, unreversed they give another map.

The weights are random (perturbed so no zero head or identity LayerNorm hides a mistake) and loaded into
our model with ``vit.load`` from the reference's own checkpoint format.
"""
from __future__ import annotations

import importlib
from functools import partial

import cv2
import numpy as np
import pytest
import timm
import torch
import torch.nn as nn
from safetensors.torch import save_file

import vit
from viz.explain.explainer import explain_map, explain_tensor
from oracles import grad_rollout_matrix
from vit.explain import ATTN_LRP, CP_LRP, ClassTarget, gradient_pass, relevance_pass
from lrp_references import LRP_TOL, assert_close_relative, lxt_efficient, lxt_patched, per_patch

CAM_TOL = 1e-5       # shown maps in [0, 1], and raw maps relative to their max (measured 6e-7 and 5e-7)


def perturbed(model: nn.Module, seed: int = 0, std: float = 0.05) -> nn.Module:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(std * torch.randn(p.shape, generator=g))
    return model.eval()


def pixels(size=(32, 32), seed=1) -> torch.Tensor:
    return torch.randn(1, 3, *size, generator=torch.Generator().manual_seed(seed))


# --- lxt -----------------------------------------------------------------------------------------------------

def lxt_heatmap(model: nn.Module, x: torch.Tensor, cls: int, call) -> torch.Tensor:
    """lxt's recipe (its examples/vit_torch.py): no parameter gradients, backward from the class logit,
    relevance = (input * input.grad).sum(channels) -> (H, W)."""
    for p in model.parameters():
        p.requires_grad_(False)
    x = x.clone().requires_grad_()
    call(model, x)[0, cls].backward()
    return (x * x.grad).sum(1)[0].detach()


@pytest.fixture(scope="module")
def huggingface_vit(tmp_path_factory):
    """A 3-block Hugging Face ViT (eager attention, 4 heads of 16) and the same weights in our model."""
    import transformers
    config = transformers.ViTConfig(hidden_size=64, num_hidden_layers=3, num_attention_heads=4, intermediate_size=128,
                                    image_size=32, patch_size=8, num_labels=5, attn_implementation="eager")
    torch.manual_seed(0)
    ref = perturbed(transformers.ViTForImageClassification(config))
    folder = tmp_path_factory.mktemp("hf") / "vit"
    ref.save_pretrained(folder)
    return ref, vit.load(folder).model


@pytest.mark.parametrize("cls", [0, 3])
def test_attnlrp_equals_lxt_on_a_huggingface_vit(huggingface_vit, cls):
    from transformers.activations import GELUActivation
    from transformers.models.vit import modeling_vit

    lxt_efficient()
    patches = importlib.import_module("lxt.efficient.patches")
    ref, ours = huggingface_vit
    x = pixels()

    def attention_rule(module) -> bool:   # lxt's own wrapper: q, k gradients / 4, v / 2 (transformers 5 dispatch)
        module.eager_attention_forward = patches.wrap_attention_forward(module.eager_attention_forward)
        return True

    patch_map = {nn.LayerNorm: partial(patches.patch_method, patches.layer_norm_forward),
                 GELUActivation: partial(patches.patch_method, patches.non_linear_forward, keep_original=True),
                 modeling_vit: attention_rule}
    with lxt_patched(patch_map):
        heat = lxt_heatmap(ref, x, cls, lambda m, x: m(pixel_values=x).logits)
    reference = per_patch(heat, 8)
    got = relevance_pass(ours, x, ClassTarget(cls), ATTN_LRP).relevance[0]
    assert_close_relative(got, reference, LRP_TOL)
    # the rules matter: CP-LRP and plain gradient × input give other maps on the same weights
    cp = relevance_pass(ours, x, ClassTarget(cls), CP_LRP).relevance[0]
    plain = per_patch(lxt_heatmap(ref, x, cls, lambda m, x: m(pixel_values=x).logits), 8)
    assert float((cp - reference).abs().max()) > 0.1 * float(reference.abs().max())
    assert float((plain - reference).abs().max()) > 0.1 * float(reference.abs().max())
    np.testing.assert_allclose(explain_map("attnlrp", ours, x, ClassTarget(cls)), got.reshape(4, 4).numpy(), rtol=1e-5,
                               atol=1e-7)


@pytest.fixture(scope="module")
def torchvision_vit(tmp_path_factory):
    from torchvision.models import vision_transformer as tv
    torch.manual_seed(0)
    ref = perturbed(tv.VisionTransformer(image_size=32, patch_size=8, num_layers=3, num_heads=4, hidden_dim=64,
                                         mlp_dim=128, num_classes=5))
    path = tmp_path_factory.mktemp("tv") / "small.pth"
    torch.save(ref.state_dict(), path)
    return ref, vit.load(path, num_heads=4).model


@pytest.mark.parametrize("cls", [1, 4])
def test_cp_lrp_equals_lxts_default_map_for_torchvision_vit(torchvision_vit, cls):
    from torchvision.models import vision_transformer as tv
    lxt_efficient()
    from lxt.efficient.models import get_default_map

    ref, ours = torchvision_vit
    x = pixels(seed=2)
    with lxt_patched(get_default_map(tv)):      # lxt's own map for torchvision: identity rules + CP-LRP attention
        heat = lxt_heatmap(ref, x, cls, lambda m, x: m(x))
    got = relevance_pass(ours, x, ClassTarget(cls), CP_LRP).relevance[0]
    assert_close_relative(got, per_patch(heat, 8), LRP_TOL)


# --- pytorch-grad-cam ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def timm_vit(tmp_path_factory):
    torch.manual_seed(0)
    ref = perturbed(timm.models.vision_transformer.VisionTransformer(
        img_size=32, patch_size=8, embed_dim=64, depth=3, num_heads=4, mlp_ratio=2.0, num_classes=5))
    path = tmp_path_factory.mktemp("timm") / "small.safetensors"
    save_file({k: v.contiguous() for k, v in ref.state_dict().items()}, str(path))
    return ref, vit.load(path, num_heads=4).model


def package_gradcam(model: nn.Module, x: torch.Tensor, cls: int, grid: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """pytorch-grad-cam's ViT recipe: target layer blocks[-1].norm1, drop the CLS token, reshape to the grid.

    Returns (what ``GradCAM(...)(x)`` shows: (H, W) in [0, 1], the raw map before its display steps: the
    package's own ``get_cam_image`` on the activations and gradients it captured, ReLU applied: (gh, gw))."""
    from pytorch_grad_cam import GradCAM
    from pytorch_grad_cam.utils.model_targets import ClassifierOutputTarget

    def reshape_transform(t):
        return t[:, 1:, :].reshape(t.size(0), grid[0], grid[1], t.size(2)).permute(0, 3, 1, 2)

    layer, targets = model.blocks[-1].norm1, [ClassifierOutputTarget(cls)]
    with GradCAM(model=model, target_layers=[layer], reshape_transform=reshape_transform) as cam:
        shown = cam(input_tensor=x, targets=targets)[0]
        captured = cam.activations_and_grads
        raw = cam.get_cam_image(x, layer, targets, captured.activations[0].numpy(), captured.gradients[0].numpy())
    return shown, np.maximum(raw[0], 0)


def min_max(values: np.ndarray) -> np.ndarray:
    values = values - values.min()
    return values / (1e-7 + values.max())


def as_the_package_shows_it(values: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """The package's display steps applied to our raw map: per target layer min-max and OpenCV resize to the
    input (``scale_cam_image(cam, target_size)``), then, across target layers, min-max once more
    (``aggregate_multi_layers``; a bilinear resize moves the minimum and maximum)."""
    return min_max(cv2.resize(np.float32(min_max(values)), (size[1], size[0])))


@pytest.mark.parametrize("reference", ["timm", "ours"])
@pytest.mark.parametrize("cls", [0, 2])
def test_gradcam_equals_pytorch_grad_cam(timm_vit, reference, cls):
    timm_model, ours = timm_vit
    x = pixels(seed=3)
    shown, raw = package_gradcam(timm_model if reference == "timm" else ours, x, cls, (4, 4))
    got = explain_map("gradcam", ours, x, ClassTarget(cls))
    assert got.shape == (4, 4) and got.max() > 0
    err = np.abs(as_the_package_shows_it(got, (32, 32)) - shown).max()
    assert err <= CAM_TOL, f"max difference {err:.2e} after the display steps"
    assert np.abs(got - raw).max() <= CAM_TOL * raw.max()       # and the raw values, before any scaling


# --- vit-explain's gradient pairing (its issue #6) -----------------------------------------------------------------

def vit_explain_hooks(model: nn.Module, x: torch.Tensor, cls: int) -> tuple[list, list]:
    """vit-explain's recipe: a forward hook and a backward hook on every block's ``attn_drop``, one backward from
    the class logit. Returns (attentions, gradients) in the order the hooks appended them."""
    attentions, gradients = [], []
    handles = []
    for blk in model.blocks:
        blk.attn.fused_attn = False
        handles.append(blk.attn.attn_drop.register_forward_hook(lambda m, i, o: attentions.append(o.detach()[0])))
        handles.append(blk.attn.attn_drop.register_full_backward_hook(lambda m, gi, go: gradients.append(gi[0][0])))
    try:
        model(x.clone().requires_grad_())[0, cls].backward()
    finally:
        for h in handles:
            h.remove()
    return attentions, gradients


def test_grad_rollout_pairs_blocks_as_vit_explain_meant_and_not_as_it_does(timm_vit, tmp_path):
    torch.manual_seed(1)
    ref = perturbed(timm.models.vision_transformer.VisionTransformer(
        img_size=32, patch_size=8, embed_dim=64, depth=4, num_heads=4, mlp_ratio=2.0, num_classes=5), seed=1)
    path = tmp_path / "four_blocks.safetensors"
    save_file({k: v.contiguous() for k, v in ref.state_dict().items()}, str(path))
    ours = vit.load(path, num_heads=4).model
    x, cls = pixels(seed=4), 3
    attentions, hooked = vit_explain_hooks(ref, x, cls)
    g = gradient_pass(ours, x, ClassTarget(cls))
    for layer in range(4):          # the hooks saw the gradients last block first
        torch.testing.assert_close(g.attention[layer][0], attentions[layer], atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(g.attention_grad[layer][0], hooked[3 - layer], atol=1e-6, rtol=1e-4)
        assert float((g.attention_grad[layer][0] - hooked[layer]).abs().max()) > 1e-3

    def grad_rollout(grads) -> np.ndarray:
        A = torch.stack(attentions).numpy()
        return (np.eye(17, dtype=np.float32)[0] @ grad_rollout_matrix(A, torch.stack(grads).numpy()))[1:].reshape(4, 4)

    ours_map = explain_tensor(ours, x, ClassTarget(cls), ["grad_rollout"]).map("grad_rollout")
    np.testing.assert_allclose(ours_map, grad_rollout(hooked[::-1]), atol=1e-6)
    as_vit_explain_pairs = grad_rollout(hooked)
    assert np.abs(as_vit_explain_pairs - ours_map).max() > 0.1 * ours_map.max()
