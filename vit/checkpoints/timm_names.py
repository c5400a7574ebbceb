"""What a timm architecture's name says that its tensors do not (a timm Hub folder's config.json and open_clip's
timm image towers name the architecture): the activation of a plain MLP, EVA-02's rotary grid and how a NaFlexViT
resizes its position table. timm is not
imported: the facts are written out, and tests/checkpoints/test_assumptions.py checks them against every ViT
architecture timm defines, as it checks the head count ``infer.default_num_heads`` gives from the tensors.
"""
from __future__ import annotations

from .families import architecture_fields
from .infer import EVA02_ROPE_REF_GRID

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
