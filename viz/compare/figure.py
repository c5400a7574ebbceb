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

from ..drawing import plots, render
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


def _draw_distances(ax, c: Comparison, names: bool = True) -> None:
    for d, colour, marker, who in ((c.distance_a, "tab:blue", "o", "A"), (c.distance_b, "tab:orange", "^", "B")):
        L, H = d.shape
        ax.scatter(np.repeat(np.arange(L), H), d.ravel(), s=12, color=colour, marker=marker, alpha=0.6,
                   edgecolors="none")
        ax.plot(np.arange(L), d.mean(axis=1), color=colour, linewidth=1.2)
    ax.set_xlabel("Network depth (block)")
    ax.set_ylabel(f"Mean attention distance\n({c.distance_unit})", fontsize=8)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    def label(who: str, side: Side) -> str:
        return f"{who}: {textwrap.shorten(side.name, 38, placeholder='…')} ({side.sha256})" if names else who

    ax.legend(handles=[Line2D([], [], color="tab:blue", marker="o", label=label("A", c.a)),
                       Line2D([], [], color="tab:orange", marker="^", label=label("B", c.b))],
              fontsize=7, loc="upper left", title="dots: heads, line: mean of heads", title_fontsize=7)


def _draw_top(ax, rows: tuple[ClassChange, ...], title: str) -> None:
    y = np.arange(len(rows))[::-1].astype(float)
    a = [r.a if r.a is not None else 0.0 for r in rows]
    b = [r.b if r.b is not None else 0.0 for r in rows]
    ax.barh(y + 0.19, a, height=0.36, color="tab:blue", label="A")
    ax.barh(y - 0.19, b, height=0.36, color="tab:orange", label="B")
    for yi, r, pa, pb in zip(y, rows, a, b):
        text = "Δ n/a" if r.change is None else f"Δ {r.change:+.3f}"
        ax.text(max(pa, pb) + 0.02, yi, text, va="center", fontsize=8)
    ax.set_yticks(y, [textwrap.shorten(r.label, 24, placeholder="…") for r in rows], fontsize=8)
    ax.set_xlim(0, 1.25)
    ax.set_xticks([0, 0.5, 1.0])
    ax.set_xlabel("probability", fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="lower right")


def _draw_image(fig: Figure, ax, image: Image.Image, title: str, cmap: str, lo: float, hi: float) -> None:
    ax.imshow(np.asarray(image))
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title, fontsize=9)
    bar = fig.colorbar(ScalarMappable(Normalize(lo, hi), cmap), ax=ax, fraction=0.046, pad=0.02)
    bar.ax.tick_params(labelsize=7)


def comparison_figure(c: Comparison, cmap: str = render.DEFAULT_CMAP, alpha: float = 0.6) -> Figure:
    """Everything on one Figure: the two top-k lists with the change, the mean attention distance of both, then for
    each map (rollout, the chosen block's CLS attention, any extra maps) A, B and B − A; the alignment underneath."""
    rows = 1 + len(c.maps)
    fig = plots.new_figure(13.0, 1.3 + 3.1 * rows)
    grid = fig.add_gridspec(rows, 3, left=0.09, right=0.96, top=1 - 0.9 / fig.get_figheight(),
                            bottom=0.55 / fig.get_figheight(), hspace=0.3, wspace=0.35)
    fig.suptitle(f"A: {c.a.label}    vs    B: {c.b.label}", fontsize=11, y=1 - 0.2 / fig.get_figheight())
    _draw_top(fig.add_subplot(grid[0, 0]), c.top_a, f"A's top-{len(c.top_a)}, with B's probability (Δ = B − A)")
    _draw_top(fig.add_subplot(grid[0, 1]), c.top_b, f"B's top-{len(c.top_b)}, with A's probability (Δ = B − A)")
    _draw_distances(fig.add_subplot(grid[0, 2]), c, names=False)   # the names are in the title
    for row, (name, p) in enumerate(c.maps.items(), start=1):
        images = pair_overlays(c, name, cmap, alpha, colorbar=False)
        lo, hi = float(min(p.a.min(), p.b.min())), float(max(p.a.max(), p.b.max()))
        m = float(np.abs(p.difference).max()) or 1.0
        tv = p.stats()["total_variation"]
        for col, (image, title, colours, (vlo, vhi)) in enumerate((
                (images[0], f"A: {p.title}", cmap, (lo, hi)),
                (images[1], f"B: {p.title}", cmap, (lo, hi)),
                (images[2], f"B − A (total variation {tv:.3f})", DIFFERENCE_CMAP, (-m, m)))):
            _draw_image(fig, fig.add_subplot(grid[row, col]), image, textwrap.shorten(title, 70, placeholder="…"),
                        colours, vlo, vhi)
    fig.text(0.5, 0.12 / fig.get_figheight(), textwrap.fill(c.alignment, 190), ha="center", va="bottom", fontsize=8)
    return fig


def comparison_image(c: Comparison, cmap: str = render.DEFAULT_CMAP, alpha: float = 0.6) -> Image.Image:
    """``comparison_figure`` drawn as a PIL RGB image (compare.png)."""
    return plots.figure_to_image(comparison_figure(c, cmap, alpha))
