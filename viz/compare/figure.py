"""Two checkpoints on the same photo, as pictures: the maps of A and B on the common photo with B − A
(``pair_overlays``), and everything on one Figure (``comparison_figure``, ``comparison_image``: compare.png and the
page's Compare tab)."""
from __future__ import annotations

import textwrap

import numpy as np
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from PIL import Image

from ..drawing import plots, render, screens
from ..drawing.fonts import use_language_font
from ..i18n import language, t
from .comparison import ClassChange, Comparison, Side

DIFFERENCE_CMAP = "RdBu_r"   # diverging: blue where A puts more mass, red where B does, white where equal


def pair_overlays(c: Comparison, name: str, cmap: str = render.DEFAULT_CMAP, alpha: float = 0.6,
                  colorbar: bool = True) -> tuple[Image.Image, Image.Image, Image.Image]:
    """Map ``name`` of A and of B on the common photo (one shared colour scale), and B − A (diverging, centred on 0)."""
    p = c.maps[name]
    lo, hi = float(min(p.a.min(), p.b.min())), float(max(p.a.max(), p.b.max()))
    m = float(np.abs(p.difference).max()) or 1.0              # all-zero difference: drawn as the white middle
    out = [render.overlay(c.photo, values, cmap, alpha, vmin=lo, vmax=hi, colorbar=colorbar, label=f"{who} (1 = uniform)")
           for values, who in ((p.a, "A"), (p.b, "B"))]
    out.append(render.overlay(c.photo, p.difference, DIFFERENCE_CMAP, 0.75, vmin=-m, vmax=m, colorbar=colorbar,
                              label="B - A"))  # ASCII: Pillow's bundled font has no minus sign
    return out[0], out[1], out[2]


def _draw_distances(ax, c: Comparison, names: bool = True, lang: str = "en", size: float = 7) -> None:
    for d, colour, marker, who in ((c.distance_a, "tab:blue", "o", "A"), (c.distance_b, "tab:orange", "^", "B")):
        L, H = d.shape
        ax.scatter(np.repeat(np.arange(L), H), d.ravel(), s=12, color=colour, marker=marker, alpha=0.6,
                   edgecolors="none")
        ax.plot(np.arange(L), d.mean(axis=1), color=colour, linewidth=1.2)
    ax.set_xlabel(t("compare.depth", lang), fontsize=max(8, size))
    ax.set_ylabel(t("compare.distance", lang, unit=c.unit_in(lang)), fontsize=max(8, size))
    ax.tick_params(labelsize=max(7, size))
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)

    def label(who: str, side: Side) -> str:
        return f"{who}: {textwrap.shorten(side.name, 38, placeholder='…')} ({side.sha256})" if names else who

    ax.legend(handles=[Line2D([], [], color="tab:blue", marker="o", label=label("A", c.a)),
                       Line2D([], [], color="tab:orange", marker="^", label=label("B", c.b))],
              fontsize=size, loc="upper left", title=t("compare.dots", lang), title_fontsize=size)


def _draw_top(ax, rows: tuple[ClassChange, ...], title: str, lang: str = "en", size: float = 8) -> None:
    y = np.arange(len(rows))[::-1].astype(float)
    a = [r.a if r.a is not None else 0.0 for r in rows]
    b = [r.b if r.b is not None else 0.0 for r in rows]
    ax.barh(y + 0.19, a, height=0.36, color="tab:blue", label="A")
    ax.barh(y - 0.19, b, height=0.36, color="tab:orange", label="B")
    for yi, r, pa, pb in zip(y, rows, a, b):
        text = t("compare.not_available", lang) if r.change is None else f"Δ {r.change:+.3f}"
        ax.text(max(pa, pb) + 0.02, yi, text, va="center", fontsize=size)
    ax.set_yticks(y, [textwrap.shorten(r.label, 24, placeholder="…") for r in rows], fontsize=size)
    ax.set_xlim(0, 1.25)
    ax.set_xticks([0, 0.5, 1.0])
    ax.tick_params(axis="x", labelsize=size)
    ax.set_xlabel(t("compare.probability", lang), fontsize=size)
    ax.set_title(title, fontsize=max(9, size))
    ax.legend(fontsize=max(7, size), loc="lower right")


def _draw_image(fig: Figure, ax, image: Image.Image, title: str, cmap: str, lo: float, hi: float,
                size: float = 7) -> None:
    ax.imshow(np.asarray(image))
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title, fontsize=max(9, size) if size < 8 else size)
    bar = fig.colorbar(ScalarMappable(Normalize(lo, hi), cmap), ax=ax, fraction=0.046, pad=0.02)
    bar.ax.tick_params(labelsize=size)


def _map_rows(c: Comparison, cmap: str, alpha: float, lang: str):
    """For each map: its title and its three pictures (A, B, B − A) with their titles and colour ranges."""
    for name, p in c.maps.items():
        images = pair_overlays(c, name, cmap, alpha, colorbar=False)
        lo, hi = float(min(p.a.min(), p.b.min())), float(max(p.a.max(), p.b.max()))
        m = float(np.abs(p.difference).max()) or 1.0
        title = c.title_in(name, lang)
        yield title, ((images[0], t("compare.map_a", lang, title=title), cmap, (lo, hi)),
                      (images[1], t("compare.map_b", lang, title=title), cmap, (lo, hi)),
                      (images[2], t("compare.difference", lang, tv=p.stats()["total_variation"]), DIFFERENCE_CMAP,
                       (-m, m)))


