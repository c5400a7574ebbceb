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


def assert_attention(ours: torch.Tensor, reference: list[torch.Tensor]) -> None:
    """ours (B, L, H, T, T) against the reference's own (B, H, T, T) per block."""
    assert ours.shape[1] == len(reference)
    for layer, ref in enumerate(reference):
        assert_close(ours[:, layer], ref, f"attention of block {layer}")


def timm_explicit_attention(model, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """timm's output with fused attention off, and every block's softmax attention as timm itself computed it:
    the input of each block's attn_drop (an identity in eval mode), which timm applies right after the softmax."""
    maps = []
    for blk in model.blocks:
        blk.attn.fused_attn = False
    hooks = [blk.attn.attn_drop.register_forward_hook(lambda m, i, o: maps.append(i[0])) for blk in model.blocks]
    try:
        with torch.no_grad():
            out = model(x)
    finally:
        for h in hooks:
            h.remove()
    return out, maps


def assert_same_as_timm(loaded, reference, size: tuple[int, int]) -> None:
    """Our model (with capture and plain) against timm's explicit attention path on two random images of ``size``:
    the output and every block's attention."""
    x = images(2, size)
    with torch.no_grad():
        capture = loaded.model.forward_with_attention(x)
        plain = loaded.model(x)
    ref_out, ref_maps = timm_explicit_attention(reference, x)
    assert_close(capture.output, ref_out)
    assert_close(plain, ref_out, "fused forward")
    assert_attention(capture.attention, ref_maps)


def save_timm(model: torch.nn.Module, folder, **config) -> str:
    """A timm state dict as safetensors, with a sidecar for what its tensors cannot show (heads, activation)."""
    path = folder / "model.safetensors"
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(path))
    if config:
        (folder / "model.json").write_text(json.dumps({"config": config}))
    return str(path)


def meta_dinov3_layout(state: dict, heads: int, seed: int = 5, local_norm: bool = False) -> dict:
    """A timm DINOv3 state dict written the way facebookresearch/dinov3 saves its ViTs: storage tokens, LayerScale
    as ls1/ls2, SwiGLU as w1/w2/w3, one qkv bias with a random key part and its mask (1 on q and v, 0 on k), the
    mask token, the RoPE periods in bfloat16, and (ViT-7B, ViT-L SAT) the local crops' CLS norm."""
    g = torch.Generator().manual_seed(seed)
    renames = (("reg_token", "storage_tokens"), ("gamma_1", "ls1.gamma"), ("gamma_2", "ls2.gamma"),
               ("mlp.fc1_g.", "mlp.w1."), ("mlp.fc1_x.", "mlp.w2."))
    swiglu = any(".fc1_g." in k for k in state)
    out = {}
    for k, v in state.items():
        if k.endswith("attn.v_bias"):
            continue
        if k.endswith("attn.q_bias"):
            D = v.shape[0]
            out[k.replace("q_bias", "qkv.bias")] = torch.cat([v, torch.randn(D, generator=g),
                                                             state[k.replace("q_bias", "v_bias")]])
            out[k.replace("q_bias", "qkv.bias_mask")] = torch.cat([torch.ones(D), torch.zeros(D), torch.ones(D)])
            continue
        for old, new in renames:
            k = k.replace(old, new)
        if swiglu:
            k = k.replace("mlp.fc2.", "mlp.w3.")
        out[k] = v
    D = state["cls_token"].shape[-1]
    head_dim = D // heads
    out["mask_token"] = torch.zeros(1, D)
    out["rope_embed.periods"] = (100.0 ** (2 * torch.arange(head_dim // 4) / (head_dim // 2))).to(torch.bfloat16)
    if local_norm:
        out["local_cls_norm.weight"] = torch.randn(D, generator=g)
        out["local_cls_norm.bias"] = torch.randn(D, generator=g)
    return out


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
