"""docs/maps.md's numbers on patch features are the ones the code gives: the cat's PCA variance shares and their
sum, the most alike patch to the cat's left eye and its similarity (the real AugReg ViT-Ti, examples/chelsea.jpg
read as the CLI reads it); docs/library.md's sizes of the attention a full capture holds."""
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
LIBRARY = (REPO / "docs" / "library.md").read_text(encoding="utf-8")


def test_the_sizes_of_the_full_attention():
    tiny = vit.variant("vit_ti_16")
    small = vit.variant("small-14", img_size=518)
    T = 1 + (1022 // 14) ** 2
    assert (f"L·H·T² numbers: {tiny.depth * tiny.num_heads * 197 ** 2 * 4 / 2**20:.1f} MB in float32 for a ViT-Ti at "
            f"224, but {small.depth * small.num_heads * T * T * 4 / 2**30:.1f} GB for a DINOv2\nViT-S/14 at 1022×1022 "
            f"({T:,} tokens)") in LIBRARY


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
