"""``python -m viz … --explain METHODS --faithfulness [--sanity]``: the exact result.json keys of issue 14, the
comparison picture, the folder summary (DIR/summary/faithfulness.json and .md, also with --stats-only), and the
refusals. A tiny checkpoint (4×4 patches, 2 layers) keeps it fast; the numbers are checked against the library.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

import vit
from viz.trust.job import trust_report
from viz.cli import main

METHODS = ["gae", "attention", "random"]


def test_one_image_gets_the_contracted_faithfulness_and_sanity_keys(weights, photos, tmp_path):
    argv = [str(photos / "a.png"), "--weights", weights, "--out", str(tmp_path), "--explain", ",".join(METHODS),
            "--faithfulness", "--sanity", "--quiet"]
    assert main(argv) == 0
    result = json.loads((tmp_path / "a" / "result.json").read_text())
    explain = result["explain"]
    assert list(explain["faithfulness"]) == METHODS
    for method in METHODS:
        entry = explain["faithfulness"][method]
        assert list(entry) == ["deletion_auc", "insertion_auc", "deletion", "insertion", "auc_error"]
        assert len(entry["deletion"]) == len(entry["insertion"]) == 11
        assert entry["deletion_auc"] == pytest.approx(np.trapezoid(entry["deletion"], np.linspace(0, 1, 11)))
        assert len(explain["sanity"][method]) == 2                              # after 1 and 2 randomised layers
    assert explain["perturbation"] == "tokens" and explain["sanity_flagged"]["random"] is True
    assert set(explain["gains"]["gae"]) == {"deletion_gain", "insertion_gain"}
    # the very numbers of the library on the same pixels
    loaded = vit.load(weights)
    with Image.open(photos / "a.png") as photo:
        x = loaded.preprocess.to_tensor(loaded.preprocess.crop_image(photo.convert("RGB")))
    report = trust_report(loaded.model, x, None, METHODS, sanity=True)
    assert explain["faithfulness"]["gae"]["deletion"] == pytest.approx(report.methods["gae"].faithfulness.deletion,
                                                                       abs=1e-6)
    assert explain["sanity"]["gae"] == pytest.approx(report.methods["gae"].sanity, abs=1e-6)
    assert "trust.png" in result["files"]
    with Image.open(tmp_path / "a" / "trust.png") as picture:
        assert picture.width > 800 and picture.height > 500


@pytest.mark.slow
@pytest.mark.parametrize("stats_only", [False, True])
def test_a_folder_gets_the_mean_aucs_per_method_in_its_summary(weights, photos, tmp_path, stats_only):
    argv = [str(photos), "--weights", weights, "--out", str(tmp_path), "--explain", ",".join(METHODS),
            "--faithfulness", "--quiet"] + (["--stats-only"] if stats_only else [])
    assert main(argv) == 0
    table = json.loads((tmp_path / "summary" / "faithfulness.json").read_text())
    assert list(table) == METHODS
    per_image = []
    loaded = vit.load(weights)
    for name in ("a", "b", "c"):
        if stats_only:
            assert not (tmp_path / name).exists()
            with Image.open(photos / f"{name}.png") as photo:
                x = loaded.preprocess.to_tensor(loaded.preprocess.crop_image(photo.convert("RGB")))
            per_image.append(trust_report(loaded.model, x, None, METHODS).as_json()["faithfulness"])
        else:
            per_image.append(json.loads((tmp_path / name / "result.json").read_text())["explain"]["faithfulness"])
    for method in METHODS:
        row = table[method]
        assert row["images"] == 3
        for score in ("deletion_auc", "insertion_auc"):
            assert row[score] == pytest.approx(np.mean([p[method][score] for p in per_image]), abs=1e-6)
        np.testing.assert_allclose(row["deletion"], np.mean([p[method]["deletion"] for p in per_image], axis=0),
                                   atol=1e-6)
    md = (tmp_path / "summary" / "faithfulness.md").read_text()
    assert "| method | deletion AUC ↓ (predicted) | insertion AUC ↑ (predicted) |" in md
    assert f"| gae | {table['gae']['deletion_auc']:.3f} ± " in md
    assert "faithfulness" in json.loads((tmp_path / "summary" / "statistics.json").read_text())


def test_faithfulness_needs_explain_and_a_known_perturbation(weights, photos, tmp_path, capsys):
    assert main([str(photos / "a.png"), "--weights", weights, "--out", str(tmp_path), "--faithfulness"]) == 2
    assert "give --explain METHODS too" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([str(photos / "a.png"), "--weights", weights, "--explain", "gae", "--faithfulness",
              "--perturbation", "grey"])
