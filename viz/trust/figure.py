"""The comparison view of "can this map be trusted?": every method's map for one class, sorted by faithfulness and
labelled with its deletion / insertion AUCs, the curves themselves, the rank correlations between the maps, and
the sanity curves. A ``matplotlib.figure.Figure`` (never pyplot), texts from ``viz.i18n`` in English or Chinese.
"""
from __future__ import annotations

import matplotlib
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ..drawing import screens
from ..drawing.fonts import use_language_font
from ..drawing.plots import new_figure
from ..i18n import language, t
from .report import TrustReport
from .sanity import FLAG_THRESHOLD

WIDE_INCHES = 12.0     # the figure for a wide screen: as wide as the page's picture box at 100 dpi
WIDE_LEFTS = {True: (0.05, 0.28, 0.575, 0.87), False: (0.06, 0.38, 0.77)}   # its bottom panels, with sanity or without


def trust_figure(report: TrustReport, photo: np.ndarray | None = None, lang: str = "en",
                 cmap: str = "inferno", narrow: bool = False) -> Figure:
    """A ``TrustReport`` -> Figure: the maps (over ``photo``, an (H, W, 3) uint8 array, when given), most faithful
    first, each titled with its AUCs (⚠ when the sanity check flags it); then the deletion and insertion curves
    (random dashed), the (M, M) Spearman matrix between maps, and the sanity curves if run. On a wide screen the
    maps make the top row and the rest the bottom row; for a narrow one (``narrow``) the maps come two to a row
    and every other panel under them, full width (``viz.drawing.screens``)."""
    lang = language(lang)
    names = report.ranking()
    with_sanity = any(report.methods[n].sanity is not None for n in names)
    colours = matplotlib.colormaps["tab10"]
    colour = {n: colours(i % 10) for i, n in enumerate(report.methods)}
    title = t("trust.title", lang, target=report.target.get("name") or report.target,
              probability=report.probability, variant=t(f"trust.variant.{report.protocol}", lang))
    if narrow:
        title = t("trust.title_narrow", lang, target=report.target.get("name") or report.target,
                  probability=report.probability, variant=t(f"trust.variant.{report.protocol}", lang))
        return _narrow_figure(report, photo, lang, cmap, names, with_sanity, colour, title)
    M = len(names)
    fig = new_figure(WIDE_INCHES, 8.0)
    fig.suptitle(title.replace("\n", " "), fontsize=screens.MIN_POINTS + 3, y=0.985)
    for i, name in enumerate(names):
        _map(fig.add_axes((0.01 + i * 0.98 / M + 0.004, 0.585, 0.98 / M - 0.008, 0.28)), report, name, i, photo,
             cmap, colour, lang)
    _own_scale_bar(fig.add_axes((0.4, 0.555, 0.2, 0.012)), cmap, lang)
    left = WIDE_LEFTS[with_sanity]                       # deletion, insertion, correlations (its labels left of it)
    for k, kind in enumerate(("deletion", "insertion")):
        _curves(fig.add_axes((left[k], 0.15, 0.19 if with_sanity else 0.25, 0.30)), report, kind, names, colour,
                lang, legend=False)
    fig.legend(handles=fig.axes[-1].get_lines(), loc="center", bbox_to_anchor=(0.5, 0.525), ncol=min(M + 1, 9),
               fontsize=screens.MIN_POINTS, frameon=False)
    _correlations(fig.add_axes((left[2], 0.15, 0.2, 0.30)), report, names, lang)
    if with_sanity:
        ax = fig.add_axes((left[3], 0.15, 0.12, 0.30))
        _sanity(ax, report, names, colour, lang)
        ax.legend(handles=ax.get_lines()[-1:], fontsize=screens.MIN_POINTS, loc="lower left")   # the flag's line
    return use_language_font(fig, lang)


