"""``python -m viz … --faithfulness --perturbation P1,P2,…|all --steps N``: the exact result.json keys several
protocols add (one protocol keeps its shape, plus "auc_error"), the library's numbers, and a folder's
summary/faithfulness.json with its 95 % bootstrap intervals, ABPC, verdicts per protocol and the protocols'
agreement. A tiny checkpoint (4 × 4 patches, 2 layers) keeps it fast.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

import vit
from viz.cli import main
from viz.trust.dataset import bootstrap_ci
from viz.trust.job import protocols_report

METHODS = ["gae", "attention", "random"]


def model_input(weights, path):
    loaded = vit.load(weights)
    with Image.open(path) as photo:
        return loaded, loaded.preprocess.to_tensor(loaded.preprocess.crop_image(photo.convert("RGB")))


def test_several_protocols_add_the_contracted_keys_with_the_librarys_numbers(weights, photos, tmp_path):
    argv = [str(photos / "a.png"), "--weights", weights, "--out", str(tmp_path), "--explain", ",".join(METHODS),
            "--faithfulness", "--perturbation", "tokens,road", "--steps", "9", "--quiet"]
    assert main(argv) == 0
    explain = json.loads((tmp_path / "a" / "result.json").read_text())["explain"]
    assert {"faithfulness_by_protocol", "fractions", "verdicts", "protocol_agreement"} <= set(explain)
    assert explain["fractions"] == pytest.approx(np.linspace(0, 1, 9).tolist())
    assert list(explain["faithfulness_by_protocol"]) == ["tokens", "road"]
    assert explain["faithfulness"] == explain["faithfulness_by_protocol"]["tokens"]     # the first protocol's
    entry = explain["faithfulness_by_protocol"]["road"]["gae"]
    assert list(entry) == ["deletion_auc", "insertion_auc", "deletion", "insertion", "auc_error"]
    assert len(entry["deletion"]) == 9 and set(entry["auc_error"]) == {"deletion", "insertion", "abpc"}
    assert set(explain["verdicts"]) == {"gae", "attention"}                            # not the baseline itself
    v = explain["verdicts"]["gae"]
    assert list(v) == ["verdict", "abpc_gain", "margin"] and set(v["abpc_gain"]) == {"tokens", "road"}
    assert v["verdict"] in ("faithful", "not_faithful", "depends_on_protocol")
    assert all(m >= 0.01 for m in v["margin"].values())
    agreement = explain["protocol_agreement"]
    assert agreement["protocols"] == ["tokens", "road"] and len(agreement["kendall_tau"]) == 2
    loaded, x = model_input(weights, photos / "a.png")
    report = protocols_report(loaded.model, x, None, METHODS, protocols=["tokens", "road"], points=9)
    assert entry["deletion"] == pytest.approx(report.reports["road"].methods["gae"].faithfulness.deletion, abs=1e-6)
    assert v["abpc_gain"] == pytest.approx({p: g for p, g in report.verdicts()["gae"].abpc_gain.items()}, abs=1e-6)


def test_one_protocol_keeps_its_shape_and_all_means_the_four(weights, photos, tmp_path):
    assert main([str(photos / "a.png"), "--weights", weights, "--out", str(tmp_path / "one"), "--explain", "gae",
                 "--faithfulness", "--quiet"]) == 0
    explain = json.loads((tmp_path / "one" / "a" / "result.json").read_text())["explain"]
    assert not {"faithfulness_by_protocol", "fractions", "verdicts", "protocol_agreement"} & set(explain)
    assert explain["perturbation"] == "tokens" and "auc_error" in explain["faithfulness"]["gae"]
    assert main([str(photos / "a.png"), "--weights", weights, "--out", str(tmp_path / "all"), "--explain", "gae",
                 "--faithfulness", "--perturbation", "all", "--quiet"]) == 0
    explain = json.loads((tmp_path / "all" / "a" / "result.json").read_text())["explain"]
    assert explain["protocol_agreement"]["protocols"] == ["tokens", "mean_colour", "blur", "road"]


def test_a_folder_gets_intervals_abpc_and_verdicts_per_protocol(weights, photos, tmp_path):
    argv = [str(photos), "--weights", weights, "--out", str(tmp_path), "--explain", ",".join(METHODS),
            "--faithfulness", "--perturbation", "tokens,blur", "--stats-only", "--quiet"]
    assert main(argv) == 0
    table = json.loads((tmp_path / "summary" / "faithfulness.json").read_text())
    assert list(table) == METHODS
    loaded = vit.load(weights)
    reports = [protocols_report(loaded.model, model_input(weights, photos / f"{n}.png")[1], None, METHODS,
                                protocols=["tokens", "blur"]) for n in ("a", "b", "c")]
    for method in METHODS:
        row = table[method]
        assert set(row["ci95"]) == {"deletion_auc", "insertion_auc", "abpc"}
        assert row["verdict"] in ((None,) if method == "random" else ("faithful", "not_faithful", "depends_on_protocol"))
        assert list(row["by_protocol"]) == ["tokens", "blur"]
        blur = [r.reports["blur"].methods[method].faithfulness for r in reports]
        assert row["by_protocol"]["blur"]["abpc"] == pytest.approx(np.mean([f.abpc for f in blur]), abs=1e-9)
        expected = bootstrap_ci(np.array([[f.abpc] for f in blur]))[0]
        assert row["by_protocol"]["blur"]["ci95"]["abpc"] == pytest.approx(expected.tolist(), abs=1e-9)
        assert row["ci95"] == row["by_protocol"]["tokens"]["ci95"]
    statistics = json.loads((tmp_path / "summary" / "statistics.json").read_text())
    assert statistics["protocol_agreement"]["protocols"] == ["tokens", "blur"]
    md = (tmp_path / "summary" / "faithfulness.md").read_text()
    assert "| method | deletion AUC ↓ (predicted) | insertion AUC ↑ (predicted) | ABPC ↑ | verdict |" in md
    assert "Protocols' agreement on the ranking by mean ABPC (Kendall τ): tokens–blur" in md


def test_a_resumed_folder_run_keeps_every_images_scores(weights, photos, tmp_path, monkeypatch):
    """The per-image AUCs behind the intervals are saved with the progress: a run that dies after its first image
    and is resumed gives the summary of one uninterrupted run."""
    import viz.dataset.run as run

    common = [str(photos), "--weights", weights, "--explain", "gae,random", "--faithfulness", "--perturbation",
              "tokens,blur", "--stats-only", "--quiet"]
    assert main(common + ["--out", str(tmp_path / "whole")]) == 0
    real, calls = run._analyse_batch, []

    def dies_after_one(*args):
        calls.append(1)
        if len(calls) > 1:
            raise RuntimeError("killed")
        return real(*args)

    monkeypatch.setattr(run, "_analyse_batch", dies_after_one)
    with pytest.raises(RuntimeError, match="killed"):
        main(common + ["--out", str(tmp_path / "resumed")])
    monkeypatch.setattr(run, "_analyse_batch", real)
    assert main(common + ["--out", str(tmp_path / "resumed"), "--resume"]) == 0
    whole = json.loads((tmp_path / "whole" / "summary" / "faithfulness.json").read_text())
    again = json.loads((tmp_path / "resumed" / "summary" / "faithfulness.json").read_text())
    assert whole["gae"]["by_protocol"] == again["gae"]["by_protocol"] and whole["gae"]["images"] == 3


def test_bad_protocols_and_steps_are_refused(weights, photos, tmp_path, capsys):
    for bad in (["--perturbation", "tokens,grey"], ["--steps", "2"]):
        with pytest.raises(SystemExit):
            main([str(photos / "a.png"), "--weights", weights, "--explain", "gae", "--faithfulness"] + bad)
    assert "Unknown protocol 'grey'" in capsys.readouterr().err
