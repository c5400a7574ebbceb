"""Segment Anything's image encoder from the layouts it is saved in, renamed onto ``vit.sam`` (timm's key names):

    timm-sam           timm's samvit_* (blocks.i.attn.rel_pos_h, a (1, gh, gw, D) position table, neck.0 …)
    sam                Meta's SAM checkpoints (image_encoder.*, mlp.lin1/lin2; the prompt encoder and mask decoder
                       are left out), timm's own converter's renames
    huggingface-sam    transformers' SamModel / SamVisionModel (vision_encoder.*)

Everything the model needs is in the tensors: the width, depth and patch; the heads (a relative-position table is
one head wide); which blocks are global (their table spans the grid, a windowed block's its window); the grid (the
position table's, or a global block's table). What is not: the blocks' LayerNorm eps, which is each source's own
(Meta's and transformers' 1e-6, timm's samvit 1e-5).
"""
from __future__ import annotations

import re

from ..preprocess import IMAGENET_MEAN, IMAGENET_STD, Preprocess
from ..sam import SamConfig
from .formats import Swaps, swap_keys

SAM_FORMATS = ("timm-sam", "sam", "huggingface-sam")
META_SAM_SWAPS: Swaps = [(r"^image_encoder\.", ""), (r"\.mlp\.lin([12])\.", r".mlp.fc\1.")]
META_SAM_DROP = [r"^(?!image_encoder\.)"]                   # the prompt encoder, the mask decoder, pixel statistics
HF_SAM_SWAPS: Swaps = [
    (r"^vision_encoder\.", ""),
    (r"^patch_embed\.projection\.", "patch_embed.proj."),
    (r"^neck\.conv1\.", "neck.0."), (r"^neck\.layer_norm1\.", "neck.1."),
    (r"^neck\.conv2\.", "neck.2."), (r"^neck\.layer_norm2\.", "neck.3."),
    (r"^layers\.(\d+)\.", r"blocks.\1."),
    (r"\.layer_norm([12])\.", r".norm\1."),
    (r"\.mlp\.lin([12])\.", r".mlp.fc\1."),
]
HF_SAM_DROP = [r"^(?!vision_encoder\.)"]                   # SamModel's prompt encoder, mask decoder, shared embedding
EPS = {"timm-sam": 1e-5, "sam": 1e-6, "huggingface-sam": 1e-6}   # the blocks' LayerNorm eps of each source's model


def detect_sam(state: dict) -> str | None:
    """The SAM layout of a state dict (one of ``SAM_FORMATS``), or None."""
    keys = {re.sub(r"^module\.", "", k) for k in state}
    if "image_encoder.patch_embed.proj.weight" in keys:
        return "sam"
    if "vision_encoder.patch_embed.projection.weight" in keys:
        return "huggingface-sam"
    if "patch_embed.proj.weight" in keys and ("neck.0.weight" in keys or "neck.weight" in keys) and \
            any(re.fullmatch(r"blocks\.\d+\.attn\.(rel_pos_h|qkv\.weight)", k) for k in keys) and \
            "cls_token" not in keys and not any(k.startswith("blocks.0.attn.relative") for k in keys):
        return "timm-sam"
    return None


def sam_filter_fn(state: dict, fmt: str) -> dict:
    """A SAM state dict of format ``fmt`` -> vit.sam's key names."""
    state = {re.sub(r"^module\.", "", k): v for k, v in state.items()}
    if fmt == "sam":
        return swap_keys(state, META_SAM_SWAPS, META_SAM_DROP)
    if fmt == "huggingface-sam":
        return swap_keys(state, HF_SAM_SWAPS, HF_SAM_DROP)
    return state


def infer_sam_config(sd: dict, fmt: str, **overrides) -> SamConfig:
    """SamConfig read off a state dict in vit.sam's key names; ``overrides`` (SamConfig fields) win. ValueError when
    a windowed block's side cannot be read (a SAM without relative positions, whose metadata must give it)."""
    known = set(SamConfig.__dataclass_fields__)
    unknown = set(overrides) - known
    if unknown:
        raise ValueError(f"Unknown SAM config fields {sorted(unknown)}! Expected some of {sorted(known)}.")
    D, C, P, _ = sd["patch_embed.proj.weight"].shape
    depth = 1 + max(int(m[1]) for k in sd if (m := re.match(r"blocks\.(\d+)\.", k)))
    tables = [sd.get(f"blocks.{i}.attn.rel_pos_h") for i in range(depth)]
    fields = dict(patch_size=int(P), in_chans=int(C), embed_dim=int(D), depth=depth,
                  mlp_dim=int(sd["blocks.0.mlp.fc1.weight"].shape[0]), qkv_bias="blocks.0.attn.qkv.bias" in sd,
                  rel_pos=tables[0] is not None, abs_pos="pos_embed" in sd,
                  neck_dim=int(sd["neck.0.weight"].shape[0]) if "neck.0.weight" in sd else 0,
                  num_classes=int(sd["head.fc.weight"].shape[0]) if "head.fc.weight" in sd else 0,
                  layer_norm_eps=EPS[fmt])
    grid = tuple(int(s) for s in sd["pos_embed"].shape[1:3]) if "pos_embed" in sd else None
    if tables[0] is not None:
        fields["num_heads"] = int(D) // int(tables[0].shape[1])       # a table is one head wide
        sides = [(int(t.shape[0]) + 1) // 2 for t in tables]
        if grid is None:                                               # the largest side is a global block's grid
            grid = (max(sides), max(sides))
        window = min(sides)
        fields["global_blocks"] = tuple(i for i, s in enumerate(sides) if s == grid[0] and s != window) \
            if len(set(sides)) > 1 else ()
        fields["window_size"] = window if window < grid[0] else 0
    elif "window_size" not in overrides or "global_blocks" not in overrides or "num_heads" not in overrides:
        raise ValueError("This SAM image encoder has no relative-position tables, so which blocks attend in windows "
                         "(and of which side) and its heads are not in its tensors! Give window_size, global_blocks "
                         "and num_heads (to vit.load, or as \"config\" in a sidecar JSON beside the file), or open its "
                         "timm or transformers folder, whose config says them.")
    if grid is not None:
        fields["img_size"] = (grid[0] * int(P), grid[1] * int(P))
    return SamConfig(**{**fields, **overrides})


def huggingface_sam_config(hf: dict) -> dict:
    """SamConfig fields of transformers' SamVisionConfig (a SamModel's vision_config, or a SamVisionModel's
    config.json)."""
    vision = hf.get("vision_config", hf)
    size = vision.get("image_size", 1024)
    return dict(img_size=(size, size), window_size=vision.get("window_size", 14),
                global_blocks=tuple(vision.get("global_attn_indexes", (2, 5, 8, 11))),
                num_heads=vision.get("num_attention_heads", 12), layer_norm_eps=vision.get("layer_norm_eps", 1e-6),
                qkv_bias=vision.get("qkv_bias", True))


def sam_preprocess(size: tuple[int, int]) -> Preprocess:
    """SAM's own (its ResizeLongestSide and pad, transformers' SamImageProcessor): the longer side to the input's,
    bilinear, ImageNet's mean and std, the rest padded at the bottom and right with zeros after normalising (the mean
    colour before)."""
    fill = tuple(round(255 * m) for m in IMAGENET_MEAN)
    return Preprocess(resize_mode="fit", resize=tuple(size), crop=tuple(size), interpolation="bilinear",
                      mean=IMAGENET_MEAN, std=IMAGENET_STD, centre="start", fill=fill)