def _narrow_figure(report, photo, lang, cmap, names, with_sanity, colour, title) -> Figure:
    """The figure for a narrow screen: ``screens.NARROW_INCHES`` wide, the maps two to a row, then the curves, the
    correlations and the sanity curves one under the other; no text below ``screens.MIN_POINTS``."""
    M = len(names)
    rows = -(-M // 2)
    legend_rows = -(-(M + ("random" not in names)) // 2)
    map_row, curve, matrix, sanity = 1.95, 2.4, 3.6, 2.6               # inches: a row of maps, each panel below
    legend = 0.2 * legend_rows + 0.15
    height = 1.0 + rows * map_row + 0.55 + curve + (curve + legend) + matrix + (sanity if with_sanity else 0)
    fig = new_figure(screens.NARROW_INCHES, height, screens.NARROW_DPI)
    fig.suptitle(title, fontsize=screens.MIN_POINTS + 1, y=1 - 0.08 / height, va="top")
    y = 1.0                                                            # inches from the top

    def axes(left: float, inches_high: float, width: float, below: float) -> object:
        """Axes ``inches_high`` tall whose top is at ``y`` + its title's room, ``below`` inches left under them."""
        return fig.add_axes((left, 1 - (y + inches_high - below) / height, width,
                             (inches_high - below - 0.35) / height))

    for i, name in enumerate(names):
        row, col = divmod(i, 2)
        top = y + row * map_row + 0.55                                 # room for the map's two-line title
        _map(fig.add_axes((0.04 + col * 0.49, 1 - (top + 1.3) / height, 0.43, 1.3 / height)), report, name, i,
             photo, cmap, colour, lang)
    y += rows * map_row
    _own_scale_bar(fig.add_axes((0.25, 1 - (y + 0.12) / height, 0.5, 0.1 / height)), cmap, lang)
    y += 0.55
    _curves(axes(0.2, curve, 0.76, 0.55), report, "deletion", names, colour, lang, legend=False)
    y += curve
    ax = axes(0.2, curve + legend, 0.76, 0.55 + legend)
    _curves(ax, report, "insertion", names, colour, lang, legend=False)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.55 / (curve - 0.9)), ncol=2, fontsize=screens.MIN_POINTS,
              frameon=False)
    y += curve + legend
    _correlations(axes(0.3, matrix, 0.66, 1.35), report, names, lang)
    y += matrix
    if with_sanity:
        ax = axes(0.2, sanity, 0.76, 0.55)
        _sanity(ax, report, names, colour, lang)
        ax.legend(handles=ax.get_lines()[-1:], fontsize=screens.MIN_POINTS, loc="lower left")   # the flag's line
    return use_language_font(fig, lang)


def _own_scale_bar(ax, cmap: str, lang: str) -> None:
    """The maps' colour bar, horizontal: each map on its own scale, 0 at its lowest value and 1 at its highest."""
    ax.imshow(np.linspace(0, 1, 256)[None], cmap=cmap, aspect="auto", extent=(0, 1, 0, 1))
    ax.set_yticks([])
    ax.set_xticks([0, 1], ["0", "1"])
    ax.tick_params(labelsize=screens.MIN_POINTS, length=2, pad=1)
    ax.set_title(t("colorbar.own_scale", lang).replace("\n", " "), fontsize=screens.MIN_POINTS, pad=2)


