"""Grad-CAM per frame for a video model (Selvaraju et al., ICCV 2017), as pytorch-grad-cam computes it for video.

The activation is the tokens the model's last attention step reads (``vit.explain.video.gradcam_pass``), laid out
as a 3-D feature map A (D channels on T' time positions × gh × gw patches), as the package's ``reshape_transform``
lays a video transformer's tokens out. Each channel is weighted by its gradient averaged over time and space, the
weighted sum is clipped at 0, and the clip's map is min-max scaled as one volume (every frame on one scale, so the
frames compare):

    w_d = mean_{τ,r,c} ∂score/∂A_{d,τ,r,c},   cam_{τ,r,c} = max(0, Σ_d w_d · A_{d,τ,r,c}),
    shown = (cam − min cam) / (1e-7 + max(cam − min cam))

These are pytorch-grad-cam's numbers before its display step (it then resizes the volume to the input's frames and
pixels with a cubic spline, ``scipy.ndimage.zoom``, clips the spline's overshoot at 0 and min-max scales again); here
the map stays on the tokens: time position τ covers the ``tubelet`` input frames τ·t … τ·t + t − 1 (``viz.video.view.frame_maps``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from PIL import Image

from vit.explain.video import gradcam_pass

from ..drawing import render
from ..i18n import t
from ..records import Analysis
from .view import captioned, frame_overlays, frames_strip

VIDEO_METHODS = ("gradcam",)     # the explanation methods drawn for a video model (``python -m viz VIDEO --explain``)


@dataclass(frozen=True)
class ClipGradCam:
    """Grad-CAM of one clip: ``values`` (T', gh, gw) min-max scaled to [0, 1] over the clip, ``raw`` before the
    scaling (ReLU applied), the explained class and its logit."""
    values: np.ndarray
    raw: np.ndarray
    index: int
    score: float


def gradcam_volume(activation: torch.Tensor, gradient: torch.Tensor) -> torch.Tensor:
    """(B, D, T', gh, gw) activation and its gradient -> (B, T', gh, gw) Grad-CAM (ReLU applied, not scaled)."""
    if activation.shape != gradient.shape or activation.ndim != 5:
        raise ValueError(f"Wrong shapes! Expected the activation and its gradient both (B, D, T', gh, gw) but got "
                         f"{tuple(activation.shape)} and {tuple(gradient.shape)}.")
    weights = gradient.float().mean(dim=(2, 3, 4))                                  # (B, D) one weight per channel
    return torch.einsum("bd,bdthw->bthw", weights, activation.float()).clamp(min=0)


def scale_clip(cam: np.ndarray) -> np.ndarray:
    """A clip's map (T', gh, gw) -> min-max scaled to [0, 1] over the whole clip, as pytorch-grad-cam scales."""
    cam = np.asarray(cam, np.float32)
    cam = cam - cam.min()
    return (cam / (1e-7 + cam.max())).astype(np.float32)


def clip_gradcam(model, x: torch.Tensor, target=None, turn=None) -> ClipGradCam:
    """One clip (1, F, C, H, W) -> its ``ClipGradCam`` for ``target`` (a ``vit.explain.ClassTarget``; default its
    top-1 class); ``turn``: taken for each step of the model (``vit.explain.video.gradcam_pass``)."""
    if x.ndim != 5 or x.shape[0] != 1:
        raise ValueError(f"Wrong input shape! Expected one clip (1, frames, channels, H, W) but got {tuple(x.shape)}.")
    run = gradcam_pass(model, x, target, turn)
    raw = gradcam_volume(run.activation, run.gradient)[0].cpu().numpy()
    index = int(target.index) if getattr(target, "index", None) is not None else int(run.output[0].argmax())
    return ClipGradCam(scale_clip(raw), raw, index, float(run.score[0]))


def gradcam_strip(a: Analysis, cam: ClipGradCam, name: str, cmap: str = render.DEFAULT_CMAP, alpha: float = 0.6,
                  lang: str = "en") -> Image.Image:
    """The sampled frames, each with its time position's Grad-CAM on the clip's one scale, under a line naming the
    explained class (``name``)."""
    strip = frames_strip(a, frame_overlays(a, cam.values, cmap, alpha), lang)
    return captioned(strip, t("picture.video_gradcam", lang, name=name), lang)


CLASS_MAPS = {"gradcam": clip_gradcam}      # each of VIDEO_METHODS: (model, clip, target, turn) -> its map
assert set(CLASS_MAPS) == set(VIDEO_METHODS), "every video method needs its computation"


def clip_classmap(model, x: torch.Tensor, method: str = "gradcam", target=None, turn=None) -> ClipGradCam:
    """One clip (1, F, C, H, W) -> the class map of ``method`` (one of ``VIDEO_METHODS``) for ``target`` (default:
    its top-1 class), its values (T', gh, gw) on one scale over the clip: the page's one call, whatever the method."""
    if method not in CLASS_MAPS:
        raise ValueError(f"Unknown video method {method!r}! Expected one of {VIDEO_METHODS}.")
    return CLASS_MAPS[method](model, x, target, turn)
