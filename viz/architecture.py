"""The architecture of a ViT as a table: every stage with the tensor shape this input gives it and its parameters.

Computed from the config alone (``vit.ViTConfig``), so it describes any variant at any input size; the
parameter counts follow the module layout of ``vit/model.py`` and are checked against
``sum(p.numel())`` of a real model in the tests. Shapes are for one image (batch dimension left out):

    H×W×3 image -> N×D patch embeddings (N = H/P · W/P) -> T×D tokens (T = prefix + N) -> L blocks of
    T×D (each with H_a attention maps of T×T) -> D pooled -> K logits
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


def block_params(cfg) -> int:
    """Parameters of one transformer block: LN, qkv, proj, LN, MLP (and LayerScale when enabled)."""
    D = cfg.embed_dim
    attn = _linear(D, 3 * D, cfg.qkv_bias) + _linear(D, D)
    mlp = _linear(D, cfg.mlp_dim) + _linear(cfg.mlp_dim, D)
    scale = 2 * D if cfg.layer_scale else 0
    return 2 * _layer_norm(D) + attn + mlp + scale


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
    gh0, gw0 = cfg.grid
    pos_len = gh0 * gw0 + (int(cfg.class_token) + int(cfg.distilled) if cfg.pos_embed_prefix else 0)
    heads, Dh = cfg.num_heads, D // cfg.num_heads

    rows = [
        Stage("Input image (center crop)", f"{H}×{W}×{C}", 0, "RGB, normalised per channel"),
        Stage(f"Patch embedding: Conv2d {P}×{P}, stride {P}", f"{N}×{D}", _linear(C * P * P, D),
              f"{gh}×{gw} patches of {P}×{P}×{C} = {C * P * P} values, each projected to {D}"),
    ]
    if prefix_names:
        rows.append(Stage(f"Prepend {' + '.join(prefix_names)} token{'s' if len(prefix_names) > 1 else ''}",
                          f"{T}×{D}", len(prefix_names) * D, "learned vectors, same for every image"))
    resampled = (gh, gw) != (gh0, gw0)
    kind = getattr(cfg, "pos_embed_kind", "learned")
    if kind == "learned":
        rows.append(Stage("Add position embeddings", f"{T}×{D}", pos_len * D,
                          f"{pos_len} learned vectors for a {gh0}×{gw0} grid"
                          + (f", resampled bicubically to {gh}×{gw}" if resampled else "")))
    elif kind == "sincos2d":
        rows.append(Stage("Add position embeddings (fixed 2-D sine-cosine)", f"{T}×{D}", 0,
                          f"a fixed table for the {gh}×{gw} grid: sin/cos of the column and of the row, not trained"))
    per_block = block_params(cfg)
    rows += [
        Stage(f"{cfg.depth} × transformer block", f"{T}×{D}", cfg.depth * per_block,
              f"{per_block:,} parameters each; pre-norm, residual around attention and MLP"),
        Stage("  ├ LayerNorm → qkv Linear", f"3 × {heads}×{T}×{Dh}",
              _layer_norm(D) + _linear(D, 3 * D, cfg.qkv_bias), f"queries, keys, values for {heads} heads of width {Dh}"),
        Stage("  ├ softmax(q·kᵀ/√d) — the attention maps", f"{heads}×{T}×{T}", 0,
              "each row: how much one token attends to every token (sums to 1)"),
        Stage("  ├ attention · v → proj Linear, + residual", f"{T}×{D}",
              _linear(D, D) + (D if cfg.layer_scale else 0), "heads concatenated and mixed"),
        Stage("  └ LayerNorm → MLP (GELU), + residual", f"{T}×{D}",
              _layer_norm(D) + _linear(D, cfg.mlp_dim) + _linear(cfg.mlp_dim, D) + (D if cfg.layer_scale else 0),
              f"{D} → {cfg.mlp_dim} → {D} per token"),
    ]
    final_norm = _layer_norm(D)
    if cfg.global_pool == "avg":
        rows.append(Stage("Mean of patch tokens" + (" → LayerNorm" if cfg.fc_norm else ", after LayerNorm"),
                          f"{D}", final_norm, "average over the patches"))
    else:
        rows.append(Stage("LayerNorm, take the CLS token", f"{D}", final_norm, "the CLS token summarises the image"))
    width = D
    if cfg.representation_size:
        width = cfg.representation_size
        rows.append(Stage("Pre-logits Linear + tanh", f"{width}", _linear(D, width), ""))
    if cfg.num_classes:
        heads_count = 2 if cfg.distilled else 1
        rows.append(Stage("Classifier head" + (" (+ distillation head, averaged)" if cfg.distilled else ""),
                          f"{cfg.num_classes}", heads_count * _linear(width, cfg.num_classes),
                          "one logit per class; softmax gives the probabilities"))
    return rows


def total_params(rows: list[Stage]) -> int:
    """Sum over the top-level stages (the indented rows detail the block and are not added again)."""
    return sum(r.params for r in rows if not r.name.startswith("  "))


def to_markdown(rows: list[Stage], title: str = "") -> str:
    """The table as Markdown, with the total parameter count underneath."""
    lines = ([f"### {title}", ""] if title else []) + ["| stage | output shape | parameters | how |",
                                                       "|---|---|---:|---|"]
    for r in rows:
        name = r.name.replace("  ", "&nbsp;&nbsp;", 1) if r.name.startswith("  ") else r.name
        lines.append(f"| {name} | {r.shape} | {r.params:,} | {r.note} |")
    lines += ["", f"**Total: {total_params(rows):,} parameters.**"]
    return "\n".join(lines)
