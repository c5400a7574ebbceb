"""The inside views drawn: ``matplotlib.figure.Figure`` (never pyplot), texts from ``viz.i18n`` in English or Chinese.

Each picture is made from an ``InsideReport``'s arrays alone (no model), so a page redraws it cheaply:

- ``lens_strip_figure``: layer → the readout's top-1 class and the target's probability and rank;
- ``patch_lens_figure``: each patch token's own top-1 class after one layer, over the photo, with a legend of the
  most frequent classes; ``lens_figure``: the strip and every layer's patch map (the CLI's inside_lens.png);
- ``dla_figure``: the layers × heads table of direct logit attribution with the MLP column (diverging colours,
  0 white), the other parts in a line below, and beside it what one head moved from each patch
  (``head_sources_figure`` alone: the page's click on a head);
- ``dla_table_figure``: the table alone with its parts (the page's, next to its picture of a clicked head);
- ``heads_figure``: head importance, exact and estimated, side by side, with their Spearman ρ (chosen heads framed);
- ``patch_figure``: activation patching: the share moved per head and per (layer, token position).

The axes a person clicks on (the strip's layers, the tables' cells) are labelled ``CELLS``; ``Cells.of(fig)`` says
where their cells lie in the drawn picture, so a click on the page maps to a layer or a head without drawing again.
"""
from __future__ import annotations

from dataclasses import dataclass

import matplotlib
import numpy as np
from matplotlib.colors import ListedColormap, TwoSlopeNorm
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from ..drawing import screens
from ..drawing.fonts import use_language_font
from ..drawing.plots import new_figure
from ..i18n import language, t
from .report import DLAView, HeadsView, InsideReport, LensView, PatchedView

DIVERGING = "RdBu_r"       # red: pushes the target up; blue: down; white: 0
LEGEND_CLASSES = 9         # patch-lens classes named in the legend (the others grey)
OTHER_COLOUR = (0.78, 0.78, 0.78)
CHOSEN_COLOUR = "#fde68a"  # the layer whose patch lens the page shows
CELLS = "cells"            # the label of an axes whose cells (one per data unit, x and y) a click picks


@dataclass(frozen=True)
class Cells:
    """Where the clickable cells of a drawn figure lie, in the picture's pixels (origin top left): for each axes
    labelled ``CELLS``, its box (left, top, right, bottom) and its data limits (x0, x1, y0, y1); cell (row, column)
    is the unit square around the data point (column, row), as ``imshow`` draws a table."""
    boxes: tuple[tuple[float, float, float, float], ...]
    limits: tuple[tuple[float, float, float, float], ...]

    @classmethod
    def of(cls, fig: Figure) -> "Cells":
        width, height = fig.canvas.get_width_height()
        boxes, limits = [], []
        for ax in fig.axes:
            if ax.get_label() != CELLS:
                continue
            box = ax.get_position()
            boxes.append((float(box.x0 * width), float((1 - box.y1) * height), float(box.x1 * width),
                          float((1 - box.y0) * height)))
            limits.append(tuple(float(v) for v in (*ax.get_xlim(), *ax.get_ylim())))
        return cls(tuple(boxes), tuple(limits))

    def at(self, x: float, y: float) -> tuple[int, int] | None:
        """Pixel (x, y) -> (row, column) of the cell under it, or None (outside every table: labels, colour bar)."""
        for (left, top, right, bottom), (x0, x1, y0, y1) in zip(self.boxes, self.limits):
            if left <= x < right and top <= y < bottom:
                column = x0 + (x - left) / (right - left) * (x1 - x0)
                row = y1 + (y - top) / (bottom - top) * (y0 - y1)       # the top edge shows y1 (y0 at the bottom)
                return int(np.floor(row + 0.5)), int(np.floor(column + 0.5))
        return None


def _symmetric(values: np.ndarray) -> TwoSlopeNorm:
    """A colour scale centred on 0, as far on both sides as the largest |value| (never empty)."""
    top = float(np.nanmax(np.abs(values))) if np.size(values) and np.isfinite(values).any() else 1.0
    top = top or 1.0
    return TwoSlopeNorm(0.0, -top, top)


