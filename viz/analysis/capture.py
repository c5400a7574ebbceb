"""Run the model once on an image and keep everything the panels need as numpy arrays.

This is the only module of viz/ that touches a model (and torch); every map and panel downstream works
on the returned ``Analysis``, so an app can cache it per session and re-render without the model.
"""
from __future__ import annotations

import time

import numpy as np
import torch
from PIL import Image

from ..maps.figure7 import mean_attention_distance
from ..result import Analysis, ModelArrays
from ..maps.rollout import FUSIONS, fuse_heads

_TORCH_DTYPES = {np.dtype(np.float32): torch.float32, np.dtype(np.float16): torch.float16}
READOUT_OF_POOL = {"token": "cls", "map": "map", "avg": "mean"}  # ViTConfig.global_pool -> Analysis.readout


@torch.inference_mode()
def analyze(loaded, image: Image.Image, attention_dtype=np.float32) -> Analysis:
    """One forward pass with attention capture -> Analysis.

    ``loaded``: a ``vit.LoadedModel`` (anything with ``.model``, ``.preprocess``, ``.labels``, ``.name``).
    ``image``: any PIL image; ``loaded.preprocess.crop_image`` gives the exact pixels the model sees.
    ``attention_dtype``: np.float16 halves the cache (ViT-B/16 at 224: 11 MB instead of 22 MB). Measured on
    the AugReg ViT-Ti and the cat photo: rollout changes by 1e-4 of its maximum; with a 0.9 discard by
    2e-3, since rounding reorders near-equal entries.

    The maps' query follows how the model pools (``readout``): its CLS token, SigLIP's probe (whose attention
    is kept, float32, (H, T)), or the mean of the patches. A model without a classifier head (num_classes 0:
    a CLIP or SigLIP image tower, a DINO backbone) gets no class probabilities.
    """
    timings = {}
    t0 = time.perf_counter()
    cropped = loaded.preprocess.crop_image(image)
    model = loaded.model
    x = loaded.preprocess.to_tensor(cropped).to(next(model.parameters()).device)
    t1 = time.perf_counter()
    capture = model.forward_with_attention(x, return_token_norms=True)
    t2 = time.perf_counter()
    logits, attn, norms = capture.output, capture.attention, capture.token_norms
    has_classes = model.cfg.num_classes > 0
    probabilities = logits[0].float().softmax(dim=-1).cpu().numpy() if has_classes else np.zeros(0, np.float32)
    probe = capture.probe_attention[0].float().cpu().numpy() if capture.probe_attention is not None else None
    attn = attn[0].float().cpu()                                           # (L, H, T, T)
    attention32 = attn.numpy()
    fused = {f: fuse_heads(attention32, f).astype(attention_dtype, copy=False) for f in FUSIONS}  # (L, T, T)
    token_norms = norms[0].float().cpu().numpy()
    layout = model.token_layout(x.shape[-2], x.shape[-1])
    P = model.cfg.patch_size
    mean_distance = {False: mean_attention_distance(attention32, layout.num_prefix, layout.grid, P)}
    attention = attn.to(_TORCH_DTYPES[np.dtype(attention_dtype)]).numpy()  # torch converts to float16 faster
    t3 = time.perf_counter()
    timings.update(preprocess=t1 - t0, forward=t2 - t1, to_numpy=t3 - t2)
    labels = tuple(loaded.labels) if len(loaded.labels) == probabilities.size else \
        tuple(f"class {i}" for i in range(probabilities.size))
    return Analysis(image=cropped, probabilities=probabilities, labels=labels, attention=attention,
                    token_norms=token_norms, num_prefix=layout.num_prefix, grid=tuple(layout.grid), patch_size=P,
                    model_name=getattr(loaded, "name", ""), timings=timings, fused=fused, mean_distance=mean_distance,
                    readout=READOUT_OF_POOL[model.cfg.global_pool], probe_attention=probe)


@torch.inference_mode()
def model_arrays(model, name: str = "") -> ModelArrays:
    """Copy the patch-embedding filters and position embeddings out of a VisionTransformer (``pos_embed`` None for
    a model without absolute position embeddings, such as BEiT)."""
    cfg = model.cfg
    kind = getattr(cfg, "pos_embed_kind", "learned")
    pos_embed = model.pos_embed.detach().float().cpu().numpy()[0] if model.pos_embed is not None else None
    return ModelArrays(name=name,
                       patch_weight=model.patch_embed.proj.weight.detach().float().cpu().numpy(),
                       pos_embed=pos_embed,
                       native_grid=tuple(cfg.grid), patch_size=cfg.patch_size, num_prefix=cfg.num_prefix_tokens,
                       depth=cfg.depth, heads=cfg.num_heads, pos_embed_kind=kind)
