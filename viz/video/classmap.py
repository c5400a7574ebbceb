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
from typing import Callable

import numpy as np
import torch
from PIL import Image

from vit.explain.video import ClassMapPass, gradcam_pass

from ..drawing import render
from ..i18n import t
from ..records import Analysis
from .gae import gae_of_pass, relevance_of_step
from .view import captioned, frame_overlays, frames_strip


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
    run = gradcam_pass(model, x, target, turn=turn)
    raw = gradcam_volume(run.activation, run.gradient)[0].cpu().numpy()
    index = int(target.index) if getattr(target, "index", None) is not None else int(run.output[0].argmax())
    return ClipGradCam(scale_clip(raw), raw, index, float(run.score[0]))


def _gradcam_of_pass(run: ClassMapPass, clip: int) -> np.ndarray:
    """Grad-CAM of clip ``clip`` of a pass, min-max scaled over the clip (the values pytorch-grad-cam shows)."""
    return scale_clip(gradcam_volume(run.activation[clip:clip + 1], run.gradient[clip:clip + 1])[0].cpu().numpy())


@dataclass(frozen=True)
class VideoMethod:
    """One class map of a video model: how it is read from the one gradient pass (``gradcam_pass``), and whether that
    pass runs the explicit softmax and reduces every step's attention with its gradient (``viz.video.gae``; the
    forward then holds one (H, T, T) float32 array per joint step, G·H·n² per grouped one, until the backward)."""
    name: str
    attention: bool                                     # the pass keeps every step's attention and its gradient
    of_pass: Callable[[ClassMapPass, int], np.ndarray]  # (pass, clip) -> the clip's map (T', gh, gw), as written
    caption: str                                        # the strip's caption (``viz.i18n`` key, ``{name}``: class)
    scaled: bool                                        # the values are min-max scaled over the clip (else raw)


# The explanation methods of a video model, one entry each (``python -m viz VIDEO --explain``, the page's choices).
VIDEO_METHODS: dict[str, VideoMethod] = {m.name: m for m in (
    VideoMethod("gradcam", False, _gradcam_of_pass, "picture.video_gradcam", True),
    VideoMethod("gae", True, gae_of_pass, "picture.video_gae", False),
)}


@dataclass(frozen=True)
class ClipMaps:
    """Class maps of one clip for one class: ``maps`` {method: (T', gh, gw)} (``VideoMethod.of_pass``'s values), the
    explained class, its logit and its softmax probability."""
    maps: dict[str, np.ndarray]
    index: int
    score: float
    probability: float


def video_method_names(names) -> list[str]:
    """"gradcam,gae" (or a list) -> the names, each once; ValueError naming the video methods for another name."""
    names = [n.strip() for n in names.split(",")] if isinstance(names, str) else [str(n) for n in names]
    unknown = [n for n in names if n not in VIDEO_METHODS]
    if unknown or not names:
        raise ValueError(f"--explain {unknown[0] if unknown else ''} is not drawn for video models; the video methods "
                         f"are {', '.join(VIDEO_METHODS)}.")
    return list(dict.fromkeys(names))


def clip_maps(model, x: torch.Tensor, methods=tuple(VIDEO_METHODS), target=None, turn=None) -> ClipMaps:
    """One clip (1, F, C, H, W) -> ``ClipMaps`` of ``methods`` for ``target`` (a ``vit.explain.ClassTarget``; default
    its top-1 class), from one forward and one backward (``gradcam_pass``, keeping the steps' attention when a
    method needs it; ``turn``: a server's model turn, taken at every step)."""
    if x.ndim != 5 or x.shape[0] != 1:
        raise ValueError(f"Wrong input shape! Expected one clip (1, frames, channels, H, W) but got {tuple(x.shape)}.")
    names = video_method_names(methods)
    attention = any(VIDEO_METHODS[n].attention for n in names)
    run = gradcam_pass(model, x, target, attention=attention, reduce=relevance_of_step if attention else None,
                       turn=turn)
    index = int(target.index) if getattr(target, "index", None) is not None else int(run.output[0].argmax())
    probability = float(torch.softmax(run.output[0].float(), dim=-1)[index])
    return ClipMaps({n: VIDEO_METHODS[n].of_pass(run, 0) for n in names}, index, float(run.score[0]), probability)


def classmap_strip(a: Analysis, values: np.ndarray, method: str, name: str, cmap: str = render.DEFAULT_CMAP,
                   alpha: float = 0.6, lang: str = "en") -> Image.Image:
    """The sampled frames, each with its time position's map of ``method`` on the clip's one scale (min-max over the
    clip), under the method's caption naming the explained class (``name``)."""
    strip = frames_strip(a, frame_overlays(a, scale_clip(values), cmap, alpha), lang)
    return captioned(strip, t(VIDEO_METHODS[method].caption, lang, name=name), lang)
