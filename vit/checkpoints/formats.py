"""Checkpoint formats: recognise one from its keys and rename its tensors to our model's (timm's) key names.

Every format has a pure ``*_filter_fn(state_dict) -> state_dict`` driven by an explicit swap table of
(regex, replacement) pairs applied in order, as timm's ``checkpoint_filter_fn`` does. Tensors that need
more than a rename (Google's JAX kernels, Hugging Face's separate q/k/v) are reshaped right after.
Keys a filter does not understand are passed through unchanged, so strict loading reports them.
"""
from __future__ import annotations

import math
import re

import numpy as np
import torch
import torch.nn.functional as F

Swaps = list[tuple[str, str]]

TIMM_SWAPS: Swaps = [
    (r"^module\.", ""),                       # saved from DataParallel/DistributedDataParallel
    (r"^pre_logits\.fc\.", "pre_logits.0."),  # timm < 0.9 representation layer (ImageNet-21k ViTs)
]
DINO_SWAPS: Swaps = [
    (r"^module\.", ""),
    (r"^backbone\.", ""),                     # DINO training checkpoints wrap the ViT as .backbone
]
DINO_DROP = [r"^head\.(mlp|last_layer)\.", r"^mask_token$"]  # DINO projection head, iBOT mask token: not the ViT
TORCHVISION_SWAPS: Swaps = [
    (r"^class_token$", "cls_token"),
    (r"^conv_proj\.", "patch_embed.proj."),
    (r"^encoder\.pos_embedding$", "pos_embed"),
    (r"^encoder\.layers\.encoder_layer_(\d+)\.", r"blocks.\1."),
    (r"\.ln_1\.", ".norm1."),
    (r"\.ln_2\.", ".norm2."),
    (r"\.self_attention\.in_proj_(weight|bias)$", r".attn.qkv.\1"),  # rows [q; k; v], each head-major: timm's qkv
    (r"\.self_attention\.out_proj\.", ".attn.proj."),
    (r"\.mlp\.(0|linear_1)\.", ".mlp.fc1."),  # MLPBlock = Linear, GELU, Dropout, Linear, Dropout (linear_1: torchvision < 0.13)
    (r"\.mlp\.(3|linear_2)\.", ".mlp.fc2."),
    (r"^encoder\.ln\.", "norm."),
    (r"^heads\.pre_logits\.", "pre_logits.0."),
    (r"^heads\.head\.", "head."),
]
HF_SWAPS: Swaps = [
    (r"^(vit|deit)\.", ""),
    (r"^embeddings\.cls_token$", "cls_token"),
    (r"^embeddings\.distillation_token$", "dist_token"),
    (r"^embeddings\.position_embeddings$", "pos_embed"),
    (r"^embeddings\.patch_embeddings\.projection\.", "patch_embed.proj."),
    (r"^(encoder\.layer|layers)\.(\d+)\.", r"blocks.\2."),  # file layout / transformers >= 5 in-memory layout
    (r"\.layernorm_before\.", ".norm1."),
    (r"\.layernorm_after\.", ".norm2."),
    (r"\.attention\.attention\.(query|key|value)\.", r".attn.\1."),  # fused into attn.qkv below
    (r"\.attention\.(q|k|v)_proj\.", r".attn.\1."),
    (r"\.attention\.(output\.dense|o_proj)\.", ".attn.proj."),
    (r"\.intermediate\.dense\.", ".mlp.fc1."),
    (r"\.output\.dense\.", ".mlp.fc2."),
    (r"^layernorm\.", "norm."),
    (r"^(classifier|cls_classifier)\.", "head."),
    (r"^distillation_classifier\.", "head_dist."),
]
HF_DROP = [r"^embeddings\.mask_token$", r"^pooler\."]  # not used by image classification
HF_QKV = {"query": "q", "key": "k", "value": "v", "q": "q", "k": "k", "v": "v"}
GOOGLE_PREFIXES = ("opt/target/", "params/img/", "params/", "")
GOOGLE_SWAPS: Swaps = [  # classic (vit_jax) layout; big_vision numbers the sub-modules 0, 0, 1 instead of 1, 3, 2
    (r"^embedding/", "patch_embed.proj/"),
    (r"^cls$", "cls_token"),
    (r"^(Transformer/posembed_input/)?pos_embedding$", "pos_embed"),
    (r"^Transformer/encoderblock_(\d+)/", r"blocks.\1."),
    (r"LayerNorm_0/", "norm1/"),
    (r"MultiHeadDotProductAttention_[01]/(query|key|value)/", r"attn.\1/"),
    (r"MultiHeadDotProductAttention_[01]/out/", "attn.proj/"),
    (r"LayerNorm_[12]/", "norm2/"),
    (r"MlpBlock_[03]/Dense_0/", "mlp.fc1/"),
    (r"MlpBlock_[03]/Dense_1/", "mlp.fc2/"),
    (r"^Transformer/encoder_norm/", "norm/"),
    (r"^pre_logits/", "pre_logits.0/"),
    (r"/(kernel|scale)$", ".weight"),
    (r"/bias$", ".bias"),
]


