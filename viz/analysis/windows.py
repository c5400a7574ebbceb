"""A Swin on images -> ``WindowAnalysis`` per image: one forward pass through ``vit.swin``'s window attention
(``SwinTransformer.forward_with_attention``), every block's windows and token norms moved to the host once.

The Swin's counterpart of ``capture``/``analyses``/``analyze``: its attention is not one (L, H, T, T) array but a
(B, nW, H_s, N, N) array per block on its stage's grid, so it gets its own record (``viz.records.WindowAnalysis``)
and its own views (``viz.panels.windows``).
"""
from __future__ import annotations

import time

import numpy as np
import torch
from PIL import Image

from vit.device import forward_precision

from ..records import ModelArrays, WindowAnalysis
from .capture import _synchronize, class_labels, model_input, to_host


def is_swin(model) -> bool:
    """Whether ``model`` is a ``vit.swin.SwinTransformer`` (its views are this module's and ``viz.panels.windows``)."""
    return getattr(getattr(model, "cfg", None), "family", "") == "swin"


@torch.inference_mode()
def capture_windows(model, x: torch.Tensor, dtype: torch.dtype = torch.float32) -> dict:
    """Images (B, C, H, W) on the model's device -> {"probabilities" (B, K), "attention": per block (B, nW, H, N, N),
    "token_norms": per block (B, gh, gw), "layouts": per block ``WindowLayout``, "timings"} on the host (float32)."""
    device = x.device
    _synchronize(device)
    t0 = time.perf_counter()
    with forward_precision(device, dtype):
        captured = model.forward_with_attention(x, return_token_norms=True)
    tensors = {"logits": captured.output.float()}
    tensors.update({f"attention{i}": a.float() for i, a in enumerate(captured.attention)})
    tensors.update({f"norms{i}": n.float() for i, n in enumerate(captured.token_norms)})
    _synchronize(device)
    t1 = time.perf_counter()
    host = to_host(tensors, device)
    logits = host["logits"]
    probabilities = (torch.from_numpy(logits).softmax(-1).numpy() if model.cfg.num_classes
                     else np.zeros((logits.shape[0], 0), np.float32))
    depth = len(captured.layouts)
    return {"probabilities": probabilities, "attention": [host[f"attention{i}"] for i in range(depth)],
            "token_norms": [host[f"norms{i}"] for i in range(depth)], "layouts": list(captured.layouts),
            "timings": {"forward": t1 - t0, "to_host": time.perf_counter() - t1}}


def window_analyses(loaded, captured: dict, images: list[Image.Image], timings: dict | None = None
                    ) -> list[WindowAnalysis]:
    """One ``WindowAnalysis`` per image of a ``capture_windows`` batch (its arrays views into the batch's)."""
    labels = class_labels(loaded, captured["probabilities"].shape[-1])
    return [WindowAnalysis(image=image, probabilities=captured["probabilities"][b], labels=labels,
                           attention=tuple(a[b] for a in captured["attention"]), layouts=tuple(captured["layouts"]),
                           token_norms=tuple(n[b] for n in captured["token_norms"]),
                           patch_size=loaded.model.cfg.patch_size, model_name=getattr(loaded, "name", ""),
                           timings={**captured["timings"], **(timings or {})})
            for b, image in enumerate(images)]


def analyze_windows(loaded, image: Image.Image, dtype: torch.dtype = torch.float32) -> WindowAnalysis:
    """One photo through a Swin -> its ``WindowAnalysis`` (``loaded.preprocess.crop_image`` gives the pixels)."""
    t0 = time.perf_counter()
    cropped = loaded.preprocess.crop_image(image)
    pixels = torch.from_numpy(np.array(cropped)).unsqueeze(0)                 # (1, H, W, 3) uint8
    x = model_input(pixels, loaded.preprocess, next(loaded.model.parameters()).device)
    preprocess_s = time.perf_counter() - t0
    return window_analyses(loaded, capture_windows(loaded.model, x), [cropped], {"preprocess": preprocess_s})[0]


def window_model_arrays(model, name: str = "") -> ModelArrays:
    """A Swin's image-independent arrays for the page: its patch filters (Figure 7, left); no table of positions
    (a Swin's only position information is the bias inside a window); the most heads of any stage."""
    cfg = model.cfg
    return ModelArrays(name=name, patch_weight=model.patch_embed.proj.weight.detach().float().cpu().numpy(),
                       pos_embed=None, native_grid=cfg.grid, patch_size=cfg.patch_size, num_prefix=0, depth=cfg.depth,
                       heads=max(cfg.num_heads), pos_embed_kind="none")
