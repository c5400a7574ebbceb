"""``python -m viz IMAGE --features [--features-layer L] [--query ROW COL]`` with the real AugReg ViT-Ti on the cat:
the files, attention.npz's ``features_pcs`` (scikit-learn's PCA of the final-norm patch tokens, up to sign) and
``features_similarity`` (the cosine computed directly), result.json's "features"; a folder's joint PCA is the PCA
of every photo's patches stacked; wrong options get a sentence."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PIL import Image
from skimage import data
from sklearn.decomposition import PCA

import vit
from vit.image_file import open_image
from viz.cli import main

from test_features import assert_same_up_to_sign, tokens_by_hand

AUGREG = "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors"


def final_norm_patches(loaded, path, layer: int) -> np.ndarray:
    """The photo through the checkpoint's own preprocessing, then the model's modules one by one: (gh·gw, D)."""
    x = loaded.preprocess.to_tensor(loaded.preprocess.crop_image(open_image(path)))
    return tokens_by_hand(loaded.model, x, layer).astype(np.float64)


def test_features_of_one_photo(real_weights_dir, cat, tmp_path):
    cat.save(tmp_path / "cat.png")
    weights = str(real_weights_dir / AUGREG)
    out = tmp_path / "out"
    assert main([str(tmp_path / "cat.png"), "--weights", weights, "--out", str(out), "--features",
                 "--features-layer", "8", "--query", "3", "11", "--quiet"]) == 0
    folder = out / "cat"
    result = json.loads((folder / "result.json").read_text())
    assert {"features_pca.png", "features_similarity.png"} <= set(result["files"])
    for name in ("features_pca", "features_similarity"):
        with Image.open(folder / f"{name}.png") as picture:
            assert picture.width >= 224 and picture.height >= 224
    tokens = final_norm_patches(vit.load(weights), tmp_path / "cat.png", 8)          # (196, 192)
    reference = PCA(n_components=3, svd_solver="full").fit(tokens)
    npz = np.load(folder / "attention.npz")
    assert npz["features_pcs"].shape == (14, 14, 3) and npz["features_similarity"].shape == (14, 14)
    assert_same_up_to_sign(npz["features_pcs"].reshape(-1, 3), reference.transform(tokens))
    query = tokens[3 * 14 + 11]
    cosine = tokens @ query / np.linalg.norm(tokens, axis=1) / np.linalg.norm(query)
    np.testing.assert_allclose(npz["features_similarity"].ravel(), cosine, rtol=1e-5, atol=1e-6)
    features = result["features"]
    assert features["layer"] == 8 and features["query"] == [3, 11]
    np.testing.assert_allclose(features["explained_variance_ratio"], reference.explained_variance_ratio_, rtol=1e-4)


def test_the_folders_joint_pca_is_the_pca_of_the_stacked_patches(real_weights_dir, tmp_path):
    photos = tmp_path / "photos"
    photos.mkdir()
    for name, pixels in (("cat", data.chelsea()), ("coffee", data.coffee()), ("astronaut", data.astronaut())):
        Image.fromarray(pixels).save(photos / f"{name}.png")
    weights = str(real_weights_dir / AUGREG)
    out = tmp_path / "out"
    assert main([str(photos), "--weights", weights, "--out", str(out), "--features", "--quiet"]) == 0
    loaded = vit.load(weights)
    names = ["astronaut", "cat", "coffee"]                                             # the folder's order
    tokens = [final_norm_patches(loaded, photos / f"{n}.png", 11) for n in names]
    reference = PCA(n_components=3, svd_solver="full").fit(np.concatenate(tokens))
    joint = np.load(out / "summary" / "features_pca_joint.npz")
    assert [p.rsplit("/", 1)[-1] for p in joint["images"]] == [f"{n}.png" for n in names]
    np.testing.assert_allclose(joint["explained_variance_ratio"], reference.explained_variance_ratio_, rtol=1e-4)
    assert_same_up_to_sign(joint["pcs"].reshape(-1, 3), reference.transform(np.concatenate(tokens)))
    assert int(joint["layer"]) == 11 and int(joint["patches"]) == 3 * 196
    with Image.open(out / "summary" / "features_pca_joint.png") as picture:
        assert picture.width > 3 * 200
    for n, own in zip(names, tokens):                                    # each photo keeps its own PCA as well
        per_photo = np.load(out / n / "attention.npz")["features_pcs"].reshape(-1, 3)
        assert_same_up_to_sign(per_photo, PCA(n_components=3, svd_solver="full").fit(own).transform(own))


def test_wrong_feature_options_get_a_sentence(real_weights_dir, cat, tmp_path, capsys):
    cat.save(tmp_path / "cat.png")
    argv = [str(tmp_path / "cat.png"), "--weights", str(real_weights_dir / AUGREG), "--out", str(tmp_path / "out")]
    assert main(argv + ["--features-layer", "3"]) == 2
    assert "add --features" in capsys.readouterr().err
    assert main(argv + ["--features", "--features-layer", "12"]) == 2
    assert "0 to 11" in capsys.readouterr().err
    assert main(argv + ["--features", "--compare", argv[2]]) == 2
    assert "leave out --compare" in capsys.readouterr().err


@pytest.fixture(autouse=True)
def _no_grad():
    with torch.no_grad():
        yield
