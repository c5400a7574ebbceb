"""The checkpoint's own library's model of it, made from the same file, for the load's check (``verify``).

Each format is read by the library that saves it: timm's (and DINO's, Meta's DINOv3 and Google's .npz files, which
timm reads with its own converters), transformers' folders (its video classifiers' too), open_clip's folders and
OpenAI's state dicts, and torchvision's ViTs. Where the file or its folder names the model (a timm architecture with its model_args, a
transformers class in config.json, an open_clip config), the library builds that; for a bare timm file, the timm
class and arguments that make the configuration the loader read (``timm_arguments``). A ``Reference`` runs the
library's model on an image batch (a clip batch) and returns its output, read as this explorer reads it, and the last block's
softmax attention as the library itself computed it (its explicit-softmax path; the weights of its own attention
module). Nothing here is a re-implementation of the model: only the library's modules run.

``Unbuilt`` says, in a sentence, why no reference could be made (the library is not installed, the layout has no
counterpart in it): the load is then "not verified", with that reason.
"""
from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable

import torch
import torch.nn as nn

from ..model import ViTConfig
from ..readout import kind as readout_kind
from .timm_library import TimmArchitecture
from .video_formats import VIDEO_FORMATS


@dataclass(frozen=True)
class Origin:
    """Where a loaded model came from, as the check needs it."""
    format: str                          # the checkpoint format (``formats.FILTERS``, a Swin's, or our own)
    state: dict                          # its tensors in their own layout (before this explorer's renames)
    path: Path | None = None             # the file or folder they were read from
    timm: TimmArchitecture | None = None  # the timm architecture it names, as timm builds it


@dataclass(frozen=True)
class Reference:
    library: str                          # "timm", "transformers", "open_clip" or "torchvision"
    version: str
    run: Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]   # x -> (output, last block's attention)


# Why no reference was made, as a sentence part (Unbuilt.key -> text; viz/i18n/page.py: its Chinese)
WHY_UNBUILT = {
    "not_installed": "{library} is not installed",
    "own_format": "this explorer's own format: it is its own library",
    "no_library": "no library reads the {format} format here",
    "library_failed": "{library} cannot make this model ({error})",
    "other_tensors": "{library}'s model does not take the file's tensors ({missing})",
    "timm_cls_mean": "timm has no readout of the CLS token beside the mean of the patches",
    "timm_prefix_norm": "timm has no final norm of the CLS and register tokens apart",
    "timm_by_name": "a parallel-block or NaFlex ViT is checked when its timm architecture is named",
    "timm_register_positions": "timm gives registers a position whenever the CLS token has one",
    "timm_pool_heads": "timm's VisionTransformer pools with as many heads as its blocks have",
    "timm_unknown_tower": "open_clip's timm tower names no architecture timm knows",
    "transformers_no_config": "a transformers state dict without its folder's config.json names no class",
    "transformers_no_class": "transformers has no class {name}",
    "open_clip_image_only": "open_clip builds a CLIP from a folder or from both towers' tensors, and this file has "
                            "only the image tower",
    "torchvision_headless": "torchvision's ViT always has its classifier",
    "resized": "{library} is checked at the file's own input size, and this load asked for another",
}


@dataclass(frozen=True)
class Unbuilt:
    """Why no reference was made: a key of ``WHY_UNBUILT`` and its fields."""
    key: str
    fields: dict = field(default_factory=dict)

    def __str__(self) -> str:
        return WHY_UNBUILT[self.key].format(**self.fields)


LIBRARY_OF_FORMAT = {"timm": "timm", "timm-naflex": "timm", "dino": "timm", "dinov3": "timm", "google-npz": "timm",
                     "huggingface": "transformers", "huggingface-clip": "transformers",
                     "huggingface-dinov3": "transformers", "openai-clip": "open_clip", "open-clip-timm": "timm",
                     "torchvision": "torchvision", "timm-swin": "timm", "torchvision-swin": "torchvision",
                     "huggingface-swin": "transformers", "timm-sam": "timm", "sam": "timm",
                     "huggingface-sam": "transformers", "huggingface-aimv2": "transformers",
                     **{f: "transformers" for f in VIDEO_FORMATS}}


