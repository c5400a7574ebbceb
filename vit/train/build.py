"""The model to train (a named variant from scratch, or a loaded checkpoint with a new head) and its optimizer."""
from __future__ import annotations

import dataclasses

import torch.nn as nn

from ..model import ViTConfig, VisionTransformer, variant
from ..preprocess import Preprocess
from ..swin import SwinConfig, SwinTransformer, swin_variant
from ..video import VideoConfig, VideoTransformer
from ..video_file import VideoPreprocess

# Normalization for models trained from scratch: the ImageNet statistics most natural-image models use.
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
HEAD_PREFIXES = ("head.", "head_dist.", "proj.")   # replaced when fine-tuning: sized to the old classes (CLIP: its projection)
NO_DECAY = ("pos_embed", "cls_token", "dist_token", "reg_token", "time_embed")  # embeddings, like biases and norms, skip weight decay
# a Swin's position biases and v2's logit scales and bias MLP skip it too (as timm's no_weight_decay)
NO_DECAY_PARTS = ("relative_position_bias_table", "logit_scale", "cpb_mlp")


def scratch_config(name: str, num_classes: int, img_size: tuple[int, int], patch_size: int, drop_path: float,
                   depth: int | None = None, embed_dim: int | None = None, num_heads: int | None = None,
                   mlp_dim: int | None = None, pos_embed: str = "learned") -> ViTConfig:
    """Config of a named variant ("tiny", "small", "base", …) with the given image/patch size and optional overrides.

    A new ``embed_dim`` without ``mlp_dim`` keeps the usual MLP ratio of 4. ``pos_embed`` is the config's
    ``pos_embed_kind``: "learned", "sincos2d" or "none".
    """
    overrides = dict(img_size=img_size, patch_size=patch_size, num_classes=num_classes, drop_path_rate=drop_path,
                     pos_embed_kind=pos_embed)
    for key, value in (("depth", depth), ("embed_dim", embed_dim), ("num_heads", num_heads), ("mlp_dim", mlp_dim)):
        if value is not None:
            overrides[key] = value
    if embed_dim is not None and mlp_dim is None:
        overrides["mlp_dim"] = 4 * embed_dim
    return variant(name, **overrides)


def swin_scratch_config(name: str, num_classes: int, img_size: tuple[int, int], patch_size: int, drop_path: float,
                        depths: tuple[int, ...] | None = None, embed_dim: int | None = None,
                        num_heads: int | tuple[int, ...] | None = None, window: int | None = None,
                        pos_embed: str = "none") -> SwinConfig:
    """Config of a named Swin size ("tiny", "small", "base", "large") with the given image and patch size and
    overrides; ``num_heads`` one per stage, or one number for every stage; ``window`` for every stage;
    ``pos_embed`` "learned" adds the original Swin's absolute position embedding."""
    overrides = dict(img_size=img_size, patch_size=patch_size, num_classes=num_classes, drop_path_rate=drop_path,
                     absolute_pos_embed=pos_embed == "learned")
    base = swin_variant(name)
    depths = depths or base.depths
    overrides["depths"] = tuple(depths)
    heads = num_heads if num_heads is not None else base.num_heads
    heads = (heads,) * len(depths) if isinstance(heads, int) else tuple(heads)
    if len(heads) != len(depths) and num_heads is None:   # fewer stages than the size's: its first heads
        heads = heads[:len(depths)]
    overrides["num_heads"] = heads
    overrides["window_size"] = window or base.window_size[0]
    overrides["pretrained_window_sizes"] = (0,) * len(depths)
    if embed_dim is not None:
        overrides["embed_dim"] = embed_dim
    return swin_variant(name, **overrides)


def video_scratch_config(name: str, num_classes: int, img_size: tuple[int, int], patch_size: int, drop_path: float,
                         frames: int, tubelet: int, depth: int | None = None, embed_dim: int | None = None,
                         num_heads: int | None = None, mlp_dim: int | None = None) -> VideoConfig:
    """A video transformer with a named ViT size's shape (and overrides): ViViT's joint space-time attention over
    ``tubelet``-frame tubelets of ``frames``-frame clips, a CLS token read out, one learnt position table."""
    vit_cfg = scratch_config(name, num_classes, img_size, patch_size, drop_path, depth, embed_dim, num_heads, mlp_dim)
    return VideoConfig(img_size=img_size, num_frames=frames, tubelet_size=tubelet, patch_size=patch_size,
                       num_classes=num_classes, embed_dim=vit_cfg.embed_dim, depth=vit_cfg.depth,
                       num_heads=vit_cfg.num_heads, mlp_dim=vit_cfg.mlp_dim, class_token=True, pos_embed="learned",
                       global_pool="token", drop_path_rate=drop_path)


def scratch_video_preprocess(img_size: tuple[int, int], frames: int) -> VideoPreprocess:
    """``frames`` frames sampled uniformly, the shorter side resized to the model's side, the centre cut out, ImageNet
    normalisation."""
    return VideoPreprocess(resize=max(img_size), crop=tuple(img_size), mean=IMAGENET_MEAN, std=IMAGENET_STD,
                           num_frames=frames)


def build_model(cfg: ViTConfig | SwinConfig | VideoConfig) -> VisionTransformer | SwinTransformer | VideoTransformer:
    """A freshly initialised model of the config's architecture."""
    return {SwinConfig: SwinTransformer, VideoConfig: VideoTransformer}.get(type(cfg), VisionTransformer)(cfg)


def scratch_preprocess(img_size: tuple[int, int]) -> Preprocess:
    """Resize the short side to the longer model side, center crop to the model size, ImageNet normalization."""
    return Preprocess(resize=max(img_size), crop=tuple(img_size), interpolation="bicubic",
                      mean=IMAGENET_MEAN, std=IMAGENET_STD)


def fine_tune_model(pretrained: VisionTransformer | SwinTransformer, num_classes: int,
                    drop_path: float) -> VisionTransformer | SwinTransformer:
    """A copy of ``pretrained`` with a new, randomly initialised head for ``num_classes`` classes.

    Everything but the head is copied (load the checkpoint at the wanted image size first: ``vit.load`` resamples
    the position embeddings). Raises ValueError when anything else would not be copied, never silently.
    """
    # A CLIP tower's image projection goes too: the new head reads the pooled features, as timm's fine-tuned CLIPs do.
    cfg = dataclasses.replace(pretrained.cfg, num_classes=num_classes, drop_path_rate=drop_path,
                              **({"proj_dim": None} if hasattr(pretrained.cfg, "proj_dim") else {}))
    model = build_model(cfg)
    state = {k: v for k, v in pretrained.state_dict().items() if not k.startswith(HEAD_PREFIXES)}
    missing, unexpected = model.load_state_dict(state, strict=False)
    not_copied = [k for k in missing if not k.startswith(HEAD_PREFIXES)]
    if not_copied or unexpected:
        raise ValueError(f"Could not copy the pretrained weights into the fine-tuning model! Not copied: {not_copied}; "
                         f"unexpected: {unexpected}.")
    return model


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """AdamW groups: weight decay on matrices only, none on biases, norms, layer scales and token/position embeddings."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        skip = p.ndim <= 1 or name in NO_DECAY or any(part in name for part in NO_DECAY_PARTS)
        (no_decay if skip else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
