"""A ViTConfig read off a state dict in our key names: widths, depth, patch, tokens and head from tensor shapes.

Only the number of heads is invisible in the shapes (qkv is (3D, D) for any H); it comes from metadata
(a Hugging Face config, a Google kernel, a sidecar JSON) or the paper's variants, else 64 dims per head.
The family features are read off their tensors too (norm_pre, attn_pool, q_bias, a relative-position
table or MLP, SwiGLU's fc1_g, proj, a qkv wider than 3D for folded parallel blocks); what no tensor shows
(QuickGELU, EVA-02's rotary embedding, timm's res-post-norm) follows the family's convention, see
``infer_config``; what only the key layout shows (NaFlex position tables and how they are resized) is read by
``format_facts`` before the keys are renamed.
"""
from __future__ import annotations

import dataclasses
import math
import re

from ..model import ViTConfig
from ..positions import grid_from_relative_positions

# Heads of the published ViTs by width, where 64 dims per head would be wrong: H/14 uses 80 dims per head (1280),
# ViT-g/14 88 (1408), SigLIP's So400m 72 (1152), CLIP's ViT-bigG/14 104 (1664) and ViT-e 112 (1792), DINOv2's ViT-g/14
# 64 of 1536 (24 heads) but SigLIP 2's g-opt, which has no CLS token, 96 (16 heads). tests/checkpoints/
# test_assumptions.py checks the rule against every ViT architecture of timm and every ViT tower of open_clip.
STANDARD_HEADS = {192: 3, 384: 6, 768: 12, 1024: 16, 1152: 16, 1280: 16, 1408: 16, 1536: 24, 1664: 16, 1792: 16}
HEADS_WITHOUT_CLS = {1536: 16}  # SigLIP 2's g-opt towers
HEAD_DIM = 64
EVA02_ROPE_REF_GRID = (16, 16)  # timm's ref_feat_shape of every eva02_* model: the 224/14 grid it was pretrained on
CLIP_LAYER_NORM_EPS = 1e-5      # OpenAI's, open_clip's, timm's and Hugging Face's CLIP towers use torch's default
# timm's relative-position ViTs are 224 pixels, except the two 896-wide "plus" models (their pretrained_cfg input_size).
RELPOS_IMG_SIZES = {(896, 32): 256, (896, 16): 240}  # (width, patch) -> side
RELPOS_IMG_SIZE = 224


