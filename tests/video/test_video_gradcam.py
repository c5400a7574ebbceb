"""Protects the claim that a video model's Grad-CAM per frame is pytorch-grad-cam's for video: the package's GradCAM
with a 3-D ``reshape_transform`` (the target layer's tokens laid out as (B, D, T', gh, gw), the prefix dropped), built
as a user builds it on transformers' VideoMAE, TimeSformer, ViViT and V-JEPA 2 classifiers (random weights, perturbed;
the target layer: the LayerNorm the last attention reads) and on ours, gives the same raw map per time position and,
after its display step (a cubic-spline resize to the input's frames and pixels, min-max scaled), the same shown map;
a batch of two clips is two clips (TimeSformer's activation holds one group per frame of every clip)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn
from pytorch_grad_cam import GradCAM
from pytorch_grad_cam.utils.model_targets import ClassifierOutputTarget
from scipy.ndimage import zoom

import vit
from video_references import FAMILIES, SIZES, clips, reference
from viz.video.classmap import clip_gradcam, gradcam_volume, scale_clip
from vit.explain import ClassTarget
from vit.explain.video import gradcam_pass

FRAMES = 4
TOL = 1e-5      # raw maps relative to their max, shown maps in [0, 1]


class ChannelsFirst(nn.Module):
    """A video classifier called as pytorch-grad-cam calls a 3-D model: clips (B, C, T, H, W) -> logits (B, K) (the
    package sizes its 3-D maps from the input's last three axes)."""

    def __init__(self, model: nn.Module, key: str | None):
        super().__init__()
        self.model, self.key = model, key

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        clips = x.transpose(1, 2)                                              # (B, T, C, H, W)
        return self.model(clips) if self.key is None else self.model(**{self.key: clips}).logits


def target_layer(model: nn.Module, family: str) -> nn.Module:
    """The LayerNorm the last attention step reads, in transformers' names."""
    if family == "vjepa2":
        return model.pooler.self_attention_layers[-1].layer_norm1
    base = getattr(model, family)
    layers = base.layers if family == "vivit" else base.encoder.layer             # ViViT names them "layers"
    return layers[-1].layernorm_before


def package_gradcam(model: nn.Module, layer: nn.Module, key: str | None, x: torch.Tensor, cls: int,
                    prefix: int, shape: tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray]:
    """pytorch-grad-cam on clips x (B, T, C, H, W): (what ``GradCAM(...)(x)`` shows (B, T, H, W), the raw map before
    its display step (B, T', gh, gw): the package's ``get_cam_image`` on what it captured, ReLU applied)."""
    B = x.shape[0]

    def reshape_transform(t):                          # (B·G, n, D) -> (B, D, T', gh, gw): prefix dropped
        return t[:, prefix:].reshape(B, *shape, t.size(-1)).permute(0, 4, 1, 2, 3)

    wrapped = ChannelsFirst(model, key)
    x = x.transpose(1, 2)
    targets = [ClassifierOutputTarget(cls)] * B
    with GradCAM(model=wrapped, target_layers=[layer], reshape_transform=reshape_transform) as cam:
        shown = cam(input_tensor=x, targets=targets)
        captured = cam.activations_and_grads
        raw = cam.get_cam_image(x, layer, targets, captured.activations[0].numpy(), captured.gradients[0].numpy())
    return shown, np.maximum(raw, 0)


def as_the_package_shows_it(values: np.ndarray, size: tuple[int, int, int]) -> np.ndarray:
    """Our scaled map (T', gh, gw) through the package's display step: ``scale_cam_image(cam, target_size)``'s spline
    zoom to (T, H, W), then ``aggregate_multi_layers``' clip at 0 and min-max once more (the spline overshoots)."""
    zoomed = zoom(np.float32(values), [s / v for v, s in zip(values.shape, size)])
    return scale_clip(np.maximum(zoomed, 0))


@pytest.fixture(scope="module", params=FAMILIES)
def pair(request, tmp_path_factory):
    family = request.param
    ref = reference(family, "small", FRAMES).eval()
    folder = tmp_path_factory.mktemp(family) / family
    ref.save_pretrained(folder)
    return family, ref, vit.load(folder).model


@pytest.mark.parametrize("side", ["transformers", "ours"])
def test_gradcam_per_frame_equals_pytorch_grad_cam(pair, side):
    family, ref, ours = pair
    block = ours.architecture(32, 32, FRAMES).blocks[-1]
    shape = (block.frames, *block.grid)
    if side == "transformers":
        model, layer = ref, target_layer(ref, family)
        key = "pixel_values_videos" if family == "vjepa2" else "pixel_values"
    else:
        model, layer, key = ours, ours.get_submodule(ours.gradcam_layer()), None
    x = clips(2, FRAMES, SIZES["small"][4], seed=5)
    for cls in (1, 3):
        shown, raw = package_gradcam(model, layer, key, x, cls, block.prefix, shape)
        run = gradcam_pass(ours, x, ClassTarget(cls))
        mine = gradcam_volume(run.activation, run.gradient).numpy()                  # (2, T', gh, gw)
        assert mine.shape == raw.shape == (2, *shape) and (raw.max(axis=(1, 2, 3)) > 0).all()
        err = np.abs(mine - raw).max(axis=(1, 2, 3)) / raw.max(axis=(1, 2, 3))
        assert (err <= TOL).all(), f"{family} class {cls}: raw maps differ by {err.max():.2e} of their max"
        one = clip_gradcam(ours, x[1:], ClassTarget(cls))
        assert one.index == cls and np.abs(one.raw - mine[1]).max() <= TOL * mine[1].max()
        span = one.raw.max() - one.raw.min()
        assert one.values.min() == 0 and abs(one.values.max() - span / (1e-7 + span)) <= 1e-6   # the package's 1e-7
        shown_ours = as_the_package_shows_it(one.values, (FRAMES, 32, 32))
        diff = np.abs(shown_ours - shown[1]).max()
        assert shown.shape == (2, FRAMES, 32, 32) and diff <= TOL, f"shown maps differ by {diff:.2e}"


def test_default_target_is_the_top_class(pair):
    family, _, ours = pair
    x = clips(1, FRAMES, SIZES["small"][4], seed=7)
    with torch.no_grad():
        top = int(ours(x).argmax())
    default, named = clip_gradcam(ours, x), clip_gradcam(ours, x, ClassTarget(top))
    assert default.index == top and np.array_equal(default.raw, named.raw)
