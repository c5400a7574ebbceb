"""The Model tab: a model's architecture as a table (``architecture``), every stage with the tensor shape this input gives it and its
parameters (a ViT's from its config, ``stages``; a Swin's stages, windows and shifts, ``swin_table``), one function
per family in ``TABLES``.

Computed from the config alone (``vit.ViTConfig``), so it describes any variant at any input size; the
parameter counts follow the module layout of ``vit/model.py`` and are checked against
``sum(p.numel())`` of a real model in the tests. Shapes are for one image (batch dimension left out):

    H×W×3 image -> N×D patch embeddings (N = H/P · W/P) -> T×D tokens (T = prefix + N) -> L blocks of
    T×D (each with H_a attention maps of T×T) -> D pooled -> K logits

The other families (CLIP, SigLIP, EVA-02, BEiT, timm's relative-position and parallel-block ViTs, NaFlex; see
``vit.model``) change some rows: no CLS token, no absolute position embeddings or one resized to every photo's grid,
a relative position bias (a table, or an MLP) or rotary embedding inside attention, the norms after the branches,
two branches side by side, SwiGLU, pooling by a learnt probe or by the mean of the patches, CLIP's image
projection. ``family_summary`` says it in one paragraph. Every name and note is a catalogue text
(``viz.model.texts``), in the language asked for.
"""
from __future__ import annotations

from dataclasses import dataclass

from typing import TYPE_CHECKING

from vit.architecture import Architecture
from vit.model import ViTConfig
from vit.readout import kind as readout_kind
from vit.swin import SwinConfig

from ..i18n import t
from ..records import Analysis, cached_bytes

if TYPE_CHECKING:
    from ..analysis.serve import ServedModel


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
    D, hidden = cfg.embed_dim, cfg.pool_mlp_dim or cfg.mlp_dim
    if cfg.probe == "aimv2":              # AIMv2's head: the probe as the query, keys and values, one projection
        return D + _linear(D, 2 * D, cfg.qkv_bias) + _linear(D, D)
    return (D + _linear(D, D) + _linear(D, 2 * D) + _linear(D, D) + _layer_norm(D)
            + _linear(D, hidden) + _linear(hidden, D))


