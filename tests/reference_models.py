"""Tiny random reference models and the checks that compare ours with them: every parameter perturbed (so no
zero bias, identity LayerNorm or zero probe can hide a wrong mapping), timm state dicts saved in timm's own layout,
a timm ViT written in Google's .npz layout, open_clip's CLIP with both towers, a Hugging Face CLIP tokenizer's
files, and the relative closeness the parity tests ask for."""
from __future__ import annotations

import json

import numpy as np
import open_clip
import torch
from safetensors.torch import save_file

from vit.clip import bundled_tokenizer

REL_TOL = 1e-4


def randomize_(model: torch.nn.Module, std: float = 0.02, seed: int = 0) -> torch.nn.Module:
    """Perturb every parameter, so zero-initialised biases, probes and identity LayerNorms cannot hide a wrong mapping."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(std * torch.randn(p.shape, generator=g))
    return model.eval()


def images(n: int, size: tuple[int, int], seed: int = 1) -> torch.Tensor:
    return torch.randn(n, 3, *size, generator=torch.Generator().manual_seed(seed))


def assert_close(ours: torch.Tensor, ref: torch.Tensor, what: str = "output") -> None:
    """max |ours - ref| <= 1e-4 · max |ref|."""
    assert ours.shape == ref.shape, f"{what}: {tuple(ours.shape)} vs {tuple(ref.shape)}"
    err = (ours - ref).abs().max().item() / max(ref.abs().max().item(), 1e-12)
    assert err <= REL_TOL, f"{what}: relative difference {err:.2e}"


def save_timm(model: torch.nn.Module, folder, **config) -> str:
    """A timm state dict as safetensors, with a sidecar for what its tensors cannot show (heads, activation)."""
    path = folder / "model.safetensors"
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(path))
    if config:
        (folder / "model.json").write_text(json.dumps({"config": config}))
    return str(path)


def open_clip_tiny(quick_gelu: bool = True) -> open_clip.CLIP:
    torch.manual_seed(0)
    model = open_clip.CLIP(embed_dim=16, quick_gelu=quick_gelu,
                           vision_cfg=open_clip.CLIPVisionCfg(layers=2, width=128, head_width=64, patch_size=16,
                                                              image_size=64),
                           text_cfg=open_clip.CLIPTextCfg(context_length=77, vocab_size=49408, width=128, heads=2,
                                                          layers=2))
    return randomize_(model)


def write_vocab_files(folder):
    """A Hugging Face CLIP tokenizer's vocab.json and merges.txt, written from the bundled vocabulary."""
    t = bundled_tokenizer()
    (folder / "vocab.json").write_text(json.dumps(t.encoder, ensure_ascii=False), encoding="utf-8")
    merges = sorted(t.ranks, key=t.ranks.get)
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(" ".join(m) for m in merges) + "\n",
                                       encoding="utf-8")
    return folder / "vocab.json", folder / "merges.txt"


def google_npz_arrays(model) -> dict[str, np.ndarray]:
    """A timm ViT written in Google's vit_jax layout: HWIO conv kernel, (in, out) Dense kernels, (D, H, Dh) q/k/v."""
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    D = model.embed_dim
    H = model.blocks[0].attn.num_heads
    a = {
        "embedding/kernel": sd["patch_embed.proj.weight"].transpose(2, 3, 1, 0),
        "embedding/bias": sd["patch_embed.proj.bias"],
        "cls": sd["cls_token"],
        "Transformer/posembed_input/pos_embedding": sd["pos_embed"],
        "Transformer/encoder_norm/scale": sd["norm.weight"],
        "Transformer/encoder_norm/bias": sd["norm.bias"],
        "head/kernel": sd["head.weight"].T,
        "head/bias": sd["head.bias"],
    }
    for i in range(len(model.blocks)):
        b, p = f"blocks.{i}.", f"Transformer/encoderblock_{i}/"
        a[p + "LayerNorm_0/scale"], a[p + "LayerNorm_0/bias"] = sd[b + "norm1.weight"], sd[b + "norm1.bias"]
        a[p + "LayerNorm_2/scale"], a[p + "LayerNorm_2/bias"] = sd[b + "norm2.weight"], sd[b + "norm2.bias"]
        for j, n in enumerate(("query", "key", "value")):
            w = sd[b + "attn.qkv.weight"][j * D:(j + 1) * D]                   # (out, in)
            a[p + f"MultiHeadDotProductAttention_1/{n}/kernel"] = w.T.reshape(D, H, D // H)
            a[p + f"MultiHeadDotProductAttention_1/{n}/bias"] = sd[b + "attn.qkv.bias"][j * D:(j + 1) * D].reshape(H, -1)
        a[p + "MultiHeadDotProductAttention_1/out/kernel"] = sd[b + "attn.proj.weight"].T.reshape(H, D // H, D)
        a[p + "MultiHeadDotProductAttention_1/out/bias"] = sd[b + "attn.proj.bias"]
        for r in range(2):
            a[p + f"MlpBlock_3/Dense_{r}/kernel"] = sd[b + f"mlp.fc{r + 1}.weight"].T
            a[p + f"MlpBlock_3/Dense_{r}/bias"] = sd[b + f"mlp.fc{r + 1}.bias"]
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in a.items()}
