"""What the explorer's tabs show for a Swin (``viz.records.WindowAnalysis``), at display size: the counterparts of
``viz.explorer``'s views, which hand a Swin's analysis to the functions here. The numbers are ``viz.panels.windows``'
(docs/swin.md defines them); the controls that read a ViT's single sequence (rollout's discard ratio and start block,
artifact masking, DINO's outline, the shared scale over layers, a patch's rolled-out row) have no Swin form, and the
picture's note says so.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
from PIL import Image, ImageDraw

from .drawing import render, screens
from .drawing.grids import banded_grid, thumbnail_grid
from .i18n import t
from .maps.layout import layer_index
from .panels import Display, display_photo
from .panels import windows as panels
from .records import WindowAnalysis

DISPLAY_SIZE = 640      # as viz.explorer's: the maps' longer side
NARROW_SIZE = 448       # as viz.explorer's: the maps' longer side on a narrow screen
HEADS_WIDTH = 1100
NARROW_HEADS_WIDTH = 560   # as viz.explorer's: the heads grids' width on a narrow screen
NARROW_HEADS = 4        # heads side by side in a stage's grid on a narrow screen (the rest in bands below)
NARROW_NORM_LAYERS = 4  # layers side by side in the token-norm thumbnails on a narrow screen


def _display(c, size: int) -> Display:
    """How a map is drawn: ``size`` pixels (``NARROW_SIZE`` on a narrow screen) with its colour bar's text size."""
    return Display(size=NARROW_SIZE if c.narrow else size, narrow=c.narrow)


def _base(a: WindowAnalysis, size: int) -> Image.Image:
    return display_photo(a, size)


def rollout_view(a: WindowAnalysis, c, lang: str = "en", size: int = DISPLAY_SIZE) -> tuple[Image.Image, str]:
    """(rollout through windows and merges over the photo, the note saying how it is read here)."""
    values = panels.rollout_values(a, c.fusion)
    d = _display(c, size)
    image = render.overlay(_base(a, d.size), values, alpha=c.opacity, colorbar=True, smooth=not c.patch_true,
                           label=t("swin.rollout_caption", lang), lang=lang, font_size=d.font_size)
    return image, t("swin.note.rollout", lang)


def attention_view(a: WindowAnalysis, c, lang: str = "en", size: int = DISPLAY_SIZE) -> tuple[Image.Image, str]:
    """(the average pool's view of one block, its windows outlined; the note naming the block's stage grid)."""
    layer = layer_index(c.layer, a.depth)
    layout = a.layouts[layer]
    values = panels.pool_attention(a, layer, c.head)
    d = _display(c, size)
    base = _base(a, d.size)
    image = render.overlay(base, values, alpha=c.opacity, colorbar=True, smooth=not c.patch_true,
                           label=t("swin.pool_caption", lang, where=panels.where_label(a, layer, c.head, lang)),
                           lang=lang, font_size=d.font_size)
    image = panels.outline_windows(image, layout, base.size)
    note = t("swin.note.layer", lang, stage=layout.stage, grid=f"{layout.grid[0]}×{layout.grid[1]}",
             window=f"{layout.window[0]}×{layout.window[1]}", shift=layout.shift[0], pixels=layout.token_size)
    return image, note


