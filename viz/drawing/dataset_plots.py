"""Plots of statistics over a data set (``python -m viz FOLDER``): per head against depth with the spread over
images, and per-block shares. ``matplotlib.figure.Figure`` only (never pyplot); drawn once per run, so no blitting.
"""
from __future__ import annotations

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from .plots import new_figure, nice_top, plot_axes


def heads_by_depth_plot(mean: np.ndarray, std: np.ndarray, ylabel: str, title: str,
                        reference: float | None = None, reference_label: str = "") -> Figure:
    """Mean (L, H) over images of one value per block and head, one dot per head, a bar of ±1 standard deviation
    over images; heads side by side within each block, centred on it (a block with fewer heads than H: NaN past
    its own). ``reference``: a dashed horizontal line (e.g. uniform attention), labelled ``reference_label``."""
    mean, std = np.asarray(mean, dtype=np.float64), np.asarray(std, dtype=np.float64)
    L, H = mean.shape
    fig = new_figure()
    ax = plot_axes(fig, title)
    heads = np.isfinite(mean).sum(axis=1)                                        # (L,) the heads each block has
    step = min(0.6 / max(H, 1), 0.08)                                            # heads spread within a block
    cmap = matplotlib.colormaps["tab20" if H > 10 else "tab10"]                  # one colour per head
    for h in range(H):
        ax.errorbar(np.arange(L) + (h - (heads - 1) / 2) * step, mean[:, h], yerr=std[:, h], fmt="o",
                    markersize=3.5, linewidth=0.8, capsize=0, color=cmap(h % cmap.N))
    top = nice_top(max(float(np.nanmax(mean + std)), reference or 0.0))
    ax.set_xlim(-0.7, L - 0.3)
    ax.set_ylim(0, top)
    ax.set_xticks(range(0, L, max(1, L // 12)))
    ax.set_xlabel("Network depth (block)")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    if reference is not None:
        ax.axhline(reference, color="gray", linestyle="--", linewidth=0.8)
        ax.text(L - 0.4, reference, reference_label, color="gray", fontsize=7, ha="right", va="bottom")
    ax.set_title(title, fontsize=10)
    return fig


def shares_plot(shares: dict[str, tuple[np.ndarray, np.ndarray]], title: str) -> Figure:
    """Per-block shares of attention {label: (mean (L,), std (L,))} over images, as lines with ±1 std bands."""
    fig = new_figure()
    ax = plot_axes(fig, title)
    L = 1
    for label, (mean, std) in shares.items():
        mean, std = np.asarray(mean, dtype=np.float64), np.asarray(std, dtype=np.float64)
        L = mean.size
        line, = ax.plot(np.arange(L), mean, marker="o", markersize=3.5, linewidth=1.2, label=label)
        ax.fill_between(np.arange(L), np.clip(mean - std, 0, 1), np.clip(mean + std, 0, 1), alpha=0.2,
                        color=line.get_color(), linewidth=0)
    ax.set_xlim(-0.3, L - 0.7)
    ax.set_ylim(0, 1)
    ax.set_xticks(range(0, L, max(1, L // 12)))
    ax.set_xlabel("Network depth (block)")
    ax.set_ylabel("Share of the block's attention")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title(title, fontsize=10)
    return fig
