"""Comparing two checkpoints on the same photo (viz.compare, python -m viz IMAGE --weights A --compare B).

Protects: a checkpoint compared with itself differs nowhere; the two real ViT-Ti checkpoints on the cat photo differ,
and each side's top-5 is that model's own analysis; maps of models with different grids and crops land on the same
photo pixels (a map that is a function of the photo position comes out identical from both); checkpoints are named
by file name and sha256 prefix; the CLI writes compare.png and compare.json.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json

import numpy as np
import pytest
from PIL import Image

import vit
from vit.checkpoints.identity import checkpoint_file, fingerprint
from viz import panels
from viz.analysis import analyze
from viz.cli import main
from viz.compare import compare, comparison_figure, comparison_record
from viz.compare.align import common_box, relative_to_uniform, resample_onto
from viz.compare.side import compare_side
from viz.drawing.render import upsample

AUGREG = "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors"
DEIT = "deit_tiny_patch16_224.pipevit_ln_fixedpoint.safetensors"
SHA_PREFIX = {AUGREG: "bb753607", DEIT: "d5fb53d8"}    # PROVENANCE.md in ../shared/weights


@pytest.fixture(scope="module")
def models(real_weights_dir):
    return {name: vit.load(str(real_weights_dir / name)) for name in (AUGREG, DEIT)}


@pytest.fixture(scope="module")
def sides(models, cat):
    return {name: compare_side(loaded, cat) for name, loaded in models.items()}


def test_a_checkpoint_compared_with_itself_differs_nowhere(sides, cat):
    side = sides[AUGREG]
    c = compare(cat, side, side, layer=5, head=1)
    for name, pair in c.maps.items():
        assert not pair.difference.any(), name
        stats = pair.stats()
        assert stats["total_variation"] == 0.0 and stats["max_abs_difference"] == 0.0
        assert stats["correlation"] == pytest.approx(1.0, abs=1e-9)
    assert all(row.change == 0.0 for row in c.top_a + c.top_b)
    assert c.probability_tv == 0.0 and np.array_equal(c.distance_a, c.distance_b)
    record = comparison_record(c)
    assert record["differences"]["mean_distance"]["change_by_block"] == [0.0] * 12
    assert record["differences"]["top1_same"] is True
    assert "the same centre crop" in c.alignment


@pytest.mark.slow
def test_the_two_real_checkpoints_differ_and_each_top5_is_its_own(sides, models, cat):
    c = compare(cat, sides[AUGREG], sides[DEIT])
    for pair in c.maps.values():
        stats = pair.stats()
        assert stats["total_variation"] > 0.01 and stats["max_abs_difference"] > 0
    assert c.probability_tv > 0.1 and not np.allclose(c.distance_a, c.distance_b)
    for rows, name, role in ((c.top_a, AUGREG, "a"), (c.top_b, DEIT, "b")):
        own = analyze(models[name], cat).top_k(5)
        assert [(r.label, getattr(r, role)) for r in rows] == own
    # the other model's probability of each class is read by class name
    deit = analyze(models[DEIT], cat)
    assert c.top_a[0].b == pytest.approx(float(deit.probabilities[list(deit.labels).index(c.top_a[0].label)]))
    assert c.top_a[0].change == pytest.approx(c.top_a[0].b - c.top_a[0].a)
    record = comparison_record(c)
    assert [(m["role"], m["name"], m["sha256"]) for m in record["models"]] == [
        ("A", AUGREG, SHA_PREFIX[AUGREG]), ("B", DEIT, SHA_PREFIX[DEIT])]
    assert [r["label"] for r in record["models"][0]["top_k"]] == [r.label for r in c.top_a]


def test_maps_of_one_model_equal_its_own_panels_on_the_same_crop(sides, cat):
    """When both crops are the model's, the compared map is the single panel's map upsampled to its pixels
    (divided by its mean)."""
    side = sides[AUGREG]
    c = compare(cat, side, sides[DEIT])
    assert c.photo is side.analysis.image
    expected = relative_to_uniform(upsample(panels.rollout_of(side.analysis), (224, 224)))
    np.testing.assert_array_equal(c.maps["rollout"].a, expected)


def test_linear_maps_resample_onto_the_photo_exactly():
    """A map whose value is the photo x + 2y of each cell's centre comes back as x + 2y of each output pixel,
    wherever the output pixel lies between cell centres — whatever the grid and the crop."""
    photo_box = (0.0, 0.0, 400.0, 300.0)
    boxes = {"A": (40.0, 10.0, 360.0, 290.0), "B": (70.0, 0.0, 330.0, 300.0)}
    grids = {"A": (7, 8), "B": (12, 10)}
    box = common_box(boxes["A"], boxes["B"])
    assert box == (70.0, 10.0, 330.0, 290.0) and common_box(box, photo_box) == box
    size = (140, 130)                                           # (H, W) output pixels over the common box
    ys = box[1] + (np.arange(size[0]) + 0.5) * (box[3] - box[1]) / size[0]
    xs = box[0] + (np.arange(size[1]) + 0.5) * (box[2] - box[0]) / size[1]
    truth = xs[None, :] + 2 * ys[:, None]
    for who in "AB":
        (l, t, r, b), (gh, gw) = boxes[who], grids[who]
        cy = t + (np.arange(gh) + 0.5) * (b - t) / gh
        cx = l + (np.arange(gw) + 0.5) * (r - l) / gw
        values = cx[None, :] + 2 * cy[:, None]
        out = resample_onto(values, boxes[who], box, size)
        inside = ((ys >= cy[0]) & (ys <= cy[-1]))[:, None] & ((xs >= cx[0]) & (xs <= cx[-1]))[None, :]
        assert inside.mean() > 0.7
        np.testing.assert_allclose(out[inside], truth[inside], rtol=1e-5)


def test_models_with_different_grids_and_crops_compare_on_the_photos_pixels(models, sides, cat):
    """The AugReg ViT-Ti at 224 (crop 224 / 248 of the short side) against the same weights run at 384 with the whole
    short side (24×24 patches): the maps go onto A's crop, the common area, and a map that is a function of the
    photo position is the same from both models."""
    at384 = vit.load(str(checkpoint_file(models[AUGREG].source)), img_size=(384, 384))
    at384.preprocess = dataclasses.replace(at384.preprocess, resize=384, crop=(384, 384))
    b = compare_side(at384, cat)
    a = sides[AUGREG]
    assert b.analysis.grid == (24, 24) and b.crop_box[1] == 0 and b.crop_box[3] == 300

    def position_map(side):      # the photo's x + 2y at each patch centre of this side's grid
        (l, t, r, bottom), (gh, gw) = side.crop_box, side.analysis.grid
        cy = t + (np.arange(gh) + 0.5) * (bottom - t) / gh
        cx = l + (np.arange(gw) + 0.5) * (r - l) / gw
        return cx[None, :] + 2 * cy[:, None]

    c = compare(cat, a, b, extra_maps={"photo position": (position_map(a), position_map(b))})
    assert c.box == pytest.approx(a.crop_box) and c.photo.size == (224, 224)
    assert "common centre crop" in c.alignment and "A 14×14, B 24×24" in c.alignment
    position = c.maps["photo position"]
    inner = (slice(8, 216), slice(8, 216))                      # between A's outermost patch centres
    np.testing.assert_allclose(position.a[inner], position.b[inner], rtol=1e-4)
    assert c.maps["rollout"].a.shape == c.maps["rollout"].b.shape == (224, 224)
    # the same weights at two resolutions still look at the same places
    assert c.maps["rollout"].stats()["correlation"] > 0.5
    # mean attention distance of B is converted to A's pixels: B's 384 px span ~300 photo px, A's 224 px ~300·224/248
    scale = ((b.crop_box[2] - b.crop_box[0]) / 384) / ((a.crop_box[2] - a.crop_box[0]) / 224)
    a_span = 300 * 224 / models[AUGREG].preprocess.resize                  # the crop's share of the short side
    assert scale == pytest.approx((300 / 384) / (a_span / 224), rel=2e-3)
    np.testing.assert_allclose(c.distance_b, panels.mean_distance_of(b.analysis) * scale, rtol=1e-5)
    assert comparison_record(c)["differences"]["mean_distance"]["change_by_block"] is not None


def test_options_that_do_not_fit_both_models_are_refused(sides, cat):
    with pytest.raises(ValueError, match="does not exist in both models"):
        compare(cat, sides[AUGREG], sides[DEIT], layer=12)
    with pytest.raises(ValueError, match="Head 3 does not exist in both"):
        compare(cat, sides[AUGREG], sides[DEIT], head=3)


def test_figure(sides, cat):
    c = compare(cat, sides[AUGREG], sides[DEIT], extra_maps={"class map": (np.eye(14), -np.eye(7))})
    fig = comparison_figure(c)
    assert len(fig.axes) >= 3 + 3 * 3                     # top-5 ×2, distances, then A / B / B − A per map
    legend = fig.axes[2].get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["A", "B"]


def test_fingerprint_names_the_file_and_its_sha256(real_weights_dir, tmp_path, monkeypatch):
    path = real_weights_dir / AUGREG
    fp = fingerprint(str(path))
    assert fp == (AUGREG, hashlib.sha256(path.read_bytes()).hexdigest()[:8]) == (AUGREG, SHA_PREFIX[AUGREG])
    assert fp.label == f"{AUGREG} (bb753607)"
    import torch
    monkeypatch.setattr(torch.hub, "get_dir", lambda: str(tmp_path))      # a download: its copy in the hub cache
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "vit_b_16-c867db91.pth").write_bytes(b"weights")
    assert fingerprint("https://download.pytorch.org/models/vit_b_16-c867db91.pth") == (
        "vit_b_16-c867db91.pth", hashlib.sha256(b"weights").hexdigest()[:8])
    with pytest.raises(FileNotFoundError):
        fingerprint(str(tmp_path / "missing.pt"))


def test_cli_writes_compare_png_and_json(real_weights_dir, cat, tmp_path, capsys):
    cat.save(tmp_path / "chelsea.png")
    out = tmp_path / "out"
    argv = [str(tmp_path / "chelsea.png"), "--weights", str(real_weights_dir / AUGREG), "--compare",
            str(real_weights_dir / DEIT), "--out", str(out), "--layer", "3"]
    assert main(argv) == 0
    folder = out / "chelsea"
    assert sorted(p.name for p in folder.iterdir()) == ["compare.json", "compare.png"]
    record = json.loads((folder / "compare.json").read_text())
    assert record["files"] == ["compare.json", "compare.png"] and record["image"].endswith("chelsea.png")
    assert [(m["name"], m["sha256"], len(m["top_k"])) for m in record["models"]] == [
        (AUGREG, "bb753607", 5), (DEIT, "d5fb53d8", 5)]
    assert record["attention"] == {"layer_a": 3, "layer_b": 3, "head": None}
    assert set(record["differences"]["maps"]) == {"rollout", "attention"}
    assert record["models"][0]["top_k"][0]["label"] in {"Egyptian cat", "tabby", "tiger cat"}
    with Image.open(folder / "compare.png") as png:
        assert png.format == "PNG" and png.width >= 1000
    assert main(argv[:4] + [str(tmp_path / "missing.pt"), "--out", str(out)]) == 2
    assert "cannot load the --compare weights" in capsys.readouterr().err
    assert main(argv + ["--layer", "12"]) == 2
    assert "Layer 12 does not exist" in capsys.readouterr().err