def _short(name: str, width: int = 18) -> str:
    return name if len(name) <= width else name[:width - 1] + "…"


# --- logit lens -------------------------------------------------------------------------------------------------

def _strip(ax, lens: LensView, names, lang: str, chosen: int | None = None, small: float = 7) -> None:
    """Bars: the target's probability per layer; line (right axis, log, 1 at the top): its rank; under each layer
    its number and the readout's top-1 class; the ``chosen`` layer shaded."""
    L = len(lens.top5)
    layers = np.arange(L)
    if chosen is not None:
        ax.axvspan(chosen - 0.5, chosen + 0.5, color=CHOSEN_COLOUR, zorder=0)
    ax.bar(layers, lens.target_probability, color="#d62728", alpha=0.75, width=0.6,
           label=t("inside.lens.legend.probability", lang))
    ax.set_ylim(0, 1.0)
    ax.set_xlim(-0.5, L - 0.5)                                  # layer l fills [l − ½, l + ½]: a click picks it
    ax.set_xticks(layers, [f"{l}: {_short(names[top.indices[0]])}" for l, top in enumerate(lens.top5)],
                  rotation=50, ha="right", rotation_mode="anchor")
    ax.set_ylabel(t("inside.lens.axis.probability", lang), fontsize=max(8, small))
    ax.tick_params(labelsize=small)
    rank = ax.twinx()
    rank.plot(layers, lens.target_rank, color="#1f77b4", marker="o", markersize=3, linewidth=1.2,
              label=t("inside.lens.legend.rank", lang))
    rank.set_yscale("log")
    rank.set_ylim(max(2 * len(names), 10), 0.8)                # rank 1 at the top
    rank.set_ylabel(t("inside.lens.axis.rank", lang), fontsize=max(8, small))
    rank.tick_params(labelsize=small)
    handles = ax.get_legend_handles_labels()[0] + rank.get_legend_handles_labels()[0]
    ax.legend(handles=handles, fontsize=max(6.5, small), loc="upper left")


def lens_strip_figure(report: InsideReport, lang: str = "en", chosen: int | None = None,
                      narrow: bool = False) -> Figure:
    """Layer → top-1 class and the target's probability (bars) and rank (line, right axis, 1 at the top); the
    ``chosen`` layer (the page's patch lens) shaded. ``narrow``: for a phone (``viz.drawing.screens``)."""
    lang = language(lang)
    lens = _lens(report)
    title = t("inside.lens.title", lang, target=report.target["name"])
    if narrow:
        fig = new_figure(screens.NARROW_INCHES, 4.8, screens.NARROW_DPI)
        ax = fig.add_axes((0.17, 0.30, 0.66, 0.52), label=CELLS)
        _strip(ax, lens, report.names, lang, chosen, small=screens.MIN_POINTS)
        ax.get_legend().remove()
        handles = ax.get_legend_handles_labels()[0] + fig.axes[-1].get_legend_handles_labels()[0]
        fig.legend(handles=handles, fontsize=screens.MIN_POINTS, loc="upper center", ncol=1, frameon=False,
                   bbox_to_anchor=(0.5, 0.915))
        fig.suptitle(screens.wrap(title, 9, 3.4), fontsize=9, y=0.995, va="top")
        return use_language_font(fig, lang)
    fig = new_figure(max(6.0, 0.5 * len(lens.top5) + 2), 4.0)
    ax = fig.add_axes((0.10, 0.33, 0.78, 0.57), label=CELLS)
    _strip(ax, lens, report.names, lang, chosen)
    fig.suptitle(title, fontsize=10)
    return use_language_font(fig, lang)


def _lens(report: InsideReport) -> LensView:
    if report.lens is None:
        raise ValueError("This report has no lens: run the 'lens' view.")
    return report.lens


