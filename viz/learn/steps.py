"""The guided walk through the ViT, as pictures and sentences: one step of the paper at a time, on the
student's own photo, each with this model's real shapes (from ``viz.learn.walkthrough.walk``) and one
sentence of explanation in English or Chinese. Gradio-free: the page shows ``step_texts`` and the pictures.

Pictures: ``grid_picture`` (the crop cut into P×P patches), ``patch_picture`` (one patch: its pixels and its
C·P·P numbers), ``vector_picture`` (a patch embedding or the CLS output as numbers), ``tokens_picture`` (the
T×D token matrix), ``position_patch_picture`` (one patch's position-embedding similarity to every other),
``attention_picture`` (where CLS attends in a layer) and ``logits_picture`` (logits and softmax).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from matplotlib.ticker import MaxNLocator
from PIL import Image, ImageDraw

from ..i18n import t
from ..drawing import plots, render, screens
from ..drawing.fonts import use_language_font

if TYPE_CHECKING:
    from ..learn.walkthrough import Walkthrough

NUMBER_CMAP = "coolwarm"   # numbers of the model: blue negative, white 0, red positive


@dataclass(frozen=True)
class StepText:
    """One step for the page: its title, the shape of its real tensor, and one sentence."""
    key: str        # "crop", "patches", "flatten", "projection", "cls", "position", "layers", "output", "logits"
    title: str
    shape: str      # e.g. "197×768"
    text: str


def shape_text(shape) -> str:
    """(197, 768) -> "197×768"."""
    return "×".join(str(int(s)) for s in shape)


def step_texts(w: Walkthrough, layer: int = -1, row: int | None = None, col: int | None = None,
               lang: str = "en") -> list[StepText]:
    """The nine steps, in ``lang``, with this model's real shapes; ``layer`` is the layer the student picked,
    (``row``, ``col``) the patch shown flattened (default: the centre of the grid)."""
    s = w.shapes
    gh, gw = w.grid
    P = w.patch_size
    N, values = s["patches"]
    D = s["embeddings"][1]
    T = s["tokens"][0]
    row, col = (gh // 2, gw // 2) if row is None or col is None else (row, col)
    w.patch_index(row, col)
    layer %= w.depth
    top = int(np.argmax(w.probabilities))
    channels = s["image"][2]
    names = " + ".join(w.prefix_names)
    return [
        StepText("crop", t("walk.crop.title", lang), shape_text(s["image"]),
                 t("walk.squash.text", lang, size="×".join(map(str, w.resized)), shape=shape_text(s["image"]))
                 if w.stretched else t("walk.crop.text", lang, resize=min(w.resized), shape=shape_text(s["image"]))),
        StepText("patches", t("walk.patches.title", lang), shape_text(s["patches"]),
                 t("walk.patches.text", lang, grid=f"{gh}×{gw}", patch=P, count=N, shape=shape_text(s["patches"]))),
        StepText("flatten", t("walk.flatten.title", lang), str(values),
                 t("walk.flatten.text", lang, row=row, col=col, patch=P, channels=channels, values=values)),
        StepText("projection", t("walk.projection.title", lang, dim=D), shape_text(s["embeddings"]),
                 t("walk.projection.text", lang, dim=D, patch=P,
                   shape=f"{shape_text(s['patches'])} → {shape_text(s['embeddings'])}")),
        StepText("cls", t("walk.cls.title", lang), shape_text(s["tokens"]),
                 t("walk.cls.text", lang, names=names, shape=shape_text(s["tokens"])) if names else
                 t("walk.cls.none", lang, count=N, shape=shape_text(s["tokens"]))),
        StepText("position", t("walk.position.title", lang), shape_text(s["embedded"]),
                 t({"table": "walk.position.text", "rotary": "walk.position.rotary", "none": "walk.position.none"}[
                     w.positions], lang, shape=shape_text(s["embedded"]))),
        StepText("layers", t("walk.blocks.title", lang, depth=w.depth), shape_text(s["layers"]),
                 t("walk.blocks.text", lang, tokens=T, heads=w.heads, shape=shape_text(s["layers"]), layer=layer,
                   attention=shape_text(s["attention"]))),
        StepText("output", t("walk.output.title", lang), shape_text(s["output"]),
                 t("walk.output.text_avg" if w.pool in ("mean", "mean_all") else "walk.output.text", lang,
                   shape=shape_text(s["output"]), dim=s["output"][0])),
        StepText("logits", t("walk.logits.title", lang), shape_text(s["logits"]),
                 t("walk.logits.text", lang, classes=s["logits"][0], shape=shape_text(s["logits"]),
                   label=w.labels[top], probability=float(w.probabilities[top]))),
    ]


def _scaled_crop(w: Walkthrough, size: int | None) -> Image.Image:
    if size is None or max(w.image.size) == size:
        return w.image
    scale = size / max(w.image.size)
    return w.image.resize((round(w.image.width * scale), round(w.image.height * scale)), Image.Resampling.BICUBIC)


def grid_picture(w: Walkthrough, row: int | None = None, col: int | None = None, size: int | None = 448,
                 lang: str = "en", font_size: int | None = None) -> Image.Image:
    """The crop at ``size`` pixels with the P×P patch grid drawn on it and one patch framed, captioned
    "224×224×3 → 14×14 patches"."""
    gh, gw = w.grid
    row, col = (gh // 2, gw // 2) if row is None or col is None else (row, col)
    w.patch_index(row, col)
    base = _scaled_crop(w, size)
    pixels = render.draw_patch_grid(np.asarray(base), w.grid, alpha=0.8)
    framed = render.mark_patch(Image.fromarray(pixels), row, col, w.grid, width=max(2, base.width // 150))
    return render.caption(framed, t("walk.caption.grid", lang, shape=shape_text(w.shapes["image"]),
                                    grid=f"{gh}×{gw}"), lang, font_size)


def _number_cells(values: np.ndarray, cell: int, limit: float | None = None) -> Image.Image:
    """A (rows, cols) array of numbers -> one coloured cell per number (``NUMBER_CMAP``, symmetric around 0)."""
    limit = limit or float(np.abs(values).max()) or 1.0
    colors = render.colorize(np.clip(values / (2 * limit) + 0.5, 0, 1), NUMBER_CMAP)
    return Image.fromarray(np.repeat(np.repeat(colors, cell, axis=0), cell, axis=1))


def patch_picture(w: Walkthrough, row: int, col: int, size: int = 448, lang: str = "en",
                  font_size: int | None = None) -> Image.Image:
    """One patch as the model gets it: its pixels enlarged (nearest), then its C·P·P numbers (the normalised
    input, in the order the projection reads them: channel by channel, row by row) as one band of coloured
    cells per channel, with the first numbers printed. ``size``: the picture's width in pixels."""
    i = w.patch_index(row, col)
    P = w.patch_size
    C = w.shapes["image"][2]
    numbers = w.patches[i]                                              # (C·P·P,)
    fs = font_size or _text(size)
    pixels = w.image.crop((col * P, row * P, col * P + P, row * P + P))
    pixels = render.caption(pixels.resize((size // 2, size // 2), Image.Resampling.NEAREST),
                            t("walk.caption.pixels", lang, patch=P, channels=C), lang, fs)
    band = max(12, size // 24)
    strip = _number_cells(numbers.reshape(C, P * P), 1).resize((size, C * band), Image.Resampling.NEAREST)
    first = ", ".join(f"{v:.2f}" for v in numbers[:6]) + ", …"
    numbers_picture = render.caption(render.caption(strip, first, lang, fs),
                                     t("walk.caption.numbers", lang, values=numbers.size), lang, fs)
    canvas = Image.new("RGB", (size, pixels.height + numbers_picture.height + 8), "white")
    canvas.paste(pixels, ((size - pixels.width) // 2, 0))
    canvas.paste(numbers_picture, (0, pixels.height + 8))
    return canvas


def vector_picture(values: np.ndarray, caption: str, width: int = 512, lang: str = "en",
                   per_row: int = 64, font_size: int | None = None) -> Image.Image:
    """A vector of D numbers (a patch embedding, the CLS output) as rows of ``per_row`` coloured cells, with
    a caption (e.g. ``t("walk.caption.embedding", lang, dim=D)``)."""
    values = np.asarray(values, dtype=np.float32).ravel()
    rows = -(-values.size // per_row)
    padded = np.full(rows * per_row, np.nan, dtype=np.float32)
    padded[:values.size] = values
    cell = max(1, width // per_row)
    grid = np.nan_to_num(padded.reshape(rows, per_row))
    picture = _number_cells(grid, cell, float(np.abs(values).max()) or 1.0)
    if values.size % per_row:                                            # cells past the end are left white
        last = np.asarray(picture).copy()
        last[(rows - 1) * cell:, (values.size % per_row) * cell:] = 255
        picture = Image.fromarray(last)
    return render.caption(picture, caption, lang, font_size)


def tokens_picture(w: Walkthrough, which: str = "embedded", size: int = 448, lang: str = "en",
                   font_size: int | None = None) -> Image.Image:
    """The token matrix (T, D) — ``which`` = "tokens" (prefix prepended) or "embedded" (z₀, position
    embeddings added) — as a heat map, one row per token, the prefix rows (CLS) marked on the left."""
    matrix = {"tokens": w.tokens, "embedded": w.embedded}[which]
    T, D = matrix.shape
    limit = float(np.percentile(np.abs(matrix), 99)) or 1.0
    picture = _number_cells(np.clip(matrix, -limit, limit), 1, limit).resize((size, size), Image.Resampling.NEAREST)
    f = render.font(font_size or _text(size), lang)
    margin = int(f.getlength("CLS")) + 12
    canvas = Image.new("RGB", (picture.width + margin, picture.height), "white")
    canvas.paste(picture, (margin, 0))
    if w.prefix_names:                                                   # bracket the prefix rows: CLS (+ DIST …)
        draw = ImageDraw.Draw(canvas)
        y1 = max(len(w.prefix_names) * size / T, 2)
        draw.rectangle((margin - 6, 0, margin - 2, y1), fill=(0, 160, 0))
        draw.text((margin - 8, 0), "+".join(dict.fromkeys(w.prefix_names)), fill="black", font=f, anchor="ra")
    return render.caption(canvas, t("walk.caption.tokens", lang, tokens=T, dim=D), lang, font_size)


def position_patch_picture(w: Walkthrough, row: int, col: int, size: int = 448, lang: str = "en",
                           font_size: int | None = None) -> Image.Image:
    """How similar patch (row, col)'s position embedding is to every other patch's, over the crop (for a rotary
    model, how alike its rotation leaves one vector there and at every other patch; a model with neither: why there
    is nothing to show)."""
    i = w.patch_index(row, col)
    if w.position_similarity is None:      # the Position embeddings tab's own panel (viz.panels.files)
        return render.message_image(t("note.no_position_embeddings", lang), (420, 200), lang=lang)
    values = w.position_similarity[i].reshape(w.grid)
    base = _scaled_crop(w, size)
    image = render.overlay(base, values, "viridis", 0.7, vmin=-1.0, vmax=1.0, colorbar=True,
                           label=t("colorbar.cosine", lang), lang=lang, smooth=False,
                           font_size=font_size or _text(size))
    framed = render.mark_patch(image.crop((0, 0, *base.size)), row, col, w.grid, color=(255, 0, 0),
                               width=max(2, size // 150))
    image.paste(framed, (0, 0))
    return image


def attention_picture(w: Walkthrough, layer: int = -1, head: int | None = None, size: int = 448,
                      lang: str = "en", font_size: int | None = None) -> Image.Image:
    """Where the CLS token attends in ``layer`` (one head, or the mean of heads), in multiples of uniform
    attention (1 = 1/T), over the crop."""
    layer %= w.depth
    rows = w.cls_attention[layer]                                        # (H, T)
    row = rows.mean(axis=0) if head is None else rows[head]
    T = row.size
    values = row[len(w.prefix_names):].reshape(w.grid) * T
    name = t("name.layer_mean", lang, layer=layer) if head is None else t("name.layer_head", lang, layer=layer,
                                                                             head=head)
    vmin, vmax = float(values.min()), float(values.max())
    ticks = [vmax, 1.0, vmin] if vmin < 1.0 < vmax else None
    return render.overlay(_scaled_crop(w, size), values, alpha=0.6, colorbar=True,
                          label=f"{name}\n{t('colorbar.uniform', lang, tokens=T)}", lang=lang, ticks=ticks,
                          font_size=font_size or _text(size))


def logits_picture(w: Walkthrough, k: int = 5, lang: str = "en", narrow: bool = False) -> Image.Image:
    """The k most probable classes: their logits (left) and their probabilities after softmax (right); for a
    narrow screen ``screens.NARROW_INCHES`` wide (``viz.drawing.screens``)."""
    order = np.argsort(-w.probabilities, kind="stable")[:k][::-1]       # most probable at the top
    names = [w.labels[i] for i in order]
    height = 0.9 + 0.38 * len(order)
    if narrow:
        fig = plots.new_figure(screens.NARROW_INCHES, height, screens.NARROW_DPI)
        left = fig.add_axes((0.36, 0.26, 0.27, 0.66))
        right = fig.add_axes((0.69, 0.26, 0.27, 0.66), sharey=left)
    else:
        fig = plots.new_figure(7.2, height)
        left = fig.add_axes((0.30, 0.22, 0.30, 0.70))
        right = fig.add_axes((0.66, 0.22, 0.30, 0.70), sharey=left)
    y = np.arange(len(order))
    left.barh(y, w.logits[order], color="tab:gray", label=t("walk.legend.logit", lang))
    right.barh(y, w.probabilities[order], color="tab:orange", label=t("walk.legend.probability", lang))
    left.set_yticks(y, names, fontsize=screens.MIN_POINTS)
    right.tick_params(labelleft=False)
    right.set_xlim(0, 1)
    left.set_xlabel(t("walk.axis.logit", lang), fontsize=screens.MIN_POINTS)
    right.set_xlabel(t("walk.legend.probability" if narrow else "walk.axis.probability", lang),
                     fontsize=screens.MIN_POINTS)
    for ax in (left, right):
        ax.tick_params(axis="x", labelsize=screens.MIN_POINTS)
        ax.xaxis.set_major_locator(MaxNLocator(3))
        if not narrow:                  # on a phone the axes' names say it: two legends would cover the bars
            ax.legend(fontsize=screens.MIN_POINTS, loc="lower right")
    return plots.figure_to_image(use_language_font(fig, lang))


def _text(size: int | None) -> int:
    """The walk's text size beside a picture ``size`` pixels wide: about 1/32 of it, never below 12 pixels."""
    return max(12, (size or 448) // 32)
