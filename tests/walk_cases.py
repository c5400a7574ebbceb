"""The models the guided walk's tests run (the real ViT-Ti, a ViT-B/16, a ViT-Ti on a 224×320 input) and the
shapes their own modules produce, caught with forward hooks."""
from __future__ import annotations

import torch

import vit


def hooked_shapes(model, x: torch.Tensor) -> dict:
    """The shapes of the tensors the model's modules produce in a plain forward (batch dimension dropped)."""
    seen = {}

    def keep(name):
        def hook(module, inputs, output):
            out = output[0] if isinstance(output, tuple) else output
            seen.setdefault(name, []).append(tuple(out.shape[1:]))
        return hook

    handles = [model.patch_embed.register_forward_hook(keep("embeddings")),
               model.norm.register_forward_hook(keep("norm")), model.head.register_forward_hook(keep("logits"))]
    handles += [block.register_forward_hook(keep("layers")) for block in model.blocks]
    handles += [block.attn.register_forward_hook(lambda m, i, o: None) for block in model.blocks]
    with torch.inference_mode():
        model.fused_attn = False                                  # capture the probabilities as well
        logits, attention = model.forward_with_attention(x)[:2]
        model.fused_attn = True
        embedded = model.embed(x)
    for h in handles:
        h.remove()
    seen["attention"] = [tuple(attention.shape[2:])]
    seen["embedded"] = [tuple(embedded.shape[1:])]
    seen["image"] = [tuple(x.shape[2:]) + (x.shape[1],)]           # (H, W, C) of the input
    return seen, logits


def quick_random_model(cfg) -> vit.VisionTransformer:
    """A randomly initialised model, built without the (slow) truncated-normal init: shapes are what matter."""
    with torch.device("meta"):
        model = vit.VisionTransformer(cfg)
    model = model.to_empty(device="cpu").eval()
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.02, generator=generator)
    return model


CASES = {
    "ViT-Ti (AugReg, real weights)": None,
    "ViT-B/16": dict(variant="vit_b_16", crop=(224, 224)),
    "ViT-Ti at 224×320": dict(variant="vit_ti_16", crop=(224, 320)),
}
