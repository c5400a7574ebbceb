"""Plots with labelled axes, drawn on ``matplotlib.figure.Figure`` + Agg canvases (never pyplot: no global
state, safe in a server with many threads).

A full matplotlib draw of even a small plot costs ~50 ms (mostly tick labels and text), too slow to redo
for every image. The per-image plots are therefore blitted: their axes — frame, ticks, labels, legend —
are drawn once per axis range into a ``Backdrop``, and each image only draws its data artists onto a copy
of those pixels (a few ms). ``distance_plot`` still returns a complete Figure for anyone who wants to edit or
save it; ``distance_image`` / ``token_norm_image`` are the fast path.
Figures use fixed margins (no tight_layout) and become PIL images straight from the Agg buffer.
"""
from __future__ import annotations

import math
import threading
from functools import lru_cache

import numpy as np
import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from PIL import Image

from ..i18n import t
from . import screens
from .fonts import use_language_font
from .grids import similarity_mosaic

PLOT_SIZE = (4.8, 3.4)  # inches at 100 dpi


def new_figure(width: float = PLOT_SIZE[0], height: float = PLOT_SIZE[1], dpi: int = 100) -> Figure:
    """A Figure with its own Agg canvas."""
    fig = Figure(figsize=(width, height), dpi=dpi)
    FigureCanvasAgg(fig)
    return fig


def figure_to_image(fig: Figure) -> Image.Image:
    """Draw the figure -> PIL RGB image."""
    fig.canvas.draw()
    return Image.fromarray(np.asarray(fig.canvas.buffer_rgba())[:, :, :3].copy())


def plot_axes(fig: Figure, title: str | None, narrow: bool = False):
    """The one axes of a plot, with room for labels (and a title); ``narrow``: a phone's plot, smaller margins in
    inches being larger shares of it."""
    if narrow:
        return fig.add_axes((0.19, 0.15, 0.77, 0.73 if title else 0.8))
    return fig.add_axes((0.13, 0.14, 0.84, 0.76 if title else 0.82))


NARROW_PLOT = (screens.NARROW_INCHES, 3.2)   # inches of a plot for a narrow screen (at screens.NARROW_DPI)


def plot_figure(narrow: bool = False) -> Figure:
    """A plot's Figure: ``PLOT_SIZE`` at 100 dpi, or for a narrow screen ``NARROW_PLOT`` at ``screens.NARROW_DPI``."""
    return new_figure(*NARROW_PLOT, screens.NARROW_DPI) if narrow else new_figure()


class Backdrop:
    """A plot's static pixels (axes, ticks, labels, legend) drawn once; ``render`` draws data on top.

    Autoscaling is off, so data artists use exactly the axis ranges the backdrop was drawn with. ``make(ax)``
    creates data artists whose number and kind do not change from image to image (a scatter of L·H points, the
    curves of a fixed set of tokens) once, after the backdrop is saved, so that a render only moves them to its
    data: creating matplotlib artists is most of a render's time. A lock serialises renders because the Figure
    underneath is shared, mutable state.
    """

    def __init__(self, fig: Figure, make=None):
        self.fig, self.ax = fig, fig.axes[0]
        self.ax.set_autoscale_on(False)
        fig.canvas.draw()
        self.background = fig.canvas.copy_from_bbox(fig.bbox)
        self.kept = make(self.ax) if make is not None else []
        self.lock = threading.Lock()

    def render(self, add_artists=None, update=None) -> Image.Image:
        """``update(*kept)`` sets the kept artists to this image's data, ``add_artists(ax)`` creates the others
        (drawn after them, removed afterwards) -> the plot as a PIL RGB image."""
        with self.lock:
            canvas = self.fig.canvas
            canvas.restore_region(self.background)
            if update is not None:
                update(*self.kept)
            artists = add_artists(self.ax) if add_artists is not None else []
            try:
                for artist in [*self.kept, *artists]:
                    self.ax.draw_artist(artist)
                image = Image.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba(), "raw", "RGBA", 0,
                                         1).convert("RGB")                    # a copy: the canvas is reused
            finally:
                for artist in artists:
                    artist.remove()
        return image


def nice_top(value: float) -> float:
    """Upper axis limit: ``value`` + 8 % rounded up to 1, 2 or 5 × a power of ten halved (few distinct values,
    so few backdrops)."""
    value = max(float(value) * 1.08, 1e-6)
    step = 10 ** math.floor(math.log10(value)) / 2
    return math.ceil(value / step) * step


