"""Swin checkpoints: recognise torchvision's, timm's (and the original Microsoft ones) and transformers' Swin and
Swin v2 from their keys, rename their tensors to ``vit.swin.SwinTransformer``'s (timm's names), and read its config off
the tensors and what lies around them.

Every format is a swap table of (regex, replacement) pairs applied in order, as ``vit.checkpoints.formats`` does for
the ViTs; a replacement may be a function where an index moves (torchvision numbers stages and merges together in
``features``; transformers and the original checkpoints merge at the end of a stage, timm at the start of the next).
Tensors that need more than a rename: transformers' separate query/key/value (stacked into ``attn.qkv``, v2's
q and v biases into ``q_bias``/``v_bias``) and torchvision v2's one (3C,) qkv bias whose key part torchvision never
uses. Buffers every library recomputes (relative position index, v2's coordinate table, the shift mask) are
dropped after the window size has been read off them. Keys a filter does not understand pass through unchanged,
so strict loading names them.

What no tensor shows: the input size (the registry, a Hub config or sidecar, else the size at which the last stage
is one window), and for a timm Swin v2 file the window size and the pretraining windows (its Hub folder's
architecture name says them: ``swinv2_base_window12to16_192to256``; a bare file needs a sidecar's config).
"""
from __future__ import annotations

import math
import re

from . import registry
from .formats import fuse_qkv, swap_keys
from .pipelines import huggingface_preprocess, timm_preprocess, torchvision_preprocess
from ..preprocess import Preprocess
from ..swin import SwinConfig

SWIN_FORMATS = ("torchvision-swin", "timm-swin", "huggingface-swin")

TIMM_SWIN_SWAPS = [
    (r"^module\.", ""),
    (r"^head\.fc\.", "head."),                                   # timm's ClassifierHead
]
TIMM_SWIN_DROP = [r"relative_position_index$", r"relative_coords_table$", r"attn_mask$", r"\.k_bias$"]
# The original Microsoft checkpoints (and timm before 0.9) keep a stage's patch merging at its end: layers.i.downsample
# is stage i+1's merging here.
ORIGINAL_SWIN_SWAPS = [(r"^layers\.(\d+)\.downsample\.", lambda m: f"layers.{int(m[1]) + 1}.downsample.")]
TORCHVISION_SWIN_SWAPS = [
    (r"^features\.0\.0\.", "patch_embed.proj."),                 # Conv2d, Permute, LayerNorm
    (r"^features\.0\.2\.", "patch_embed.norm."),
    (r"^features\.(\d+)\.(\d+)\.", lambda m: f"layers.{(int(m[1]) - 1) // 2}.blocks.{m[2]}."),  # odd: stages
    (r"^features\.(\d+)\.", lambda m: f"layers.{int(m[1]) // 2}.downsample."),                  # even: merges
    (r"\.mlp\.0\.", ".mlp.fc1."),                                 # MLP = Linear, GELU, Dropout, Linear, Dropout
    (r"\.mlp\.3\.", ".mlp.fc2."),
]
TORCHVISION_SWIN_DROP = [r"relative_position_index$", r"relative_coords_table$"]
HF_SWIN_SWAPS = [
    (r"^(swin|swinv2)\.", ""),
    (r"^embeddings\.patch_embeddings\.projection\.", "patch_embed.proj."),
    (r"^embeddings\.norm\.", "patch_embed.norm."),
    (r"^embeddings\.position_embeddings$", "absolute_pos_embed"),
    (r"^encoder\.layers\.(\d+)\.downsample\.", lambda m: f"layers.{int(m[1]) + 1}.downsample."),
    (r"^encoder\.layers\.(\d+)\.blocks\.(\d+)\.", r"layers.\1.blocks.\2."),
    (r"\.layernorm_before\.", ".norm1."),                        # v2 applies it after the attention: timm's norm1 too
    (r"\.layernorm_after\.", ".norm2."),
    (r"\.attention\.self\.(query|key|value)\.", r".attn.\1."),    # file layout; fused into attn.qkv below
    (r"\.attention\.(q|k|v)_proj\.", r".attn.\1."),               # transformers ≥ 5 in memory
    (r"\.attention\.(output\.dense|o_proj)\.", ".attn.proj."),
    (r"\.attention\.(self|relative_position_bias)\.relative_position_bias_table$",
     ".attn.relative_position_bias_table"),
    (r"\.attention\.self\.logit_scale$", ".attn.logit_scale"),
    (r"\.attention\.self\.continuous_position_bias_mlp\.", ".attn.cpb_mlp."),
    (r"\.intermediate\.dense\.", ".mlp.fc1."),
    (r"\.output\.dense\.", ".mlp.fc2."),
    (r"^layernorm\.", "norm."),
    (r"^classifier\.", "head."),
]
HF_SWIN_DROP = [r"relative_position_index$", r"relative_coords_table$", r"^((swin|swinv2)\.)?embeddings\.mask_token$"]


