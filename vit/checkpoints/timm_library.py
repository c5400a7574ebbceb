"""A timm architecture built as timm builds it: where a file or its folder names one (a timm Hub folder's config.json
``architecture`` and ``model_args``, ``"architecture"`` in a sidecar JSON, open_clip's ``timm_model_name``) and timm
is installed, timm makes the model (on the meta device: no weights are made, it takes milliseconds) and the
configuration is read off the modules it made: pooling, norm eps and placement, the final norm, the rotation,
heads, registers and which of them carry a position, the probe's own heads. Nothing is looked up in a table kept by
hand, so nothing drifts from the library; ``timm_names`` is that table, used when timm is not installed (and
``assumptions`` then says so).

``TimmArchitecture.build`` makes the same model again for the load's check against timm (``vit.checkpoints.verify``).
A timm feature this explorer does not build (q/k norms, grouped key-value heads, attention pooling other than one
probe, ...) is refused with a sentence that names it.
"""
from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass, field

import torch
import torch.nn as nn

from ..readout import from_timm

READ_BY_TIMM = ("VisionTransformer", "VisionTransformerDistilled", "Eva")   # the classes read here


def timm_version() -> str | None:
    """timm's version, or None when it is not installed (nothing is imported until it is asked for)."""
    if importlib.util.find_spec("timm") is None:
        return None
    import timm
    return timm.__version__


@dataclass(frozen=True)
class TimmArchitecture:
    name: str                    # timm's architecture (without a .tag)
    kwargs: dict                 # what timm.create_model is given beside it: model_args, the file's depth and classes
    fields: dict = field(default_factory=dict)   # ViTConfig fields read off timm's modules
    version: str = ""            # timm's version

    def build(self, device: str | torch.device = "meta", **overrides) -> nn.Module:
        """timm's model of this architecture (``overrides``: more create_model arguments, e.g. img_size), on
        ``device``; on "meta" it holds no numbers (``materialise`` gives it the checkpoint's)."""
        import timm
        return timm.create_model(self.name, pretrained=False, device=device, **{**self.kwargs, **overrides}).eval()


def architecture(name: str, model_args: dict | None, state: dict, prefix: str = "") -> TimmArchitecture | None:
    """The timm architecture ``name`` (a ``.tag`` is dropped) as timm builds it with ``model_args`` (what a Hub
    folder's config.json records) and what the file's tensors (``state``, timm's keys after ``prefix``) fix beyond
    them: the number of blocks, of classes, of registers, and whether it has a CLS token. None when timm is not
    installed or does not know the name; ValueError for a model this explorer does not build, or one whose width is
    not the file's."""
    version = timm_version()
    if version is None:
        return None
    import timm
    arch = name.split(".")[0]
    if not timm.is_model(arch):
        return None
    kwargs = {k: v for k, v in (model_args or {}).items() if k not in ("pretrained_cfg", "pretrained_cfg_overlay")}
    layout = _file_layout(state, prefix)
    kwargs.setdefault("num_classes", layout["num_classes"])
    model = TimmArchitecture(arch, kwargs).build()
    fit = {}                                   # what the file has other than timm's default (a file saved shrunk)
    if layout["depth"] and len(model.blocks) != layout["depth"]:
        fit["depth"] = layout["depth"]
    if hasattr(model, "cls_token") and (model.cls_token is not None) != layout["class_token"]:
        fit["class_token"] = layout["class_token"]
        if not layout["class_token"] and getattr(model, "global_pool", "") == "token":
            fit["global_pool"] = "avg"
    registers = int(model.reg_token.shape[1]) if getattr(model, "reg_token", None) is not None else 0
    if hasattr(model, "reg_token") and registers != layout["registers"]:
        fit["num_reg_tokens" if type(model).__name__ == "Eva" else "reg_tokens"] = layout["registers"]
    if fit:
        kwargs = {**kwargs, **{k: v for k, v in fit.items() if k not in kwargs}}
        model = TimmArchitecture(arch, kwargs).build()
    if layout["width"] and getattr(model, "embed_dim", layout["width"]) != layout["width"]:
        raise ValueError(f"The file names timm's {arch}, whose tokens are {model.embed_dim} wide, but its tensors are "
                         f"{layout['width']} wide: it is not that architecture. Name the one it was saved from, "
                         f"with the arguments it was made with (\"model_args\" in a sidecar JSON beside the file, as a "
                         f"timm Hub folder's config.json records them).")
    fields = config_of(model)
    if "img_size" not in kwargs and layout["pos_embed"]:   # a file's position table says its own grid
        fields.pop("img_size", None)
    return TimmArchitecture(arch, kwargs, fields, version)