# what a library raises when it cannot make a model from a file or folder it did not write itself
LIBRARY_ERRORS = (KeyError, ValueError, TypeError, RuntimeError, AttributeError, AssertionError, OSError)


def installed(library: str) -> str | None:
    """The library's version, or None when it is not installed."""
    module = {"open_clip": "open_clip"}.get(library, library)
    if importlib.util.find_spec(module) is None:
        return None
    imported = __import__(module)
    return getattr(imported, "__version__", "")


def reference(origin: Origin, cfg: ViTConfig) -> Reference | Unbuilt:
    """The library's model of the checkpoint ``origin``, as the loader configured it (``cfg``), or why there is
    none."""
    library = LIBRARY_OF_FORMAT.get(origin.format)
    if library is None:
        return Unbuilt("own_format") if origin.format == "own" else Unbuilt("no_library", {"format": origin.format})
    version = installed(library)
    if version is None:
        return Unbuilt("not_installed", {"library": library})
    build = {"timm": _timm, "transformers": _transformers, "open_clip": _open_clip, "torchvision": _torchvision}
    if origin.format in ("timm-swin", "torchvision-swin"):
        build = {"timm": _timm_swin, "torchvision": _torchvision_swin}
    if origin.format in ("timm-sam", "sam"):
        build = {"timm": _timm_sam}
    if origin.format in VIDEO_FORMATS:
        build = {"transformers": _transformers_video}
    try:
        made = build[library](origin, cfg)
    except LIBRARY_ERRORS as e:           # the library itself cannot make it (an incomplete config, …): said
        return Unbuilt("library_failed", {"library": library, "error": f"{type(e).__name__}: {e}"})
    if isinstance(made, Unbuilt):
        return made
    return Reference(library, version, made)


# --- timm ------------------------------------------------------------------------------------------------------

def _timm(origin: Origin, cfg: ViTConfig):
    import timm
    if origin.format == "open-clip-timm":                      # open_clip's timm tower: timm's model, then its
        return _open_clip_tower(origin, cfg)                   # projection
    if origin.timm is not None:
        model = origin.timm.build(num_classes=cfg.num_classes or cfg.proj_dim or 0,
                                  **({"img_size": cfg.img_size} if cfg.pos_embed_grid is None else {}),
                                  **_pooled_as_given(origin.timm, cfg))
    else:
        arguments = timm_arguments(cfg, origin.state)
        if isinstance(arguments, Unbuilt):
            return arguments
        cls, kwargs = arguments
        with torch.device("meta"):
            model = cls(**kwargs)
    if origin.format == "google-npz":                          # timm reads Google's arrays itself
        from .formats import google_prefix
        model = model.to_empty(device="cpu")
        timm.models.vision_transformer._load_weights(model, str(origin.path), google_prefix(origin.state))
    else:
        state = _timm_state(origin, model)
        missing = _materialise(model, state)
        if missing:
            return Unbuilt("other_tensors", {"library": "timm", "missing": missing})
    return partial(_run_timm, model.eval(), cfg)


def _pooled_as_given(named: TimmArchitecture, cfg: ViTConfig) -> dict:
    """The global_pool timm makes the model with when the loader was given another readout than timm's default
    (a sidecar's config, an override): timm's model made to pool so, as a user makes it; {} otherwise."""
    if cfg.readout == named.fields.get("readout", cfg.readout):
        return {}
    pools = {"cls": "token", "mean": "avg", "map": "map"}
    return {"global_pool": pools[cfg.readout]} if cfg.readout in pools else {}


def _open_clip_tower(origin: Origin, cfg: ViTConfig):
    """open_clip's TimmModel, as it runs: its timm trunk (timm's model, headless), then its projection (a Linear: its
    head.proj, or timm's own head where timm_proj is null)."""
    if origin.timm is None:
        return Unbuilt("timm_unknown_tower")
    trunk = origin.timm.build(num_classes=0, img_size=cfg.img_size)
    state = {k.split("visual.trunk.", 1)[1]: v for k, v in origin.state.items() if "visual.trunk." in k}
    missing = _materialise(trunk, _timm_state(Origin("timm", state), trunk))
    if missing:
        return Unbuilt("other_tensors", {"library": "timm", "missing": missing})
    weight = next((v for k, v in origin.state.items() if k.endswith("visual.head.proj.weight")), None)
    bias = next((v for k, v in origin.state.items() if k.endswith("visual.head.proj.bias")), None)
    project = (lambda f: f) if weight is None else (lambda f: nn.functional.linear(f, weight.float(), bias))
    run = partial(_run_timm, trunk.eval(), cfg)
    return lambda x: (lambda out, attention: (project(out), attention))(*run(x))


