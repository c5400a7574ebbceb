"""Protects what the page's Inside tab draws from a report (``viz.inside.views``): a click on a picture picks the
cell drawn under it (the colour there is that cell's value on the table's own scale; the strip's columns are where
matplotlib puts its layers), and the lines say what the report's numbers say (from which layer the lens ranks the
target first, the costly heads with their direct terms, the largest direct terms, the ablation's top-5 beside the
model's, the patching's two logits)."""
from __future__ import annotations

import dataclasses
import re

import matplotlib
import numpy as np
import pytest
import torch

import tiny_models
from viz.inside.job import InsideJob
from viz.drawing.plots import figure_to_image
from viz.inside import HeadsView, views
from viz.inside.pictures import DIVERGING, Cells, dla_table, dla_table_figure, heads_figure, lens_strip_figure

NAMES = ("red", "green", "blue", "cyan", "magenta")
COLOUR_TOL = 4          # 0-255 levels: JPEG-free Agg drawing of a flat cell
INSIDE_A_CELL = 0.2     # sample points this far into a cell from its top-left corner (clear of the numbers written)


def image(seed: int) -> torch.Tensor:
    return torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(seed))


@pytest.fixture(scope="module")
def report():
    model = tiny_models.tiny(0, depth=3)
    return InsideJob(model, image(1), labels=NAMES, ablate="1.0,2.1", other=image(2), other_name="second").result()


@pytest.mark.parametrize("picture", ["dla", "heads"])
def test_a_click_picks_the_cell_drawn_under_it(report, picture):
    if picture == "dla":
        fig, tables = dla_table_figure(report, head=(1, 0)), [dla_table(report.dla)]
    else:
        fig, tables = heads_figure(report, marked=[(2, 1)]), [report.heads.delta, report.heads.delta_linear]
    drawn = np.asarray(figure_to_image(fig)).astype(int)
    cells = Cells.of(fig)
    norms = [ax.images[0].norm for ax in fig.axes if ax.get_label() == "cells"]
    cmap = matplotlib.colormaps[DIVERGING]
    assert len(cells.boxes) == len(tables) == len(norms)
    for (left, top, right, bottom), table, norm in zip(cells.boxes, tables, norms):
        rows, cols = table.shape
        for r in range(rows):
            for c in range(cols):
                x = left + (c + INSIDE_A_CELL) * (right - left) / cols
                y = top + (r + INSIDE_A_CELL) * (bottom - top) / rows
                assert cells.at(x, y) == (r, c)
                expected = np.array(cmap(norm(table[r, c]))[:3]) * 255
                assert np.abs(drawn[int(y), int(x)] - expected).max() <= COLOUR_TOL, (r, c)
    left, top, _, _ = cells.boxes[0]
    assert cells.at(left - 2, top + 5) is None and cells.at(left + 5, top - 2) is None   # labels and title: nothing


def test_a_click_on_the_strip_picks_the_layer_matplotlib_drew_there(report):
    fig = lens_strip_figure(report, chosen=1)
    figure_to_image(fig)
    cells = Cells.of(fig)
    ax = next(ax for ax in fig.axes if ax.get_label() == "cells")
    height = fig.canvas.get_width_height()[1]
    L = len(report.lens.top5)
    for layer in range(L):
        x, y = ax.transData.transform((layer, 0.5))               # display pixels from the bottom left
        assert cells.at(x, height - y)[1] == layer
        assert cells.at(x + 0.45 * ax.bbox.width / L, height - y)[1] == layer    # anywhere in its column


def test_settles_is_the_first_layer_from_which_the_rank_stays_within(report):
    assert views.settles(np.array([9, 1, 3, 1, 1]), 1) == 3
    assert views.settles(np.array([1, 1, 1]), 1) == 0
    assert views.settles(np.array([1, 1, 2]), 1) is None
    assert views.settles(np.array([9, 4, 6, 5]), 5) == 3


def test_the_lens_line_says_the_layers_the_report_holds(report):
    rank = report.lens.target_rank
    line = views.lens_line(report)
    first, top5 = views.settles(rank, 1), views.settles(rank, 5)
    assert first is not None and f"first from layer {first} on" in line and f"top 5 from layer {top5}" in line
    never = dataclasses.replace(report, lens=dataclasses.replace(report.lens, target_rank=np.array([4, 2, 3])))
    assert "never ranks" in views.lens_line(never) and "best rank is 2, after layer 1" in views.lens_line(never)
    assert views.first_layer(never) == 0


def test_the_heads_line_names_the_costly_heads_and_the_costliests_direct_term(report):
    delta = np.array([[-0.5, -3.0], [0.2, -1.5], [0.0, 0.1]])
    costly = dataclasses.replace(report, heads=HeadsView("zero", delta, delta, 1.0))
    line = views.heads_line(costly)
    assert "0.1 (-3.00), 1.1 (-1.50)" in line and "0.0" not in line.split(":")[1].split(".")[0]
    assert f"Head 0.1 writes {report.dla.heads[0, 1]:+.2f} straight into the readout" in line
    assert "costs 3.00" in line
    calm = dataclasses.replace(report, heads=HeadsView("zero", delta * 0.1, delta, 1.0))
    assert "No head alone" in views.heads_line(calm)
    assert "头" in views.heads_line(costly, "zh-CN")


def test_the_dla_line_names_the_largest_direct_terms(report):
    line = views.dla_line(report)
    terms = [(abs(v), v) for v in [*report.dla.heads.ravel(), *report.dla.mlp]]
    largest = sorted(terms, reverse=True)[0][1]
    assert f"{largest:+.2f}" in line.split(":")[1].split(",")[0] and f"{report.dla.logit:.2f}" in line


def test_the_ablation_table_sets_the_model_beside_the_ablated_model(report):
    table = views.ablation_table(report)
    rows = [line for line in table.splitlines() if re.match(r"\| \d \|", line)]
    assert len(rows) == 5 and "without 1.0, 2.1" in table
    first = rows[0].split("|")
    assert NAMES[report.top5.indices[0]] in first[2] and NAMES[report.ablated.top5.indices[0]] in first[3]
    assert f"{report.ablated.delta_logit:+.2f}" in table


def test_the_patch_line_gives_both_logits_and_the_strongest_heads(report):
    p = report.patched
    line = views.patch_line(report)
    l, h = np.unravel_index(int(np.nanargmax(p.heads)), p.heads.shape)
    assert f"{p.logit_this:.2f}" in line and f"{p.logit_other:.2f}" in line
    assert f"{l}.{h} ({p.heads[l, h]:.2f})" in line.split(":")[-1].split(",")[0]