def _class_colours(maps: np.ndarray, names) -> tuple[list[int], np.ndarray]:
    """The LEGEND_CLASSES most frequent classes of ``maps`` (most frequent first) and a colour table for every class
    index in the maps (theirs from tab10 + tab20b, the rest grey), as an (n + 1, 3) lookup over ranks."""
    values, counts = np.unique(maps, return_counts=True)
    frequent = [int(v) for v in values[np.argsort(-counts, kind="stable")][:LEGEND_CLASSES]]
    palette = [matplotlib.colormaps["tab10"](i)[:3] for i in range(10)]
    return frequent, np.array(palette[:len(frequent)] + [OTHER_COLOUR])


def _class_image(patches: np.ndarray, frequent: list[int]) -> np.ndarray:
    """(gh, gw) class indices -> (gh, gw) colour rank: position in ``frequent``, or len(frequent) for the others."""
    ranks = np.full(patches.shape, len(frequent))
    for r, c in enumerate(frequent):
        ranks[patches == c] = r
    return ranks


def _patch_map(ax, patches: np.ndarray, frequent: list[int], colours: np.ndarray, photo: np.ndarray | None,
               title: str, size: float = 7.5) -> None:
    gh, gw = patches.shape
    h, w = photo.shape[:2] if photo is not None else (gh, gw)
    extent = (0, w, h, 0)
    if photo is not None:
        ax.imshow(photo, extent=extent)
    ax.imshow(_class_image(patches, frequent), cmap=ListedColormap(colours), vmin=-0.5, vmax=len(colours) - 0.5,
              alpha=0.7 if photo is not None else 1.0, extent=extent, interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title, fontsize=size)


def _legend(fig: Figure, frequent: list[int], colours: np.ndarray, names, lang: str, y: float, ncol: int = 5,
            size: float = 7) -> None:
    handles = [Patch(color=colours[i], label=_short(names[c], 24)) for i, c in enumerate(frequent)]
    handles.append(Patch(color=OTHER_COLOUR, label=t("inside.lens.other", lang)))
    fig.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, y), ncol=min(ncol, len(handles)),
               fontsize=size, frameon=False)


def patch_lens_figure(report: InsideReport, layer: int, photo: np.ndarray | None = None, lang: str = "en",
                      narrow: bool = False) -> Figure:
    """Each patch token read alone after ``layer``: its own top-1 class, over ``photo`` ((H, W, 3) uint8, the crop
    the model saw) when given, with a legend of the most frequent classes."""
    lang = language(lang)
    lens = _lens(report)
    L = len(lens.top5)
    if not 0 <= layer < L:
        raise ValueError(f"No layer {layer}! Layers 0 to {L - 1}.")
    patches = lens.patches[layer]
    frequent, colours = _class_colours(patches, report.names)
    if narrow:                       # the legend two to a row under the map, every text at least MIN_POINTS
        fig = new_figure(screens.NARROW_INCHES, 5.6, screens.NARROW_DPI)
        ax = fig.add_axes((0.1, 0.3, 0.8, 0.58))
        _patch_map(ax, patches, frequent, colours, photo, t("name.layer", lang, layer=layer), screens.MIN_POINTS)
        _legend(fig, frequent, colours, report.names, lang, 0.0, ncol=2, size=screens.MIN_POINTS)
    else:
        fig = new_figure(4.4, 5.0)
        ax = fig.add_axes((0.08, 0.2, 0.84, 0.72))
        _patch_map(ax, patches, frequent, colours, photo, t("name.layer", lang, layer=layer))
        _legend(fig, frequent, colours, report.names, lang, 0.0, ncol=3)
    fig.suptitle(t("inside.lens.patches", lang), fontsize=9)
    if lens.approximate:
        fig.text(0.5, 0.95, screens.wrap(t("inside.lens.approximate", lang), 8, 3.4) if narrow else
                 t("inside.lens.approximate", lang), ha="center", va="top", fontsize=8 if narrow else 7,
                 color="firebrick")
    return use_language_font(fig, lang)


