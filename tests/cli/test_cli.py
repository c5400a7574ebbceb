"""``python -m viz`` with the real AugReg ViT-Ti: every file for the cat photo, numbers that reproduce the
maps, folders of images with an average, and options for every map parameter."""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image
from skimage import data
from canaries import FifoCanary
from viz import panels
from viz.cli import build_parser, main, options_from
from viz.maps.rollout import rollout_map

AUGREG = "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors"
PANELS = ["input", "rollout", "attention", "threshold", "heads", "query_row", "query_column", "filters",
          "pos_similarity", "mean_distance", "token_norms", "token_norm_curves"]
CATS = {"Egyptian cat", "tabby", "tiger cat"}


def test_cli_writes_every_file_for_the_cat(real_weights_dir, cat, tmp_path):
    cat.save(tmp_path / "chelsea.png")
    out = tmp_path / "out"
    assert main([str(tmp_path / "chelsea.png"), "--weights", str(real_weights_dir / AUGREG), "--out", str(out)]) == 0
    folder = out / "chelsea"
    for name in PANELS:
        with Image.open(folder / f"{name}.png") as image:
            assert image.mode == "RGB" and min(image.size) >= 64, name
    result = json.loads((folder / "result.json").read_text())
    assert result["top_k"][0]["label"] in CATS and len(result["top_k"]) == 5
    probabilities = [entry["probability"] for entry in result["top_k"]]
    assert probabilities == sorted(probabilities, reverse=True) and sum(probabilities) <= 1.0 + 1e-6
    assert result["input_size"] == [224, 224] and result["model"].startswith("vit_tiny")
    assert {"decode", "forward", "panels", "write"} <= set(result["timings_s"])
    assert sorted(p.name for p in folder.iterdir()) == result["files"]

    npz = np.load(folder / "attention.npz")
    assert npz["attention"].shape == (12, 3, 197, 197) and npz["attention"].dtype == np.float32
    assert int(npz["num_prefix_tokens"]) == 1 and npz["grid"].tolist() == [14, 14]
    assert npz["pos_similarity"].shape == (196, 196)
    np.testing.assert_allclose(np.diag(npz["pos_similarity"]), 1.0, atol=1e-6)
    assert npz["mean_distance"].shape == (12, 3) and (npz["mean_distance"] > 0).all()
    # the saved attention reproduces the saved map
    np.testing.assert_allclose(npz["rollout"], rollout_map(npz["attention"], 1, (14, 14)), rtol=1e-5)


def test_cli_folder_options_and_average(real_weights_dir, tmp_path):
    photos = tmp_path / "photos"
    photos.mkdir()
    Image.fromarray(data.chelsea()).save(photos / "cat.png")
    Image.fromarray(data.camera()).save(photos / "camera.jpg")
    (photos / "notes.txt").write_text("not an image, and not picked up from the folder")
    out = tmp_path / "out"
    argv = [str(photos), str(tmp_path / "missing.jpg"), "--weights", str(real_weights_dir / AUGREG), "--out", str(out),
            "--input-size", "224", "288", "--fusion", "max", "--discard-ratio", "0.9", "--mask-artifacts",
            "--query", "3", "4", "--layer", "5", "--head", "1", "--float16", "--no-colorbar", "--quiet"]
    assert main(argv) == 1                                   # the missing file is reported, the others written
    for name in ("cat", "camera"):
        npz = np.load(out / name / "attention.npz")
        assert npz["attention"].dtype == np.float16 and npz["grid"].tolist() == [14, 18]
        assert npz["query_patch"].tolist() == [3, 4]
        flags = npz["high_norm_flags"]
        expected = rollout_map(npz["attention"], 1, (14, 18), fusion="max", discard_ratio=0.9,
                               drop_patches=flags.any(axis=0))
        np.testing.assert_allclose(npz["rollout"], expected, rtol=1e-5)
        row = npz["attention"][5, 1, 0].astype(np.float32)          # --mask-artifacts: the flagged keys dropped,
        row[1:][flags.any(axis=0).ravel()] = 0.0                     # the rest renormalised
        np.testing.assert_allclose(npz["cls_attention"], (row / row.sum())[1:].reshape(14, 18), rtol=1e-5)
        with Image.open(out / name / "rollout.png") as image:
            assert image.size == (288, 224)                  # no colour bar, the input's own pixels
    summary = np.load(out / "summary" / "mean_distance.npz")
    assert summary["per_image"].shape == (2, 12, 3)
    np.testing.assert_allclose(summary["mean_distance"], summary["per_image"].mean(axis=0), rtol=1e-5)
    assert (out / "summary" / "mean_distance.png").is_file()


def test_bad_options_get_a_clear_message(real_weights_dir, tmp_path, capsys):
    argv = [str(tmp_path / "x.png"), "--weights", str(real_weights_dir / AUGREG), "--out", str(tmp_path)]
    assert main(argv + ["--head", "7"]) == 2
    assert "Head 7 does not exist" in capsys.readouterr().err
    assert main(argv + ["--query", "14", "0"]) == 2
    assert "outside the 14×14 grid" in capsys.readouterr().err
    assert main([str(tmp_path / "x.png"), "--weights", str(tmp_path / "nothing.pt")]) == 2
    assert "cannot load the weights" in capsys.readouterr().err


def test_every_map_option_has_a_flag():
    args = build_parser().parse_args([
        "x.png", "--layer", "3", "--head", "2", "--fusion", "min", "--discard-ratio", "0.5", "--start-layer", "1",
        "--mask-artifacts", "--norm-ratio", "4", "--query", "1", "2", "--query-rollout", "--share", "0.3",
        "--mask-source", "rollout", "--distance-renormalise", "--cmap", "viridis", "--alpha", "0.4",
        "--no-colorbar", "--scale", "2", "--lang", "zh-CN"])
    o, default = options_from(args), panels.MapOptions()
    unchanged = [f.name for f in dataclasses.fields(o) if getattr(o, f.name) == getattr(default, f.name)]
    assert unchanged == []
    assert options_from(build_parser().parse_args(["x.png", "--head", "mean"])).head is None
    with pytest.raises(SystemExit):
        build_parser().parse_args(["x.png", "--share", "1.5"])


def test_help_runs_as_a_module_and_lists_the_panels():
    result = subprocess.run([sys.executable, "-m", "viz", "--help"], capture_output=True, text=True, check=True)
    for text in PANELS + ["--weights", "--out", "attention.npz", "--mask-artifacts", "--discard-ratio"]:
        assert text in result.stdout


def test_a_fifo_as_weights_is_refused_at_once(tmp_path, cat):
    """A FIFO named as --weights would block the reader until something writes to it (the CLI hung): it is refused
    before it is opened. Run as a child process, bounded in time, so that a regression fails instead of hanging."""
    cat.save(tmp_path / "cat.png")
    with FifoCanary(tmp_path / "weights.pt") as canary:
        result = subprocess.run([sys.executable, "-m", "viz", str(tmp_path / "cat.png"), "--weights", str(canary.path),
                                 "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=120)
        assert not canary.opened.is_set()
    assert result.returncode == 2 and "is not a checkpoint: it is a FIFO" in result.stderr, result.stderr
