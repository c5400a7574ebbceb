"""Protects the viz side of the inside views: ``InsideJob`` runs in steps whose partial reports a page can show
(the estimate first, the exact tables when their layers have run) and whose result equals the whole job; the report
is numpy only and JSON-safe; every picture draws in English and Chinese from the report alone, with the numbers it
claims (the DLA table's MLP column, a head's source map, the patch lens's legend of the most frequent classes, a
colour scale centred on 0)."""
from __future__ import annotations

import json

import matplotlib.colors
import numpy as np
import pytest
import torch

import tiny_models
from vit.explain import TextTarget
from viz.inside.job import InsideJob
from viz.drawing.plots import figure_to_image
from viz.inside import (dla_figure, head_sources_figure, heads_figure, lens_figure, lens_strip_figure, patch_figure,
                        patch_lens_figure)
from viz.inside.pictures import _class_colours, dla_table, strongest_head

NAMES = ("red", "green", "blue", "cyan", "magenta")


def image(seed: int) -> torch.Tensor:
    return torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(seed))


@pytest.fixture(scope="module")
def job_and_report():
    model = tiny_models.tiny(0, depth=3)
    job = InsideJob(model, image(1), labels=NAMES, ablate="1.0", other=image(2), other_name="second")
    return model, job, job.result()


def test_steps_give_the_estimate_first_and_the_exact_tables_layer_by_layer():
    model = tiny_models.tiny(0, depth=3)
    job = InsideJob(model, image(1), labels=NAMES, other=image(2), other_name="second")
    steps = job.steps()
    done, total, what = next(steps)
    assert (done, what) == (1, "forward") and total == 1 + 3 + 2 + 3
    first = job.partial()
    assert first.lens is not None and first.dla is not None and first.heads.delta is None
    assert first.heads.delta_linear.shape == (3, 2) and first.patched is None
    rest = list(steps)
    assert [w for _, _, w in rest][:3] == ["head importance, layer 0", "head importance, layer 1",
                                           "head importance, layer 2"]
    report = job.partial()
    whole = InsideJob(model, image(1), labels=NAMES, other=image(2), other_name="second").result()
    np.testing.assert_array_equal(report.heads.delta, whole.heads.delta)
    np.testing.assert_array_equal(report.patched.heads, whole.patched.heads)
    assert report.heads.spearman == pytest.approx(whole.heads.spearman)


def test_the_report_is_json_safe_and_holds_numpy_only(job_and_report):
    _, _, report = job_and_report
    text = json.dumps(report.as_json())                 # no NaN, no numpy scalar, no tensor
    assert "NaN" not in text
    assert all(isinstance(v, np.ndarray) for v in report.arrays().values())
    assert report.dla.total() == pytest.approx(report.dla.logit, rel=1e-4)
    assert report.ablated.heads == ["1.0"] and report.patched.source == "second"


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_every_picture_draws_in_both_languages(job_and_report, lang):
    _, _, report = job_and_report
    photo = np.zeros((32, 32, 3), dtype=np.uint8)
    figures = [lens_figure(report, photo, lang), lens_strip_figure(report, lang), patch_lens_figure(report, 2, photo, lang),
               dla_figure(report, photo, lang=lang), head_sources_figure(report, 1, 0, photo, lang),
               heads_figure(report, lang), patch_figure(report, lang)]
    for fig in figures:
        picture = figure_to_image(fig)
        assert picture.size[0] > 300 and np.asarray(picture).std() > 10   # something is drawn


def test_the_dla_picture_shows_heads_then_the_mlp_on_a_scale_centred_on_zero(job_and_report):
    _, _, report = job_and_report
    table = dla_table(report.dla)
    np.testing.assert_array_equal(table[:, :2], report.dla.heads)
    np.testing.assert_array_equal(table[:, 2], report.dla.mlp)
    fig = dla_figure(report)
    heatmap = fig.axes[0].images[0]
    np.testing.assert_array_equal(heatmap.get_array(), table)
    norm = heatmap.norm
    assert isinstance(norm, matplotlib.colors.TwoSlopeNorm) and norm.vcenter == 0 and norm.vmin == -norm.vmax
    layer, head = strongest_head(report.dla)
    shown = [im for ax in fig.axes for im in ax.images if im.get_array().shape == report.grid]
    np.testing.assert_array_equal(shown[-1].get_array(), report.dla.source_map(layer, head))
    assert report.dla.source_map(layer, head).sum() + report.dla.sources[layer, head, :1].sum() == \
        pytest.approx(report.dla.heads[layer, head], abs=1e-5)
    with pytest.raises(ValueError, match="No head 3.0"):
        report.dla.source_map(3, 0)


def test_the_patch_lens_legend_names_the_most_frequent_classes(job_and_report):
    _, _, report = job_and_report
    maps = report.lens.patches[1]
    frequent, colours = _class_colours(maps, NAMES)
    counts = {c: int((maps == c).sum()) for c in np.unique(maps)}
    assert frequent[0] == max(counts, key=counts.get) and len(colours) == len(frequent) + 1
    fig = patch_lens_figure(report, 1)
    labels = [text.get_text() for text in fig.legends[0].get_texts()]
    assert labels[:len(frequent)] == [NAMES[c] for c in frequent]


def test_a_clip_tower_is_read_against_the_typed_texts():
    model = tiny_models.tiny(0, **tiny_models.FAMILIES["clip"], num_classes=0, proj_dim=8)
    texts = ("a cat", "a dog", "a car")
    embeddings = torch.nn.functional.normalize(torch.randn(3, 8, generator=torch.Generator().manual_seed(5)), dim=-1)
    target, contrast = TextTarget(texts, embeddings, 20.0, 0), TextTarget(texts, embeddings, 20.0, 2)
    report = InsideJob(model, image(1), target, contrast, other=image(2), other_name="b").result()
    assert report.names == texts and report.target == {"index": 0, "name": "a cat"}
    assert report.contrast == {"index": 2, "name": "a car"}
    with torch.no_grad():
        logits = target.logits(model(image(1)))[0]
    assert report.dla.logit == pytest.approx(float(logits[0] - logits[2]), abs=1e-5)
    assert report.dla.total() == pytest.approx(report.dla.logit, rel=1e-4)
    assert [t.indices.size for t in report.lens.top5] == [3, 3] and report.patched.heads.shape == (2, 2)


def test_inside_report_reads_typed_names_as_the_cli_does(tmp_path):
    import vit
    from tiny_run import COLOURS, tiny_checkpoint
    from PIL import Image
    from viz.inside.job import inside_report
    from vit.explain import ClassTarget

    loaded = vit.load(tiny_checkpoint(tmp_path / "tiny.pt"))
    photo = Image.fromarray(np.random.default_rng(0).integers(0, 256, (40, 48, 3), dtype=np.uint8))
    report = inside_report(loaded, photo, "green", "3", views=["dla"], ablate="1.0")
    assert report.target == {"index": 1, "name": "green"} and report.contrast == {"index": 3, "name": COLOURS[3]}
    x = loaded.preprocess.to_tensor(loaded.preprocess.crop_image(photo))
    same = InsideJob(loaded.model, x, ClassTarget(1), ClassTarget(3), ["dla"], loaded.labels, "1.0").result()
    assert report.dla.logit == same.dla.logit and report.ablated.delta_logit == same.ablated.delta_logit
