"""The architecture of a ViT as a table: every stage with the tensor shape this input gives it and its parameters.

Computed from the config alone (``vit.ViTConfig``), so it describes any variant at any input size; the
parameter counts follow the module layout of ``vit/model.py`` and are checked against
``sum(p.numel())`` of a real model in the tests. Shapes are for one image (batch dimension left out):

    H×W×3 image -> N×D patch embeddings (N = H/P · W/P) -> T×D tokens (T = prefix + N) -> L blocks of
    T×D (each with H_a attention maps of T×T) -> D pooled -> K logits

The other families (CLIP, SigLIP, EVA-02, BEiT; see ``vit.model``) change some rows: no CLS token, no
absolute position embeddings, a relative position bias or rotary embedding inside attention, SwiGLU, pooling
by a learnt probe or by the mean of the patches, CLIP's image projection. ``family_summary`` says it in one
paragraph.
"""
from __future__ import annotations

from dataclasses import dataclass

from .i18n import t


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


def _qkv_params(cfg) -> int:
    """The qkv Linear, with its bias on q, k, v, on q and v only (BEiT, EVA-02), or none."""
    D = cfg.embed_dim
    if cfg.qkv_bias and not cfg.k_bias:
        return _linear(D, 3 * D, bias=False) + 2 * D
    return _linear(D, 3 * D, cfg.qkv_bias)


def _attention_params(cfg) -> int:
    """q/k/v, the relative position table (BEiT), the output LayerNorm (EVA-02 CLIP) and proj of one block."""
    from vit.positions import num_relative_positions
    D = cfg.embed_dim
    table = num_relative_positions(cfg.grid) * cfg.num_heads if cfg.rel_pos_bias else 0
    return _qkv_params(cfg) + table + (_layer_norm(D) if cfg.attn_norm else 0) + _linear(D, D)


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


def family_summary(cfg, lang: str = "en") -> str:
    """One paragraph on the model's family: its tokens, position scheme, block and pooling, in ``lang``."""
    tokens = t("arch.cls" if cfg.class_token else "arch.no_cls", lang) + \
        (t("arch.distillation", lang) if cfg.distilled else "")
    tokens += t("arch.registers", lang, count=cfg.num_reg_tokens) if cfg.num_reg_tokens else ""
    positions = t({"learned": "arch.learned_positions", "sincos2d": "arch.sincos_positions",
                   "none": "arch.no_positions"}[cfg.pos_embed_kind], lang)
    if cfg.rel_pos_bias:
        positions += t("arch.relative_bias", lang)
    if cfg.rope:
        positions += t("arch.rotary", lang)
    block = t("arch.block", lang, activation=t(f"arch.act.{cfg.mlp_act}", lang))
    block += t("arch.mlp_norm", lang) if cfg.mlp_norm else ""
    block += t("arch.qv_bias", lang) if cfg.qkv_bias and not cfg.k_bias else ""
    block += t("arch.layer_scale", lang) if cfg.layer_scale else ""
    block += t("arch.norm_pre", lang) if cfg.norm_pre else ""
    pooling = t(f"arch.pool.{cfg.global_pool}", lang)
    output = (t("arch.output.projection", lang, dim=cfg.proj_dim) if cfg.proj_dim else
              t("arch.output.classes", lang, count=cfg.num_classes) if cfg.num_classes else
              t("arch.output.features", lang))
    return t("arch.summary", lang, family=t(f"arch.family.{cfg.family}", lang), tokens=tokens, positions=positions,
             block=block, pooling=pooling, output=output)