def _timm_state(origin: Origin, model: nn.Module) -> dict:
    """The file's tensors as timm loads them: its module's checkpoint_filter_fn (Meta's DINOv3 and DINOv2 layouts,
    a position table for another grid), DINO's training wrappers left out."""
    import importlib
    from .formats import DINO_DROP, DINO_SWAPS, swap_keys
    state = origin.state
    if origin.format == "dino":
        state = swap_keys(state, DINO_SWAPS, DINO_DROP)
    state = {k.removeprefix("module."): v for k, v in state.items()}
    convert = getattr(importlib.import_module(type(model).__module__), "checkpoint_filter_fn", None)
    if convert is not None:
        state = convert(state, model)
    return state


def _materialise(model: nn.Module, state: dict) -> str:
    """The checkpoint's tensors made the parameters of ``model`` (built on the meta device: nothing is initialised
    twice), the buffers timm computes rebuilt; '' when it took them all, else what did not fit."""
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state))
    mismatched = [k for k in expected if k in state and tuple(state[k].shape) != tuple(expected[k].shape)]
    if missing or mismatched:
        return "; ".join(filter(None, [f"missing {', '.join(missing[:3])}" if missing else "",
                                       f"other shapes {', '.join(mismatched[:3])}" if mismatched else ""]))
    model.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in state.items() if k in expected},
                          strict=True, assign=True)
    for module in model.modules():                              # buffers timm computes (rotary tables, indices)
        for name, buffer in list(module._buffers.items()):
            if buffer is not None and buffer.is_meta:
                module._buffers[name] = torch.zeros(buffer.shape, dtype=buffer.dtype)
        if hasattr(module, "init_non_persistent_buffers"):
            module.init_non_persistent_buffers()
    left = [n for n, t in [*model.named_parameters(), *model.named_buffers()] if t.is_meta]
    if left:
        return f"no value for {', '.join(left[:3])}"
    return ""


