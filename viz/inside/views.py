"""What the page's Inside tab shows, from cached ``InsideReport``s (no model, no Gradio): each picture with the cells
a click on it picks (``Drawn``), and the lines that say in words what the pictures show, in English or Chinese.

    drawn = dla_view(report, (9, 0), lang)       # the table, head 9.0 framed (narrow=True: drawn for a phone)
    drawn.cells.at(x, y)                         # a click at pixel (x, y) -> (layer, column) or None
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image

from ..drawing.plots import figure_to_image
from ..i18n import t
from .pictures import (Cells, dla_table_figure, head_sources_figure, heads_figure, lens_strip_figure, patch_figure,
                       patch_lens_figure, strongest_head, target_label)
from .report import InsideReport

COSTLY = 1.0     # a head whose ablation alone lowers the target's logit by more than this is named in the heads line
NAMED = 3        # how many of the largest direct terms the DLA line names


@dataclass(frozen=True)
class Drawn:
    """A picture and where its clickable cells lie (``viz.inside.pictures.Cells``)."""
    image: Image.Image
    cells: Cells


def _drawn(fig) -> Drawn:
    image = figure_to_image(fig)
    return Drawn(image, Cells.of(fig))


# --- logit lens -------------------------------------------------------------------------------------------------

def lens_view(report: InsideReport, layer: int | None = None, lang: str = "en", narrow: bool = False) -> Drawn:
    """The strip: layer → the readout's top-1, the target's probability and rank, ``layer`` shaded; a click picks
    a layer (column)."""
    return _drawn(lens_strip_figure(report, lang, layer, narrow))


def patch_lens_view(report: InsideReport, layer: int, photo: np.ndarray, lang: str = "en",
                    narrow: bool = False) -> Image.Image:
    """Every patch's own top-1 class after ``layer``, over the crop the model saw, with its legend."""
    return figure_to_image(patch_lens_figure(report, layer, photo, lang, narrow))


def settles(rank: np.ndarray, best: int) -> int | None:
    """The first layer from which the target's rank stays ≤ ``best`` to the end, or None."""
    inside = np.asarray(rank) <= best
    if not inside[-1]:
        return None
    outside = np.flatnonzero(~inside)
    return int(outside[-1] + 1) if outside.size else 0


def first_layer(report: InsideReport) -> int:
    """The layer the page shows first in the patch lens: where the target first settles into the lens's top 5
    (the moment the readout starts to know), else the last layer."""
    L = len(report.lens.top5)
    found = settles(report.lens.target_rank, 5)
    return L - 1 if found is None else found


def lens_line(report: InsideReport, lang: str = "en") -> str:
    """One sentence: from which layer the readout ranks the target first, and from which among its top 5."""
    lens = report.lens
    target = report.target["name"]
    first, top5 = settles(lens.target_rank, 1), settles(lens.target_rank, 5)
    if first is None:
        best = int(np.argmin(lens.target_rank))
        return t("inside.line.lens_never", lang, target=target, rank=int(lens.target_rank[best]), layer=best)
    return t("inside.line.lens", lang, target=target, first=first, top5=top5, last=len(lens.top5) - 1,
             probability=float(lens.target_probability[first]))


# --- direct logit attribution -----------------------------------------------------------------------------------

def dla_view(report: InsideReport, head: tuple[int, int] | None, lang: str = "en", narrow: bool = False) -> Drawn:
    """The layers × (heads | MLP) table, ``head`` framed; a click picks (layer, column), column H being the MLP."""
    return _drawn(dla_table_figure(report, head, lang, narrow))


def sources_view(report: InsideReport, layer: int, head: int, photo: np.ndarray, lang: str = "en",
                 narrow: bool = False) -> Image.Image:
    """What head ``layer``.``head`` moved into the score from each patch, over the crop the model saw."""
    return figure_to_image(head_sources_figure(report, layer, head, photo, lang, narrow))


