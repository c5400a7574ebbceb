"""The architecture of a ViT as a table: every stage with the tensor shape this input gives it and its parameters.

Computed from the config alone (``vit.ViTConfig``), so it describes any variant at any input size; the
parameter counts follow the module layout of ``vit/model.py`` and are checked against
``sum(p.numel())`` of a real model in the tests. Shapes are for one image (batch dimension left out):

    H×W×3 image -> N×D patch embeddings (N = H/P · W/P) -> T×D tokens (T = prefix + N) -> L blocks of
    T×D (each with H_a attention maps of T×T) -> D pooled -> K logits

The other families (CLIP, SigLIP, EVA-02, BEiT, timm's relative-position and parallel-block ViTs, NaFlex; see
``vit.model``) change some rows: no CLS token, no absolute position embeddings or one resized to every photo's grid,
a relative position bias (a table, or an MLP) or rotary embedding inside attention, the norms after the branches,
two branches side by side, SwiGLU, pooling by a learnt probe or by the mean of the patches, CLIP's image
projection. ``family_summary`` says it in one paragraph.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Stage:
    name: str     # what the stage does
    shape: str    # shape of its output for this input, e.g. "197×768"
    params: int   # learnable parameters in the stage
    note: str = ""  # how it works, in a few words


def _layer_norm(dim: int) -> int:
    return 2 * dim  # weight and bias


def _linear(d_in: int, d_out: int, bias: bool = True) -> int:
    return d_in * d_out + (d_out if bias else 0)


ACTIVATION_NAMES = {"gelu": "GELU", "gelu_tanh": "tanh-approximated GELU", "quick_gelu": "QuickGELU x·σ(1.702x)",
                    "swiglu": "SwiGLU"}
FAMILY_NAMES = {"vit": "Vision Transformer", "clip": "CLIP image tower", "siglip": "SigLIP image tower",
                "eva02": "EVA-02", "beit": "BEiT", "dinov3": "DINOv3", "rope_vit": "RoPE ViT",
                "relpos": "relative-position ViT (timm)", "parallel": "parallel-block ViT (timm)",
                "naflex": "NaFlex ViT (any aspect ratio)"}


def _inner(cfg) -> int:
    """The heads' total width: D, or P·D for folded parallel blocks."""
    return cfg.num_heads * cfg.attention_head_dim


def _qkv_params(cfg) -> int:
    """The qkv Linear, with its bias on q, k, v, on q and v only (BEiT, EVA-02), or none."""
    D, inner = cfg.embed_dim, _inner(cfg)
    if cfg.qkv_bias and not cfg.k_bias:
        return _linear(D, 3 * inner, bias=False) + 2 * inner
    return _linear(D, 3 * inner, cfg.qkv_bias)


def _bias_params(cfg) -> int:
    """The relative position table (BEiT) or the MLP that computes it (timm's relpos: 2 -> hidden -> heads)."""
    from vit.positions import num_relative_positions
    if cfg.rel_pos_bias:
        return num_relative_positions(cfg.grid) * cfg.num_heads
    if cfg.rel_pos_mlp:
        return _linear(2, cfg.rel_pos_mlp_dim) + _linear(cfg.rel_pos_mlp_dim, cfg.num_heads)
    return 0


def _attention_params(cfg) -> int:
    """q/k/v, the relative position bias (BEiT's table or timm's MLP) or RoPE-Mixed's learnt frequencies, the output
    LayerNorm (EVA-02 CLIP) and proj of one block."""
    inner = _inner(cfg)
    table = _bias_params(cfg) + (cfg.embed_dim if cfg.rope_mixed else 0)   # RoPE-Mixed: (2, H, Dh/2) frequencies
    return _qkv_params(cfg) + table + (_layer_norm(inner) if cfg.attn_norm else 0) + _linear(inner, cfg.embed_dim)


def _mlp_params(cfg) -> int:
    """fc1 (two of them for SwiGLU: gate and value), the hidden LayerNorm (EVA-02) and fc2."""
    D, hidden = cfg.embed_dim, cfg.mlp_dim
    fc1 = _linear(D, hidden) * (2 if cfg.mlp_act == "swiglu" else 1)
    return fc1 + (_layer_norm(hidden) if cfg.mlp_norm else 0) + _linear(hidden, D)


