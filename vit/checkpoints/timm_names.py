"""What a timm architecture's name says that its tensors do not (a timm Hub folder's config.json, a sidecar's
"architecture" and open_clip's timm image towers name the architecture).

``named`` asks timm itself when it is installed (``timm_library``: the model timm builds, read off its modules).
Without timm, the facts written out here stand in: the activation of a plain MLP, EVA-02's rotary grid, the rotary
families (``families``), how a NaFlexViT resizes its position table, and the families whose tensors leave out their
norm's eps, their readout or their rotation (Perception Encoder, BEiT-3, InternViT, the *_rpn ViTs); the loader then
says that it read them from this table. tests/checkpoints/test_assumptions.py checks the table against every ViT
architecture timm defines, as it checks the head count ``infer.default_num_heads`` gives from the tensors.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..readout import TIMM_POOLS, from_timm
from .assumptions import Assumption
from .families import architecture_fields
from .infer import EVA02_ROPE_REF_GRID
from . import timm_library
from .timm_library import TimmArchitecture

# timm's ViTs whose MLP uses tanh-approximated GELU: SigLIP 2's B/32, L/16 at 512, So400m/16 and g-opt towers.
TANH_GELU_ARCHITECTURES = ("vit_base_patch32_siglip_", "vit_large_patch16_siglip_512",
                           "vit_large_patch16_siglip_gap_512", "vit_so400m_patch16_siglip_",
                           "vit_giantopt_patch16_siglip_")


def plain_mlp_activation(name: str) -> str | None:
    """The activation of a timm ViT's plain (not gated) MLP from its architecture name (with or without a ``.tag``):
    QuickGELU for ``*_quickgelu_*``, tanh GELU for ``TANH_GELU_ARCHITECTURES``, else exact GELU; None for a name
    outside timm's ViTs (``vit_*``, ``deit*``). A gated MLP (SwiGLU) shows in the tensors and wins."""
    arch = name.split(".")[0]
    if not arch.startswith(("vit_", "deit")):
        return None
    if "quickgelu" in arch:
        return "quick_gelu"
    return "gelu_tanh" if arch.startswith(TANH_GELU_ARCHITECTURES) else "gelu"


def architecture_config(name: str) -> dict:
    """ViTConfig fields a timm architecture's name fixes beside the activation: EVA-02's rotary reference grid, the
    rotation of DINOv3 and of the RoPE ViTs (or that another timm ViT has none, ``families.architecture_fields``)."""
    eva02 = {"rope_ref_grid": EVA02_ROPE_REF_GRID} if name.split(".")[0].startswith("eva02_") else {}
    return {**eva02, **architecture_fields(name)}


# Families whose tensors do not show what timm builds them with (each architecture's model_args in timm): the
# Perception Encoder towers (a rotation counted from 1 in (x, y) order on their native grid, eps 1e-5; core: a probe
# of 8 heads over every token; spatial and lang: no final norm, the mean of the patches), BEiT-3 (eps 1e-5),
# InternViT-300M (no final norm), the *_rpn ViTs (norms after each branch).
TABLE = (
    (r"vit_pe_core_\w+", dict(rope=True, rope_coords="index", rope_axes="xy", rope_half=False, rope_mixed=False,
                              rope_offset=1.0, rope_temperature=10000.0, layer_norm_eps=1e-5, readout="map_all",
                              pool_heads=8)),
    (r"vit_pe_(spatial|lang)_\w+", dict(rope=True, rope_coords="index", rope_axes="xy", rope_half=False,
                                        rope_mixed=False, rope_offset=1.0, rope_temperature=10000.0,
                                        layer_norm_eps=1e-5, readout="mean", final_norm=False)),
    (r"beit3_\w+", dict(layer_norm_eps=1e-5)),
    (r"vit_intern300m_\w+", dict(final_norm=False)),
    (r"vit_\w+_rpn_\w+", dict(res_post_norm=True)),
)
HEAD_PROJECTS = r"vit_pe_core_\w+"   # PE core's timm head: the projection into the image–text space
PE_GIANT_OFFSET = ("vit_pe_core_gigantic", "vit_pe_lang_gigantic", "vit_pe_spatial_gigantic")   # counted from 0


def table_fields(name: str) -> dict:
    """The fields ``TABLE`` gives a timm architecture (PE's rotary grid: its native one, set by the loader)."""
    arch = name.split(".")[0]
    for pattern, fields in TABLE:
        if re.fullmatch(pattern, arch):
            return {**fields, **({"rope_offset": 0.0} if arch.startswith(PE_GIANT_OFFSET) else {})}
    return {}


@dataclass(frozen=True)
class Named:
    """What a timm architecture's name (and model_args) says: ViTConfig fields, a plain MLP's activation, what was
    taken from the table rather than from timm, and timm's own model of it (None without timm)."""
    fields: dict
    activation: str | None = None
    said: tuple = ()
    timm: TimmArchitecture | None = None

    @property
    def head_projects(self) -> bool:
        """timm's head is this architecture's projection into an image–text space (PE core), not a classifier."""
        return self.timm is not None and re.fullmatch(HEAD_PROJECTS, self.timm.name) is not None


def named(name: str, model_args: dict | None, state: dict, prefix: str = "") -> Named:
    """A timm architecture ``name`` with the ``model_args`` it was made with, for the tensors ``state`` (timm's keys
    after ``prefix``): timm's own configuration when timm is installed (``timm_library.architecture``), else this
    module's table, said to be."""
    model_args = model_args or {}
    found = timm_library.architecture(name, model_args, state, prefix)
    if found is not None and found.fields:
        return Named(dict(found.fields), None, (), found)
    fields = {**architecture_config(name), **naflex_architecture(name), **table_fields(name)}
    table = state.get(prefix + "pos_embed")
    if fields.get("rope_offset") and table is not None:     # PE: the rotation's grid is the table's, its native one
        side = math.isqrt(int(table.shape[1]) - int(prefix + "cls_token" in state))
        fields["rope_ref_grid"] = (side, side)
    if isinstance(model_args.get("num_heads"), int):  # push_to_hub(model_args=...) writes what it was made with
        fields["num_heads"] = model_args["num_heads"]
    if model_args.get("global_pool") in TIMM_POOLS:
        fields["readout"] = from_timm(model_args["global_pool"], bool(model_args.get("pool_include_prefix")))
    said = () if found is not None or timm_library.timm_version() is not None else \
        (Assumption("timm_table", name=name.split(".")[0]),)
    return Named(fields, plain_mlp_activation(name), said, found)


def naflex_architecture(name: str) -> dict:
    """How a timm NaFlexViT architecture (``naflexvit_*``, with or without a ``.tag``) resizes its position table,
    from its name (NaFlexVitCfg of each): bilinear for the SigLIP and C-RADIO towers, else bicubic; aspect-preserving
    for the ``_par*`` models and C-RADIO; the SigLIP towers' tanh GELU. Nothing for other names."""
    arch = name.split(".")[0]
    if not arch.startswith("naflexvit_"):
        return {}
    facts = dict(pos_embed_interp="bilinear" if ("_siglip" in arch or "_radio" in arch) else "bicubic",
                 pos_embed_ar_preserving="_par" in arch or "_radio" in arch)
    return {**facts, "mlp_act": "gelu_tanh"} if "_siglip" in arch else facts