def swap_keys(state_dict: dict, swaps: Swaps, drop: list[str] = ()) -> dict:
    """Rename every key through the swap table, in order; drop keys matching a ``drop`` pattern."""
    out = {}
    for k, v in state_dict.items():
        if any(re.search(p, k) for p in drop):
            continue
        for pattern, repl in swaps:
            k = re.sub(pattern, repl, k)
        out[k] = v
    return out


def timm_filter_fn(state_dict: dict) -> dict:
    return swap_keys(state_dict, TIMM_SWAPS)


def dino_filter_fn(state_dict: dict) -> dict:
    return swap_keys(state_dict, DINO_SWAPS, DINO_DROP)


def torchvision_filter_fn(state_dict: dict) -> dict:
    return swap_keys(state_dict, TORCHVISION_SWAPS)


def huggingface_filter_fn(state_dict: dict) -> dict:
    """Hugging Face ViT/DeiT -> ours: renames, then separate query/key/value Linears stacked into attn.qkv."""
    out = swap_keys(state_dict, HF_SWAPS, HF_DROP)
    return _fuse_qkv(out)


def _fuse_qkv(sd: dict) -> dict:
    """blocks.i.attn.{q,k,v}.{weight,bias} (D, D)/(D,) -> blocks.i.attn.qkv.{weight,bias} (3D, D)/(3D,)."""
    out, parts = {}, {}
    for k, v in sd.items():
        m = re.fullmatch(r"(blocks\.\d+\.attn)\.(query|key|value|q|k|v)\.(weight|bias)", k)
        if m:
            parts.setdefault((m[1], m[3]), {})[HF_QKV[m[2]]] = v
        else:
            out[k] = v
    for (prefix, kind), qkv in parts.items():
        if set(qkv) == {"q", "k", "v"}:
            out[f"{prefix}.qkv.{kind}"] = torch.cat([qkv["q"], qkv["k"], qkv["v"]], dim=0)
        else:  # incomplete triple: leave the pieces for strict loading to report
            out.update({f"{prefix}.{n}.{kind}": t for n, t in qkv.items()})
    return out


def google_prefix(arrays: dict) -> str:
    for p in GOOGLE_PREFIXES:
        if f"{p}embedding/kernel" in arrays:
            return p
    raise ValueError("Not a Google ViT .npz: no 'embedding/kernel' array.")


def google_num_heads(arrays: dict) -> int:
    """Heads are explicit in Google's layout: query kernels are (D, H, D/H)."""
    p = google_prefix(arrays)
    for k, v in arrays.items():
        if k.startswith(p) and re.search(r"MultiHeadDotProductAttention_[01]/query/kernel$", k):
            return int(v.shape[-2])
    raise ValueError("Google .npz without attention query kernels: cannot tell the number of heads.")