def block_params(cfg) -> int:
    """Parameters of one transformer block: LN, attention, LN, MLP (and LayerScale when enabled)."""
    scale = 2 * cfg.embed_dim if cfg.layer_scale else 0
    return 2 * _layer_norm(cfg.embed_dim) + _attention_params(cfg) + _mlp_params(cfg) + scale


def probe_params(cfg) -> int:
    """SigLIP's attention-pooling head: the probe, q, kv, proj, LayerNorm and its MLP."""
    D = cfg.embed_dim
    return (D + _linear(D, D) + _linear(D, 2 * D) + _linear(D, D) + _layer_norm(D)
            + _linear(D, cfg.mlp_dim) + _linear(cfg.mlp_dim, D))


def family_summary(cfg) -> str:
    """One paragraph on the model's family: its tokens, position scheme, block and pooling."""
    tokens = ("a CLS token" if cfg.class_token else "no CLS token") + (", a distillation token" if cfg.distilled
                                                                       else "")
    tokens += f", {cfg.num_reg_tokens} registers" if cfg.num_reg_tokens else ""
    positions = {"learned": "learnt absolute position embeddings", "none": "no absolute position embeddings",
                 "sincos2d": "a fixed 2-D sine-cosine position table"}[cfg.pos_embed_kind]
    if cfg.pos_embed_grid is not None:
        positions += (f" on a {cfg.pos_embed_grid[0]}×{cfg.pos_embed_grid[1]} grid, resized to each photo's own grid "
                      f"(the photo keeps its aspect ratio)")
    if cfg.rel_pos_bias:
        positions += " and a learnt relative position bias in every block's attention"
    if cfg.rel_pos_mlp:
        positions += (" and a relative position bias in every block's attention, computed by a small MLP from each "
                      "offset, for any grid")
    if cfg.rope:
        positions += " and a rotary embedding of the patches' queries and keys in every block" + (
            " (frequencies learnt per block and head, mixing rows and columns)" if cfg.rope_mixed else
            " (on patch centres normalised to [-1, 1] per axis)" if cfg.rope_coords == "centered" else "")
    block = f"{'res-post-norm' if cfg.res_post_norm else 'pre-norm'} blocks with a {ACTIVATION_NAMES[cfg.mlp_act]} MLP"
    if cfg.parallel > 1:
        block = (f"pre-norm blocks of {cfg.parallel} attentions side by side, then {cfg.parallel} "
                 f"{ACTIVATION_NAMES[cfg.mlp_act]} MLPs (held as one of {cfg.num_heads} heads and one MLP)")
    block += " (LayerNorm on its hidden units)" if cfg.mlp_norm else ""
    block += ", q and v biases but none on k" if cfg.qkv_bias and not cfg.k_bias else ""
    block += ", LayerScale" if cfg.layer_scale else ""
    block += "; a LayerNorm before the first block" if cfg.norm_pre else ""
    block += "; the CLS and register tokens get their own final LayerNorm" if cfg.prefix_norm else ""
    pooling = {"token": "the CLS token is the image's summary (the maps read its row)",
               "avg": "the mean of the patch tokens is the image's summary (the maps read the mean of the patch rows)",
               "map": "a learnt probe query attends over the patches (attention pooling, \"MAP\"; the maps read "
                      "the probe's attention)"}[cfg.global_pool]
    output = (f"projected to the {cfg.proj_dim}-dim image–text space" if cfg.proj_dim else
              f"{cfg.num_classes} classes" if cfg.num_classes else "features without a classifier")
    return (f"**{FAMILY_NAMES[cfg.family]}**: {tokens}; {positions}; {block}; {pooling}; output: {output}.")