def detect_swin(state: dict) -> str | None:
    """The Swin format of a state dict (one of ``SWIN_FORMATS``), or None when its keys are not a Swin's."""
    keys = set(state)
    if "features.0.0.weight" in keys and any(re.match(r"features\.1\.0\.attn\.", k) for k in keys):
        return "torchvision-swin"
    if any(re.fullmatch(r"((swin|swinv2)\.)?encoder\.layers\.0\.blocks\.0\..*", k) for k in keys) and \
            any(k.endswith("embeddings.patch_embeddings.projection.weight") for k in keys):
        return "huggingface-swin"
    plain = {re.sub(r"^module\.", "", k) for k in keys}
    if "patch_embed.proj.weight" in plain and any(re.match(r"layers\.0\.blocks\.0\.attn\.", k) for k in plain):
        return "timm-swin"
    return None


def swin_filter_fn(state: dict, fmt: str) -> dict:
    """A Swin checkpoint's tensors (format ``fmt``) -> ``vit.swin.SwinTransformer``'s key names."""
    if fmt == "torchvision-swin":
        return _split_torchvision_v2_bias(swap_keys(state, TORCHVISION_SWIN_SWAPS, TORCHVISION_SWIN_DROP))
    if fmt == "huggingface-swin":
        return _fuse_qkv(swap_keys(state, HF_SWIN_SWAPS, HF_SWIN_DROP))
    if fmt == "timm-swin":
        swaps = TIMM_SWIN_SWAPS + (ORIGINAL_SWIN_SWAPS if _merges_at_stage_end(state) else [])
        return swap_keys(state, swaps, TIMM_SWIN_DROP)
    raise ValueError(f"Unknown Swin format {fmt!r}! Expected one of {SWIN_FORMATS}.")


def _merges_at_stage_end(state: dict) -> bool:
    """The original layout: stage 0 has a patch merging (timm's first stage never has one)."""
    return any(re.match(r"(module\.)?layers\.0\.downsample\.", k) for k in state)


def _fuse_qkv(sd: dict) -> dict:
    """….attn.{q,k,v}.{weight,bias} -> ….attn.qkv.weight (3C, C) and qkv.bias (3C,); v2's biases on q and v alone
    (its key has none) -> attn.q_bias and attn.v_bias (``formats.fuse_qkv``)."""
    return fuse_qkv(sd, r"(layers\.\d+\.blocks\.\d+\.attn)\.(query|key|value|q|k|v)\.(weight|bias)")


def _split_torchvision_v2_bias(sd: dict) -> dict:
    """torchvision's Swin v2 keeps one qkv bias (3C,) and zeroes its key third in every forward: a v2 block
    (logit_scale present) gets q_bias and v_bias, the key third is dropped as torchvision ignores it."""
    out = dict(sd)
    for k in [k for k in sd if k.endswith(".attn.qkv.bias")]:
        prefix = k[: -len(".qkv.bias")]
        if f"{prefix}.logit_scale" in sd:
            q, _, v = out.pop(k).chunk(3)
            out[f"{prefix}.q_bias"], out[f"{prefix}.v_bias"] = q, v
    return out


