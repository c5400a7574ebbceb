"""Swin reference models for the tests: the same small Swin in torchvision, timm and transformers, with random
weights perturbed so that no zero bias, identity LayerNorm or unit logit scale hides a wrong mapping, saved in each
library's own checkpoint layout; and every block's window attention as each library computes it.

The small Swin has Swin-T's structure (patch 4, four stages, window 7: at 224 the last stage is exactly one window,
at 448 it is shifted like the others) at width 16, so that a forward takes milliseconds.
"""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import torch
import torch.nn as nn
from safetensors.torch import save_file

from reference_models import images, randomize_

SMALL = dict(patch_size=4, embed_dim=16, depths=(2, 2, 2, 2), num_heads=(1, 2, 2, 4), window_size=7)
SOURCES = ("torchvision", "timm", "transformers")


def perturbed(model: nn.Module, seed: int = 0, std: float = 0.05) -> nn.Module:
    """Every parameter plus Gaussian noise (biases, LayerNorm weights, bias tables and logit scales included)."""
    return randomize_(model, std, seed)


def pixels(size=(224, 224), batch: int = 2, seed: int = 1) -> torch.Tensor:
    return images(batch, tuple(size), seed)


def timm_swin(version: int, img_size=(224, 224), **overrides) -> nn.Module:
    import timm
    kw = {**SMALL, "num_classes": 5, "img_size": img_size, **overrides}
    cls = timm.models.swin_transformer.SwinTransformer if version == 1 else \
        timm.models.swin_transformer_v2.SwinTransformerV2
    torch.manual_seed(0)
    return cls(**kw).eval()


def torchvision_swin(version: int, **overrides) -> nn.Module:
    from torchvision.models import swin_transformer as tv
    window = overrides.pop("window_size", SMALL["window_size"])
    kw = {**dict(patch_size=[4, 4], embed_dim=SMALL["embed_dim"], depths=list(SMALL["depths"]),
                 num_heads=list(SMALL["num_heads"]), window_size=[window, window], num_classes=5), **overrides}
    if version == 2:
        kw.update(block=tv.SwinTransformerBlockV2, downsample_layer=tv.PatchMergingV2)
    torch.manual_seed(0)
    return tv.SwinTransformer(**kw).eval()


def transformers_swin(version: int, img_size: int = 224, **overrides) -> nn.Module:
    import transformers
    config_class = transformers.SwinConfig if version == 1 else transformers.Swinv2Config
    model_class = transformers.SwinForImageClassification if version == 1 else \
        transformers.Swinv2ForImageClassification
    config = config_class(**{"image_size": img_size, "patch_size": 4, "embed_dim": SMALL["embed_dim"],
                             "depths": list(SMALL["depths"]), "num_heads": list(SMALL["num_heads"]),
                             "window_size": SMALL["window_size"], "num_labels": 5, "attn_implementation": "eager",
                             **overrides})
    torch.manual_seed(0)
    return model_class(config).eval()


def reference(source: str, version: int, img_size=(224, 224), **overrides) -> nn.Module:
    """The small Swin of ``source`` built for ``img_size`` (transformers' v2 fixes its windows for it), random."""
    if source == "timm":
        return timm_swin(version, img_size, **overrides)
    if source == "torchvision":
        return torchvision_swin(version, **overrides)
    return transformers_swin(version, img_size[0], **overrides)


def save(model: nn.Module, source: str, folder: Path) -> Path:
    """The model in its library's layout: torchvision a .pth state dict, timm a safetensors file, transformers a
    save_pretrained folder."""
    folder.mkdir(parents=True, exist_ok=True)
    if source == "torchvision":
        path = folder / "swin.pth"
        torch.save(model.state_dict(), path)
        return path
    if source == "timm":
        path = folder / "swin.safetensors"
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(path))
        return path
    model.save_pretrained(folder)
    return folder


def logits(model: nn.Module, source: str, x: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        out = model(pixel_values=x) if source == "transformers" else model(x)
    return out.logits if source == "transformers" else out


@contextmanager
def _recorded_softmax(store: list):
    """torchvision computes its window attention in a function: every F.softmax result is recorded meanwhile (a Swin's
    forward calls softmax for its attention only)."""
    original = torch.nn.functional.softmax

    def recording(*args, **kwargs):
        out = original(*args, **kwargs)
        store.append(out.detach())
        return out

    torch.nn.functional.softmax = recording
    try:
        yield
    finally:
        torch.nn.functional.softmax = original


def window_attention(model: nn.Module, source: str, x: torch.Tensor) -> list[torch.Tensor]:
    """Every block's window attention as the library computes it, (B·nW, H, N, N) each, in block order."""
    store: list[torch.Tensor] = []
    if source == "torchvision":
        with _recorded_softmax(store), torch.no_grad():
            model(x)
        return store
    handles = []
    if source == "timm":
        for name, m in model.named_modules():
            if name.endswith(".attn"):
                m.fused_attn = False
                handles.append(m.softmax.register_forward_hook(lambda mod, i, o: store.append(o.detach())))
        call = lambda: model(x)                                              # noqa: E731
    else:
        import transformers
        kinds = (transformers.models.swin.modeling_swin.SwinAttention,
                 transformers.models.swinv2.modeling_swinv2.Swinv2SelfAttention)
        for m in model.modules():
            if isinstance(m, kinds):
                handles.append(m.register_forward_hook(lambda mod, i, o: store.append(o[1].detach())))
        call = lambda: model(pixel_values=x, output_attentions=True)         # noqa: E731
    try:
        with torch.no_grad():
            call()
    finally:
        for h in handles:
            h.remove()
    return store


# Our own small Swin for the window, rollout and explanation tests: three stages on a 16×16 patch grid (32×32 pixels,
# patch 2), windows of 4: stage 0 has 16 windows, stage 1 four (shifted in its odd block), stage 2 is exactly one
# window (never shifted).
SMALL_OWN = dict(img_size=(32, 32), patch_size=2, embed_dim=8, depths=(2, 2, 2), num_heads=(1, 2, 2), window_size=4,
                 num_classes=4)


def small_swin(version: int = 1, seed: int = 0, **overrides):
    """A random vit.swin.SwinTransformer of ``SMALL_OWN``'s shape, perturbed (std 0.2) in eval mode."""
    from vit.swin import SwinConfig, SwinTransformer
    torch.manual_seed(seed)
    cfg = SwinConfig(**{**SMALL_OWN, "version": version, **overrides})
    return perturbed(SwinTransformer(cfg), seed=seed, std=0.2)