def _map(ax, report, name, i, photo, cmap, colour, lang) -> None:
    m = report.methods[name]
    h, w = photo.shape[:2] if photo is not None else m.map.shape
    extent = (0, w, h, 0)                       # the map stretched over the photo, one cell per patch
    if photo is not None:
        ax.imshow(photo, extent=extent)
    ax.imshow(m.map, cmap=cmap, alpha=0.6 if photo is not None else 1.0, extent=extent, interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([])
    f = m.faithfulness
    title = f"{i + 1}. {t(f'method.{name}', lang)}\n" + t("trust.aucs", lang, deletion=f.deletion_auc,
                                                             insertion=f.insertion_auc)
    if m.flagged:
        title += "\n" + t("trust.flagged", lang)
    ax.set_title(title, fontsize=screens.MIN_POINTS, color="firebrick" if m.flagged else colour[name])


def curve_axes(ax, kind: str, lang: str, removed: str = "trust.axis.removed", kept: str = "trust.axis.kept") -> None:
    """A deletion or insertion plot's axes: the fraction removed (``removed``'s text) or kept (``kept``'s) against
    the class's probability, both from 0 to 1, titled with the kind of curve."""
    ax.set_ylim(0, 1.02)
    ax.set_xlim(0, 1)
    ax.set_title(t(f"trust.{kind}", lang), fontsize=screens.MIN_POINTS + 1)
    ax.set_xlabel(t(removed if kind == "deletion" else kept, lang), fontsize=screens.MIN_POINTS)
    ax.set_ylabel(t("trust.axis.probability", lang), fontsize=screens.MIN_POINTS)
    ax.tick_params(labelsize=screens.MIN_POINTS)
    ax.grid(alpha=0.3)


def _curves(ax, report, kind, names, colour, lang, legend: bool) -> None:
    x = np.asarray(report.fractions)
    for name in names:
        curve = getattr(report.methods[name].faithfulness, kind)
        ax.plot(x, curve, color=colour[name], linestyle="--" if name == "random" else "-", linewidth=1.3,
                label=t(f"method.{name}", lang))
    if "random" not in names:
        ax.plot(x, getattr(report.random, kind), color="gray", linestyle="--", linewidth=1.0,
                label=t("method.random", lang))
    curve_axes(ax, kind, lang)
    if legend:
        ax.legend(fontsize=screens.MIN_POINTS, loc="upper right", ncol=2 if len(names) > 5 else 1)


def _correlations(ax, report, names, lang) -> None:
    M = len(names)
    order, matrix = report.correlations(names)
    ax.imshow(matrix, cmap="RdBu_r", vmin=-1, vmax=1)
    for i in range(M):
        for j in range(M):
            ax.text(j, i, _short_number(matrix[i, j]), ha="center", va="center", fontsize=screens.MIN_POINTS,
                    color="white" if abs(matrix[i, j]) > 0.6 else "black")
    labels = [t(f"method.{n}", lang) for n in order]
    ax.set_xticks(range(M), labels, rotation=60, fontsize=screens.MIN_POINTS, ha="right")
    ax.set_yticks(range(M), labels, fontsize=screens.MIN_POINTS)
    ax.set_title(t("trust.correlation", lang), fontsize=screens.MIN_POINTS + 1)


def _short_number(value: float) -> str:
    """A correlation in a cell of the matrix, as few characters as one decimal allows: 1, .6, -.1, 0."""
    text = f"{value:.1f}".replace("0.", ".").replace(".0", "") if abs(value) < 0.95 else f"{value:.0f}"
    return "0" if text in ("", "-", ".", "-.") else text


def _sanity(ax, report, names, colour, lang) -> None:
    for name in names:
        rho = report.methods[name].sanity
        if rho is not None:
            ax.plot(np.arange(len(rho) + 1), (1.0,) + tuple(rho), color=colour[name], marker="o", markersize=2.5,
                    linewidth=1.2, linestyle="--" if name == "random" else "-", label=t(f"method.{name}", lang))
    ax.axhline(FLAG_THRESHOLD, color="firebrick", linestyle=":", linewidth=0.9,
               label=t("trust.legend.threshold", lang, threshold=FLAG_THRESHOLD))
    ax.set_ylim(-1, 1.05)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    inches = ax.get_position().width * ax.figure.get_figwidth()
    ax.set_title(screens.wrap(t("trust.sanity", lang), screens.MIN_POINTS + 1, inches + 0.4),
                 fontsize=screens.MIN_POINTS + 1)
    ax.set_xlabel(t("trust.axis.randomised", lang), fontsize=screens.MIN_POINTS)
    ax.set_ylabel(t("trust.axis.spearman", lang), fontsize=screens.MIN_POINTS)
    ax.tick_params(labelsize=screens.MIN_POINTS)
    ax.grid(alpha=0.3)