def _file_layout(state: dict, prefix: str) -> dict:
    """What a timm-like file's tensors fix about the model (timm's, Meta's DINOv3 or NaFlexViT's key names after
    ``prefix``): blocks, classes, registers, CLS token, width, a position table."""
    keys = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
    registers = next((v for k, v in keys.items() if k in ("reg_token", "storage_tokens", "embeds.reg_token")), None)
    patch = next((v for k, v in keys.items() if k in ("patch_embed.proj.weight", "embeds.proj.weight")), None)
    head = keys.get("head.weight")
    return dict(depth=1 + max((int(m[1]) for k in keys if (m := re.match(r"blocks\.(\d+)\.", k))), default=-1),
                num_classes=int(head.shape[0]) if head is not None else 0,
                registers=int(registers.shape[1]) if registers is not None else 0,
                class_token=any(k in keys for k in ("cls_token", "embeds.cls_token")),
                width=int(patch.shape[0]) if patch is not None else 0,
                pos_embed=any(k in keys for k in ("pos_embed", "embeds.pos_embed")))


def config_of(model: nn.Module) -> dict:
    """ViTConfig fields read off a timm VisionTransformer or Eva; {} for another class (its tensors and the table
    ``timm_names`` say what they can); ValueError for a feature this explorer does not build."""
    kind = type(model).__name__
    if kind not in READ_BY_TIMM:
        return {}
    block = model.blocks[0]
    if type(block).__name__ not in ("Block", "ResPostBlock", "EvaBlock", "EvaBlockPostNorm"):
        return {}                 # parallel blocks: their tensors (and the table) say how they are folded
    attn = block.attn
    _refuse_unbuilt(model, block, attn)
    norm = next(m for m in (getattr(block, "norm1", None), model.norm, model.fc_norm) if _is_norm(m))
    fields = dict(
        num_heads=int(attn.num_heads), layer_norm_eps=float(norm.eps),
        norm_kind="rmsnorm" if "Rms" in type(norm).__name__ else "layernorm",
        class_token=model.cls_token is not None,
        num_reg_tokens=int(model.reg_token.shape[1]) if model.reg_token is not None else 0,
        pos_embed_kind="learned" if model.pos_embed is not None else "none",
        pos_embed_prefix=not model.no_embed_class,
        pos_embed_registers=not model.no_embed_class and model.reg_token is not None,
        norm_pre=_is_norm(model.norm_pre), fc_norm=_is_norm(model.fc_norm),
        final_norm=_is_norm(model.norm) or _is_norm(model.fc_norm),
        img_size=tuple(int(g) * int(p) for g, p in zip(model.patch_embed.grid_size, model.patch_embed.patch_size)),
        patch_norm=_is_norm(getattr(model.patch_embed, "norm", None)),
        attn_norm=_is_norm(getattr(attn, "norm", None)),
        res_post_norm=type(block).__name__ in ("ResPostBlock", "EvaBlockPostNorm"),
        layer_scale=_layer_scale(block),
        readout=_readout(model),
        **_activation(block.mlp),
    )
    if model.attn_pool is not None:
        fields.update(pool_heads=int(model.attn_pool.num_heads),
                      pool_mlp_dim=int(model.attn_pool.mlp.fc1.out_features))
    fields.update(_rotation(model) if kind == "Eva" else dict(rope=False))
    return fields


def _is_norm(module) -> bool:
    return module is not None and not isinstance(module, nn.Identity)


def _layer_scale(block) -> bool:
    """timm's LayerScale (ls1) or EVA's gamma_1."""
    return _is_norm(getattr(block, "ls1", None)) or getattr(block, "gamma_1", None) is not None


def _readout(model) -> str:
    """timm's pooling as a readout: a distilled DeiT averages its two heads; Eva's probe attends over every token,
    VisionTransformer's over the patches unless pool_include_prefix."""
    if type(model).__name__ == "VisionTransformerDistilled":
        return "distilled"
    include = getattr(model, "pool_include_prefix", type(model).__name__ == "Eva" and model.attn_pool is not None)
    pool = model.global_pool
    if pool == "map" and type(model).__name__ == "Eva":
        include = True
    try:
        return from_timm(pool, bool(include))
    except ValueError as e:
        raise ValueError(f"{e} (timm's {type(model).__name__} with global_pool={pool!r})") from None