def default_num_heads(embed_dim: int, class_token: bool = True, pooled_classifier: bool = False) -> int:
    """The heads a ViT of this width has when nothing says otherwise: the published models' (``STANDARD_HEADS``;
    without a CLS token ``HEADS_WITHOUT_CLS``), else 64 dims per head. ``pooled_classifier``: a classifier on the
    mean of the patches without CLS token, registers or fc_norm, which at width 768 is timm's vit_base_patch16_gap_224
    (16 heads of 48)."""
    if not class_token and embed_dim in HEADS_WITHOUT_CLS:
        return HEADS_WITHOUT_CLS[embed_dim]
    if pooled_classifier and embed_dim == 768:
        return 16
    return STANDARD_HEADS.get(embed_dim) or max(embed_dim // HEAD_DIM, 1)


def infer_config(sd: dict, **overrides) -> ViTConfig:
    """Config for a state dict in our (timm's) key names; ``overrides`` (any ViTConfig field) win.

    ``img_size`` may differ from the checkpoint's own grid; ``checkpoint_grid`` then tells where the
    position embeddings come from so the loader can resample them.
    """
    if "patch_embed.proj.weight" not in sd:
        raise ValueError("Cannot infer a ViT config: no patch embedding (patch_embed.proj.weight) in the checkpoint.")
    D, C, P, P2 = sd["patch_embed.proj.weight"].shape
    if P != P2:
        raise ValueError(f"Only square patches are supported! Got a {P}×{P2} patch embedding.")
    blocks = {int(m[1]) for k in sd if (m := re.match(r"blocks\.(\d+)\.", k))}
    if not blocks:
        raise ValueError("Cannot infer a ViT config: the checkpoint has no transformer blocks (blocks.N.*).")
    class_token, distilled = "cls_token" in sd, "dist_token" in sd
    swiglu = "blocks.0.mlp.fc1_g.weight" in sd
    qv_bias_only = "blocks.0.attn.q_bias" in sd                 # BEiT / EVA-02: no key bias
    fc1 = sd.get("blocks.0.mlp.fc1_g.weight" if swiglu else "blocks.0.mlp.fc1.weight")
    rel_mlp = sd.get("blocks.0.attn.rel_pos.mlp.fc2.weight")    # timm's vit_relpos: (heads, hidden)
    fields = dict(
        patch_size=int(P), in_chans=int(C), embed_dim=int(D), depth=max(blocks) + 1,
        mlp_dim=int(fc1.shape[0]) if fc1 is not None else 4 * int(D),
        qkv_bias="blocks.0.attn.qkv.bias" in sd or qv_bias_only, k_bias=not qv_bias_only,
        class_token=class_token, distilled=distilled,
        num_reg_tokens=int(sd["reg_token"].shape[1]) if "reg_token" in sd else 0,
        layer_scale="blocks.0.ls1.gamma" in sd,
        num_classes=int(sd["head.weight"].shape[0]) if "head.weight" in sd else 0,
        representation_size=int(sd["pre_logits.0.weight"].shape[0]) if "pre_logits.0.weight" in sd else None,
        patch_bias="patch_embed.proj.bias" in sd,
        patch_norm="patch_embed.norm.weight" in sd,                 # AIMv2: a norm on the patch embeddings
        linear_bias="blocks.0.attn.proj.bias" in sd,                # AIMv2: no bias after attention, nor in the MLP
        norm_kind="rmsnorm" if "blocks.0.norm1.weight" in sd and "blocks.0.norm1.bias" not in sd else "layernorm",
        norm_pre="norm_pre.weight" in sd,
        final_norm="norm.weight" in sd or "fc_norm.weight" in sd,   # InternViT, PE spatial / lang: none
        rel_pos_bias="blocks.0.attn.relative_position_bias_table" in sd,
        attn_norm="blocks.0.attn.norm.weight" in sd,
        mlp_norm="blocks.0.mlp.norm.weight" in sd,
        proj_dim=int(sd["proj.weight"].shape[0]) if "proj.weight" in sd else None,
        proj_bias="proj.bias" in sd,
        prefix_norm="cls_norm.weight" in sd,                     # DINOv3's untied norm of CLS and registers
    )
    if rel_mlp is not None and "blocks.0.attn.rel_pos.mlp.fc2.bias" not in sd:
        raise ValueError("timm's relative-position MLP in Swin V2 mode (rel_pos_type 'mlp_swin': a sigmoid bias "
                         "times 16, no fc2 bias) is not supported; timm's vit_relpos_* models use its 'cr' mode.")
    if rel_mlp is not None:  # timm's relpos blocks have LayerScale, its res-post-norm (*_rpn) blocks none
        fields.update(rel_pos_mlp=True, rel_pos_mlp_dim=int(rel_mlp.shape[1]), res_post_norm=not fields["layer_scale"])
    if swiglu:
        fields.update(mlp_act="swiglu")
        if qv_bias_only:  # EVA-02's signature (SwiGLU + q/v biases); its rotary angles are not in the file
            fields.update(rope=True, rope_ref_grid=EVA02_ROPE_REF_GRID)
    if fields["norm_pre"]:  # a CLIP tower
        fields.update(layer_norm_eps=CLIP_LAYER_NORM_EPS)
    fields.update(readout_fields(sd, int(D)))
    if "pos_embed" in sd:
        fields.update(_pos_embed_fields(sd, class_token + distilled, int(P), overrides))
    else:
        fields.update(pos_embed_kind="none", **_grid_without_pos_embed(sd, int(P), overrides))
    table = sd.get("blocks.0.attn.relative_position_bias_table")  # BEiT's table has one column per head
    pooled_classifier = not class_token and fields["num_classes"] > 0 and not fields["num_reg_tokens"] \
        and fields.get("readout") == "mean" and not fields.get("fc_norm")
    fields["num_heads"] = int(table.shape[1]) if table is not None else \
        default_num_heads(int(D), class_token, pooled_classifier)
    if rel_mlp is not None:                                        # the MLP has one output per head
        fields["num_heads"] = int(rel_mlp.shape[0])
    fields.update(_parallel_fields(sd, int(D), fields["num_heads"], overrides))
    known = {f.name for f in dataclasses.fields(ViTConfig)}
    unknown = set(overrides) - known
    if unknown:
        raise ValueError(f"Unknown config fields {sorted(unknown)}! Expected some of {sorted(known)}.")
    return ViTConfig(**{**fields, **overrides})


def readout_fields(sd: dict, D: int) -> dict:
    """The readout the tensors show (``vit.readout``): a MAP probe (attn_pool; its MLP's width), a LayerNorm after
    pooling (fc_norm: the mean of the patches), a head 2·D wide ([CLS, mean of the patches], DINOv2's
    classifiers), a distillation head (DeiT), no CLS token (the mean of the patches); {} where nothing says (a CLS
    token: the model's default readout)."""
    if "attn_pool.latent" in sd:
        fc1 = sd.get("attn_pool.mlp.fc1.weight")
        probe = {} if "attn_pool.q.weight" in sd else {"probe": "aimv2"}      # AIMv2's head: no query projection
        return dict(readout="map", **probe, **({"pool_mlp_dim": int(fc1.shape[0])} if fc1 is not None else {}))
    if "fc_norm.weight" in sd:
        return dict(readout="mean", fc_norm=True)
    head = sd.get("head.weight")
    if head is not None and "pre_logits.0.weight" not in sd and head.shape[1] == 2 * D and "cls_token" in sd:
        return dict(readout="cls_mean")
    if "head_dist.weight" in sd:
        return dict(readout="distilled")
    if "cls_token" not in sd:
        return dict(readout="mean")
    if "dist_token" in sd and head is not None:      # a distillation token without its head: DeiT's CLS classifier
        return dict(readout="cls")
    return {}


def _parallel_fields(sd: dict, D: int, heads: int, overrides: dict) -> dict:
    """Folded parallel blocks (``formats._fold_parallel``): a qkv of 3·P·D rows holds P branches of ``heads`` heads
    of width D/heads each -> head_dim, P·heads heads in all, parallel = P. Nothing for a plain qkv (3D rows)."""
    qkv = sd.get("blocks.0.attn.qkv.weight")
    if qkv is None or qkv.shape[0] == 3 * D:
        return {}
    inner = int(qkv.shape[0]) // 3
    if inner % D:
        raise ValueError(f"The attention's qkv has {qkv.shape[0]} rows, neither 3·D = {3 * D} nor 3·D times a number "
                         f"of parallel branches!")
    branches = inner // D
    per_branch = overrides.get("num_heads", branches * heads) // branches
    return dict(parallel=branches, num_heads=branches * per_branch, head_dim=D // per_branch)


def _grid_without_pos_embed(sd: dict, P: int, overrides: dict) -> dict:
    """img_size of a model without absolute position embeddings: from BEiT's relative-position table, or, for timm's
    relative-position MLP (any grid), the size of timm's models of that width and patch. Without either, the file
    says nothing of its tokens' positions: it opens only when the caller says it has none (``pos_embed_kind="none"``)
    and gives its size, or says how its positions work (the rotary features)."""
    if "blocks.0.attn.rel_pos.mlp.fc1.weight" in sd:
        if "img_size" in overrides:
            return {}
        D = int(sd["patch_embed.proj.weight"].shape[0])
        side = RELPOS_IMG_SIZES.get((D, P), RELPOS_IMG_SIZE)
        return dict(img_size=(side, side))
    table = sd.get("blocks.0.attn.relative_position_bias_table")
    positions_given = overrides.get("pos_embed_kind") == "none" or overrides.get("rope")
    if "img_size" in overrides and (table is not None or positions_given):
        return {}
    if table is None:
        raise ValueError(f"Cannot infer the image size: the checkpoint has neither position embeddings (pos_embed) "
                         "nor a relative position bias table, so where its tokens are is not in the file. A RoPE ViT "
                         "(timm's vit_*_rope_*, DINOv3) rotates them by a rule no tensor holds: open it by its Hugging "
                         "Face Hub name or folder, whose config names its architecture, or name it in a sidecar JSON "
                         f"beside the file: {{\"architecture\": \"vit_{_timm_size(sd, P)}_rope_224\"}} (timm's name "
                         "for a RoPE-ViT of its width and patch). Only for a ViT trained without any position "
                         "information, pass img_size=(H, W) and pos_embed_kind='none', e.g. in a sidecar JSON.")
    gh, gw = grid_from_relative_positions(int(table.shape[0]))
    return dict(img_size=(gh * P, gw * P))


TIMM_SIZES = {192: "tiny", 384: "small", 768: "base", 1024: "large", 1280: "huge"}   # timm's names of widths


def _timm_size(sd: dict, P: int) -> str:
    """timm's name of a ViT of this width and patch ("small_patch16"), for advice that names an architecture."""
    return f"{TIMM_SIZES.get(int(sd['patch_embed.proj.weight'].shape[0]), 'base')}_patch{P}"


def checkpoint_grid(sd: dict, cfg: ViTConfig) -> tuple[int, int]:
    """The patch grid the checkpoint's position embeddings were learnt for (may differ from ``cfg.pos_grid``)."""
    if "pos_embed" not in sd:
        return cfg.pos_grid
    n = sd["pos_embed"].shape[1] - (_prefix_with_pos(cfg))
    if n == cfg.pos_grid[0] * cfg.pos_grid[1]:
        return cfg.pos_grid
    side = math.isqrt(n)
    if side * side != n:
        raise ValueError(_grid_mismatch(n, cfg.grid, cfg.img_size))
    return side, side


def _grid_mismatch(n: int, grid: tuple[int, int], img_size) -> str:
    return (f"The checkpoint has {n} patch position embeddings, which is not a square grid and not the "
            f"{grid[0]}×{grid[1]} grid of img_size {tuple(img_size)}: its own grid is not known. Pass the img_size it "
            f"was trained at (H/P × W/P = {n} patches), e.g. in a sidecar JSON.")


def _prefix_with_pos(cfg: ViTConfig) -> int:
    return cfg.num_pos_prefix


def _pos_embed_fields(sd: dict, n_prefix: int, P: int, overrides: dict) -> dict:
    """img_size, pos_embed_prefix and pos_embed_registers from the number of position embeddings (a square grid
    unless img_size is given): a row for CLS/DIST, none for the prefix (timm's no_embed_class: register models), or
    a row for every prefix token, the registers too (timm's so150m)."""
    total = sd["pos_embed"].shape[1]
    registers = int(sd["reg_token"].shape[1]) if "reg_token" in sd else 0
    layouts = [dict(pos_embed_prefix=True, pos_embed_registers=False), dict(pos_embed_prefix=False,
                                                                           pos_embed_registers=False)]
    if registers:
        layouts.append(dict(pos_embed_prefix=True, pos_embed_registers=True))
    given = {k: overrides[k] for k in ("pos_embed_prefix", "pos_embed_registers") if k in overrides}
    layouts = [layout for layout in layouts if all(layout[k] == v for k, v in given.items())] or [given]
    candidates = [(layout, total - (n_prefix + (registers if layout.get("pos_embed_registers") else 0)
                                    if layout.get("pos_embed_prefix", True) else 0)) for layout in layouts]
    table = overrides.get("pos_embed_grid")   # NaFlex: the table's own grid, whatever the input size
    if "img_size" in overrides:
        size = overrides["img_size"]
        gh, gw = (size, size) if isinstance(size, int) else size
        for layout, n in candidates:  # the prefix layout that fits the given size, or a square to resample from
            if n == (gh // P) * (gw // P) or math.isqrt(max(n, 0)) ** 2 == n or (table and n == table[0] * table[1]):
                return layout
        raise ValueError(_grid_mismatch(candidates[0][1], (gh // P, gw // P), (gh, gw)))
    for layout, n in candidates:
        side = math.isqrt(max(n, 0))
        if n > 0 and side * side == n:
            return dict(**layout, img_size=(side * P, side * P))
    raise ValueError(f"Cannot infer the image size from {total} position embeddings (not a square grid plus "
                     f"{n_prefix} prefix tokens). Pass img_size=(H, W), e.g. in a sidecar JSON.")


# timm's NaFlexViT architectures as their tensors show them -> how each resizes its position table and, for the SigLIP
# towers, their tanh GELU (NaFlexVitCfg): (class token, registers, LayerScale, pooling) -> ViTConfig fields; None where
# two architectures share the tensors but resize differently (naflexvit_base_patch16_gap and _par_gap).
NAFLEX_IMG_SIZE = 384            # the input_size of every naflexvit_* pretrained_cfg but C-RADIO's
NAFLEX_RESIZING = {
    (False, 0, False, "map"): dict(pos_embed_interp="bilinear", pos_embed_ar_preserving=False,   # *_siglip
                                   mlp_act="gelu_tanh"),
    (False, 1, True, "map"): dict(pos_embed_interp="bicubic", pos_embed_ar_preserving=False),    # base_map, so150m2
    (False, 1, True, "mean"): dict(pos_embed_interp="bicubic", pos_embed_ar_preserving=False),   # so150m2 gap
    (False, 4, True, "mean"): None,                                                               # base_gap, par_gap
}


def format_facts(fmt: str, sd: dict, given: dict) -> dict:
    """ViTConfig fields that only the key layout of format ``fmt`` shows, read from the checkpoint's own tensors
    ``sd`` (before renaming); ``given``: the fields metadata or the caller already fixed (they win, and an ambiguity
    they settle is no longer one).

    - timm's NaFlexViT: a (1, h, w, D) table of patches only, resized to every input's grid with antialiasing, by
      the architecture's interpolation and aspect rule (``NAFLEX_RESIZING``), at timm's 384-pixel input;
    - SigLIP 2's NaFlex tower (transformers, a Linear patch embedding): a square table of ``num_patches`` rows
      resized bilinearly with antialiasing, as transformers resizes it, at the input a square photo gets; tanh GELU;
    - timm's parallel blocks (``attns.j``): the table resized as timm resizes it, bicubic with antialiasing;
    - the timm ViTs whose tensors are theirs alone (``timm_signature``): BEiT-3's LayerNorm eps, the *_rpn blocks'
      norms after each branch, AIMv2's 128-wide heads.
    """
    if fmt == "timm-naflex":
        return _naflex_facts(sd, given)
    if fmt == "timm" and any(".attns.0." in k for k in sd):  # parallel blocks: a table resized as timm resizes it
        return dict(pos_embed_antialias=True)                  # (resample_abs_pos_embed: bicubic, antialiased)
    if fmt == "timm":
        signature = timm_signature(sd)
        facts = dict(TIMM_SIGNATURES.get(signature, {}))
        if signature == "aimv2":
            width = int(next(v for k, v in sd.items() if k.endswith("patch_embed.proj.weight")).shape[0])
            facts["num_heads"] = max(width // AIMV2_HEAD_DIM, 1)
        return {k: v for k, v in facts.items() if k not in given}
    patch = next((v for k, v in sd.items() if re.fullmatch(r"(vision_model\.)?embeddings\.patch_embedding\.weight", k)),
                 None)
    if fmt == "huggingface-clip" and patch is not None and patch.ndim == 2:
        table = next(v for k, v in sd.items() if k.endswith("embeddings.position_embedding.weight"))
        side = math.isqrt(int(table.shape[0]))
        P = math.isqrt(int(patch.shape[1]) // 3)
        return dict(pos_embed_grid=(side, side), pos_embed_interp="bilinear", pos_embed_antialias=True,
                    img_size=(side * P, side * P), mlp_act="gelu_tanh")   # Siglip2VisionConfig's hidden_act
    return {}


# timm ViTs (vision_transformer.py) whose tensors no other timm ViT has, and what their tensors leave out (each
# checked against every timm architecture by tests/checkpoints/test_assumptions.py)
TIMM_SIGNATURES = {
    "beit3": dict(layer_norm_eps=1e-5),         # beit3_*: LayerNorms in attention and MLP, a CLS token, fc_norm
    "rpn": dict(res_post_norm=True),            # vit_base_patch16_rpn_224: no CLS token, fc_norm, no LayerScale
    "aimv2": {},                                # aimv2_*: RMSNorm, a patch norm; 128-wide heads (format_facts)
}
AIMV2_HEAD_DIM = 128


def timm_signature(sd: dict) -> str | None:
    """Which of ``TIMM_SIGNATURES`` a timm ViT's tensors (timm's key names) are, or None."""
    keys = {re.sub(r"^module\.", "", k) for k in sd}
    plain = not any(k.startswith(("norm_pre.", "attn_pool.")) or ".rel_pos." in k or "relative_position" in k
                    for k in keys) and "blocks.0.mlp.fc1.weight" in keys
    layer_scale = "blocks.0.ls1.gamma" in keys or "blocks.0.gamma_1" in keys
    if plain and "cls_token" in keys and "fc_norm.weight" in keys and "blocks.0.attn.norm.weight" in keys \
            and "blocks.0.mlp.norm.weight" in keys:
        return "beit3"
    if plain and "cls_token" not in keys and "fc_norm.weight" in keys and not layer_scale \
            and "reg_token" not in keys and "pos_embed" in keys:
        return "rpn"
    if "patch_embed.norm.weight" in keys and "blocks.0.norm1.bias" not in keys:
        return "aimv2"
    return None


def _naflex_facts(sd: dict, given: dict) -> dict:
    keys = {re.sub(r"^module\.", "", k) for k in sd}
    if "embeds.pos_embed_y" in keys:
        raise ValueError("A NaFlexViT with factorized position embeddings (separate row and column tables, "
                         "naflexvit_base_patch16_parfac_gap) is not supported; only a learned 2-D table is.")
    if "norm.weight" not in keys and "fc_norm.weight" not in keys:
        raise ValueError("A NaFlexViT without a final LayerNorm (C-RADIO's naflexvit_*_radio_* backbones) is not "
                         "supported; every model here ends with one.")
    table = next(v for k, v in sd.items() if k.endswith("embeds.pos_embed"))      # (1, h, w, D)
    regs = next((int(v.shape[1]) for k, v in sd.items() if k.endswith("embeds.reg_token")), 0)
    pool = "map" if "attn_pool.latent" in keys else "mean" if "fc_norm.weight" in keys else "cls"
    layer_scale = "blocks.0.ls1.gamma" in keys
    facts = dict(pos_embed_grid=tuple(table.shape[1:3]), pos_embed_prefix=False, pos_embed_antialias=True,
                 img_size=(NAFLEX_IMG_SIZE, NAFLEX_IMG_SIZE))
    layout = ("embeds.cls_token" in keys, regs, layer_scale, pool)
    resizing = NAFLEX_RESIZING.get(layout, dict(pos_embed_interp="bicubic", pos_embed_ar_preserving=False))
    if resizing is None:
        if "pos_embed_ar_preserving" not in given:
            raise ValueError(
                "This NaFlexViT has the tensors of both naflexvit_base_patch16_gap and naflexvit_base_patch16_par_gap, "
                "which resize the position table differently for a non-square photo: give pos_embed_ar_preserving "
                "(true for par_gap, false for gap) to vit.load or as {\"config\": {\"pos_embed_ar_preserving\": "
                "true}} in a sidecar JSON beside the file, or load its timm Hub folder, whose architecture says it.")
        resizing = dict(pos_embed_interp="bicubic")
    return {**facts, **resizing}