def google_filter_fn(arrays: dict) -> dict:
    """Google's JAX/Flax ViT .npz (vit_jax / big_vision) -> ours.

    Layout (from timm's ``_load_weights``): conv kernel (P, P, C, D) -> (D, C, P, P); Dense kernels (in, out)
    -> (out, in); attention query/key/value kernels (D, H, Dh) -> rows of attn.qkv (3D, D), their biases
    (H, Dh) -> (3D,); out kernel (H, Dh, D) -> (D, H·Dh). Stacked (scanned) blocks are split per layer.
    """
    p = google_prefix(arrays)
    flat = {}
    for k, v in arrays.items():
        k = k[len(p):] if k.startswith(p) else k
        m = re.fullmatch(r"Transformer/encoderblock/(.*)", k)
        if m:  # big_vision scan: one array per parameter with the layer index first
            for i in range(v.shape[0]):
                flat[f"Transformer/encoderblock_{i}/{m[1]}"] = v[i]
        else:
            flat[k] = v
    out = {}
    for k, v in swap_keys(flat, GOOGLE_SWAPS).items():
        out[k] = _google_tensor(k, torch.from_numpy(np.ascontiguousarray(v)).float())
    return _fuse_qkv(out)


def _google_tensor(key: str, t: torch.Tensor) -> torch.Tensor:
    """One JAX array -> PyTorch layout for the (already renamed) key."""
    if key == "patch_embed.proj.weight":
        return t.permute(3, 2, 0, 1)                   # (P, P, C, D) -> (D, C, P, P)
    if re.fullmatch(r"blocks\.\d+\.attn\.(query|key|value)\.weight", key):
        return t.flatten(1).T                          # (D, H, Dh) -> (H·Dh, D)
    if re.fullmatch(r"blocks\.\d+\.attn\.(query|key|value)\.bias", key):
        return t.reshape(-1)                           # (H, Dh) -> (H·Dh,)
    if re.fullmatch(r"blocks\.\d+\.attn\.proj\.weight", key):
        return t.permute(2, 0, 1).flatten(1)           # (H, Dh, D) -> (D, H·Dh)
    if key.endswith(".weight") and t.ndim == 2:
        return t.T                                     # Dense (in, out) -> Linear (out, in)
    if key == "pos_embed" and t.ndim == 2:
        return t.unsqueeze(0)
    return t


FILTERS = {
    "timm": timm_filter_fn,
    "dino": dino_filter_fn,
    "torchvision": torchvision_filter_fn,
    "huggingface": huggingface_filter_fn,
    "google-npz": google_filter_fn,
}


def detect_format(state_dict: dict) -> str:
    """Name of the checkpoint format from its keys: one of ``FILTERS``; ValueError if none fits."""
    keys = list(state_dict)
    if any(k.endswith("embeddings.patch_embeddings.projection.weight") for k in keys):
        return "huggingface"
    if "conv_proj.weight" in state_dict and "encoder.pos_embedding" in state_dict:
        return "torchvision"
    if any(k.endswith("embedding/kernel") for k in keys):
        return "google-npz"
    plain = {re.sub(r"^(module\.)?(backbone\.)?", "", k) for k in keys}
    if "patch_embed.proj.weight" in plain:
        dino_wrapped = any(re.match(r"^(module\.)?backbone\.", k) for k in keys)
        return "dino" if dino_wrapped or "head.weight" not in plain else "timm"
    shown = ", ".join(keys[:8]) + (f", … ({len(keys)} keys)" if len(keys) > 8 else "")
    raise ValueError(f"Unknown checkpoint format! Expected the keys of a torchvision, timm, DINO, Hugging Face or "
                     f"Google ViT, but got: {shown or 'no tensors at all'}.")


