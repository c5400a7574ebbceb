"""The rotary families, whose tensors do not say how they place their patches: DINOv3 (timm, Meta's own files,
transformers' dinov3_vit) and timm's RoPE ViTs (Naver's RoPE-ViT with axial or mixed frequencies, with and without
absolute position embeddings; timm's ``vit_*_rope_reg*_gap_256``).

A rotary checkpoint holds no position tensor (RoPE-Mixed's learnt frequencies aside): its coordinates, the
temperature of its frequencies and which axis turns which channels are its family's convention (``FAMILIES``,
``vit.positions``). A file is identified from what distinguishes it, or refused with a message that names the
missing fact and how to give it (a timm architecture name: a timm Hub folder's config.json, or ``"architecture"`` in
a sidecar JSON):

    Meta's layout (storage_tokens, rope_embed.periods)            DINOv3; its periods checked, its heads read off them
    transformers' dinov3_vit folder                               DINOv3, settings from config.json
    timm: rope.freqs                                              RoPE-Mixed (+ absolute table: RoPE-Mixed + APE)
    timm, no position table: CLS + registers                      DINOv3
    timm, no position table: registers, no CLS                    timm's rope_reg*_gap (EVA-02's rotation)
    timm, no position table: CLS, EVA-style LayerScale (gamma_1) and a key bias         RoPE-ViT axial
    timm, no position table, EVA-style LayerScale otherwise       refused: the rotation is not in the file
    timm, no position table, timm's plain ViT layout              refused by ``infer_config``, saying what to give
    timm: EVA-style LayerScale, CLS, a table of the patches only   refused: DeiT III (no rotation) and RoPE-ViT axial
                                                                   + APE have exactly these tensors

What was identified rather than read is said (``Identified.said``).
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

import torch

from ..readout import from_timm, kind as readout_kind
from ..preprocess import IMAGENET_MEAN, IMAGENET_STD, INCEPTION_MEAN, INCEPTION_STD, Preprocess
from .assumptions import Assumption, described
from .infer import TIMM_SIZES
from .pipelines import timm_preprocess

# timm's pretrained_cfg of each family (timm 1.0, eva.py), and Meta's make_transform for its own DINOv3 files
_TIMM_DINOV3 = dict(input_size=(3, 256, 256), crop_pct=1.0, interpolation="bicubic", mean=IMAGENET_MEAN,
                    std=IMAGENET_STD)
_TIMM_ROPE_VIT = dict(input_size=(3, 224, 224), crop_pct=0.9, interpolation="bicubic", mean=IMAGENET_MEAN,
                      std=IMAGENET_STD)
_TIMM_ROPE_GAP = dict(input_size=(3, 256, 256), crop_pct=0.95, interpolation="bicubic", mean=INCEPTION_MEAN,
                      std=INCEPTION_STD)
META_DINOV3_SIZE = 256   # facebookresearch/dinov3's make_transform(resize_size=256): squash, bilinear, antialiased
SAT493M_MEAN, SAT493M_STD = (0.430, 0.411, 0.296), (0.213, 0.156, 0.143)   # its satellite models' own


def meta_dinov3_preprocess(mean=IMAGENET_MEAN, std=IMAGENET_STD, size: int = META_DINOV3_SIZE) -> Preprocess:
    """facebookresearch/dinov3's ``make_transform``: the photo squashed to size × size (bilinear), ImageNet's mean and
    std (the satellite models' own for SAT-493M)."""
    return Preprocess(resize_mode="squash", resize=(size, size), crop=(size, size), interpolation="bilinear",
                      mean=tuple(mean), std=tuple(std))


@dataclass(frozen=True)
class Family:
    name: str                     # as messages say it
    config: dict                  # ViTConfig fields of its rotation and norms
    preprocess: Preprocess        # its timm pretrained_cfg's (Meta's files: ``meta_dinov3_preprocess``)
    heads: dict = field(default_factory=dict)   # heads by width where 64 dims per head is wrong
    timm_pool: str | None = None  # timm's default global_pool where it is not the tensors' (DINOv3: 'avg'; its own
                                  # files and transformers' read the CLS token)
    projects: bool = False        # timm's head is the projection into an image–text space (PE core), not classes


DINOV3 = Family("DINOv3", dict(rope=True, rope_coords="centered", rope_temperature=100.0, rope_half=True,
                               rope_axes="ij", rope_ref_grid=None, rope_mixed=False, layer_norm_eps=1e-5),
                timm_preprocess(_TIMM_DINOV3), heads={192: 3, 1280: 20, 4096: 32},   # ViT-H+ 20, 7B 32 of 128
                timm_pool="avg")
ROPE_AXIAL = Family("RoPE-ViT (axial)", dict(rope=True, rope_temperature=100.0, rope_axes="xy", rope_coords="index",
                                            rope_half=False, rope_mixed=False, rope_ref_grid=None),
                    timm_preprocess(_TIMM_ROPE_VIT))
ROPE_MIXED = Family("RoPE-ViT (mixed)", dict(rope=True, rope_mixed=True, rope_axes="xy", rope_coords="index",
                                            rope_half=False, rope_ref_grid=None),
                    timm_preprocess(_TIMM_ROPE_VIT))
ROPE_GAP = Family("timm RoPE ViT (rope_reg_gap)", dict(rope=True, rope_ref_grid=(16, 16), rope_temperature=10000.0,
                                                      rope_axes="ij", rope_coords="index", rope_half=False,
                                                      rope_mixed=False),
                  timm_preprocess(_TIMM_ROPE_GAP))
# Perception Encoder (timm's vit_pe_*, eva.py): a rotation counted from 1 in (x, y) order, scaled to the native grid,
# beside a learned table; core: a probe of 8 heads over every token, its head a projection; spatial and lang: no norm
# after the blocks, the mean of the patches. Their input size is their table's (set per file).
_PE_ROTATION = dict(rope=True, rope_coords="index", rope_axes="xy", rope_half=False, rope_mixed=False, rope_offset=1.0,
                    rope_temperature=10000.0, layer_norm_eps=1e-5)
_TIMM_PE = dict(crop_pct=1.0, interpolation="bicubic", mean=INCEPTION_MEAN, std=INCEPTION_STD)
PE_CORE = Family("Perception Encoder (core)", dict(_PE_ROTATION, readout="map_all", pool_heads=8),
                 timm_preprocess(dict(_TIMM_PE, input_size=(3, 224, 224))), heads={1536: 16}, projects=True)
PE_SPATIAL = Family("Perception Encoder (spatial, lang)", dict(_PE_ROTATION, readout="mean", final_norm=False),
                    timm_preprocess(dict(_TIMM_PE, input_size=(3, 448, 448))), heads={1536: 16})
FAMILIES = {f.name: f for f in (DINOV3, ROPE_AXIAL, ROPE_MIXED, ROPE_GAP)}   # the ones whose tensors hold no table

# timm architecture names of the rotary families (with or without a .tag)
TIMM_ARCHITECTURES = (
    (r"vit_\w+_patch16_dinov3(_qkvb)?", DINOV3),
    (r"vit_\w+_patch16_rope_mixed(_ape)?_224", ROPE_MIXED),
    (r"vit_\w+_patch16_rope(_ape)?_224", ROPE_AXIAL),
    (r"vit_\w+_patch16_rope_reg\d_gap_256", ROPE_GAP),
)
HOW_TO_NAME = ('name its timm architecture: a sidecar JSON beside the file (the file\'s name with .json) holding '
               '{"architecture": "%s"}, or open it by its Hugging Face Hub name or folder, whose config.json names it')


def architecture_fields(name: str) -> dict:
    """ViTConfig fields a timm architecture name fixes about positions: a rotary family's rotation (and its readout
    where timm's default is not what the tensors show: DINOv3's mean of the patches), or ``{"rope": False}`` for
    timm's other ViTs and DeiTs (EVA-02's rotation shows in its tensors: nothing)."""
    arch = name.split(".")[0]
    for pattern, family in TIMM_ARCHITECTURES:
        if re.fullmatch(pattern, arch):
            return {**family.config, **({"readout": from_timm(family.timm_pool)} if family.timm_pool else {})}
    if arch.startswith(("vit_", "deit")):
        return {"rope": False}
    return {}


@dataclass(frozen=True)
class Identified:
    family: Family | None                  # None: given settings, no family of ours
    read: dict                             # ViTConfig fields the tensors show (heads from Meta's periods, rope.freqs)
    convention: dict                       # the family's fields, given ones never overwritten
    preprocess: Preprocess | None          # the family's own, when no metadata gives one
    said: tuple[Assumption, ...] = ()      # what was identified rather than read, one sentence each

    @property
    def head_projects(self) -> bool:
        """timm's head is the projection into an image–text space (``Family.projects``)."""
        return self.family is not None and self.family.projects


def identify(state: dict, fmt: str, given: dict, source: str = "checkpoint",
             given_preprocess: Preprocess | None = None) -> Identified | None:
    """The rotary family of a checkpoint (its tensors under the format's own key names, before any renaming) and
    the config fields it implies; ``given``: the fields its metadata or the caller states (they win),
    ``given_preprocess``: the preprocessing its metadata gives (None: the family's is taken). None for a
    checkpoint of no rotary family; ValueError when the tensors fit a rotary family and another model alike, or
    hold no position information and say nothing of their rotation."""
    keys = {re.sub(r"^(module\.)?(backbone\.)?", "", k) for k in state}
    if given.get("rope") is False or given.get("pos_embed_kind") == "none" and not given.get("rope"):
        return None                                     # no rotation: said by the caller or its metadata
    if fmt == "dinov3":
        return _with(DINOV3, state, given, _meta_dinov3_heads(state, keys, source), fmt, given_preprocess, said=False)
    if fmt == "huggingface-dinov3":
        return _with(DINOV3, state, given, {}, fmt, given_preprocess, said=False)
    if given.get("rope"):                               # the settings are given (a sidecar, a Hub folder's name)
        family = next((f for f in FAMILIES.values() if all(given.get(k, v) == v for k, v in f.config.items()
                                                            if k.startswith("rope"))
                       and all(k in given for k in ("rope_coords", "rope_axes", "rope_half"))), None)
        return _with(family, state, given, {}, fmt, given_preprocess, said=False) if family else None
    if fmt != "timm" or "patch_embed.proj.weight" not in keys:   # not a ViT in timm's layout: its filter says so
        return None
    if "rope.freqs" in keys:
        freqs = state[next(k for k in state if k.endswith("rope.freqs"))]
        return _with(ROPE_MIXED, state, given, {"num_heads": int(freqs.shape[2])}, fmt, given_preprocess)
    positioned = "pos_embed" in keys or any(k.endswith("relative_position_bias_table") or ".rel_pos.mlp." in k
                                            or k.startswith("shared_rel_pos.") for k in keys)   # relpos: its MLP
    cls, registers = "cls_token" in keys, "reg_token" in keys
    eva_scale = any(k.endswith(".gamma_1") for k in keys)
    key_bias = any(re.fullmatch(r"blocks\.\d+\.attn\.qkv\.bias", k) for k in keys)
    if not positioned:
        if cls and registers and not key_bias:
            return _with(DINOV3, state, given, {}, fmt, given_preprocess)
        if registers and not cls:
            return _with(ROPE_GAP, state, given, {}, fmt, given_preprocess)
        if cls and not registers and eva_scale and key_bias:
            return _with(ROPE_AXIAL, state, given, {}, fmt, given_preprocess)
        if not eva_scale:                   # no family's signature at all: infer_config refuses it, saying what to give
            return None
        size = timm_size_name(state)
        raise ValueError(f"{source} holds no position information (no position table, no relative position bias): "
                         f"a rotary ViT places its patches by a rotation whose settings are not in the file. To open "
                         f"it, " + HOW_TO_NAME % f"vit_{size}_rope_224" + f" (timm's name for a RoPE-ViT of its width "
                         f"and patch; vit_{size}_dinov3 for a DINOv3). Only for a ViT trained without any position "
                         f"information, pass img_size=(H, W) and pos_embed_kind='none', e.g. in a sidecar JSON.")
    table = state.get(next((k for k in state if re.sub(r"^(module\.)?", "", k) == "pos_embed"), ""))
    pe = _perception_encoder(keys, table, state)
    if pe is not None:
        return _with(pe, state, given, {}, fmt, given_preprocess)
    patches_only = table is not None and _is_square(table.shape[1])
    swiglu = any(".mlp.fc1_g." in k for k in keys)
    if eva_scale and cls and patches_only and key_bias and not swiglu:
        size = timm_size_name(state)
        raise ValueError(f"{source} has the tensors of DeiT III (facebookresearch/deit, no rotation) and of timm's "
                         f"RoPE-ViT with absolute positions (vit_*_patch16_rope_ape_224, a rotation the file does not "
                         f"show) alike: which it is is not in the file. To open it, "
                         + HOW_TO_NAME % f"deit3_{size}_224\" or \"vit_{size}_rope_ape_224" + " (timm's names of "
                         "both at its width and patch).")
    return None


def _perception_encoder(keys: set, table, state: dict) -> Family | None:
    """A Perception Encoder tower in timm's layout (a norm before the blocks, no patch bias, a learned table): with a
    probe, the core; with no norm after the blocks, spatial or lang; its rotation's grid and input size the
    table's."""
    if "norm_pre.weight" not in keys or "patch_embed.proj.bias" in keys or table is None:
        return None
    if "attn_pool.latent" in keys:
        family = PE_CORE
    elif "norm.weight" not in keys and "fc_norm.weight" not in keys:
        family = PE_SPATIAL
    else:
        return None                                     # timm's CLIP towers: norm_pre and no patch bias, no rotation
    side = int(round((int(table.shape[1]) - int("cls_token" in keys)) ** 0.5))
    patch = int(state[next(k for k in state if k.endswith("patch_embed.proj.weight"))].shape[-1])
    size = side * patch
    preprocess = timm_preprocess(dict(_TIMM_PE, input_size=(3, size, size)))
    return dataclasses.replace(family, config={**family.config, "rope_ref_grid": (side, side)}, preprocess=preprocess)


def timm_size_name(state: dict) -> str:
    """How timm names a ViT of this file's width and patch ("small_patch16"), for advice that names an architecture
    the file can be: read off its patch embedding."""
    patch = state[next(k for k in state if k.endswith(("patch_embed.proj.weight", "patch_embeddings.weight")))]
    width, side = int(patch.shape[0]), int(patch.shape[-1])
    return f"{TIMM_SIZES.get(width, 'base')}_patch{side}"


def _is_square(n: int) -> bool:
    return int(n ** 0.5) ** 2 == n


def _meta_dinov3_heads(state: dict, keys: set, source: str) -> dict:
    """Meta's files keep the RoPE periods (Dh/4 of them): the heads are the width over Dh. The periods must be
    DINOv3's base-100 schedule (stored in bfloat16: equal to 2⁻⁸), the one timm and transformers recompute."""
    name = next((k for k in state if k.endswith("rope_embed.periods")), None)
    if name is None:
        return {}
    periods = state[name].float()
    patch = state[next(k for k in state if k.endswith("patch_embed.proj.weight"))]
    head_dim, width = 4 * periods.numel(), int(patch.shape[0])
    want = 100.0 ** (2.0 * torch.arange(periods.numel(), dtype=torch.float32) / (head_dim // 2))
    if width % head_dim or not torch.allclose(periods, want, rtol=2 ** -8, atol=0):
        raise ValueError(f"{source}: its RoPE periods {[round(float(p), 4) for p in periods[:4]]}… are not DINOv3's "
                         f"base-100 schedule for {head_dim}-wide heads ({[round(float(p), 4) for p in want[:4]]}…), "
                         f"the rotation timm and transformers compute for DINOv3: this file's rotation is not one "
                         f"this explorer reproduces.")
    return {"num_heads": width // head_dim}


def _with(family: Family | None, state: dict, given: dict, read: dict, fmt: str,
          given_preprocess: Preprocess | None, said: bool = True) -> Identified:
    """The family's fields under what is given; heads from the family's table (or 64 dims) when neither given nor
    read (``LoadedModel.assumptions`` then says so, as for any head count); the family's preprocessing, said to be
    assumed, for a file that names none."""
    convention = {k: v for k, v in (family.config if family else {}).items() if k not in given}
    if family is not None and "num_heads" not in given and "num_heads" not in read:
        patch = state[next(k for k in state if k.endswith(("patch_embed.proj.weight", "patch_embeddings.weight")))]
        width = int(patch.shape[0])
        convention["num_heads"] = family.heads.get(width, max(width // 64, 1))
    preprocess, source = None, ""
    if family is not None and fmt == "timm" and given_preprocess is None:
        preprocess, source = family.preprocess, "timm"
    if family is DINOV3 and fmt == "dinov3" and given_preprocess is None:
        preprocess, source = meta_dinov3_preprocess(), "facebookresearch/dinov3"
    if (preprocess or given_preprocess) is not None and "img_size" not in given:   # no table to size: its input's
        convention["img_size"] = (preprocess or given_preprocess).crop
    sentences = []
    if said and family is not None:
        sentences.append(Assumption("rotary_family", family=family.name))
    if family is not None and family.timm_pool and fmt == "timm" and "readout" not in given:
        readout = from_timm(family.timm_pool)                  # a file saved by timm pools as timm's model does
        convention["readout"] = readout
        sentences.append(Assumption("readout_timm", description=readout_kind(readout).description, readout=readout,
                                    family=family.name, pool=family.timm_pool))
    if preprocess is not None:     # taken only where no metadata gives one: say where it came from
        sentences.append(Assumption("preprocess", source=source, family=family.name, **described(preprocess)))
    return Identified(family, {k: v for k, v in read.items() if k not in given}, convention, preprocess,
                      tuple(sentences))