def lens_figure(report: InsideReport, photo: np.ndarray | None = None, lang: str = "en") -> Figure:
    """The CLI's inside_lens.png: the strip on top, every layer's patch map below (rows of 6), one legend."""
    lang = language(lang)
    lens = _lens(report)
    L = len(lens.top5)
    cols = min(6, L)
    rows = -(-L // cols)
    cell = 1.55                                                      # inches per patch map, with its title
    width = max(7.5, 1.5 * cols + 1)
    parts = [0.45, 2.0, 1.0, 0.35, rows * cell, 0.65]               # title, strip, its labels, maps' title, maps, legend
    height = sum(parts)
    y = lambda inches_from_top: 1 - inches_from_top / height         # noqa: E731  (figure fraction)
    fig = new_figure(width, height)
    fig.suptitle(t("inside.lens.title", lang, target=report.target["name"]), fontsize=10, y=y(0.12))
    ax = fig.add_axes((0.09, y(parts[0] + parts[1]), 0.80, parts[1] / height))
    _strip(ax, lens, report.names, lang)
    maps_top = sum(parts[:4])
    fig.text(0.5, y(maps_top - 0.1), t("inside.lens.patches", lang), ha="center", fontsize=9)
    frequent, colours = _class_colours(lens.patches, report.names)
    for l in range(L):
        r, c = divmod(l, cols)
        ax = fig.add_axes((0.03 + c * 0.94 / cols, y(maps_top + (r + 1) * cell), 0.94 / cols - 0.01,
                           (cell - 0.25) / height))
        _patch_map(ax, lens.patches[l], frequent, colours, photo, t("name.layer", lang, layer=l))
    _legend(fig, frequent, colours, report.names, lang, 0.0)
    if lens.approximate:
        fig.text(0.5, y(0.32), t("inside.lens.approximate", lang), ha="center", fontsize=7, color="firebrick")
    return use_language_font(fig, lang)


# --- direct logit attribution -----------------------------------------------------------------------------------

def _dla(report: InsideReport) -> DLAView:
    if report.dla is None:
        raise ValueError("This report has no direct logit attribution: run the 'dla' view.")
    return report.dla


def target_label(report: InsideReport) -> str:
    """The score's name: the target class, or "A − B" in contrast mode."""
    name = report.target["name"]
    return name if report.contrast is None else f"{name} − {report.contrast['name']}"


def _heatmap(ax, values: np.ndarray, norm, xlabels: list[str], lang: str, annotate: bool,
             narrow: bool = False) -> object:
    """A table of values in diverging colours, layers down; ``annotate`` writes each value in its cell (on a narrow
    screen only where the cells have room for ``screens.MIN_POINTS`` text)."""
    L, C = values.shape
    small = screens.MIN_POINTS if narrow else 7
    image = ax.imshow(values, cmap=DIVERGING, norm=norm, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(C), xlabels, fontsize=small)
    ax.set_yticks(range(L), [str(l) for l in range(L)], fontsize=small)
    ax.set_ylabel(t("axis.layer", lang), fontsize=max(8, small))
    box = ax.get_position()
    width, height = ax.figure.get_size_inches()
    room = box.width * width / C * 72 >= 5 * 0.55 * screens.MIN_POINTS + 2 and box.height * height / L * 72 >= 10
    if annotate and (not narrow or room):                 # "-1.02": five characters at MIN_POINTS
        top = max(abs(norm.vmin), abs(norm.vmax))
        for l in range(L):
            for c in range(C):
                if np.isfinite(values[l, c]):
                    ax.text(c, l, f"{values[l, c]:.2f}", ha="center", va="center",
                            fontsize=screens.MIN_POINTS if narrow else 5.5,
                            color="white" if abs(values[l, c]) > 0.6 * top else "black")
    return image


def dla_table(dla: DLAView) -> np.ndarray:
    """(L, H + 1): each head's term, then the layer's MLP term (the columns ``dla_figure`` draws)."""
    return np.concatenate([dla.heads, dla.mlp[:, None]], axis=1)


def strongest_head(dla: DLAView) -> tuple[int, int]:
    """The head with the largest |term| (the source map ``dla_figure`` shows when none is chosen)."""
    l, h = np.unravel_index(int(np.argmax(np.abs(dla.heads))), dla.heads.shape)
    return int(l), int(h)


def _sources(ax, fig: Figure, dla: DLAView, layer: int, head: int, photo: np.ndarray | None, lang: str,
             narrow: bool = False) -> None:
    values = dla.source_map(layer, head)
    gh, gw = values.shape
    h, w = photo.shape[:2] if photo is not None else (gh, gw)
    extent = (0, w, h, 0)
    if photo is not None:
        ax.imshow(photo, extent=extent)
    image = ax.imshow(values, cmap=DIVERGING, norm=_symmetric(values), alpha=0.75 if photo is not None else 1.0,
                      extent=extent, interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([])
    prefix = float(dla.sources[layer, head, :dla.num_prefix].sum())
    title = t("inside.dla.sources", lang, layer=layer, head=head, value=float(dla.heads[layer, head]))
    if narrow:
        title = screens.wrap(title, screens.MIN_POINTS, 3.3)
    ax.set_title(title + "\n" + t("inside.dla.prefix", lang, value=prefix), fontsize=screens.MIN_POINTS if narrow
                 else 7.5)
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.03).ax.tick_params(labelsize=screens.MIN_POINTS if narrow else 6)


def head_sources_figure(report: InsideReport, layer: int, head: int, photo: np.ndarray | None = None,
                        lang: str = "en", narrow: bool = False) -> Figure:
    """What one head moved into the score from each patch (its DLA term split over its source tokens), over the
    photo, diverging colours centred on 0: the page's picture for a clicked head. ``narrow``: for a phone."""
    lang = language(lang)
    if narrow:
        fig = new_figure(screens.NARROW_INCHES, 4.0, screens.NARROW_DPI)
        ax = fig.add_axes((0.03, 0.03, 0.74, 0.74))
    else:
        fig = new_figure(4.2, 4.4)
        ax = fig.add_axes((0.05, 0.05, 0.78, 0.78))
    _sources(ax, fig, _dla(report), layer, head, photo, lang, narrow)
    return use_language_font(fig, lang)


def _dla_table(fig: Figure, box: tuple[float, float, float, float], report: InsideReport,
               chosen: tuple[int, int] | None, lang: str, narrow: bool = False) -> None:
    """The layers × (heads | MLP) table in ``box`` (its cells clickable), ``chosen`` head framed, the title, and the
    other parts with their sum written along the bottom."""
    dla = _dla(report)
    table = dla_table(dla)
    L, C = table.shape
    ax = fig.add_axes(box, label=CELLS)
    labels = [str(i) for i in range(C - 1)] + [t("inside.dla.mlp", lang)]
    image = _heatmap(ax, table, _symmetric(table), labels, lang, annotate=C * L <= 400, narrow=narrow)
    ax.axvline(C - 1.5, color="black", linewidth=1.0)
    ax.set_xlabel(t("axis.head", lang), fontsize=8)
    if chosen is not None:
        _frame(ax, *chosen)
    small = screens.MIN_POINTS if narrow else 7
    bar = fig.colorbar(image, ax=ax, fraction=0.05, pad=0.02)
    bar.set_label(t("inside.dla.colorbar", lang), fontsize=small)
    bar.ax.tick_params(labelsize=small)
    title = t("inside.dla.title", lang, target=target_label(report), logit=dla.logit)
    parts = t("inside.dla.parts", lang, embedding=dla.embedding, bias=float(dla.attention_bias.sum()),
              heads=float(dla.heads.sum()), mlp=float(dla.mlp.sum()), head_bias=dla.head_bias, total=dla.total())
    if narrow:
        title, parts = screens.wrap(title, 9, 3.4), screens.wrap(parts, small, 3.4)
    fig.suptitle(title, fontsize=9 if narrow else 10)
    fig.text(0.02, 0.01 if narrow else 0.03, parts, fontsize=small, va="bottom")


def _frame(ax, row: int, column: int) -> None:
    """A black frame around one cell of a table."""
    ax.add_patch(Rectangle((column - 0.5, row - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=2.0))


def dla_figure(report: InsideReport, photo: np.ndarray | None = None, head: tuple[int, int] | None = None,
               lang: str = "en") -> Figure:
    """The CLI's inside_dla.png: layers × (heads | MLP) table of logit contributions, the other parts written below
    it, and what ``head`` (default: the strongest) moved from each patch."""
    lang = language(lang)
    dla = _dla(report)
    L, C = dla_table(dla).shape
    layer, h = strongest_head(dla) if head is None else head
    fig = new_figure(max(7.5, 0.5 * C + 5.5), max(4.6, 0.3 * L + 1.8))
    _dla_table(fig, (0.07, 0.17, 0.40, 0.70), report, None, lang)
    if dla.sources is not None:
        _sources(fig.add_axes((0.58, 0.17, 0.34, 0.62)), fig, dla, layer, h, photo, lang)
    return use_language_font(fig, lang)


def dla_table_figure(report: InsideReport, head: tuple[int, int] | None = None, lang: str = "en",
                     narrow: bool = False) -> Figure:
    """The table alone (the page's: a click on a head shows its ``head_sources_figure`` beside it), ``head``
    framed. ``narrow``: for a phone, its parts in lines under it, numbers in the cells only where they fit."""
    lang = language(lang)
    L, C = dla_table(_dla(report)).shape
    if narrow:
        height = max(4.6, 0.3 * L + 2.6)
        fig = new_figure(screens.NARROW_INCHES, height, screens.NARROW_DPI)
        _dla_table(fig, (0.12, 1.2 / height, 0.66, 1 - 2.0 / height), report, head, lang, narrow=True)
        return use_language_font(fig, lang)
    fig = new_figure(max(5.2, 0.45 * C + 3.4), max(4.6, 0.3 * L + 1.8))
    _dla_table(fig, (0.10, 0.17, 0.66, 0.70), report, head, lang)
    return use_language_font(fig, lang)


# --- head importance --------------------------------------------------------------------------------------------

def heads_figure(report: InsideReport, lang: str = "en", marked=(), narrow: bool = False) -> Figure:
    """The CLI's inside_heads.png: Δ logit when each head alone is ablated, exact and by attribution patching, on
    one diverging scale, with the Spearman ρ between them; the heads ``marked`` [(layer, head)] framed (the page's
    picked heads)."""
    lang = language(lang)
    heads: HeadsView | None = report.heads
    if heads is None:
        raise ValueError("This report has no head importance: run the 'heads' view.")
    tables = [(t("inside.heads.exact", lang), heads.delta), (t("inside.heads.linear", lang), heads.delta_linear)]
    tables = [(title, v) for title, v in tables if v is not None]
    L, H = heads.delta_linear.shape
    norm = _symmetric(np.concatenate([v.ravel() for _, v in tables]))
    title = t("inside.heads.title", lang, target=target_label(report),
              ablation=t(f"inside.ablation.{heads.ablation}", lang))
    if narrow:                                            # the tables one under the other, the colour bar beside
        title = screens.wrap(title, 9, 3.4)
        table_h = max(2.4, 0.22 * L + 0.4)
        height = 1.2 + len(tables) * (table_h + 0.75)
        fig = new_figure(screens.NARROW_INCHES, height, screens.NARROW_DPI)
        boxes = [(0.14, 1 - (1.2 + (i + 1) * (table_h + 0.75) - 0.45) / height, 0.56, table_h / height)
                 for i in range(len(tables))]
        bar_box = (0.76, boxes[-1][1], 0.035, boxes[0][1] + boxes[0][3] - boxes[-1][1])
    else:
        fig = new_figure(max(6.5, 0.55 * H * len(tables) + 3), max(4.4, 0.3 * L + 1.8))
        width = 0.74 / len(tables)
        boxes = [(0.08 + i * (width + 0.02), 0.12, width - 0.06, 0.72) for i in range(len(tables))]
        bar_box = (0.85, 0.12, 0.02, 0.72)
    small = screens.MIN_POINTS if narrow else 7
    image = None
    for box, (name, values) in zip(boxes, tables):
        ax = fig.add_axes(box, label=CELLS)
        image = _heatmap(ax, values, norm, [str(h) for h in range(H)], lang, annotate=H * L <= 200, narrow=narrow)
        for layer, head in marked:
            _frame(ax, layer, head)
        ax.set_xlabel(t("axis.head", lang), fontsize=8)
        ax.set_title(name, fontsize=8)
    bar = fig.colorbar(image, cax=fig.add_axes(bar_box))
    bar.set_label(t("inside.heads.colorbar", lang), fontsize=small)
    bar.ax.tick_params(labelsize=small)
    if heads.spearman is not None:
        title += "\n" + t("inside.heads.spearman", lang, rho=heads.spearman)
    fig.suptitle(title, fontsize=9, y=0.995 if narrow else 0.98, va="top")
    return use_language_font(fig, lang)


# --- activation patching ----------------------------------------------------------------------------------------

def patch_figure(report: InsideReport, lang: str = "en", narrow: bool = False) -> Figure:
    """The CLI's inside_patch.png: the share of the score difference moved by each head patched from the other
    photo (exact), and by the stream entering each layer at each token position (estimate)."""
    lang = language(lang)
    patched: PatchedView | None = report.patched
    if patched is None:
        raise ValueError("This report has no patching: give a second photo.")
    L, H = patched.heads.shape
    small = screens.MIN_POINTS if narrow else 7
    title = t("inside.patch.title", lang, source=patched.source, target=patched.target["name"])
    residual_title = t("inside.patch.residual", lang)
    if narrow:                                            # the two tables one under the other, full width
        title, residual_title = screens.wrap(title, 9, 3.4), screens.wrap(residual_title, 8, 2.7)
        table_h = max(2.4, 0.22 * L + 0.4)
        height = 1.0 + 2 * (table_h + 1.0) + 0.3
        fig = new_figure(screens.NARROW_INCHES, height, screens.NARROW_DPI)
        top = lambda i: 1 - (1.0 + i * (table_h + 1.0) + 0.5 + table_h) / height   # noqa: E731
        heads_box, heads_bar = (0.14, top(0), 0.62, table_h / height), (0.8, top(0), 0.035, table_h / height)
        stream_box, stream_bar = (0.14, top(1), 0.62, table_h / height), (0.8, top(1), 0.035, table_h / height)
    else:
        fig = new_figure(max(8.5, 0.5 * H + 6.5), max(4.4, 0.3 * L + 1.8))
        heads_box, heads_bar = (0.06, 0.14, 0.22, 0.70), (0.29, 0.14, 0.012, 0.70)
        stream_box, stream_bar = (0.37, 0.14, 0.50, 0.70), (0.89, 0.14, 0.015, 0.70)
    ax = fig.add_axes(heads_box)
    image = _heatmap(ax, patched.heads, _symmetric(patched.heads), [str(h) for h in range(H)], lang,
                     annotate=H * L <= 200, narrow=narrow)
    ax.set_xlabel(t("axis.head", lang), fontsize=8)
    ax.set_title(t("inside.patch.heads", lang), fontsize=8)
    fig.colorbar(image, cax=fig.add_axes(heads_bar)).ax.tick_params(labelsize=small if narrow else 6)
    # the readout's own tokens take most of the stream's share late in depth: the scale is the patches', so that
    # their shares show, and a saturated prefix column says it is larger
    ax = fig.add_axes(stream_box)
    image = ax.imshow(patched.residual, cmap=DIVERGING, norm=_symmetric(patched.residual[:, patched.num_prefix:]),
                      aspect="auto", interpolation="nearest")
    ax.axvline(patched.num_prefix - 0.5, color="black", linewidth=0.8)
    ax.set_yticks(range(L), [str(l) for l in range(L)], fontsize=small)
    ax.tick_params(labelsize=small)
    ax.set_xlabel(t("inside.patch.axis.token", lang), fontsize=8)
    ax.set_title(residual_title, fontsize=8)
    bar = fig.colorbar(image, cax=fig.add_axes(stream_bar), extend="both")
    bar.set_label(t("inside.patch.colorbar", lang), fontsize=small)
    bar.ax.tick_params(labelsize=small)
    fig.suptitle(title, fontsize=9 if narrow else 10, y=0.995 if narrow else 0.98, va="top")
    return use_language_font(fig, lang)