def comparison_figure(c: Comparison, cmap: str = render.DEFAULT_CMAP, alpha: float = 0.6, lang: str = "en",
                      narrow: bool = False) -> Figure:
    """Everything on one Figure: the two top-k lists with the change, the mean attention distance of both, then for
    each map (rollout, the chosen block's CLS attention, any extra maps) A, B and B − A; the alignment underneath.
    Texts in ``lang``; ``narrow``: for a phone, every chart full width and the maps' titles above their row
    (``viz.drawing.screens``)."""
    lang = language(lang)
    if narrow:
        return _narrow_figure(c, cmap, alpha, lang)
    rows = 1 + len(c.maps)
    fig = plots.new_figure(13.0, 1.3 + 3.1 * rows)
    grid = fig.add_gridspec(rows, 3, left=0.09, right=0.96, top=1 - 0.9 / fig.get_figheight(),
                            bottom=0.55 / fig.get_figheight(), hspace=0.3, wspace=0.35)
    fig.suptitle(t("compare.title", lang, a=c.a.label, b=c.b.label), fontsize=11, y=1 - 0.2 / fig.get_figheight())
    _draw_top(fig.add_subplot(grid[0, 0]), c.top_a, t("compare.top_a", lang, k=len(c.top_a)), lang)
    _draw_top(fig.add_subplot(grid[0, 1]), c.top_b, t("compare.top_b", lang, k=len(c.top_b)), lang)
    _draw_distances(fig.add_subplot(grid[0, 2]), c, names=False, lang=lang)   # the names are in the title
    for row, (_, pictures) in enumerate(_map_rows(c, cmap, alpha, lang), start=1):
        for col, (image, title, colours, (vlo, vhi)) in enumerate(pictures):
            _draw_image(fig, fig.add_subplot(grid[row, col]), image, textwrap.shorten(title, 70, placeholder="…"),
                        colours, vlo, vhi)
    fig.text(0.5, 0.12 / fig.get_figheight(), textwrap.fill(c.alignment_in(lang), 190), ha="center", va="bottom",
             fontsize=8)
    return use_language_font(fig, lang)


def _narrow_figure(c: Comparison, cmap: str, alpha: float, lang: str) -> Figure:
    """``comparison_figure`` for a narrow screen: ``screens.NARROW_INCHES`` wide, the two top-k charts and the
    distances one under the other, then each map's A and B side by side with B − A under them; no text below
    ``screens.MIN_POINTS``."""
    small = screens.MIN_POINTS
    width = screens.NARROW_INCHES
    title = "\n".join(screens.wrap(f"{who}: {side.label}", 9, 3.3) for who, side in zip("AB", (c.a, c.b)))
    alignment = screens.wrap(c.alignment_in(lang), small, 3.2)
    chart, pair, difference = 2.3, 2.2, 2.0
    head = 0.2 + 0.17 * (title.count("\n") + 1)
    foot = 0.15 + 0.16 * (alignment.count("\n") + 1)
    height = head + 3 * chart + len(c.maps) * (pair + difference) + foot
    fig = plots.new_figure(width, height, screens.NARROW_DPI)
    fig.suptitle(title, fontsize=9, y=1 - 0.05 / height, va="top")
    y = head

    def box(left: float, inches: float, w: float, below: float, above: float = 0.4) -> tuple:
        return (left, 1 - (y + inches - below) / height, w, (inches - below - above) / height)

    for rows, key in ((c.top_a, "compare.top_a"), (c.top_b, "compare.top_b")):
        _draw_top(fig.add_axes(box(0.3, chart, 0.66, 0.5)), rows,
                  screens.wrap(t(key, lang, k=len(rows)), 9, 3.3), lang, small)
        y += chart
    _draw_distances(fig.add_axes(box(0.2, chart, 0.76, 0.45, 0.15)), c, names=False, lang=lang, size=small)
    y += chart
    for name, pictures in _map_rows(c, cmap, alpha, lang):
        fig.text(0.5, 1 - (y + 0.1) / height, screens.wrap(name, 9, 3.4), ha="center", va="top", fontsize=9)
        for col, (image, _, colours, (vlo, vhi)) in enumerate(pictures[:2]):
            _draw_image(fig, fig.add_axes((0.03 + col * 0.5, 1 - (y + pair - 0.05) / height, 0.36, 1.6 / height)),
                        image, "AB"[col], colours, vlo, vhi, size=small)
        y += pair
        image, picture_title, colours, (vlo, vhi) = pictures[2]
        _draw_image(fig, fig.add_axes((0.28, 1 - (y + difference - 0.1) / height, 0.36, 1.6 / height)), image,
                    screens.wrap(picture_title, small, 3.2), colours, vlo, vhi, size=small)
        y += difference
    fig.text(0.03, 0.05 / height, alignment, ha="left", va="bottom", fontsize=small)
    return use_language_font(fig, lang)


def comparison_image(c: Comparison, cmap: str = render.DEFAULT_CMAP, alpha: float = 0.6, lang: str = "en",
                     narrow: bool = False) -> Image.Image:
    """``comparison_figure`` drawn as a PIL RGB image (compare.png)."""
    return plots.figure_to_image(comparison_figure(c, cmap, alpha, lang, narrow))