def family_summary(cfg, lang: str = "en") -> str:
    """One paragraph on the model's family: its tokens, position scheme, block and pooling, in ``lang`` (every part a
    catalogue text, ``viz.model.texts``)."""
    tokens = t("arch.cls" if cfg.class_token else "arch.no_cls", lang) + \
        (t("arch.distillation", lang) if cfg.distilled else "")
    tokens += t("arch.registers", lang, count=cfg.num_reg_tokens) if cfg.num_reg_tokens else ""
    positions = t({"learned": "arch.learned_positions", "sincos2d": "arch.sincos_positions",
                   "none": "arch.no_positions"}[cfg.pos_embed_kind], lang)
    if cfg.pos_embed_grid is not None:
        positions += t("arch.positions_grid", lang, grid=f"{cfg.pos_embed_grid[0]}×{cfg.pos_embed_grid[1]}")
    if cfg.rel_pos_bias:
        positions += t("arch.relative_bias", lang)
    if cfg.rel_pos_mlp:
        positions += t("arch.relative_mlp", lang)
    if cfg.rope:
        positions += t("arch.rotary", lang) + (
            t("arch.rotary.mixed", lang) if cfg.rope_mixed else
            t("arch.rotary.centered", lang) if cfg.rope_coords == "centered" else "")
    activation = t(f"arch.act.{cfg.mlp_act}", lang)
    block = t("arch.block.post" if cfg.res_post_norm else "arch.block", lang, activation=activation)
    if cfg.parallel > 1:
        block = t("arch.block.parallel", lang, parallel=cfg.parallel, activation=activation, heads=cfg.num_heads)
    block += t("arch.mlp_norm", lang) if cfg.mlp_norm else ""
    block += t("arch.qv_bias", lang) if cfg.qkv_bias and not cfg.k_bias else ""
    block += t("arch.layer_scale", lang) if cfg.layer_scale else ""
    block += t("arch.norm_pre", lang) if cfg.norm_pre else ""
    block += t("arch.prefix_norm", lang) if cfg.prefix_norm else ""
    pooling = t(f"arch.pool.{cfg.readout}", lang)
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
    gh0, gw0 = cfg.pos_grid
    pos_len = gh0 * gw0 + (int(cfg.class_token) + int(cfg.distilled) if cfg.pos_embed_prefix else 0)
    heads, Dh = cfg.num_heads, cfg.attention_head_dim

    def _(key: str, **values) -> str:
        return t(f"arch.{key}", lang, **values)

    rows = [
        Stage(_("input.whole" if cfg.pos_embed_grid is not None else "input"), f"{H}×{W}×{C}", 0, _("input.note")),
        Stage(_("patches", patch=P), f"{N}×{D}", _linear(C * P * P, D, cfg.patch_bias),
              _("patches.note", grid=f"{gh}×{gw}", patch=P, channels=C, values=C * P * P, dim=D)
              + ("" if cfg.patch_bias else _("no_bias"))),
    ]
    if prefix_names:
        rows.append(Stage(_("prepend_many" if len(prefix_names) > 1 else "prepend", names=" + ".join(prefix_names)),
                          f"{T}×{D}", len(prefix_names) * D, _("prepend.note")))
    resampled = (gh, gw) != (gh0, gw0)
    relative = cfg.rel_pos_bias or cfg.rel_pos_mlp           # a bias B inside attention: a table, or an MLP's
    if cfg.pos_embed_kind == "learned":
        how = _("resample.bilinear" if cfg.pos_embed_interp == "bilinear" else "resample.bicubic") + \
            (_("resample.antialias") if cfg.pos_embed_antialias else "")
        rows.append(Stage(_("positions"), f"{T}×{D}", pos_len * D,
                          _("positions.note", count=pos_len, grid=f"{gh0}×{gw0}")
                          + (_("positions.resampled", how=how, grid=f"{gh}×{gw}") if resampled else "")))
    elif cfg.pos_embed_kind == "sincos2d":
        rows.append(Stage(_("sincos"), f"{T}×{D}", 0, _("sincos.note", grid=f"{gh}×{gw}")))
    else:
        rows.append(Stage(_("no_absolute"), f"{T}×{D}", 0,
                          _("no_absolute.relative") if relative else _("no_absolute.none")))
    if cfg.norm_pre:
        rows.append(Stage(_("norm_pre_stage"), f"{T}×{D}", _layer_norm(D), _("norm_pre_stage.note")))
    per_block = block_params(cfg)
    softmax = _("softmax.rope") if cfg.rope else _("softmax.bias") if relative else _("softmax")
    qkv_note = _("qkv.note", heads=heads, width=Dh)
    qkv_note += _("qkv.qv_only") if cfg.qkv_bias and not cfg.k_bias else ""
    softmax_note = _("softmax.note")
    if cfg.rel_pos_bias:
        softmax_note += _("softmax.table", grid=f"{gh0}×{gw0}")
    if cfg.rel_pos_mlp:
        softmax_note += _("softmax.mlp", grid=f"{gh}×{gw}", hidden=cfg.rel_pos_mlp_dim, heads=heads)
    if cfg.parallel > 1:
        qkv_note += _("qkv.parallel", parallel=cfg.parallel, heads=heads // cfg.parallel)
    if cfg.rope and cfg.rope_mixed:
        softmax_note += _("softmax.rotary_mixed")
    elif cfg.rope and cfg.rope_coords == "centered":
        softmax_note += _("softmax.rotary_centered")
    elif cfg.rope:
        ref = cfg.rope_ref_grid or (gh, gw)
        softmax_note += _("softmax.rotary", grid=f"{ref[0]}×{ref[1]}")
    inner = _inner(cfg)
    table = _bias_params(cfg)
    act = _(f"act.{cfg.mlp_act}")
    mlp_note = (_("mlp.swiglu", dim=D, hidden=cfg.mlp_dim) if cfg.mlp_act == "swiglu"
                else _("mlp.note", dim=D, hidden=cfg.mlp_dim)) + (_("mlp.norm") if cfg.mlp_norm else "")
    post = cfg.res_post_norm   # timm's *_rpn: the LayerNorms after each branch, not before
    rows += [
        Stage(_("blocks", depth=cfg.depth), f"{T}×{D}", cfg.depth * per_block,
              _("blocks.note.post" if post else "blocks.note", params=f"{per_block:,}")),
        Stage(_("qkv.post" if post else "qkv"), f"3 × {heads}×{T}×{Dh}",
              (0 if post else _layer_norm(D)) + _qkv_params(cfg), qkv_note),
        Stage(softmax, f"{heads}×{T}×{T}", table, softmax_note),
        Stage(_("project", norm="LayerNorm → " if cfg.attn_norm else "", post=" → LayerNorm" if post else ""),
              f"{T}×{D}",
              _linear(inner, D) + (_layer_norm(inner) if cfg.attn_norm else 0) + (D if cfg.layer_scale else 0)
              + (_layer_norm(D) if post else 0), _("project.note")),
        Stage(_("mlp.post" if post else "mlp", activation=act), f"{T}×{D}",
              _layer_norm(D) + _mlp_params(cfg) + (D if cfg.layer_scale else 0), mlp_note),
    ]
    # DINOv3's untied norms: the prefix's own; fc_norm: one after pooling, of the pooled width; or none at all
    pooled = D * readout_kind(cfg.readout).width
    final_norm = _layer_norm(pooled) if cfg.fc_norm else \
        _layer_norm(D) * (2 if cfg.prefix_norm else 1) * int(cfg.final_norm)
    if readout_kind(cfg.readout).probe:
        rows.append(Stage(_("probe"), f"{D}", final_norm + probe_params(cfg),
                          _("probe.note", count=T if cfg.readout == "map_all" else N, heads=cfg.pool_heads or heads)))
    elif cfg.readout in ("mean", "mean_all"):
        rows.append(Stage(_(cfg.readout) + (_("mean.fc_norm") if cfg.fc_norm else _("mean.after_norm")),
                          f"{D}", final_norm, _(f"{cfg.readout}.note")))
    else:
        rows.append(Stage(_(f"take_{cfg.readout}"), f"{pooled}", final_norm, _(f"take_{cfg.readout}.note")))
    width = pooled
    if cfg.representation_size:
        width = cfg.representation_size
        rows.append(Stage(_("pre_logits"), f"{width}", _linear(pooled, width), ""))
    if cfg.proj_dim:
        rows.append(Stage(_("projection"), f"{cfg.proj_dim}", _linear(width, cfg.proj_dim, False),
                          _("projection.note")))
    if cfg.num_classes:
        heads_count = 2 if cfg.readout == "distilled" else 1
        rows.append(Stage(_("head") + (_("head.distilled") if heads_count == 2 else ""),
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


def vit_table(model, name: str, arch: Architecture, lang: str = "en") -> str:
    """A ViT's Model tab: its family in one paragraph, then every stage of ``stages`` with this input's shapes."""
    cfg = model.cfg
    return to_markdown(stages(cfg, arch.input_size, lang), name, family_summary(cfg, lang), lang)


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def swin_table(model, name: str, arch: Architecture, lang: str = "en") -> str:
    """A Swin's Model tab: its stages with this input's shapes, windows, heads and shifts."""
    cfg = model.cfg
    H, W = arch.input_size
    gh0, gw0 = arch.grid
    rows = [[t("swin.arch.input", lang), f"(1, 3, {H}, {W})", "", "", ""],
            [t("swin.arch.patches", lang, patch=cfg.patch_size), f"(1, {gh0}, {gw0}, {cfg.embed_dim})", "", "", ""]]
    for stage, blocks in enumerate(arch.stages):
        block = arch.blocks[blocks[0]]
        gh, gw = block.grid
        if stage:
            rows.append([t("swin.arch.merge", lang), f"(1, {gh}, {gw}, {cfg.stage_dim(stage)})", "", "", ""])
        shifts = " / ".join(str(arch.blocks[b].shift[0]) for b in blocks)
        rows.append([t("swin.arch.stage", lang, stage=stage, layers=len(blocks)),
                     f"(1, {gh}, {gw}, {cfg.stage_dim(stage)})",
                     f"{block.num_windows} × {block.window[0]}×{block.window[1]}", str(block.heads), shifts])
    rows.append([t("swin.arch.pool", lang), f"(1, {cfg.num_features})", "", "", ""])
    rows.append([t("swin.arch.head", lang), f"(1, {cfg.num_classes})", "", "", ""])
    header = [t(f"swin.arch.{k}", lang) for k in ("step", "shape", "windows", "heads", "shifts")]
    parameters = sum(p.numel() for p in model.parameters())
    return t("swin.arch.title", lang, model=name, version=cfg.version, parameters=f"{parameters:,}") + "\n\n" + \
        _table(header, rows)


# THE table of each model family's Model tab, by its config class: a new family whose steps read differently adds
# one function here (its slice of the Model tab); every other view reads the family's ``Architecture``.
TABLES = {ViTConfig: vit_table, SwinConfig: swin_table}


def model_table(model, name: str, arch: Architecture, cached: int, lang: str = "en") -> str:
    """The Model tab in ``lang``: the family's table (``TABLES``) and what this photo's analysis keeps in the cache,
    beside what the whole attention of every layer would take."""
    full = sum(b.heads * b.num_windows * b.window_area ** 2 * 4 for b in arch.blocks)
    kept = "arch.cached" if arch.one_sequence else "arch.cached_windows"     # recomputed on demand, or kept whole
    return (TABLES[type(model.cfg)](model, name, arch, lang) + "\n\n"
            + t(kept, lang, depth=arch.depth, heads=arch.max_heads, megabytes=cached / 2**20, full=full / 2**20))


def architecture(model: ServedModel, a: Analysis, lang: str = "en") -> str:
    """The Model tab: the family (tokens, pooling, position scheme), its steps with this photo's tensor shapes and
    parameter counts, and the analysis's cache size, in ``lang`` (``model_table``)."""
    return model_table(model.loaded.model, model.loaded.name, a.architecture, cached_bytes(a), lang)