def log_range(values: np.ndarray) -> tuple[float, float]:
    """Whole decades around positive values, for a log axis."""
    values = np.asarray(values, dtype=np.float64)
    positive = values[values > 0]
    lo, hi = (positive.min(), positive.max()) if positive.size else (1.0, 10.0)
    return 10.0 ** math.floor(math.log10(lo)), 10.0 ** math.ceil(math.log10(hi * 1.05))


# --- mean attention distance (paper Figure 7, right) ---------------------------------------------------

def head_colors(heads: int) -> tuple[str, Normalize]:
    """The colormap name and normalisation that give each head its colour (head h -> cmap(norm(h)))."""
    return ("tab20" if heads > 10 else "tab10"), Normalize(vmin=0, vmax=max(heads - 1, 1))


def _distance_axes(ax, layers: int, heads: int, top: float, uniform_distance: float | None, title: str | None,
                   lang: str = "en", narrow: bool = False):
    ax.set_xlim(-0.7, layers - 0.3)
    ax.set_ylim(0, top)
    ax.set_xticks(range(0, layers, max(1, layers // 12)))
    ax.set_xlabel(t("axis.depth", lang))
    ax.set_ylabel(t("axis.mean_distance", lang))
    ax.grid(alpha=0.3)
    name, norm = head_colors(heads)
    cmap = matplotlib.colormaps[name]
    handles = [Line2D([], [], linestyle="none", marker="o", markersize=4, markeredgewidth=0,
                      color=cmap(norm(h)), label=t("name.head", lang, head=h)) for h in range(heads)]
    if uniform_distance is not None:
        ax.axhline(uniform_distance, color="gray", linestyle="--", linewidth=0.8)
        handles.append(Line2D([], [], color="gray", linestyle="--", linewidth=0.8, label=t("legend.uniform", lang)))
    ax.legend(handles=handles, fontsize=screens.MIN_POINTS if narrow else 6, loc="lower right",
              ncol=1 if heads <= 4 else 2 if heads <= 8 else 3, framealpha=0.85, handletextpad=0.3, columnspacing=0.8,
              labelspacing=0.25)
    if title:
        ax.set_title(title, fontsize=10)
    use_language_font(ax.figure, lang)


def _distance_artists(ax, d: np.ndarray) -> list:
    L, H = d.shape
    colors = np.tile(np.arange(H), L)                    # one colour per head, as in the legend
    name, norm = head_colors(H)
    return [ax.scatter(*_distance_points(d).T, c=colors, cmap=name, s=14, norm=norm, edgecolors="none")]


def _distance_points(d: np.ndarray) -> np.ndarray:
    """(L, H) distances -> (L·H, 2) points (layer, distance), layer by layer: 0-based layers, as in every panel."""
    L, H = d.shape
    return np.column_stack([np.repeat(np.arange(L), H), d.ravel()])


def distance_plot(mean_distance: np.ndarray, title: str | None = None, uniform_distance: float | None = None,
                  lang: str = "en", narrow: bool = False) -> Figure:
    """Mean attention distance (L, H) in pixels -> scatter of every head against depth (paper Figure 7, right),
    with a legend of the heads' colours; texts in ``lang``.

    ``uniform_distance``: optional dashed reference line, the value a head attending uniformly to all
    patches would get (``patch_distances(grid, P).mean()``): heads below it look locally.
    """
    d = np.asarray(mean_distance, dtype=np.float32)
    fig = plot_figure(narrow)
    ax = plot_axes(fig, title, narrow)
    _distance_axes(ax, *d.shape, nice_top(max(float(np.nanmax(d)), uniform_distance or 0)), uniform_distance, title, lang, narrow)
    _distance_artists(ax, d)
    return fig


@lru_cache(maxsize=16)
def _distance_backdrop(layers: int, heads: int, top: float, uniform_distance: float | None,
                       title: str | None, lang: str = "en", narrow: bool = False) -> Backdrop:
    fig = plot_figure(narrow)
    _distance_axes(plot_axes(fig, title, narrow), layers, heads, top, uniform_distance, title, lang, narrow)
    return Backdrop(fig, lambda ax: _distance_artists(ax, np.zeros((layers, heads), dtype=np.float32)))


def distance_image(mean_distance: np.ndarray, title: str | None = None,
                   uniform_distance: float | None = None, lang: str = "en", top: float | None = None,
                   narrow: bool = False) -> Image.Image:
    """``distance_plot`` as a PIL image, blitted onto a cached backdrop. ``top``: a fixed upper limit of the y axis
    (the frames of an animation share one), else from the data; ``narrow``: for a phone."""
    d = np.asarray(mean_distance, dtype=np.float32)
    uniform = None if uniform_distance is None else round(float(uniform_distance), 3)
    if top is None:
        top = nice_top(max(float(np.nanmax(d)), uniform or 0.0))
    return _distance_backdrop(*d.shape, top, uniform, title, lang, narrow).render(
        update=lambda points: points.set_offsets(_distance_points(d)))


# --- position-embedding similarity (paper Figure 7, centre) ---------------------------------------------

def position_similarity_plot(sim: np.ndarray, grid: tuple[int, int], title: str | None = None,
                             lang: str = "en", narrow: bool = False) -> Figure:
    """Cosine similarity (gh·gw, gh·gw) -> grid of grid tiles with row/column axes and a colour bar
    (paper Figure 7, centre); texts in ``lang``; ``narrow``: for a phone (``screens.NARROW_INCHES`` wide)."""
    gh, gw = grid
    mosaic = similarity_mosaic(sim, grid, gap=1)
    dpi = screens.NARROW_DPI if narrow else 100
    lines = title.count("\n") + 1 if title else 0
    left, right, bottom, top = 70, 110, 55, 15 + 20 * lines   # margins in pixels (at 100 dpi): labels, bar, title
    if narrow:                               # the whole figure NARROW_INCHES wide, its margins in the same inches
        left, right, bottom, top = (round(m * dpi / 100) for m in (left, right, bottom, top))
        axes_w = round(screens.NARROW_INCHES * dpi) - left - right
        axes_h = round(axes_w * mosaic.shape[0] / mosaic.shape[1])
    else:
        zoom = max(1, round(420 / max(mosaic.shape)))       # whole screen pixels per mosaic pixel: crisp tiles
        axes_w, axes_h = mosaic.shape[1] * zoom, mosaic.shape[0] * zoom
    fig_w, fig_h = left + axes_w + right, bottom + axes_h + top
    fig = new_figure(fig_w / dpi, fig_h / dpi, dpi)
    ax = fig.add_axes((left / fig_w, bottom / fig_h, axes_w / fig_w, axes_h / fig_h))
    image = ax.imshow(mosaic, cmap="viridis", vmin=-1, vmax=1, interpolation="nearest")
    step_r, step_c = max(1, gh // 7), max(1, gw // 7)
    rows, cols = range(0, gh, step_r), range(0, gw, step_c)  # 0-based patch rows/columns, as in the query panels
    ax.set_yticks([i * (gh + 1) + (gh - 1) / 2 for i in rows], [str(i) for i in rows])
    ax.set_xticks([j * (gw + 1) + (gw - 1) / 2 for j in cols], [str(j) for j in cols])
    ax.tick_params(length=0, labelsize=screens.MIN_POINTS)
    ax.set_xlabel(t("axis.patch_column", lang))
    ax.set_ylabel(t("axis.patch_row", lang))
    for spine in ax.spines.values():
        spine.set_visible(False)
    cax = fig.add_axes(((left + axes_w + 15) / fig_w, bottom / fig_h, 14 / fig_w, axes_h / fig_h))
    fig.colorbar(image, cax=cax, label=t("colorbar.cosine", lang))
    if title:
        ax.set_title(title, fontsize=10)
    return use_language_font(fig, lang)


# --- token norms against depth ------------------------------------------------------------------------

def _norm_axes(ax, layers: int, num_prefix: int, ylim: tuple[float, float], title: str | None, lang: str = "en",
               narrow: bool = False):
    ax.set_yscale("log")
    ax.set_xlim(-0.3, layers - 0.7)
    ax.set_ylim(*ylim)
    ax.set_xticks(range(0, layers, max(1, layers // 12)))
    ax.set_xlabel(t("axis.layer", lang))
    ax.set_ylabel(t("axis.token_norm", lang))
    ax.grid(alpha=0.3)
    handles = [Patch(color="tab:blue", alpha=0.2, label=t("legend.patch_band", lang)),
               Line2D([], [], color="tab:blue", label=t("legend.patch_median", lang)),
               Line2D([], [], color="tab:blue", linestyle=":", label=t("legend.patch_max", lang)),
               Line2D([], [], color="black", linewidth=1, label=t("legend.cls" if num_prefix else "legend.no_cls", lang))]
    if num_prefix > 1:
        handles.append(Line2D([], [], color="gray", linewidth=1, label=t("legend.other_prefix", lang,
                                                                         count=num_prefix - 1)))
    handles.append(Line2D([], [], color="tab:red", linewidth=0.8, label=t("legend.flagged", lang)))
    ax.legend(handles=handles, fontsize=screens.MIN_POINTS if narrow else 7, loc="upper left")
    if title:
        ax.set_title(title, fontsize=10)
    use_language_font(ax.figure, lang)


def _norm_curves(norms, num_prefix: int) -> tuple[np.ndarray, ...]:
    """Token norms, (L, T) or one (T_l,) array per layer -> (layers 0 … L-1, 5th percentile, median, 95th percentile,
    max) of each layer's patch tokens."""
    patches = [np.asarray(n, dtype=np.float32)[num_prefix:] for n in norms]
    lo, med, hi = np.array([np.percentile(p, [5, 50, 95]) for p in patches]).T
    return np.arange(len(patches)), lo, med, hi, np.array([p.max() for p in patches])


def _flagged_artists(ax, norms: np.ndarray, num_prefix: int, flags: np.ndarray | None) -> list:
    """A thin red curve per flagged high-norm patch (flags (L, N) or (L, gh, gw) bool; their number varies)."""
    if flags is None or not np.any(flags):
        return []
    L = norms.shape[0]
    flagged = np.flatnonzero(np.asarray(flags, dtype=bool).reshape(L, -1).any(axis=0))
    return [line for j in flagged
            for line in ax.plot(np.arange(L), norms[:, num_prefix + j], color="tab:red", linewidth=0.8, alpha=0.8)]


def _kept_norm_artists(ax, layers: int, num_prefix: int) -> list:
    """The token-norm plot's artists of every image, without data yet: the 5–95 % band, the median and max
    curves, one curve per prefix token."""
    zeros = np.zeros(layers)
    band = ax.fill_between(zeros, zeros, zeros, color="tab:blue", alpha=0.2, linewidth=0)
    lines = ax.plot(zeros, zeros, color="tab:blue") + ax.plot(zeros, zeros, color="tab:blue", linestyle=":")
    for i in range(num_prefix):
        lines += ax.plot(zeros, zeros, color="black" if i == 0 else "gray", linewidth=1)
    return [band, *lines]


def _band_polygon(x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The outline ``fill_between(x, lo, hi)`` fills, (2n + 2, 2): from (x0, hi0) along lo, to the last (x, hi),
    back along hi."""
    n = len(x)
    pts = np.empty((2 * n + 2, 2))
    pts[0] = x[0], hi[0]
    pts[1:n + 1, 0], pts[1:n + 1, 1] = x, lo
    pts[n + 1] = x[-1], hi[-1]
    pts[n + 2:, 0], pts[n + 2:, 1] = x[::-1], hi[::-1]
    return pts


def _set_norm_artists(norms: np.ndarray, num_prefix: int):
    """-> ``update(band, median, max, *prefix)`` for ``Backdrop.render``: the kept artists moved to ``norms``."""
    x, lo, med, hi, top = _norm_curves(norms, num_prefix)

    def update(band, median, maximum, *prefix):
        band.set_verts([_band_polygon(x, lo, hi)])
        median.set_data(x, med)
        maximum.set_data(x, top)
        for i, line in enumerate(prefix):
            line.set_data(x, norms[:, i])
    return update


@lru_cache(maxsize=16)
def _norm_backdrop(layers: int, num_prefix: int, ylim: tuple[float, float], title: str | None,
                   lang: str = "en", narrow: bool = False) -> Backdrop:
    fig = plot_figure(narrow)
    _norm_axes(plot_axes(fig, title, narrow), layers, num_prefix, ylim, title, lang, narrow)
    return Backdrop(fig, lambda ax: _kept_norm_artists(ax, layers, num_prefix))


def token_norm_image(norms, num_prefix: int, flags: np.ndarray | None = None,
                     title: str | None = None, lang: str = "en", narrow: bool = False) -> Image.Image:
    """Token norms (L, T), or one (T_l,) array per layer (a model whose grid changes), -> curves against depth on a
    log scale, as a PIL image blitted onto a cached backdrop: median and max of the patch tokens (shaded 5–95 %
    band), every prefix token (CLS, …), and each flagged high-norm patch (flags (L, N) or (L, gh, gw) bool); texts in
    ``lang``."""
    norms = np.asarray(norms, dtype=np.float32) if np.ndim(norms[0]) == 1 and len({len(n) for n in norms}) == 1 \
        else [np.asarray(n, dtype=np.float32) for n in norms]
    backdrop = _norm_backdrop(len(norms), num_prefix, log_range(np.concatenate([np.ravel(n) for n in norms])), title,
                              lang, narrow)
    return backdrop.render(lambda ax: _flagged_artists(ax, norms, num_prefix, flags),
                           _set_norm_artists(norms, num_prefix))