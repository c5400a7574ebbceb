"""transformers' video classifiers (VideoMAE, TimeSformer, ViViT, V-JEPA 2) built small, at two sizes and any frame
count, with every parameter perturbed, and every attention they compute: the blocks' (``output_attentions``), and
with hooks what transformers does not return (TimeSformer's time attention, V-JEPA 2's probe blocks and the probe
query's cross-attention)."""
from __future__ import annotations

import torch
import transformers

from reference_models import randomize_

FAMILIES = ("videomae", "timesformer", "vivit", "vjepa2")
# two sizes: (width, blocks, heads, MLP, frame size, patch)
SIZES = {"small": (48, 2, 4, 96, 32, 8), "wide": (96, 3, 3, 160, 48, 16)}


def reference(family: str, size: str = "small", frames: int = 4, classes: int = 5, seed: int = 0):
    """A random transformers classifier of ``family`` at ``size`` for clips of ``frames`` frames, perturbed."""
    D, L, H, M, img, P = SIZES[size]
    common = dict(hidden_size=D, num_hidden_layers=L, num_attention_heads=H, num_labels=classes,
                  attn_implementation="eager")
    if family == "videomae":
        model = transformers.VideoMAEForVideoClassification(transformers.VideoMAEConfig(
            **common, intermediate_size=M, image_size=img, patch_size=P, num_frames=frames))
    elif family == "timesformer":
        model = transformers.TimesformerForVideoClassification(transformers.TimesformerConfig(
            **common, intermediate_size=M, image_size=img, patch_size=P, num_frames=frames))
    elif family == "vivit":
        model = transformers.VivitForVideoClassification(transformers.VivitConfig(
            **common, intermediate_size=M, image_size=img, tubelet_size=[2, P, P], num_frames=frames))
    elif family == "vjepa2":
        model = transformers.VJEPA2ForVideoClassification(transformers.VJEPA2Config(
            **common, crop_size=img, patch_size=P, frames_per_clip=frames, num_pooler_layers=2,
            pred_num_hidden_layers=1, pred_hidden_size=24, pred_num_attention_heads=2))
    else:
        raise ValueError(family)
    return randomize_(model, seed=seed)


def clips(n: int, frames: int, size: int, seed: int = 1) -> torch.Tensor:
    """(n, frames, 3, size, size) random normalised clips."""
    return torch.randn(n, frames, 3, size, size, generator=torch.Generator().manual_seed(seed))


class ReferenceRun:
    """One forward pass of a transformers video classifier with every attention it computes: ``logits``; ``steps``,
    per attention step in our order, on its layout (``VideoCapture.attention``): (B, H, T, T) for joint attention,
    (B, G, H, n, n) for TimeSformer's time and space groups; ``readout`` (B, H, N) for V-JEPA 2."""

    def __init__(self, model, x: torch.Tensor):
        family = model.config.model_type
        extra, hooks = {}, []

        def keep(name):
            def hook(module, args, output):
                extra.setdefault(name, []).append(output[1])
            return hook

        if family == "timesformer":
            for layer in model.timesformer.encoder.layer:
                inner = layer.temporal_attention.attention
                hooks.append(inner.register_forward_pre_hook(lambda m, args, kw: ((args[0], True), kw),
                                                             with_kwargs=True))
                hooks.append(inner.register_forward_hook(keep("time")))
        if family == "vjepa2":
            for layer in model.pooler.self_attention_layers:
                hooks.append(layer.self_attn.register_forward_hook(keep("probe")))
            hooks.append(model.pooler.cross_attention_layer.cross_attn.register_forward_hook(keep("readout")))
        key = "pixel_values_videos" if family == "vjepa2" else "pixel_values"
        try:
            with torch.no_grad():
                out = model(**{key: x}, output_attentions=True)
        finally:
            for h in hooks:
                h.remove()
        B = x.shape[0]
        self.logits = out.logits
        self.readout = extra["readout"][0][:, :, 0] if "readout" in extra else None
        if family == "timesformer":
            frames = x.shape[1]
            self.steps = []
            for time, space in zip(extra["time"], out.attentions):
                self.steps.append(time.reshape(B, -1, *time.shape[1:]))                 # (B, N, H, T', T')
                self.steps.append(space.reshape(B, frames, *space.shape[1:]))           # (B, T', H, 1+N, 1+N)
        else:
            self.steps = [*out.attentions, *extra.get("probe", [])]
