"""docs/maps.md's numbers on patch features are the ones the code gives: the cat's PCA variance shares and their
sum, the most alike patch to the cat's left eye and its similarity (the real AugReg ViT-Ti, examples/chelsea.jpg
read as the CLI reads it)."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import vit
from vit.image_file import open_image

from viz.analysis import analyze
from viz.features import patch_features, patch_similarity, pca_rgb

REPO = Path(__file__).resolve().parents[2]
MAPS = (REPO / "docs" / "maps.md").read_text(encoding="utf-8")


def test_the_cats_feature_numbers(real_weights_dir):
    loaded = vit.load(real_weights_dir / "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors")
    a = analyze(loaded, open_image(REPO / "examples" / "chelsea.jpg"), keep_stream=True)
    features = patch_features(a)
    _, pca = pca_rgb(features, a.grid)
    shares = [f"{100 * r:.1f} %" for r in pca.explained_variance_ratio]
    assert f"cat, {shares[0]}, {shares[1]} and {shares[2]}" in MAPS
    assert f"the colours show {100 * pca.explained_variance_ratio.sum():.0f} % of how" in MAPS
    (row, col), = re.findall(r"Clicking the cat's left eye, patch \((\d+), (\d+)\)", MAPS)
    similarity = patch_similarity(features, a.grid, int(row), int(col))
    similarity[int(row), int(col)] = -np.inf                              # the most alike patch after itself
    best = np.unravel_index(np.argmax(similarity), similarity.shape)
    assert f"finds the right eye, patch ({best[0]}, {best[1]}), at {similarity[best]:.2f}" in MAPS
