"""Plots with labelled axes, drawn on ``matplotlib.figure.Figure`` + Agg canvases (never pyplot: no global
state, safe in a server with many threads).

Figures are kept small, with fixed margins (no tight_layout, which doubles the drawing time), and are
turned into PIL images straight from the Agg buffer without a PNG round trip.
"""
from __future__ import annotations

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image

from .grids import similarity_mosaic


def new_figure(width: float = 4.8, height: float = 3.4, dpi: int = 100) -> Figure:
    """A Figure with its own Agg canvas."""
    fig = Figure(figsize=(width, height), dpi=dpi)
    FigureCanvasAgg(fig)
    return fig


def figure_to_image(fig: Figure) -> Image.Image:
    """Draw the figure -> PIL RGB image."""
    fig.canvas.draw()
    return Image.fromarray(np.asarray(fig.canvas.buffer_rgba())[:, :, :3].copy())


def distance_plot(mean_distance: np.ndarray, title: str | None = None, uniform_distance: float | None = None) -> Figure:
    """Mean attention distance (L, H) in pixels -> scatter of every head against depth (paper Figure 7, right).

    ``uniform_distance``: optional dashed reference line, the value a head attending uniformly to all
    patches would get (``patch_distances(grid, P).mean()``): heads below it look locally.
    """
    d = np.asarray(mean_distance, dtype=np.float32)
    L, H = d.shape
    fig = new_figure()
    ax = fig.add_axes((0.13, 0.14, 0.84, 0.76 if title else 0.82))
    layers = np.repeat(np.arange(1, L + 1), H)
    colors = np.tile(np.arange(H), L)
    ax.scatter(layers, d.ravel(), c=colors, cmap="tab20" if H > 10 else "tab10", s=14, vmin=0, vmax=max(H - 1, 1),
               edgecolors="none")
    if uniform_distance is not None:
        ax.axhline(uniform_distance, color="gray", linestyle="--", linewidth=0.8)
        ax.text(L + 0.6, uniform_distance, "uniform", color="gray", fontsize=7, ha="right", va="bottom")
    ax.set_xlabel("Network depth (block)")
    ax.set_ylabel("Mean attention distance (pixels)")
    ax.set_xticks(range(1, L + 1, max(1, L // 12)))
    ax.set_xlim(0.3, L + 0.7)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    if title:
        ax.set_title(title, fontsize=10)
    return fig


def position_similarity_plot(sim: np.ndarray, grid: tuple[int, int], title: str | None = None) -> Figure:
    """Cosine similarity (gh·gw, gh·gw) -> grid of grid tiles with row/column axes and a colour bar
    (paper Figure 7, centre)."""
    gh, gw = grid
    mosaic = similarity_mosaic(sim, grid, gap=1)
    dpi = 100
    zoom = max(1, round(420 / max(mosaic.shape)))           # whole screen pixels per mosaic pixel: crisp tiles
    axes_w, axes_h = mosaic.shape[1] * zoom, mosaic.shape[0] * zoom
    left, right, bottom, top = 70, 110, 55, 35 if title else 15  # margins in pixels for labels and colour bar
    fig_w, fig_h = left + axes_w + right, bottom + axes_h + top
    fig = new_figure(fig_w / dpi, fig_h / dpi, dpi)
    ax = fig.add_axes((left / fig_w, bottom / fig_h, axes_w / fig_w, axes_h / fig_h))
    image = ax.imshow(mosaic, cmap="viridis", vmin=-1, vmax=1, interpolation="nearest")
    step_r, step_c = max(1, gh // 7), max(1, gw // 7)
    ax.set_yticks([(i * (gh + 1)) + (gh - 1) / 2 for i in range(0, gh, step_r)], [str(i + 1) for i in range(0, gh, step_r)])
    ax.set_xticks([(j * (gw + 1)) + (gw - 1) / 2 for j in range(0, gw, step_c)], [str(j + 1) for j in range(0, gw, step_c)])
    ax.tick_params(length=0, labelsize=8)
    ax.set_xlabel("Input patch column")
    ax.set_ylabel("Input patch row")
    for spine in ax.spines.values():
        spine.set_visible(False)
    cax = fig.add_axes(((left + axes_w + 15) / fig_w, bottom / fig_h, 14 / fig_w, axes_h / fig_h))
    fig.colorbar(image, cax=cax, label="Cosine similarity")
    if title:
        ax.set_title(title, fontsize=10)
    return fig


def token_norm_plot(norms: np.ndarray, num_prefix: int, flags: np.ndarray | None = None,
                    title: str | None = None) -> Figure:
    """Token norms (L, T) -> curves against depth: median and max of the patch tokens (shaded 5–95 %
    band), every prefix token (CLS, …), and each flagged high-norm patch (flags (L, N) or (L, gh, gw) bool)."""
    norms = np.asarray(norms, dtype=np.float32)
    L = norms.shape[0]
    patches = norms[:, num_prefix:]
    x = np.arange(1, L + 1)
    fig = new_figure()
    ax = fig.add_axes((0.13, 0.14, 0.84, 0.76 if title else 0.82))
    lo, med, hi = np.percentile(patches, [5, 50, 95], axis=1)
    ax.fill_between(x, lo, hi, color="tab:blue", alpha=0.2, linewidth=0, label="patches 5–95 %")
    ax.plot(x, med, color="tab:blue", label="patch median")
    ax.plot(x, patches.max(axis=1), color="tab:blue", linestyle=":", label="patch max")
    names = ["CLS"] + [f"prefix {i}" for i in range(1, num_prefix)]
    for i in range(num_prefix):
        ax.plot(x, norms[:, i], color="black" if i == 0 else "gray", linewidth=1, label=names[i] if i < 3 else None)
    if flags is not None:
        flagged = np.flatnonzero(np.asarray(flags, dtype=bool).reshape(L, -1).any(axis=0))
        for n, j in enumerate(flagged):
            ax.plot(x, patches[:, j], color="tab:red", linewidth=0.8, alpha=0.8,
                    label=f"flagged patches ({flagged.size})" if n == 0 else None)
    ax.set_yscale("log")
    ax.set_xlabel("Block")
    ax.set_ylabel("Token L2 norm")
    ax.set_xticks(range(1, L + 1, max(1, L // 12)))
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, loc="upper left")
    if title:
        ax.set_title(title, fontsize=10)
    return fig
