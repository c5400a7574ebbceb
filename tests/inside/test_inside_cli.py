"""Protects the command line of the inside views: ``python -m viz IMAGE --inside lens,dla,heads [--target] [--contrast]
[--ablate L.H,…] [--patch-from IMAGE2] [--reference FOLDER]`` writes exactly the files, npz arrays and result.json
keys of its contract, with numbers that are the model's own; bad input is one clear error listing what is valid;
a folder run adds statistics.json's "inside", streamed, the same over two processes (torchrun) and after an
interrupted run is resumed. Tiny checkpoints, generated images."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

import tiny_models
import vit
from tiny_run import COLOURS, REPO, noise_images, single_threaded_env, statistics, tiny_checkpoint
from viz.cli import main
from viz.dataset import run as dataset_run

L, H = 3, 2        # the checkpoint's layers and heads


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("inside")
    weights = tiny_checkpoint(folder / "tiny.pt", depth=L, heads=H)
    photo, other = noise_images(folder / "photos", 2)
    return weights, photo, other, folder


def run_cli(capsys, *args, quiet: bool = True) -> tuple[int, str]:
    code = main([str(a) for a in args] + (["--quiet"] if quiet else []))
    return code, capsys.readouterr().err


def model_logits(weights, path) -> torch.Tensor:
    loaded = vit.load(weights)
    from vit.image_file import open_image
    with torch.no_grad():
        return loaded.model(loaded.preprocess(open_image(path)))[0]


def test_the_contract(files, capsys, tmp_path):
    weights, photo, other, _ = files
    code, err = run_cli(capsys, photo, "--weights", weights, "--out", tmp_path, "--inside", "lens,dla,heads",
                        "--ablate", "2.0,0.1", "--patch-from", other)
    assert code == 0, err
    folder = tmp_path / photo.stem
    for name in ("inside_lens.png", "inside_dla.png", "inside_heads.png", "inside_patch.png"):
        assert (folder / name).stat().st_size > 1000
    with np.load(folder / "attention.npz") as saved:
        assert saved["inside_lens_patches"].shape == (L, 4, 4) and saved["inside_lens_patches"].dtype == np.int64
        assert saved["inside_dla_heads"].shape == (L, H) and saved["inside_head_importance"].shape == (L, H)
        dla_heads = saved["inside_dla_heads"]
    result = json.loads((folder / "result.json").read_text())
    inside = result["inside"]
    assert list(inside) == ["target", "lens", "dla", "heads", "ablated", "patched"]
    logits = model_logits(weights, photo)
    top = int(logits.argmax())
    assert inside["target"] == {"index": top, "name": COLOURS[top]}
    assert [entry["layer"] for entry in inside["lens"]] == list(range(L))
    last = inside["lens"][-1]
    assert set(last) == {"layer", "top5", "target_probability", "target_rank"} and last["target_rank"] == 1
    assert [t["index"] for t in last["top5"]] == logits.argsort(descending=True)[:5].tolist()
    assert set(last["top5"][0]) == {"index", "name", "probability"}
    assert last["target_probability"] == pytest.approx(float(logits.softmax(-1)[top]), abs=1e-5)
    dla = inside["dla"]
    assert set(dla) == {"logit", "head_bias", "embedding", "attention_bias", "heads", "mlp"}
    assert dla["logit"] == pytest.approx(float(logits[top]), abs=1e-5)
    total = dla["embedding"] + sum(dla["attention_bias"]) + sum(map(sum, dla["heads"])) + sum(dla["mlp"]) + dla["head_bias"]
    assert total == pytest.approx(dla["logit"], rel=1e-4)
    np.testing.assert_allclose(dla_heads, dla["heads"], rtol=1e-5)
    heads = inside["heads"]
    assert set(heads) == {"ablation", "delta_logit", "delta_logit_linear", "spearman"} and heads["ablation"] == "zero"
    assert np.shape(heads["delta_logit"]) == np.shape(heads["delta_logit_linear"]) == (L, H)
    assert -1.0 <= heads["spearman"] <= 1.0
    ablated = inside["ablated"]
    assert ablated["heads"] == ["2.0", "0.1"] and len(ablated["top5"]) == 5 and ablated["delta_logit"] != 0
    patched = inside["patched"]
    assert patched["from"] == other.stem and set(patched) == {"from", "target", "heads", "residual"}
    assert patched["target"]["index"] == int(model_logits(weights, other).argmax())
    assert np.shape(patched["heads"]) == (L, H) and np.shape(patched["residual"]) == (L, 1 + 16)
    assert {"inside_lens.png", "inside_patch.png"} <= set(result["files"])


def test_one_view_writes_its_own_files_only(files, capsys, tmp_path):
    weights, photo, _, _ = files
    code, err = run_cli(capsys, photo, "--weights", weights, "--out", tmp_path, "--inside", "dla")
    assert code == 0, err
    folder = tmp_path / photo.stem
    assert sorted(p.name for p in folder.glob("inside_*")) == ["inside_dla.png"]
    assert list(json.loads((folder / "result.json").read_text())["inside"]) == ["target", "dla"]
    with np.load(folder / "attention.npz") as saved:
        assert [k for k in saved.files if k.startswith("inside")] == ["inside_dla_heads"]


def test_contrast_mode_splits_the_logit_difference(files, capsys, tmp_path):
    weights, photo, _, _ = files
    code, err = run_cli(capsys, photo, "--weights", weights, "--out", tmp_path, "--inside", "dla,heads",
                        "--target", "green", "--contrast", "3")
    assert code == 0, err
    inside = json.loads((tmp_path / photo.stem / "result.json").read_text())["inside"]
    assert inside["target"] == {"index": 1, "name": "green"} and inside["contrast"] == {"index": 3, "name": "cyan"}
    logits = model_logits(weights, photo)
    dla = inside["dla"]
    assert dla["logit"] == pytest.approx(float(logits[1] - logits[3]), abs=1e-5)
    total = dla["embedding"] + sum(dla["attention_bias"]) + sum(map(sum, dla["heads"])) + sum(dla["mlp"]) + dla["head_bias"]
    assert total == pytest.approx(dla["logit"], rel=1e-4)


def test_patching_moves_the_named_target_when_there_is_one(files, capsys, tmp_path):
    weights, photo, other, _ = files
    code, err = run_cli(capsys, photo, "--weights", weights, "--out", tmp_path, "--inside", "lens", "--target", "blue",
                        "--patch-from", other)
    assert code == 0, err
    patched = json.loads((tmp_path / photo.stem / "result.json").read_text())["inside"]["patched"]
    assert patched["target"] == {"index": 2, "name": "blue"}


def test_mean_ablation_over_a_reference_folder(files, capsys, tmp_path):
    weights, photo, _, folder = files
    reference = tmp_path / "reference"
    noise_images(reference, 3, seed=7)
    out = {}
    for mode, extra in (("zero", []), ("mean", ["--reference", reference])):
        code, err = run_cli(capsys, photo, "--weights", weights, "--out", tmp_path / mode, "--inside", "heads",
                            "--ablate", "1.1", *extra)
        assert code == 0, err
        out[mode] = json.loads((tmp_path / mode / photo.stem / "result.json").read_text())["inside"]
    assert out["mean"]["heads"]["ablation"] == "mean" and out["zero"]["heads"]["ablation"] == "zero"
    assert out["mean"]["ablated"]["delta_logit"] != pytest.approx(out["zero"]["ablated"]["delta_logit"], abs=1e-4)
    assert out["mean"]["heads"]["delta_logit"][1][1] == pytest.approx(out["mean"]["ablated"]["delta_logit"], abs=1e-5)


@pytest.mark.parametrize("args, says", [
    (["--inside", "lens,logits"], "Unknown inside view 'logits'! Expected one or more of lens, dla, heads"),
    (["--ablate", "1-0"], "Bad head '1-0'! This model has layers 0 to 2 and heads 0 to 1"),
    (["--ablate", "3.0"], "No head 3.0! This model has layers 0 to 2 and heads 0 to 1"),
    (["--ablate", "0.2"], "No head 0.2! This model has layers 0 to 2 and heads 0 to 1"),
    (["--inside", "lens", "--reference", "."], "--reference gives the heads' mean outputs for mean ablation"),
    (["--target", "green"], "--target and --contrast choose the class for --explain or --inside"),
    (["--inside", "lens", "--target", "purple"], "Unknown class 'purple'!"),
    (["--inside", "lens", "--patch-from", "missing.png"], "--patch-from missing.png: The file 'missing.png' does not"),
])
def test_bad_input_is_one_clear_error(files, capsys, tmp_path, args, says):
    weights, photo, _, _ = files
    code, err = run_cli(capsys, photo, "--weights", weights, "--out", tmp_path, *args)
    checked, err = err.split("\n", 1)       # the load's check first (this explorer's own file: its own library)
    assert checked == f"{weights}: not verified (this explorer's own format: it is its own library)"
    assert code == 2 and says in err and err.count("\n") == 1, err
    assert not (tmp_path / photo.stem).exists()


def test_dla_is_undefined_for_map_pooling(files, capsys, tmp_path):
    _, photo, _, _ = files
    model = tiny_models.tiny(0, **tiny_models.FAMILIES["siglip"])
    weights = vit.save_checkpoint(tmp_path / "siglip.pt", model, COLOURS[:5], vit.Preprocess.for_crop(32))
    code, err = run_cli(capsys, photo, "--weights", weights, "--out", tmp_path, "--inside", "lens,dla")
    assert code == 2 and "The dla view is undefined for this model" in err and "MAP" in err
    assert "Views for this model: lens, heads." in err
    code, err = run_cli(capsys, photo, "--weights", weights, "--out", tmp_path, "--inside", "lens,heads")
    assert code == 0, err
    inside = json.loads((tmp_path / photo.stem / "result.json").read_text())["inside"]
    assert "approximate" in inside["notes"][0]


# --- data sets ----------------------------------------------------------------------------------------------------

def labelled_folder(root, per_class: int = 3):
    for i, colour in enumerate(("red", "green")):
        noise_images(root / colour, per_class, seed=10 + i)
    return root


@pytest.mark.slow
def test_a_folder_run_averages_head_importance_and_the_lens_accuracy(files, capsys, tmp_path):
    weights = files[0]
    images = labelled_folder(tmp_path / "images")
    code, err = run_cli(capsys, images, "--weights", weights, "--out", tmp_path / "out", "--inside", "heads",
                        "--batch-size", "2")
    assert code == 0, err
    inside = statistics(tmp_path / "out")["inside"]
    assert inside["images"] == inside["labelled_images"] == 6
    per_image = [np.load(p)["inside_head_importance"] for p in sorted((tmp_path / "out").glob("*/*/attention.npz"))]
    assert len(per_image) == 6
    np.testing.assert_allclose(inside["head_importance"], np.mean(per_image, axis=0), atol=1e-5)
    assert np.shape(inside["lens_top1"]) == (L,) and all(0.0 <= v <= 1.0 for v in inside["lens_top1"])
    results = [json.loads(p.read_text()) for p in sorted((tmp_path / "out").glob("*/*/result.json"))]
    labels = [COLOURS.index(r["image"].split("/")[-2]) for r in results]
    last_top1 = [r["inside"]["target"]["index"] for r in results]     # the lens after the last layer is the output
    assert inside["lens_top1"][-1] == pytest.approx(np.mean(np.array(last_top1) == np.array(labels)))
    assert "## Inside the model" in (tmp_path / "out" / "summary" / "statistics.md").read_text()


@pytest.mark.slow
def test_an_interrupted_folder_run_resumes_to_the_same_statistics(files, capsys, tmp_path, monkeypatch):
    weights = files[0]
    images = labelled_folder(tmp_path / "images")
    common = [images, "--weights", weights, "--inside", "heads", "--stats-only", "--batch-size", "2"]
    code, err = run_cli(capsys, *common, "--out", tmp_path / "whole")
    assert code == 0, err

    real, batches = dataset_run._analyse_batch, []

    def interrupted(*args, **kwargs):      # the third batch never finishes: the run dies there
        if len(batches) == 2:
            raise KeyboardInterrupt
        batches.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(dataset_run, "_analyse_batch", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_cli(capsys, *common, "--out", tmp_path / "cut")
    monkeypatch.setattr(dataset_run, "_analyse_batch", real)
    code, err = run_cli(capsys, *common, "--out", tmp_path / "cut", "--resume", quiet=False)
    assert code == 0 and "resuming: 4 of 6" in err, err
    assert statistics(tmp_path / "cut") == statistics(tmp_path / "whole")
    code, err = run_cli(capsys, *common, "--target", "red", "--out", tmp_path / "cut", "--resume")
    assert code == 2 and "(inside_target differ)" in err


@pytest.mark.slow
def test_torchrun_with_two_processes_gives_the_single_process_inside_statistics(files, tmp_path):
    weights = files[0]
    images = labelled_folder(tmp_path / "images", per_class=3)
    common = ["--weights", weights, "--quiet", "--inside", "heads", "--stats-only"]
    one = subprocess.run([sys.executable, "-m", "viz", images, "--out", tmp_path / "one", *common],
                         capture_output=True, text=True, env=single_threaded_env(), cwd=REPO, timeout=300)
    assert one.returncode == 0, one.stderr[-3000:]
    two = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                          "-m", "viz", images, "--out", tmp_path / "two", *common],
                         capture_output=True, text=True, env=single_threaded_env(), cwd=REPO, timeout=300)
    assert two.returncode == 0, two.stderr[-3000:]
    a, b = statistics(tmp_path / "one"), statistics(tmp_path / "two")
    assert (a.pop("processes"), b.pop("processes")) == (1, 2)
    assert a == b and a["inside"]["images"] == 6
