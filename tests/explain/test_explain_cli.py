"""``python -m viz IMAGE --explain …``: the CLI contract of class-specific explanations, with the real AugReg
ViT-Ti on the two-object photo (file names, npz keys and shapes, the result.json entry, contrast), and the
errors for unknown methods and classes, which list what exists."""
from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from two_objects import two_object_photo
from viz.explain.explainer import explain
from viz.cli import main
import vit

AUGREG = "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors"
CONTRACT = ["gae", "attnlrp", "grad_rollout", "gradcam", "rollout", "attention", "random"]


@pytest.fixture(scope="module")
def photo_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("photo") / "cat_and_coffee.png"
    two_object_photo().save(path)
    return path


@pytest.mark.slow
def test_explain_writes_the_contracted_files(real_weights_dir, photo_path, tmp_path):
    weights = str(real_weights_dir / AUGREG)
    argv = [str(photo_path), "--weights", weights, "--out", str(tmp_path), "--explain", ",".join(CONTRACT),
            "--target", "Egyptian cat", "--contrast", "967", "--quiet"]
    assert main(argv) == 0
    folder = tmp_path / "cat_and_coffee"
    result = json.loads((folder / "result.json").read_text())
    assert result["explain"]["target"] == {"index": 285, "name": "Egyptian cat"}
    assert result["explain"]["methods"] == CONTRACT
    assert result["explain"]["contrast"] == {"index": 967, "name": "espresso"}
    assert result["explain"]["readout"] == "the CLS token"
    npz = np.load(folder / "attention.npz")
    loaded = vit.load(weights)
    cat = explain(loaded, two_object_photo(), 285, CONTRACT)
    espresso = explain(loaded, two_object_photo(), "espresso", CONTRACT)
    for method in CONTRACT:
        for kind in ("explain", "contrast"):
            with Image.open(folder / f"{kind}_{method}.png") as image:        # overlay + colour bar
                assert image.mode == "RGB" and image.height == 224 and image.width > 224
        assert npz[f"explain_{method}"].shape == (14, 14)
        np.testing.assert_allclose(npz[f"explain_{method}"], cat.map(method), rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(npz[f"contrast_{method}"], cat.map(method) - espresso.map(method), rtol=1e-4, atol=1e-6)
    with Image.open(folder / "explanations.png") as row:                       # every method side by side
        assert row.width > len(CONTRACT) * 112
    assert sorted(p.name for p in folder.iterdir()) == result["files"]


@pytest.mark.slow
def test_explain_defaults_to_the_top1_class_of_each_image(real_weights_dir, cat, tmp_path):
    cat.save(tmp_path / "chelsea.png")
    argv = [str(tmp_path / "chelsea.png"), "--weights", str(real_weights_dir / AUGREG), "--out", str(tmp_path / "out"),
            "--explain", "gradcam", "--quiet"]
    assert main(argv) == 0
    result = json.loads((tmp_path / "out" / "chelsea" / "result.json").read_text())
    assert result["explain"]["target"] == {"index": 285, "name": result["top_k"][0]["label"]}
    assert "contrast" not in result["explain"] and not (tmp_path / "out" / "chelsea" / "contrast_gradcam.png").exists()


@pytest.mark.parametrize("flags, expected", [
    (["--explain", "gae,saliency"], ["'saliency'", "gae, attnlrp, cp_lrp, grad_rollout, gradcam, attention, rollout, random"]),
    (["--explain", "gae", "--target", "tabbby"], ["1000 classes", "'tabby' (281)"]),
    (["--explain", "gae", "--contrast", "1000"], ["1000 classes, numbered 0 to 999"]),
    (["--target", "tabby"], ["give --explain METHODS too"]),
])
def test_unknown_methods_and_classes_are_errors_that_list_what_exists(real_weights_dir, photo_path, tmp_path, capsys,
                                                                      flags, expected):
    argv = [str(photo_path), "--weights", str(real_weights_dir / AUGREG), "--out", str(tmp_path / "out"), *flags]
    assert main(argv) == 2
    checked, err = capsys.readouterr().err.split("\n", 1)    # the load's check first, then the error
    assert ": checked against timm " in checked, checked
    assert err.startswith("error: ") and all(text in err for text in expected), err
    assert not (tmp_path / "out").exists()