def _activation(mlp) -> dict:
    """The MLP: SwiGLU (its LayerNorm: EVA-02's scale_mlp) or a plain MLP's activation."""
    kind = type(mlp).__name__
    mlp_norm = _is_norm(getattr(mlp, "norm", None))
    if kind in ("SwiGLU", "GluMlp", "SwiGLUPacked"):
        if not isinstance(mlp.act, nn.SiLU):
            raise ValueError(f"timm's gated MLP with {type(mlp.act).__name__} is not one this explorer builds! "
                             f"Expected SiLU (SwiGLU).")
        return dict(mlp_act="swiglu", mlp_norm=mlp_norm)
    act = mlp.act
    if type(act).__name__ == "GELU":
        return dict(mlp_act="gelu_tanh" if getattr(act, "approximate", "none") == "tanh" else "gelu",
                    mlp_norm=mlp_norm)
    if type(act).__name__ in ("GELUTanh", "QuickGELU"):
        return dict(mlp_act={"GELUTanh": "gelu_tanh", "QuickGELU": "quick_gelu"}[type(act).__name__],
                    mlp_norm=mlp_norm)
    raise ValueError(f"timm's MLP activation {type(act).__name__} is not one this explorer builds! Expected GELU, "
                     f"tanh GELU, QuickGELU or SwiGLU.")


def _rotation(model) -> dict:
    """Eva's rotary embedding as ViTConfig's rope_* fields (``vit.positions``)."""
    rope = model.rope
    if rope is None:
        return dict(rope=False)
    kind = type(rope).__name__
    axes = rope.grid_indexing
    if kind == "RotaryEmbeddingMixed":
        return dict(rope=True, rope_mixed=True, rope_axes=axes, rope_coords="index", rope_half=False,
                    rope_ref_grid=None, rope_offset=0.0)
    if kind == "RotaryEmbeddingDinoV3" and rope.normalize_coords == "separate":
        return dict(rope=True, rope_mixed=False, rope_coords="centered", rope_axes=axes, rope_half=rope.rotate_half,
                    rope_temperature=float(rope.temperature), rope_ref_grid=None, rope_offset=float(rope.grid_offset))
    if kind == "RotaryEmbeddingCat" and not rope.in_pixels and rope.grid_type == "index":
        ref = tuple(int(s) for s in rope.ref_feat_shape) if rope.ref_feat_shape is not None else None
        return dict(rope=True, rope_mixed=False, rope_coords="index", rope_axes=axes, rope_half=rope.rotate_half,
                    rope_temperature=float(rope.temperature), rope_ref_grid=ref, rope_offset=float(rope.grid_offset))
    raise ValueError(f"timm's rotary embedding {kind} (in pixels, on another grid, or over time as well) is not one "
                     f"this explorer builds! Expected the index grid of EVA-02, PE and the RoPE ViTs, DINOv3's, or "
                     f"RoPE-Mixed.")


def _refuse_unbuilt(model, block, attn) -> None:
    """ValueError for what this explorer's ViT does not have."""
    what = None
    if type(model.patch_embed).__name__ != "PatchEmbed":
        what = f"embeds its patches with a {type(model.patch_embed).__name__} (a convolutional stem)"
    elif type(attn).__name__ not in ("Attention", "EvaAttention", "AttentionRope"):
        what = f"attends with {type(attn).__name__}"
    elif _is_norm(getattr(attn, "q_norm", None)) or _is_norm(getattr(attn, "k_norm", None)):
        what = "normalises queries and keys (qk_norm)"
    elif getattr(attn, "num_kv_heads", attn.num_heads) != attn.num_heads:
        what = "shares key-value heads between query heads (grouped-query attention)"
    elif model.attn_pool is not None and (type(model.attn_pool).__name__ != "AttentionPoolLatent"
                                          or model.attn_pool.latent_len != 1 or model.attn_pool.pos_embed is not None
                                          or model.attn_pool.pool != "token"):
        what = "pools by attention with more than one probe or its own positions"
    elif getattr(model, "patch_drop", None) is not None and not isinstance(model.patch_drop, nn.Identity):
        what = "drops patches at inference"
    if what:
        raise ValueError(f"timm's {type(model).__name__} {what}, which this explorer's ViT does not build: it cannot "
                         f"open it as the model it is.")