def default_head(report: InsideReport) -> tuple[int, int]:
    """The head shown before any click: the one with the largest direct term."""
    return strongest_head(report.dla)


def dla_line(report: InsideReport, lang: str = "en") -> str:
    """The ``NAMED`` largest direct terms (heads and MLPs), signed: what writes the answer into the readout."""
    dla = report.dla
    L, H = dla.heads.shape
    terms = [(float(dla.heads[l, h]), t("inside.line.head", lang, head=f"{l}.{h}")) for l in range(L) for h in range(H)]
    terms += [(float(dla.mlp[l]), t("inside.line.mlp", lang, layer=l)) for l in range(L)]
    largest = sorted(terms, key=lambda term: -abs(term[0]))[:NAMED]
    listed = t("inside.line.separator", lang).join(f"{name} {value:+.2f}" for value, name in largest)
    return t("inside.line.dla", lang, terms=listed, logit=dla.logit)


# --- head importance and ablation ---------------------------------------------------------------------------------

def heads_view(report: InsideReport, picked=(), lang: str = "en", narrow: bool = False) -> Drawn:
    """Head importance, exact and estimated, the ``picked`` heads [(layer, head)] framed; a click picks a head."""
    return _drawn(heads_figure(report, lang, picked, narrow))


def heads_line(report: InsideReport, lang: str = "en") -> str:
    """The heads whose ablation alone costs the target more than ``COSTLY`` logits, and for the costliest its direct
    term (small when the head works through later layers)."""
    delta = report.heads.delta
    L, H = delta.shape
    costly = sorted(((float(delta[l, h]), l, h) for l in range(L) for h in range(H) if delta[l, h] < -COSTLY))
    if not costly:
        return t("inside.line.heads_none", lang, threshold=COSTLY)
    listed = t("inside.line.separator", lang).join(f"{l}.{h} ({d:+.2f})" for d, l, h in costly)
    if report.dla is None:
        return t("inside.line.heads", lang, threshold=COSTLY, heads=listed)
    cost, l, h = costly[0]
    return t("inside.line.heads_direct", lang, threshold=COSTLY, heads=listed, head=f"{l}.{h}", cost=-cost,
             direct=float(report.dla.heads[l, h]))


def ablation_table(report: InsideReport, lang: str = "en") -> str:
    """The model's top-5 beside its top-5 with the report's heads ablated, as a Markdown table, and the target's
    Δ logit (A − B's in contrast mode)."""
    a = report.ablated
    heads = ", ".join(a.heads)
    rows = [f"| | {t('inside.table.model', lang)} | {t('inside.table.ablated', lang, heads=heads)} |", "|---|---|---|"]
    for i, (before, after) in enumerate(zip(report.top5.as_json(report.names), a.top5.as_json(report.names))):
        rows.append(f"| {i + 1} | {before['name']} {before['probability']:.1%} | "
                    f"{after['name']} {after['probability']:.1%} |")
    return "\n".join([*rows, "", t("inside.line.ablated", lang, target=target_label(report), heads=heads,
                                     delta=a.delta_logit)])


# --- activation patching ----------------------------------------------------------------------------------------

def patch_view(patched: InsideReport, lang: str = "en", narrow: bool = False) -> Image.Image:
    """The share of the score difference moved by each head (exact) and by each (layer, token) of the stream."""
    return figure_to_image(patch_figure(patched, lang, narrow))


def patch_line(patched: InsideReport, lang: str = "en") -> str:
    """The logit difference being moved and the heads that move the largest shares of it."""
    p = patched.patched
    L, H = p.heads.shape
    order = np.argsort(-np.nan_to_num(p.heads, nan=-np.inf).ravel(), kind="stable")[:NAMED]
    listed = t("inside.line.separator", lang).join(f"{i // H}.{i % H} ({p.heads.ravel()[i]:.2f})" for i in order)
    return t("inside.line.patch", lang, target=p.target["name"], source=p.source, this=p.logit_this,
             other=p.logit_other, heads=listed)
