"""The comparison view of "can this map be trusted?": every method's map for one class, sorted by faithfulness and
labelled with its deletion / insertion AUCs, the curves themselves, the rank correlations between the maps, and
the sanity curves. A ``matplotlib.figure.Figure`` (never pyplot), texts from ``viz.i18n`` in English or Chinese.
"""
from __future__ import annotations

import matplotlib
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ..i18n import language, t
from ..trust import FLAG_THRESHOLD, TrustReport
from .fonts import use_language_font
from .plots import new_figure


def trust_figure(report: TrustReport, photo: np.ndarray | None = None, lang: str = "en",
                 cmap: str = "inferno") -> Figure:
    """A ``TrustReport`` -> Figure: top row, the maps (over ``photo``, an (H, W, 3) uint8 array, when given), most
    faithful first, each titled with its AUCs (⚠ when the sanity check flags it); bottom row, the deletion and
    insertion curves (random dashed), the (M, M) Spearman matrix between maps, and the sanity curves if run."""
    lang = language(lang)
    names = report.ranking()
    M = len(names)
    with_sanity = any(report.methods[n].sanity is not None for n in names)
    panels = 4 if with_sanity else 3
    width = max(3.0 * panels, 1.7 * M)
    fig = new_figure(width, 7.2)
    fig.suptitle(t("trust.title", lang, target=report.target.get("name") or report.target,
                   probability=report.probability, variant=t(f"trust.variant.{report.protocol}", lang)), fontsize=11)
    colours = matplotlib.colormaps["tab10"]
    colour = {n: colours(i % 10) for i, n in enumerate(report.methods)}
    # top row: the maps
    for i, name in enumerate(names):
        m = report.methods[name]
        ax = fig.add_axes((0.02 + i * 0.96 / M, 0.53, 0.96 / M - 0.01, 0.34))
        h, w = photo.shape[:2] if photo is not None else m.map.shape
        extent = (0, w, h, 0)                       # the map stretched over the photo, one cell per patch
        if photo is not None:
            ax.imshow(photo, extent=extent)
        ax.imshow(m.map, cmap=cmap, alpha=0.6 if photo is not None else 1.0, extent=extent, interpolation="nearest")
        ax.set_xticks([])
        ax.set_yticks([])
        f = m.faithfulness
        title = f"{i + 1}. {name}\n" + t("trust.aucs", lang, deletion=f.deletion_auc, insertion=f.insertion_auc)
        if m.flagged:
            title += "\n" + t("trust.flagged", lang)
        ax.set_title(title, fontsize=8, color="firebrick" if m.flagged else colour[name])
    # bottom row: curves, correlations, sanity
    x = np.asarray(report.fractions)
    slot = lambda k: (0.06 + k * 0.95 / panels, 0.08, 0.95 / panels - 0.07, 0.36)
    for k, kind in enumerate(("deletion", "insertion")):
        ax = fig.add_axes(slot(k))
        for name in names:
            curve = getattr(report.methods[name].faithfulness, kind)
            ax.plot(x, curve, color=colour[name], linestyle="--" if name == "random" else "-", linewidth=1.3,
                    label=name)
        if "random" not in names:
            ax.plot(x, getattr(report.random, kind), color="gray", linestyle="--", linewidth=1.0, label="random")
        ax.set_ylim(0, 1.02)
        ax.set_xlim(0, 1)
        ax.set_title(t(f"trust.{kind}", lang), fontsize=9)
        ax.set_xlabel(t("trust.axis.removed" if kind == "deletion" else "trust.axis.kept", lang), fontsize=8)
        ax.set_ylabel(t("trust.axis.probability", lang), fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        if k == 0:
            ax.legend(fontsize=6, loc="upper right", ncol=2 if M > 5 else 1)
    ax = fig.add_axes(slot(2))
    order, matrix = report.correlations(names)
    ax.imshow(matrix, cmap="RdBu_r", vmin=-1, vmax=1)
    for i in range(M):
        for j in range(M):
            ax.text(j, i, f"{matrix[i, j]:.1f}", ha="center", va="center", fontsize=6,
                    color="white" if abs(matrix[i, j]) > 0.6 else "black")
    ax.set_xticks(range(M), order, rotation=60, fontsize=6, ha="right")
    ax.set_yticks(range(M), order, fontsize=6)
    ax.set_title(t("trust.correlation", lang), fontsize=9)
    if with_sanity:
        ax = fig.add_axes(slot(3))
        for name in names:
            rho = report.methods[name].sanity
            if rho is not None:
                ax.plot(np.arange(len(rho) + 1), (1.0,) + tuple(rho), color=colour[name], marker="o", markersize=2.5,
                        linewidth=1.2, linestyle="--" if name == "random" else "-", label=name)
        ax.axhline(FLAG_THRESHOLD, color="firebrick", linestyle=":", linewidth=0.9,
                   label=t("trust.legend.threshold", lang, threshold=FLAG_THRESHOLD))
        ax.set_ylim(-1, 1.05)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(t("trust.sanity", lang), fontsize=9)
        ax.set_xlabel(t("trust.axis.randomised", lang), fontsize=8)
        ax.set_ylabel(t("trust.axis.spearman", lang), fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, loc="lower left")
    return use_language_font(fig, lang)