def window_from_buffers(state: dict, stage: int) -> int | None:
    """A stage's window W from a relative_position_index buffer (W², W²) a checkpoint saved (torchvision), if any."""
    for k, v in state.items():
        if re.search(rf"(features\.{2 * stage + 1}\.0|layers\.{stage}\.blocks\.0)\.attn\.relative_position_index$", k):
            area = v.shape[0] if v.ndim == 2 else math.isqrt(v.numel())
            return math.isqrt(int(area))
    return None


def infer_swin_config(sd: dict, windows: dict[int, int] | None = None, **overrides) -> SwinConfig:
    """SwinConfig of a state dict in our key names; ``windows``: stage -> W read off buffers before they were
    dropped; ``overrides`` (any SwinConfig field: a registry's, a Hub config's, a sidecar's) win.

    Read off the tensors: patch size, channels and width (the patch convolution), blocks per stage, heads per stage
    (v1's bias table (…, H), v2's logit_scale (H, 1, 1)), v1's windows ((2W−1)² table rows), the version (v2 has
    logit_scale), the MLP ratio, q/k/v biases, an absolute position embedding and the classes. The input size is the
    absolute position embedding's grid where there is one, else the one at which the last stage is exactly one window
    (224 for a window-7 Swin-T, 256 for a window-8 Swin v2-T).
    """
    if "patch_embed.proj.weight" not in sd:
        raise ValueError("Cannot infer a Swin config: no patch embedding (patch_embed.proj.weight) in the checkpoint.")
    D, C, P, P2 = sd["patch_embed.proj.weight"].shape
    if P != P2:
        raise ValueError(f"Only square patches are supported! Got a {P}×{P2} patch embedding.")
    blocks: dict[int, set[int]] = {}
    for k in sd:
        m = re.match(r"layers\.(\d+)\.blocks\.(\d+)\.", k)
        if m:
            blocks.setdefault(int(m[1]), set()).add(int(m[2]))
    stages = sorted(blocks)
    if not stages or stages != list(range(len(stages))):
        raise ValueError(f"Cannot infer a Swin config: expected stages 0, 1, … of blocks but found {stages}.")
    version = 2 if "layers.0.blocks.0.attn.logit_scale" in sd else 1
    heads, window = [], []
    for s in stages:
        attn = f"layers.{s}.blocks.0.attn"
        if version == 2:
            heads.append(int(sd[f"{attn}.logit_scale"].shape[0]))
            window.append((windows or {}).get(s))
        else:
            table = sd[f"{attn}.relative_position_bias_table"]
            heads.append(int(table.shape[1]))
            window.append((math.isqrt(int(table.shape[0])) + 1) // 2)
    fields = dict(
        patch_size=int(P), in_chans=int(C), embed_dim=int(D), depths=tuple(max(blocks[s]) + 1 for s in stages),
        num_heads=tuple(heads), version=version,
        mlp_ratio=sd["layers.0.blocks.0.mlp.fc1.weight"].shape[0] / D,
        qkv_bias="layers.0.blocks.0.attn.qkv.bias" in sd or "layers.0.blocks.0.attn.q_bias" in sd,
        num_classes=int(sd["head.weight"].shape[0]) if "head.weight" in sd else 0,
        absolute_pos_embed="absolute_pos_embed" in sd,
    )
    if version == 2 and "layers.0.blocks.0.attn.cpb_mlp.0.weight" in sd:
        fields["cpb_hidden"] = int(sd["layers.0.blocks.0.attn.cpb_mlp.0.weight"].shape[0])
    fields.update(overrides)
    if "window_size" not in overrides:
        if None in window:
            raise ValueError("The window size of this Swin v2 is not in its tensors (timm saves no index buffer), nor "
                             "in its file's name! Give the window W it was trained with (timm's names say it: "
                             "swinv2_tiny_window8_256 has windows of 8, swinv2_base_window12to16_192to256 of 16): a "
                             "sidecar JSON next to the file, {\"config\": {\"window_size\": W}}, or name the file "
                             "as timm names the model, or load its timm Hub folder, whose architecture name says it.")
        fields["window_size"] = tuple(window)
    if "img_size" not in overrides and "absolute_pos_embed" in sd:   # its table is the native grid's (square)
        side = math.isqrt(int(sd["absolute_pos_embed"].shape[1])) * int(P)
        fields["img_size"] = (side, side)
    if "img_size" not in fields:
        last = fields["window_size"]
        last = last if isinstance(last, int) else last[-1]
        side = last * int(P) * 2 ** (len(stages) - 1)
        fields["img_size"] = (side, side)
    return SwinConfig(**fields)


def timm_swin_config(architecture: str) -> dict:
    """What a timm Swin architecture name says that its tensors may not: the window (``window8``) and, for a
    fine-tuned v2, the pretraining window and size (``window12to16_192to256``: each stage's pretraining window was
    12, or its grid at 192 where that is smaller). {} for any other architecture."""
    m = re.search(r"window(\d+)(?:to(\d+))?", architecture)
    if not m or "swin" not in architecture:
        return {}
    window = int(m[2] or m[1])
    out = {"window_size": window}
    sizes = re.search(r"_(\d+)to(\d+)$", architecture)
    if m[2] and sizes:
        pretrained, pre_size = int(m[1]), int(sizes[1])
        patch = int(p[1]) if (p := re.search(r"patch(\d+)", architecture)) else 4
        out["pretrained_window_sizes"] = tuple(min(pretrained, pre_size // patch // 2 ** s) for s in range(4))
    return out


def huggingface_swin_config(hf: dict, folder) -> dict:
    """SwinConfig fields of a transformers Swin / Swin v2 config.json."""
    if hf.get("hidden_act", "gelu") != "gelu":
        raise ValueError(f"{folder}: hidden_act {hf['hidden_act']!r} is not supported! Expected 'gelu' (exact GELU).")
    size = hf.get("image_size", 224)
    out = dict(img_size=tuple(size) if isinstance(size, (list, tuple)) else (size, size),
               patch_size=hf.get("patch_size", 4), embed_dim=hf.get("embed_dim", 96),
               depths=tuple(hf.get("depths", (2, 2, 6, 2))), num_heads=tuple(hf.get("num_heads", (3, 6, 12, 24))),
               window_size=hf.get("window_size", 7), mlp_ratio=hf.get("mlp_ratio", 4.0),
               qkv_bias=hf.get("qkv_bias", True), layer_norm_eps=hf.get("layer_norm_eps", 1e-5),
               version=2 if hf.get("model_type") == "swinv2" else 1)
    if out["version"] == 2:
        out["pretrained_window_sizes"] = tuple(hf.get("pretrained_window_sizes") or (0,) * len(out["depths"]))
    return out


def swin_default_preprocess(fmt: str, cfg: SwinConfig) -> tuple[Preprocess, str]:
    """A Swin's preprocessing when nothing names it, and whose convention it is: timm's Swin configuration (crop_pct
    0.9, bicubic, ImageNet mean and std); transformers' image processor for Swin without a preprocessor_config.json
    (ViTImageProcessor's defaults); torchvision: the transforms of its Swin weights of the same version (swin_t's
    232 -> 224, swin_v2_t's 260 -> 256, bicubic), resized in proportion to the model's input."""
    if fmt == "huggingface-swin":
        return huggingface_preprocess(None, "swinv2" if cfg.version == 2 else "swin", cfg.img_size), "Hugging Face"
    if fmt == "timm-swin":
        return timm_preprocess({"input_size": (3, *cfg.img_size), "crop_pct": 0.9, "interpolation": "bicubic"}), "timm"
    tiny = registry.by_name("swin_v2_t" if cfg.version == 2 else "swin_t").preprocess
    crop = cfg.img_size[0]
    return torchvision_preprocess(crop, round(tiny.resize * crop / tiny.crop[0]), tiny.interpolation), "torchvision"