def checkpoint_filter_fn(state_dict: dict, fmt: str | None = None) -> dict:
    """Any supported checkpoint's tensors -> our model's key names (format detected when not given)."""
    fmt = fmt or detect_format(state_dict)
    if fmt not in FILTERS:
        raise ValueError(f"Unknown format {fmt!r}! Expected one of {sorted(FILTERS)}.")
    return FILTERS[fmt](state_dict)


def unwrap_state_dict(obj: dict) -> dict:
    """The tensors of a checkpoint dict, looking inside the usual wrappers.

    DeiT saves {"model": …}, Lightning {"state_dict": …}, DINO {"teacher": …, "student": …} (the teacher is
    the one evaluated). Returns the first level whose values are tensors or arrays.
    """
    for key in ("model", "state_dict", "teacher", "model_ema", "module"):
        if isinstance(obj.get(key), dict):
            return unwrap_state_dict(obj[key])
    return {k: v for k, v in obj.items() if isinstance(v, (torch.Tensor, np.ndarray))}


def resample_pos_embed(pos_embed: torch.Tensor, num_prefix: int, new_grid: tuple[int, int],
                       old_grid: tuple[int, int] | None = None) -> torch.Tensor:
    """(1, prefix + gh0·gw0, D) -> (1, prefix + gh·gw, D): patch part resized bicubically, prefix untouched.

    A checkpoint trained at another resolution (ViT-B/16 at 384: 24×24) loads into a model built for
    another grid this way; ``old_grid`` defaults to a square.
    """
    prefix, patches = pos_embed[:, :num_prefix], pos_embed[:, num_prefix:]
    n, D = patches.shape[1], patches.shape[2]
    if old_grid is None:
        side = math.isqrt(n)
        if side * side != n:
            raise ValueError(f"Cannot resample {n} position embeddings: not a square grid. Give the checkpoint's "
                             f"img_size so its grid is known.")
        old_grid = (side, side)
    if tuple(old_grid) == tuple(new_grid):
        return pos_embed
    patches = patches.reshape(1, old_grid[0], old_grid[1], D).permute(0, 3, 1, 2).float()  # (1, D, gh0, gw0)
    patches = F.interpolate(patches, size=tuple(new_grid), mode="bicubic", align_corners=False)
    patches = patches.permute(0, 2, 3, 1).reshape(1, new_grid[0] * new_grid[1], D)
    return torch.cat([prefix.float(), patches], dim=1).to(pos_embed.dtype)


def load_strict(model: torch.nn.Module, state_dict: dict, source: str = "checkpoint", assign: bool = False) -> None:
    """Copy ``state_dict`` into ``model``; ValueError listing missing, unexpected and mis-shaped keys if any.

    ``assign=True`` makes the checkpoint's tensors the parameters (for a model built on the meta device).
    """
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state_dict))
    unexpected = sorted(set(state_dict) - set(expected))
    conflicts = [f"{k}: checkpoint {tuple(state_dict[k].shape)} vs model {tuple(expected[k].shape)}"
                 for k in expected if k in state_dict and tuple(state_dict[k].shape) != tuple(expected[k].shape)]
    if missing or unexpected or conflicts:
        parts = [f"{source} does not match the model ({describe(model.cfg)})!"]
        for title, items in (("missing keys", missing), ("unexpected keys", unexpected), ("shape conflicts", conflicts)):
            if items:
                shown = items[:20] + ([f"… and {len(items) - 20} more"] if len(items) > 20 else [])
                parts.append(f"  {title} ({len(items)}): " + "; ".join(shown))
        raise ValueError("\n".join(parts))
    model.load_state_dict(state_dict, strict=True, assign=assign)


def describe(cfg) -> str:
    """One line naming a config's shape, for messages."""
    return (f"patch {cfg.patch_size}, img {cfg.img_size[0]}×{cfg.img_size[1]}, D={cfg.embed_dim}, L={cfg.depth}, "
            f"H={cfg.num_heads}, MLP={cfg.mlp_dim}, classes={cfg.num_classes}")