def stages(cfg, image_hw: tuple[int, int] | None = None) -> list[Stage]:
    """The stages of ``cfg`` for an input of ``image_hw`` = (H, W) pixels (default: the native size)."""
    H, W = image_hw or cfg.img_size
    P, D, C = cfg.patch_size, cfg.embed_dim, cfg.in_chans
    if H % P or W % P:
        raise ValueError(f"Input {H}×{W} is not divisible by the patch size {P}! Expected multiples of {P}.")
    gh, gw = H // P, W // P
    N = gh * gw
    prefix_names = ["CLS"] * cfg.class_token + ["DIST"] * cfg.distilled + ["REG"] * cfg.num_reg_tokens
    T = len(prefix_names) + N
    gh0, gw0 = cfg.pos_grid
    pos_len = gh0 * gw0 + (int(cfg.class_token) + int(cfg.distilled) if cfg.pos_embed_prefix else 0)
    heads, Dh = cfg.num_heads, cfg.attention_head_dim

    rows = [
        Stage("Input image (the whole photo, its aspect ratio kept)" if cfg.pos_embed_grid is not None else
              "Input image (center crop)", f"{H}×{W}×{C}", 0, "RGB, normalised per channel"),
        Stage(f"Patch embedding: Conv2d {P}×{P}, stride {P}", f"{N}×{D}", _linear(C * P * P, D, cfg.patch_bias),
              f"{gh}×{gw} patches of {P}×{P}×{C} = {C * P * P} values, each projected to {D}"
              + ("" if cfg.patch_bias else " (no bias)")),
    ]
    if prefix_names:
        rows.append(Stage(f"Prepend {' + '.join(prefix_names)} token{'s' if len(prefix_names) > 1 else ''}",
                          f"{T}×{D}", len(prefix_names) * D, "learned vectors, same for every image"))
    resampled = (gh, gw) != (gh0, gw0)
    if cfg.pos_embed_kind == "learned":
        how = ("bilinearly" if cfg.pos_embed_interp == "bilinear" else "bicubically") + \
            (" with antialiasing" if cfg.pos_embed_antialias else "")
        rows.append(Stage("Add position embeddings", f"{T}×{D}", pos_len * D,
                          f"{pos_len} learned vectors for a {gh0}×{gw0} grid"
                          + (f", resampled {how} to {gh}×{gw}" if resampled else "")))
    elif cfg.pos_embed_kind == "sincos2d":
        rows.append(Stage("Add position embeddings (fixed 2-D sine-cosine)", f"{T}×{D}", 0,
                          f"a fixed table for the {gh}×{gw} grid: sin/cos of the column and of the row, not trained"))
    else:
        rows.append(Stage("No absolute position embeddings", f"{T}×{D}", 0,
                          "positions enter inside attention (relative position bias)"
                          if cfg.rel_pos_bias or cfg.rel_pos_mlp else "the tokens carry no absolute position"))
    if cfg.norm_pre:
        rows.append(Stage("LayerNorm before the blocks", f"{T}×{D}", _layer_norm(D), "CLIP's ln_pre"))
    per_block = block_params(cfg)
    softmax = "softmax(q·kᵀ/√d) — the attention maps"
    if cfg.rel_pos_bias or cfg.rel_pos_mlp:
        softmax = "softmax(q·kᵀ/√d + B) — the attention maps"
    if cfg.rope:
        softmax = "softmax(R(q)·R(k)ᵀ/√d) — the attention maps"
    qkv_note = f"queries, keys, values for {heads} heads of width {Dh}"
    qkv_note += "; biases on q and v only" if cfg.qkv_bias and not cfg.k_bias else ""
    softmax_note = "each row: how much one token attends to every token (sums to 1)"
    if cfg.rel_pos_bias:
        softmax_note += f"; B: a learnt bias per head for each of the {gh0}×{gw0} grid's offsets (the table)"
    if cfg.rel_pos_mlp:
        softmax_note += (f"; B: a bias per head for each of the {gh}×{gw} grid's offsets, computed by an MLP "
                         f"(2 → {cfg.rel_pos_mlp_dim} → {heads}) from sign(d)·ln(1 + |d|) of the offset d")
    if cfg.parallel > 1:
        qkv_note += f" ({cfg.parallel} branches of {heads // cfg.parallel} heads, each with its own norm)"
    if cfg.rope and cfg.rope_mixed:
        softmax_note += ("; R rotates each patch's q and k by its row and column through frequencies learnt per "
                         "block and head, so q·k depends on the offset")
    elif cfg.rope and cfg.rope_coords == "centered":
        softmax_note += ("; R rotates each patch's q and k by its centre's coordinates in [-1, 1] on each axis, so "
                         "q·k depends on the offset as a fraction of the image")
    elif cfg.rope:
        ref = cfg.rope_ref_grid or (gh, gw)
        softmax_note += (f"; R rotates each patch's q and k by its row and column (angles on a {ref[0]}×{ref[1]} "
                         f"grid), so q·k depends on the offset")
    inner = _inner(cfg)
    table = _bias_params(cfg)
    act = ACTIVATION_NAMES[cfg.mlp_act]
    mlp_note = (f"SiLU(x·W_g) ⊙ x·W_x, {D} → 2×{cfg.mlp_dim} → {D} per token" if cfg.mlp_act == "swiglu"
                else f"{D} → {cfg.mlp_dim} → {D} per token") + (", LayerNorm on the hidden units" if cfg.mlp_norm else "")
    post = cfg.res_post_norm   # timm's *_rpn: the LayerNorms after each branch, not before
    rows += [
        Stage(f"{cfg.depth} × transformer block", f"{T}×{D}", cfg.depth * per_block,
              f"{per_block:,} parameters each; {'res-post-norm' if post else 'pre-norm'}, residual around attention "
              f"and MLP"),
        Stage("  ├ qkv Linear" if post else "  ├ LayerNorm → qkv Linear", f"3 × {heads}×{T}×{Dh}",
              (0 if post else _layer_norm(D)) + _qkv_params(cfg), qkv_note),
        Stage(f"  ├ {softmax}", f"{heads}×{T}×{T}", table, softmax_note),
        Stage("  ├ attention · v → " + ("LayerNorm → " if cfg.attn_norm else "") + "proj Linear"
              + (" → LayerNorm" if post else "") + ", + residual", f"{T}×{D}",
              _linear(inner, D) + (_layer_norm(inner) if cfg.attn_norm else 0) + (D if cfg.layer_scale else 0)
              + (_layer_norm(D) if post else 0), "heads concatenated and mixed"),
        Stage(f"  └ MLP ({act}) → LayerNorm, + residual" if post else f"  └ LayerNorm → MLP ({act}), + residual",
              f"{T}×{D}",
              _layer_norm(D) + _mlp_params(cfg) + (D if cfg.layer_scale else 0), mlp_note),
    ]
    final_norm = _layer_norm(D) * (2 if cfg.prefix_norm else 1)   # DINOv3's untied norms: the prefix's own
    if cfg.global_pool == "avg":
        rows.append(Stage("Mean of patch tokens" + (" → LayerNorm" if cfg.fc_norm else ", after LayerNorm"),
                          f"{D}", final_norm, "average over the patches"))
    elif cfg.global_pool == "map":
        rows.append(Stage("LayerNorm, attention pooling by a learnt probe (MAP)", f"{D}",
                          final_norm + probe_params(cfg),
                          f"one query attends over the {N} patch tokens ({heads} heads), then a residual MLP"))
    else:
        rows.append(Stage("LayerNorm, take the CLS token", f"{D}", final_norm, "the CLS token summarises the image"))
    width = D
    if cfg.representation_size:
        width = cfg.representation_size
        rows.append(Stage("Pre-logits Linear + tanh", f"{width}", _linear(D, width), ""))
    if cfg.proj_dim:
        rows.append(Stage("Image projection Linear (no bias)", f"{cfg.proj_dim}", _linear(width, cfg.proj_dim, False),
                          "into the space shared with the text tower: the image embedding"))
    if cfg.num_classes:
        heads_count = 2 if cfg.distilled else 1
        rows.append(Stage("Classifier head" + (" (+ distillation head, averaged)" if cfg.distilled else ""),
                          f"{cfg.num_classes}", heads_count * _linear(width, cfg.num_classes),
                          "one logit per class; softmax gives the probabilities"))
    return rows


def total_params(rows: list[Stage]) -> int:
    """Sum over the top-level stages (the indented rows detail the block and are not added again)."""
    return sum(r.params for r in rows if not r.name.startswith("  "))


def to_markdown(rows: list[Stage], title: str = "", summary: str = "") -> str:
    """The table as Markdown (under ``summary``, e.g. ``family_summary(cfg)``), with the total parameter count."""
    lines = ([f"### {title}", ""] if title else []) + ([summary, ""] if summary else []) + [
        "| stage | output shape | parameters | how |", "|---|---|---:|---|"]
    for r in rows:
        name = r.name.replace("  ", "&nbsp;&nbsp;", 1) if r.name.startswith("  ") else r.name
        lines.append(f"| {name} | {r.shape} | {r.params:,} | {r.note} |")
    lines += ["", f"**Total: {total_params(rows):,} parameters.**"]
    return "\n".join(lines)