def heads_view(s, a: WindowAnalysis, c, lang: str = "en") -> tuple[object, Image.Image, str]:
    """(session that remembers where each thumbnail is for clicks, every head of every stage: one grid per stage
    stacked, one colour scale per stage, the chosen layer and head framed when one head is shown; the note)."""
    if c.narrow:          # a few heads side by side, as large as a phone's width allows, text that reads there
        per_band = min(NARROW_HEADS, max(a.heads))
        options = dict(cell=(NARROW_HEADS_WIDTH - 100) // per_band, per_band=per_band,
                       font_size=screens.text_for(NARROW_HEADS_WIDTH) + 2)
    else:
        options = dict(cell=max(40, min(96, HEADS_WIDTH // (max(a.heads) + 2))))
    drawn = [panels.stage_heads_grid(a, stage, lang=lang, **options) for stage in range(len(a.stages))]
    width = max(g.width for g, _ in drawn)
    out = Image.new("RGB", (width, sum(g.height for g, _ in drawn) + 8 * (len(drawn) - 1)), (255, 255, 255))
    y, grids = 0, []
    for stage, (g, placement) in enumerate(drawn):
        out.paste(g, (0, y))
        grids.append((y, g.height, placement, tuple(a.stages[stage])))
        y += g.height + 8
    placement = panels.StagesLayout(tuple(grids))
    if c.head is not None:
        x0, y0, x1, y1 = placement.box(layer_index(c.layer, a.depth), c.head)
        ImageDraw.Draw(out).rectangle((x0 - 1, y0 - 1, x1 + 1, y1 + 1), outline=(0, 200, 0), width=2)
    return replace(s, heads_layout=placement), out, t("swin.note.heads", lang)


def head_info(a: WindowAnalysis, layer: int, head: int, lang: str = "en") -> str:
    """One line on a clicked head: its layer, stage and head, its mean attention distance (pixels of the input) and
    the entropy of the average pool's attention in it, over its stage's tokens."""
    pool = panels.pool_attention(a, layer, head).astype(np.float64).ravel()
    entropy = float(-(pool * np.log2(np.where(pool > 0, pool, 1.0))).sum())
    maximum = float(np.log2(pool.size))
    return t("swin.head_info", lang, where=panels.where_label(a, layer, head, lang),
             distance=float(panels.mean_distances(a)[layer][head]), entropy=entropy,
             share=entropy / maximum if maximum > 0 else 0.0, maximum=maximum)


def query_views(s, a: WindowAnalysis, c, lang: str = "en", size: int = DISPLAY_SIZE // 2
                ) -> tuple[Image.Image, Image.Image, str]:
    """(where the clicked patch's token looks in the chosen block, who looks at it; the note naming the token)."""
    row, col = s.query or (a.grid[0] // 2, a.grid[1] // 2)
    layer = layer_index(c.layer, a.depth)
    d = _display(c, size)
    out, into = panels.query_panels(a, row, col, layer, c.head, alpha=c.opacity, lang=lang, base=_base(a, d.size),
                                    font_size=d.font_size if c.narrow else None)     # wide: by height
    r, k = panels.stage_token(a, row, col, layer)
    layout = a.layouts[layer]
    note = t("swin.note.query", lang, row=row, col=col, stage=layout.stage, token_row=r, token_col=k,
             grid=f"{layout.grid[0]}×{layout.grid[1]}")
    if c.rolled:
        note = f"{note} {t('swin.note.no_rolled', lang)}"
    return out, into, note


def distance_view(a: WindowAnalysis, lang: str = "en", narrow: bool = False) -> Image.Image:
    return panels.distance_figure(panels.mean_distances(a), a.layouts, lang, narrow)


def norms_views(a: WindowAnalysis, lang: str = "en", narrow: bool = False) -> tuple[Image.Image, Image.Image]:
    """(every block's token norms on the photo's patch grid, each token's value on the patches it covers, each block
    on its own scale from its smallest norm to its largest (written under its number, a colour bar saying so: the
    norms grow from stage to stage); the median and range against the block); ``narrow``: a few layers to a row,
    text that reads on a phone."""
    gh, gw = a.grid
    maps = np.stack([np.kron(np.asarray(n, np.float32), np.ones((gh // n.shape[0], gw // n.shape[1]), np.float32))
                     for n in a.token_norms])                                         # (L, gh, gw)
    low, high = maps.min(axis=(1, 2), keepdims=True), maps.max(axis=(1, 2), keepdims=True)
    scaled = (maps - low) / np.where(high > low, high - low, 1.0)
    layers = [f"{t('swin.layer', lang, layer=l)}\n{low.ravel()[l]:.3g}–{high.ravel()[l]:.3g}" for l in range(a.depth)]
    font_size = screens.text_for(NARROW_HEADS_WIDTH) if narrow else 11
    bar_label = t("colorbar.own_scale", lang)
    options = dict(cmap="viridis", row_labels=[t("name.norm", lang)], lang=lang, value_range=(0.0, 1.0),
                   font_size=font_size)
    if narrow and a.depth > NARROW_NORM_LAYERS:
        bar = render.colorbar_width(0.0, 1.0, bar_label, lang=lang, ticks=[1.0, 0.0], font_size=font_size)
        picture = banded_grid(scaled[None], NARROW_NORM_LAYERS, layers,
                              cell=(NARROW_HEADS_WIDTH - 80 - bar) // NARROW_NORM_LAYERS, **options)[0]
    else:
        picture = thumbnail_grid(scaled[None], cell=56, col_labels=layers, **options)[0]
    picture = render.add_colorbar(picture, "viridis", 0.0, 1.0, bar_label, lang=lang, ticks=[1.0, 0.0],
                                  font_size=font_size)
    return picture, panels.token_norms_figure(a, lang, narrow)


def pictures(s, a: WindowAnalysis, c, lang: str = "en", query_photo=None) -> dict:
    """``viz.explorer.pictures`` for a Swin: every picture and note by the page's output names."""
    rollout, rollout_note = rollout_view(a, c, lang)
    attention, attention_note = attention_view(a, c, lang)
    s, heads, heads_note = heads_view(s, a, c, lang)
    query_out, query_in, query_note = query_views(s, a, c, lang)
    norms, norm_curves = norms_views(a, lang, c.narrow)
    return dict(session=s, rollout=rollout, rollout_note=rollout_note, attention=attention,
                attention_note=attention_note, heads=heads, heads_note=heads_note, query_photo=query_photo,
                query_out=query_out, query_in=query_in, query_note=query_note,
                distance=distance_view(a, lang, c.narrow), norms=norms, norm_curves=norm_curves)


def learn_picture(a: WindowAnalysis, size: int = DISPLAY_SIZE) -> Image.Image:
    """The photo with stage 0's patches and its first block's windows outlined (the Learn tab's picture)."""
    base = _base(a, size)
    gridded = Image.fromarray(render.draw_patch_grid(np.asarray(base), a.grid))
    return panels.outline_windows(gridded, a.layouts[0], color=(255, 255, 0))


def summary(a: WindowAnalysis, lang: str = "en", input_kind: str = "summary.crop") -> str:
    """One line on what the Swin did with this photo (its stages' grids and windows), in ``lang``."""
    H, W = a.input_size
    stages = ", ".join(f"{a.layouts[b[0]].grid[0]}×{a.layouts[b[0]].grid[1]}" for b in a.stages)
    forward = a.timings.get("forward")
    took = t("summary.took", lang, ms=forward * 1000) if forward is not None else ""
    return t("swin.summary", lang, model=a.model_name, width=W, height=H, input=t(input_kind, lang), stages=stages,
             window=f"{a.layouts[0].window[0]}×{a.layouts[0].window[1]}", layers=a.depth, took=took)


def cached_bytes(a: WindowAnalysis) -> int:
    """Memory the server's cache spends on one Swin analysis: every block's windows, the norms and the photo."""
    width, height = a.image.size
    return (sum(x.nbytes for x in a.attention) + sum(n.nbytes for n in a.token_norms)
            + width * height * len(a.image.getbands()))


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def architecture(model, a: WindowAnalysis, lang: str = "en") -> str:
    """The Model tab (and the Learn tab) for a Swin: its stages with this photo's shapes, windows and heads."""
    cfg = model.loaded.config
    H, W = a.input_size
    rows = [[t("swin.arch.input", lang), f"(1, 3, {H}, {W})", "", "", ""],
            [t("swin.arch.patches", lang, patch=cfg.patch_size), f"(1, {a.grid[0]}, {a.grid[1]}, {cfg.embed_dim})",
             "", "", ""]]
    for stage, blocks in enumerate(a.stages):
        layout = a.layouts[blocks[0]]
        gh, gw = layout.grid
        if stage:
            rows.append([t("swin.arch.merge", lang), f"(1, {gh}, {gw}, {cfg.stage_dim(stage)})", "", "", ""])
        shifts = " / ".join(str(a.layouts[b].shift[0]) for b in blocks)
        rows.append([t("swin.arch.stage", lang, stage=stage, layers=len(blocks)),
                     f"(1, {gh}, {gw}, {cfg.stage_dim(stage)})",
                     f"{layout.num_windows} × {layout.window[0]}×{layout.window[1]}", str(a.heads[blocks[0]]), shifts])
    rows.append([t("swin.arch.pool", lang), f"(1, {cfg.num_features})", "", "", ""])
    rows.append([t("swin.arch.head", lang), f"(1, {cfg.num_classes})", "", "", ""])
    header = [t(f"swin.arch.{k}", lang) for k in ("step", "shape", "windows", "heads", "shifts")]
    parameters = sum(p.numel() for p in model.loaded.model.parameters())
    return (t("swin.arch.title", lang, model=model.loaded.name, version=cfg.version, parameters=f"{parameters:,}")
            + "\n\n" + _table(header, rows) + "\n\n" + t("swin.arch.cache", lang,
                                                                  mb=f"{cached_bytes(a) / 2**20:.1f}"))