def stages(cfg, image_hw: tuple[int, int] | None = None, lang: str = "en") -> list[Stage]:
    """The stages of ``cfg`` for an input of ``image_hw`` = (H, W) pixels (default: the native size), named and
    explained in ``lang``."""
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

    def _(key: str, **values) -> str:
        return t(f"arch.{key}", lang, **values)

    rows = [
        Stage(_("input"), f"{H}×{W}×{C}", 0, _("input.note")),
        Stage(_("patches", patch=P), f"{N}×{D}", _linear(C * P * P, D, cfg.patch_bias),
              _("patches.note", grid=f"{gh}×{gw}", patch=P, channels=C, values=C * P * P, dim=D)
              + ("" if cfg.patch_bias else _("no_bias"))),
    ]
    if prefix_names:
        rows.append(Stage(_("prepend_many" if len(prefix_names) > 1 else "prepend", names=" + ".join(prefix_names)),
                          f"{T}×{D}", len(prefix_names) * D, _("prepend.note")))
    resampled = (gh, gw) != (gh0, gw0)
    if cfg.pos_embed_kind == "learned":
        rows.append(Stage(_("positions"), f"{T}×{D}", pos_len * D,
                          _("positions.note", count=pos_len, grid=f"{gh0}×{gw0}")
                          + (_("positions.resampled", grid=f"{gh}×{gw}") if resampled else "")))
    elif cfg.pos_embed_kind == "sincos2d":
        rows.append(Stage(_("sincos"), f"{T}×{D}", 0, _("sincos.note", grid=f"{gh}×{gw}")))
    else:
        rows.append(Stage(_("no_absolute"), f"{T}×{D}", 0,
                          _("no_absolute.relative") if cfg.rel_pos_bias else _("no_absolute.none")))
    if cfg.norm_pre:
        rows.append(Stage(_("norm_pre_stage"), f"{T}×{D}", _layer_norm(D), _("norm_pre_stage.note")))
    per_block = block_params(cfg)
    softmax = _("softmax.rope") if cfg.rope else _("softmax.bias") if cfg.rel_pos_bias else _("softmax")
    qkv_note = _("qkv.note", heads=heads, width=Dh)
    qkv_note += _("qkv.qv_only") if cfg.qkv_bias and not cfg.k_bias else ""
    softmax_note = _("softmax.note")
    if cfg.rel_pos_bias:
        softmax_note += _("softmax.table", grid=f"{gh0}×{gw0}")
    if cfg.rope:
        ref = cfg.rope_ref_grid or (gh, gw)
        softmax_note += _("softmax.rotary", grid=f"{ref[0]}×{ref[1]}")
    table = _attention_params(cfg) - _qkv_params(cfg) - _linear(D, D) - (_layer_norm(D) if cfg.attn_norm else 0)
    act = _(f"act.{cfg.mlp_act}")
    mlp_note = (_("mlp.swiglu", dim=D, hidden=cfg.mlp_dim) if cfg.mlp_act == "swiglu"
                else _("mlp.note", dim=D, hidden=cfg.mlp_dim)) + (_("mlp.norm") if cfg.mlp_norm else "")
    rows += [
        Stage(_("blocks", depth=cfg.depth), f"{T}×{D}", cfg.depth * per_block,
              _("blocks.note", params=f"{per_block:,}")),
        Stage(_("qkv"), f"3 × {heads}×{T}×{Dh}", _layer_norm(D) + _qkv_params(cfg), qkv_note),
        Stage(softmax, f"{heads}×{T}×{T}", table, softmax_note),
        Stage(_("project", norm="LayerNorm → " if cfg.attn_norm else ""), f"{T}×{D}",
              _linear(D, D) + (_layer_norm(D) if cfg.attn_norm else 0) + (D if cfg.layer_scale else 0),
              _("project.note")),
        Stage(_("mlp", activation=act), f"{T}×{D}",
              _layer_norm(D) + _mlp_params(cfg) + (D if cfg.layer_scale else 0), mlp_note),
    ]
    final_norm = _layer_norm(D)
    if cfg.global_pool == "avg":
        rows.append(Stage(_("mean") + (_("mean.fc_norm") if cfg.fc_norm else _("mean.after_norm")),
                          f"{D}", final_norm, _("mean.note")))
    elif cfg.global_pool == "map":
        rows.append(Stage(_("probe"), f"{D}", final_norm + probe_params(cfg), _("probe.note", count=N, heads=heads)))
    else:
        rows.append(Stage(_("take_cls"), f"{D}", final_norm, _("take_cls.note")))
    width = D
    if cfg.representation_size:
        width = cfg.representation_size
        rows.append(Stage(_("pre_logits"), f"{width}", _linear(D, width), ""))
    if cfg.proj_dim:
        rows.append(Stage(_("projection"), f"{cfg.proj_dim}", _linear(width, cfg.proj_dim, False),
                          _("projection.note")))
    if cfg.num_classes:
        heads_count = 2 if cfg.distilled else 1
        rows.append(Stage(_("head") + (_("head.distilled") if cfg.distilled else ""),
                          f"{cfg.num_classes}", heads_count * _linear(width, cfg.num_classes), _("head.note")))
    return rows


def total_params(rows: list[Stage]) -> int:
    """Sum over the top-level stages (the indented rows detail the block and are not added again)."""
    return sum(r.params for r in rows if not r.name.startswith("  "))


def to_markdown(rows: list[Stage], title: str = "", summary: str = "", lang: str = "en") -> str:
    """The table as Markdown (under ``summary``, e.g. ``family_summary(cfg)``), with the total parameter count, its
    header and total in ``lang`` (the rows are in the language ``stages`` was given)."""
    lines = ([f"### {title}", ""] if title else []) + ([summary, ""] if summary else []) + [
        t("arch.header", lang), "|---|---|---:|---|"]
    for r in rows:
        name = r.name.replace("  ", "&nbsp;&nbsp;", 1) if r.name.startswith("  ") else r.name
        lines.append(f"| {name} | {r.shape} | {r.params:,} | {r.note} |")
    lines += ["", t("arch.total", lang, total=f"{total_params(rows):,}")]
    return "\n".join(lines)