def _run_timm(model: nn.Module, cfg: ViTConfig, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """timm's output and its last block's softmax attention (the input of each attention's attn_drop, which timm
    applies right after the softmax, its fused path off): a parallel block's branches side by side."""
    last = model.blocks[-1]
    attentions = list(getattr(last, "attns", [])) or [last.attn]
    maps = []
    for attn in attentions:
        attn.fused_attn = False
    hooks = [attn.attn_drop.register_forward_hook(lambda m, i, o: maps.append(i[0])) for attn in attentions]
    try:
        with torch.no_grad():
            out = model(x)
    finally:
        for h in hooks:
            h.remove()
    return out, torch.cat(maps, dim=1)


def timm_arguments(cfg: ViTConfig, state: dict) -> tuple[type, dict] | Unbuilt:
    """The timm class and arguments that make a model of ``cfg`` with the file's tensors (``state``, timm's keys):
    VisionTransformer (DeiT's distilled one), Eva (a rotation), Beit (a relative-position table) or
    VisionTransformerRelPos (a relative-position MLP); an ``Unbuilt`` for a layout timm has no class for."""
    from timm.layers import LayerNorm, RmsNorm
    readout = readout_kind(cfg.readout)
    why = None
    if cfg.readout == "cls_mean":
        why = "timm_cls_mean"
    elif cfg.prefix_norm:
        why = "timm_prefix_norm"
    elif cfg.parallel > 1 or cfg.pos_embed_grid is not None:
        why = "timm_by_name"
    elif cfg.pos_embed_prefix and cfg.num_reg_tokens and not cfg.pos_embed_registers and not cfg.rope:
        why = "timm_register_positions"
    if why:
        return Unbuilt(why)
    D = cfg.embed_dim
    norm = partial(RmsNorm if cfg.norm_kind == "rmsnorm" else LayerNorm, eps=cfg.layer_norm_eps)
    pool = {"cls": "token", "distilled": "token", "mean": "avg", "mean_all": "avg", "map": "map", "map_all": "map"}
    common = dict(img_size=cfg.img_size, patch_size=cfg.patch_size, in_chans=cfg.in_chans,
                  num_classes=cfg.num_classes or (cfg.proj_dim or 0), embed_dim=D, depth=cfg.depth,
                  num_heads=cfg.num_heads, mlp_ratio=(cfg.mlp_dim + 0.5) / D, global_pool=pool[cfg.readout])
    if cfg.rel_pos_bias:
        import timm.models.beit as beit
        return beit.Beit, dict(common, qkv_bias=cfg.qkv_bias, norm_layer=norm, init_values=1.0 if cfg.layer_scale
                               else None, use_abs_pos_emb=cfg.pos_embed_kind == "learned", use_rel_pos_bias=True,
                               use_fc_norm=cfg.fc_norm, swiglu_mlp=cfg.mlp_act == "swiglu", scale_mlp=cfg.mlp_norm)
    if cfg.rel_pos_mlp:
        import timm.models.vision_transformer_relpos as relpos
        block = relpos.ResPostRelPosBlock if cfg.res_post_norm else relpos.RelPosBlock
        return relpos.VisionTransformerRelPos, dict(
            common, qkv_bias=cfg.qkv_bias, init_values=1.0 if cfg.layer_scale else None,
            class_token=cfg.class_token, fc_norm=cfg.fc_norm, rel_pos_dim=cfg.rel_pos_mlp_dim,
            shared_rel_pos="shared_rel_pos.mlp.fc1.weight" in state, block_fn=block, norm_layer=norm)
    if cfg.rope:
        import timm.models.eva as eva
        swiglu = cfg.mlp_act == "swiglu"
        return eva.Eva, dict(
            common, qkv_bias=cfg.qkv_bias, swiglu_mlp=swiglu, scale_mlp=cfg.mlp_norm,
            swiglu_align_to=1 if swiglu and not cfg.mlp_norm and any(".mlp.fc1_g." in k for k in state) else 0,
            scale_attn_inner=cfg.attn_norm, attn_type="eva" if not cfg.k_bias or not cfg.qkv_bias else "rope",
            norm_layer=norm, init_values=1.0 if cfg.layer_scale else None, class_token=cfg.class_token,
            num_reg_tokens=cfg.num_reg_tokens, no_embed_class=not cfg.pos_embed_prefix,
            use_abs_pos_emb=cfg.pos_embed_kind == "learned", use_rot_pos_emb=True,
            rope_type="mixed" if cfg.rope_mixed else "dinov3" if cfg.rope_coords == "centered" else "cat",
            rope_grid_offset=cfg.rope_offset, rope_grid_indexing=cfg.rope_axes, rope_temperature=cfg.rope_temperature,
            rope_rotate_half=cfg.rope_half, ref_feat_shape=cfg.rope_ref_grid, use_pre_transformer_norm=cfg.norm_pre,
            use_post_transformer_norm=cfg.final_norm and not cfg.fc_norm, use_fc_norm=cfg.fc_norm,
            attn_pool_num_heads=cfg.pool_heads, attn_pool_mlp_ratio=(cfg.pool_mlp_dim + 0.5) / D
            if cfg.pool_mlp_dim else None, use_post_norm=cfg.res_post_norm, dynamic_img_size=True)
    import timm.models.deit as deit
    import timm.models.vision_transformer as vt
    from timm.layers import SwiGLU
    if readout.probe and (cfg.pool_heads or cfg.num_heads) != cfg.num_heads:
        return Unbuilt("timm_pool_heads")
    act = {"gelu": "gelu", "gelu_tanh": "gelu_tanh", "quick_gelu": "quick_gelu", "swiglu": "silu"}[cfg.mlp_act]
    cls = deit.VisionTransformerDistilled if cfg.readout == "distilled" else vt.VisionTransformer
    return cls, dict(
        common, qkv_bias=cfg.qkv_bias, proj_bias=cfg.linear_bias, scale_attn_norm=cfg.attn_norm,
        scale_mlp_norm=cfg.mlp_norm, init_values=1.0 if cfg.layer_scale else None, class_token=cfg.class_token,
        pos_embed="learn" if cfg.pos_embed_kind == "learned" else "none", no_embed_class=not cfg.pos_embed_prefix,
        reg_tokens=cfg.num_reg_tokens, pre_norm=cfg.norm_pre, final_norm=cfg.final_norm, fc_norm=cfg.fc_norm,
        pool_include_prefix=readout.prefix and readout.pooled, norm_layer=norm, act_layer=act,
        embed_norm_layer=norm if cfg.patch_norm else None, mlp_layer=SwiGLU if cfg.mlp_act == "swiglu" else vt.Mlp,
        block_fn=vt.ResPostBlock if cfg.res_post_norm else vt.Block, dynamic_img_size=True, weight_init="skip")


# --- Swin Transformers ------------------------------------------------------------------------------------------------

def _timm_swin(origin: Origin, cfg):
    """timm's SwinTransformer (v1) or SwinTransformerV2 of the loader's configuration, with the file's tensors."""
    import timm.models.swin_transformer as v1
    import timm.models.swin_transformer_v2 as v2
    kwargs = dict(img_size=cfg.img_size, patch_size=cfg.patch_size, in_chans=cfg.in_chans, num_classes=cfg.num_classes,
                  embed_dim=cfg.embed_dim, depths=cfg.depths, num_heads=cfg.num_heads, window_size=cfg.window_size,
                  mlp_ratio=cfg.mlp_ratio, qkv_bias=cfg.qkv_bias)
    if cfg.version == 2:
        kwargs["pretrained_window_sizes"] = cfg.pretrained_window_sizes
    with torch.device("meta"):
        model = (v2.SwinTransformerV2 if cfg.version == 2 else v1.SwinTransformer)(**kwargs)
    module = v2 if cfg.version == 2 else v1
    missing = _materialise(model, module.checkpoint_filter_fn(dict(origin.state), model))
    if missing:
        return Unbuilt("other_tensors", {"library": "timm", "missing": missing})
    return partial(_run_timm_swin, model.eval())


def _run_timm_swin(model, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """timm's logits and its last block's window attention (its softmax module's output, the fused path off)."""
    attn = model.layers[-1].blocks[-1].attn
    attn.fused_attn = False
    maps = []
    hook = attn.softmax.register_forward_hook(lambda m, i, o: maps.append(o))
    try:
        with torch.no_grad():
            out = model(x)
    finally:
        hook.remove()
    return out, maps[0]


def _torchvision_swin(origin: Origin, cfg):
    """torchvision's SwinTransformer of the loader's configuration, with the file's tensors. Its window attention is
    a function (no module holds its softmax): only the logits are compared."""
    from torchvision.models import swin_transformer as tv
    if len(set(cfg.window_size)) > 1:
        return Unbuilt("other_tensors", {"library": "torchvision", "missing": "one window for every stage"})
    extra = dict(block=tv.SwinTransformerBlockV2, downsample_layer=tv.PatchMergingV2) if cfg.version == 2 else {}
    with torch.device("meta"):
        model = tv.SwinTransformer(patch_size=[cfg.patch_size] * 2, embed_dim=cfg.embed_dim, depths=list(cfg.depths),
                                   num_heads=list(cfg.num_heads), window_size=[cfg.window_size[0]] * 2,
                                   mlp_ratio=cfg.mlp_ratio, num_classes=cfg.num_classes or 1000, **extra)
    if not cfg.num_classes:
        return Unbuilt("torchvision_headless")
    missing = _materialise(model, dict(origin.state))
    if missing:
        return Unbuilt("other_tensors", {"library": "torchvision", "missing": missing})
    model = model.eval()

    def run(x):
        with torch.no_grad():
            return model(x), None
    return run


# --- Segment Anything's image encoder ----------------------------------------------------------------------------

def _timm_sam(origin: Origin, cfg):
    """timm's VisionTransformerSAM of the loader's configuration, with the file's tensors (Meta's through timm's own
    converter)."""
    import timm.models.vision_transformer_sam as sam
    with torch.device("meta"):
        model = sam.VisionTransformerSAM(
            img_size=cfg.img_size, patch_size=cfg.patch_size, in_chans=cfg.in_chans, num_classes=cfg.num_classes,
            embed_dim=cfg.embed_dim, depth=cfg.depth, num_heads=cfg.num_heads, mlp_ratio=(cfg.mlp_dim + 0.5) /
            cfg.embed_dim, qkv_bias=cfg.qkv_bias, use_abs_pos=cfg.abs_pos, use_rel_pos=cfg.rel_pos,
            window_size=cfg.window_size, global_attn_indexes=cfg.global_blocks, neck_chans=cfg.neck_dim or None,
            norm_layer=partial(nn.LayerNorm, eps=cfg.layer_norm_eps))
    missing = _materialise(model, sam.checkpoint_filter_fn(dict(origin.state), model))
    if missing:
        return Unbuilt("other_tensors", {"library": "timm", "missing": missing})
    return partial(_run_timm, model.eval(), cfg)


# --- transformers ----------------------------------------------------------------------------------------------

def _named_class(origin: Origin) -> tuple[type, dict, list] | Unbuilt:
    """The transformers class the folder's config.json names, the config and its "architectures", or why none."""
    import transformers
    folder = origin.path
    if folder is None or not folder.is_dir() or not (folder / "config.json").is_file():
        return Unbuilt("transformers_no_config")
    config = json.loads((folder / "config.json").read_text())
    names = config.get("architectures") or []
    cls = getattr(transformers, names[0], None) if names else None
    if cls is None:
        return Unbuilt("transformers_no_class", {"name": names[0] if names else "(none named)"})
    return cls, config, names


def _from_pretrained(cls, folder: Path):
    """``cls.from_pretrained(folder)`` as a user calls it, in float32 with the eager attention (its softmax written
    out, for the check to read), printing nothing of its own."""
    from transformers.utils import logging as hf_logging
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()                          # a load's check prints nothing of its own
    try:
        return cls.from_pretrained(folder, attn_implementation="eager", dtype=torch.float32).eval()
    finally:
        if bars:
            hf_logging.enable_progress_bar()


def _transformers(origin: Origin, cfg: ViTConfig):
    named = _named_class(origin)
    if isinstance(named, Unbuilt):
        return named
    cls, config, names = named
    model = _from_pretrained(cls, origin.path)
    if config.get("model_type") in ("sam", "sam_vision_model"):   # SAM's image encoder: the mean of its neck's map
        return partial(_run_sam_encoder, getattr(model, "vision_encoder", model))
    base = getattr(model, getattr(model, "base_model_prefix", ""), None)
    if "ForPreTraining" in names[0] or (not cfg.num_classes and not getattr(cfg, "proj_dim", None)
                                        and isinstance(base, nn.Module)
                                        and getattr(model, "classifier", None) is not None):
        model = base                                            # the encoder (MAE's), or a classifier without its head
    return partial(_run_transformers, model, cfg)


def _run_transformers(model, cfg: ViTConfig, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """transformers' output as this explorer reads it (logits; a CLIP model's image embedding; a bare encoder's
    pooled output or its normalised CLS token) and its last block's eager attention."""
    naflex = getattr(cfg, "pos_embed_grid", None) is not None
    inputs = _naflex_patches(x, cfg.patch_size) if naflex else dict(pixel_values=x)
    size = getattr(model.config, "image_size", None) or getattr(getattr(model.config, "vision_config", None),
                                                                "image_size", None)
    if not naflex and size is not None and \
            tuple(x.shape[-2:]) != ((size, size) if isinstance(size, int) else tuple(size)):
        inputs["interpolate_pos_encoding"] = True
    if "MAE" in type(model).__name__:                         # MAE's encoder shuffles its patches: kept in order
        n = (x.shape[-2] // cfg.patch_size) * (x.shape[-1] // cfg.patch_size)
        inputs["noise"] = torch.arange(n, dtype=torch.float32).expand(x.shape[0], n)
    with torch.no_grad():
        if hasattr(model, "get_image_features"):              # CLIP / SigLIP with both towers: the image tower
            attention = model.vision_model(**inputs, output_attentions=True).attentions[-1]
            out = model.get_image_features(**inputs)
            return getattr(out, "pooler_output", out), attention
        result = model(**inputs, output_attentions=True)
    if getattr(result, "logits", None) is not None:
        out = result.logits
    elif getattr(result, "image_embeds", None) is not None:
        out = result.image_embeds
    elif getattr(cfg, "readout", "") == "cls" and type(model).__name__ in ("ViTModel", "DeiTModel", "ViTMSNModel",
                                                                          "ViTMAEModel"):
        out = result.last_hidden_state[:, 0]                  # their pooler (Linear + tanh) is not the readout
    elif getattr(result, "pooler_output", None) is None:       # I-JEPA, a headless AIMv2: the mean of the patches
        out = result.last_hidden_state.mean(dim=1)
    else:
        out = result.pooler_output
    return out, result.attentions[-1]


def _run_sam_encoder(encoder, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """transformers' SAM image encoder: the mean of its neck's feature map, and its last block's attention."""
    with torch.no_grad():
        result = encoder(pixel_values=x, output_attentions=True)
    return result.last_hidden_state.mean(dim=(2, 3)), result.attentions[-1]


def _naflex_patches(x: torch.Tensor, P: int) -> dict:
    """Images (B, C, H, W) as Siglip2ImageProcessor gives them: every patch flattened channels last, row-major; every
    patch real; the grid."""
    B, C, H, W = x.shape
    patches = x.unfold(2, P, P).unfold(3, P, P).permute(0, 2, 3, 4, 5, 1).reshape(B, (H // P) * (W // P), P * P * C)
    return dict(pixel_values=patches, pixel_attention_mask=torch.ones(B, patches.shape[1], dtype=torch.long),
                spatial_shapes=torch.tensor([[H // P, W // P]] * B))


# --- transformers' video classifiers ----------------------------------------------------------------------------

# the module whose output[1] is the softmax of our description's last step: the last block's (the space step of
# TimeSformer's last divided block), V-JEPA 2's last probe block's (its last encoder block's without probe blocks)
LAST_STEP = {
    "videomae": lambda m: m.videomae.encoder.layer[-1].attention.attention,
    "timesformer": lambda m: m.timesformer.encoder.layer[-1].attention.attention,
    "vivit": lambda m: m.vivit.layers[-1].attention,
    "vjepa2": lambda m: (m.pooler.self_attention_layers[-1].self_attn if len(m.pooler.self_attention_layers)
                         else m.vjepa2.encoder.layer[-1].attention),
}


def _transformers_video(origin: Origin, cfg):
    """transformers' video classifier of the folder, made as a user makes it (``from_pretrained`` on the folder)."""
    named = _named_class(origin)
    if isinstance(named, Unbuilt):
        return named
    config = named[1]
    frames = config.get("num_frames") or config.get("frames_per_clip")
    size = config.get("image_size") or config.get("crop_size")
    if (frames, tuple(size) if isinstance(size, (list, tuple)) else (size, size)) != (cfg.num_frames, cfg.img_size):
        return Unbuilt("resized", {"library": "transformers"})    # a load asked for another frame count or size
    return partial(_run_transformers_video, _from_pretrained(named[0], origin.path))


def _run_transformers_video(model, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """transformers' logits of the clips (B, F, C, H, W) and its last step's attention, as its own attention module
    returns it (TimeSformer's module asked for it, as ``output_attentions`` asks every block's)."""
    family = model.config.model_type
    module = LAST_STEP[family](model)
    maps, hooks = [], [module.register_forward_hook(lambda m, args, out: maps.append(out[1]))]
    if family == "timesformer":                   # (hidden_states, output_attentions): asked of this module only
        hooks.append(module.register_forward_pre_hook(lambda m, args, kw: ((args[0], True), kw), with_kwargs=True))
    try:
        with torch.no_grad():
            out = model(**{"pixel_values_videos" if family == "vjepa2" else "pixel_values": x})
    finally:
        for hook in hooks:
            hook.remove()
    return out.logits, maps[-1]


# --- open_clip ---------------------------------------------------------------------------------------------------

def _open_clip(origin: Origin, cfg: ViTConfig):
    import open_clip
    folder = origin.path
    if folder is not None and folder.is_dir() and (folder / "open_clip_config.json").is_file():
        model = open_clip.create_model(f"local-dir:{folder}", device="cpu")
        if tuple(model.visual.image_size) != tuple(cfg.img_size):
            return Unbuilt("resized", {"library": "open_clip"})
    elif origin.format == "openai-clip" and any(k.endswith("token_embedding.weight") for k in origin.state):
        state = {k.removeprefix("module."): v.float() if v.is_floating_point() else v
                 for k, v in origin.state.items()}
        # open_clip's builder reads the towers' shapes off the tensors and rounds its copy to float16: the float32
        # tensors are put back into the model it built
        model = open_clip.model.build_model_from_openai_state_dict(dict(state), quick_gelu=cfg.mlp_act == "quick_gelu")
        model.float().load_state_dict({k: v for k, v in state.items() if k in model.state_dict()})
    else:
        return Unbuilt("open_clip_image_only")
    return partial(_run_open_clip, model.float().eval())


def _run_open_clip(model, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """open_clip's image embedding (encode_image, not normalised) and its last block's attention: for its own
    towers the weights of the block's nn.MultiheadAttention on the input it received, for a timm tower timm's."""
    visual = model.visual
    if hasattr(visual, "trunk"):
        return _run_timm_inside(visual.trunk, lambda: model.encode_image(x))
    block = visual.transformer.resblocks[-1]
    maps = []

    def weights(module, args, out):
        q = out
        maps.append(block.attn(q, q, q, need_weights=True, average_attn_weights=False,
                               attn_mask=getattr(block, "attn_mask", None))[1])
    hook = block.ln_1.register_forward_hook(weights)
    try:
        with torch.no_grad():
            out = model.encode_image(x)
    finally:
        hook.remove()
    return out, maps[0]


def _run_timm_inside(trunk, forward) -> tuple[torch.Tensor, torch.Tensor]:
    """A forward of the model around a timm tower, with the tower's last block's attention captured."""
    attn = trunk.blocks[-1].attn
    attn.fused_attn = False
    maps = []
    hook = attn.attn_drop.register_forward_hook(lambda m, i, o: maps.append(i[0]))
    try:
        with torch.no_grad():
            out = forward()
    finally:
        hook.remove()
    return out, maps[0]


# --- torchvision -------------------------------------------------------------------------------------------------

def _torchvision(origin: Origin, cfg: ViTConfig):
    from torchvision.models import vision_transformer as tv
    with torch.device("meta"):
        model = tv.VisionTransformer(image_size=cfg.img_size[0], patch_size=cfg.patch_size, num_layers=cfg.depth,
                                     num_heads=cfg.num_heads, hidden_dim=cfg.embed_dim, mlp_dim=cfg.mlp_dim,
                                     num_classes=cfg.num_classes or 1000,
                                     representation_size=cfg.representation_size)
    state = dict(origin.state)
    if not cfg.num_classes:                                     # the backbone asked for: torchvision keeps a head
        return Unbuilt("torchvision_headless")
    if tuple(state["encoder.pos_embedding"].shape[1:2]) != (1 + cfg.grid[0] * cfg.grid[1],):
        return Unbuilt("resized", {"library": "torchvision"})
    missing = _materialise(model, state)
    if missing:
        return Unbuilt("other_tensors", {"library": "torchvision", "missing": missing})
    return partial(_run_torchvision, model.eval())


def _run_torchvision(model, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """torchvision's logits and the weights of its last block's nn.MultiheadAttention on the input it received."""
    block = model.encoder.layers[-1]
    maps = []

    def weights(module, args, out):
        maps.append(block.self_attention(out, out, out, need_weights=True, average_attn_weights=False)[1])
    hook = block.ln_1.register_forward_hook(weights)
    try:
        with torch.no_grad():
            out = model(x)
    finally:
        hook.remove()
    return out, maps[0]
