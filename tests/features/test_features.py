"""Dense features (``viz.features``): the patch features are the final-norm patch tokens (timm's DINOv2 with
registers, every family), their PCA is scikit-learn's up to the components' signs, the similarity is the cosine
computed directly (scikit-learn's exact solver: its default for more than 500 rows is a randomised SVD, whose
components are off by about 1e-4 radians), DINOv2's foreground option finds a known foreground, and the pictures have the photo's size."""
from __future__ import annotations

import numpy as np
import pytest
import timm
import torch
from safetensors.torch import save_file
from sklearn.decomposition import PCA

import vit
from reference_models import images, randomize_
from tiny_models import FAMILIES, tiny
from viz.analysis import capture
from viz.features import fit_pca, foreground_rgb, layer_features, patch_features, patch_similarity, pca_rgb
from viz.features.pca import fit_moments, moments
from viz.features.pictures import joint_picture, pca_picture, similarity_picture


def assert_same_up_to_sign(ours: np.ndarray, reference: np.ndarray, rtol: float = 1e-4) -> None:
    """Columns equal up to one sign each: max |ours - ±reference| <= rtol · max |reference| per column."""
    assert ours.shape == reference.shape
    for k in range(reference.shape[-1]):
        a, b = ours[..., k].ravel(), reference[..., k].ravel()
        sign = 1.0 if np.dot(a, b) >= 0 else -1.0
        assert np.abs(a - sign * b).max() <= rtol * np.abs(b).max(), f"component {k}"


def tokens_by_hand(model, x: torch.Tensor, layer: int) -> np.ndarray:
    """The final-norm patch tokens after block ``layer``, from the model's own modules run one by one (B = 1)."""
    with torch.no_grad():
        positions = model.token_positions(*x.shape[-2:])
        h = model.embed(x)
        for block in model.blocks[:layer + 1]:
            h, _ = block(h, False, positions)
        return model.norm(h)[0, model.cfg.num_prefix_tokens:].numpy()


def test_dinov2_patch_features_are_timms_normed_intermediates(tmp_path):
    """timm's DINOv2 ViT-S/14 with registers (random weights, perturbed): every layer's features equal
    ``forward_intermediates(norm=True)``, the last layer's ``x_norm_patchtokens`` (forward_features after the CLS and
    register tokens); the PCA is scikit-learn's."""
    torch.manual_seed(0)
    ref = randomize_(timm.create_model("vit_small_patch14_reg4_dinov2", pretrained=False, img_size=112,
                                      dynamic_img_size=True))
    path = tmp_path / "dinov2.safetensors"
    save_file({k: v.contiguous() for k, v in ref.state_dict().items()}, str(path))
    model = vit.load(path).model
    x = images(1, (112, 112))          # its native grid (other sizes: test_every_family_reads_its_final_norm_patch_tokens)
    captured = capture(model, x, np.float32, keep_stream=True)
    with torch.no_grad():
        intermediates = ref.forward_intermediates(x, norm=True, output_fmt="NLC", intermediates_only=True)
        last = ref.forward_features(x)[0, ref.num_prefix_tokens:].numpy()
    for layer, theirs in enumerate(intermediates):
        ours = layer_features(captured.stream[0], layer, captured.num_prefix, captured.final_norm)
        np.testing.assert_allclose(ours, theirs[0].numpy(), rtol=1e-4, atol=1e-4 * np.abs(theirs.numpy()).max())
    features = layer_features(captured.stream[0], -1, captured.num_prefix, captured.final_norm)
    np.testing.assert_allclose(features, last, rtol=1e-4, atol=1e-4 * np.abs(last).max())
    reference = PCA(n_components=3, svd_solver="full").fit(last)
    pca = fit_pca(features)
    assert_same_up_to_sign(pca.project(features), reference.transform(last))
    np.testing.assert_allclose(pca.explained_variance_ratio, reference.explained_variance_ratio_, rtol=1e-4)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_reads_its_final_norm_patch_tokens(family):
    model = tiny(**FAMILIES[family])
    size = (32, 32) if family == "beit" else (32, 40)                        # BEiT's relative bias: its own grid
    x = images(1, size)
    captured = capture(model, x, np.float32, keep_stream=True)
    for layer in range(model.cfg.depth):
        expected = tokens_by_hand(model, x, layer)
        ours = layer_features(captured.stream[0], layer, captured.num_prefix, captured.final_norm)
        np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())
    assert (captured.final_norm is None) == (bool(model.cfg.fc_norm) or not model.cfg.final_norm)   # fc_norm: after pooling


def test_pca_is_sklearns_and_the_similarity_is_the_cosine():
    rng = np.random.default_rng(0)
    features = (rng.normal(size=(48, 20)) * np.linspace(3, 0.1, 20) + 5.0).astype(np.float32)  # far from centred
    rgb, pca = pca_rgb(features, (6, 8))
    reference = PCA(n_components=3, svd_solver="full").fit(features)
    projections = reference.transform(features)
    assert_same_up_to_sign(pca.project(features), projections, rtol=1e-5)      # float32 projections
    # float32 features: their moments are summed in float64 from float32 values, scikit-learn centres first
    np.testing.assert_allclose(pca.explained_variance_ratio, reference.explained_variance_ratio_, rtol=1e-6)
    np.testing.assert_allclose(pca.explained_variance, reference.explained_variance_, rtol=1e-6)
    ours = pca.project(features)                                    # each colour: its component over [0, 1]
    np.testing.assert_allclose(rgb.reshape(-1, 3), (ours - ours.min(0)) / (ours.max(0) - ours.min(0)), atol=1e-6)
    assert rgb.min() == 0.0 and rgb.max() == 1.0
    similarity = patch_similarity(features, (6, 8), 2, 5)
    query = features[2 * 8 + 5].astype(np.float64)
    direct = [float(f @ query / np.linalg.norm(f) / np.linalg.norm(query)) for f in features.astype(np.float64)]
    np.testing.assert_allclose(similarity.ravel(), direct, rtol=1e-6)
    assert similarity[2, 5] == pytest.approx(1.0)
    other = rng.normal(size=(12, 20)).astype(np.float32)
    across = patch_similarity(features, (6, 8), 2, 5, other, (3, 4))
    np.testing.assert_allclose(across.ravel(), [float(f @ query / np.linalg.norm(f) / np.linalg.norm(query))
                                                for f in other.astype(np.float64)], rtol=1e-6)


def test_the_joint_pca_from_summed_moments_is_the_pca_of_the_stacked_patches():
    rng = np.random.default_rng(1)
    photos = [rng.normal(size=(30, 16)) * rng.uniform(0.5, 2.0, 16) + rng.normal(size=16) for _ in range(4)]
    per_image = [moments(p) for p in photos]                          # what each image adds to the run's sums
    mean = np.mean([m for m, _ in per_image], axis=0)
    second = np.mean([s for _, s in per_image], axis=0)
    joint = fit_moments(mean, second, 4 * 30)
    stacked = np.concatenate(photos)
    reference = PCA(n_components=3, svd_solver="full").fit(stacked)
    assert_same_up_to_sign(joint.project(stacked), reference.transform(stacked), rtol=1e-6)
    np.testing.assert_allclose(joint.explained_variance_ratio, reference.explained_variance_ratio_, rtol=1e-9)


def test_foreground_finds_the_square_and_refits_on_it():
    """Background patches alike, a centred 4×4 square of patches unlike them: the thresholded first component is the
    square whatever its sign, the refitted PCA is scikit-learn's on the square's patches, the background black."""
    rng = np.random.default_rng(2)
    grid = (8, 8)
    square = np.zeros(grid, dtype=bool)
    square[2:6, 2:6] = True
    background, thing = rng.normal(size=24), rng.normal(size=24)
    for sign in (1.0, -1.0):
        features = np.where(square.ravel()[:, None], sign * thing, background) + 0.05 * rng.normal(size=(64, 24))
        rgb, mask, pca = foreground_rgb(features.astype(np.float32), grid)
        np.testing.assert_array_equal(mask, square)
        assert not rgb[~square].any()
        reference = PCA(n_components=3, svd_solver="full").fit(features[square.ravel()])
        assert_same_up_to_sign(pca.project(features[square.ravel()]), reference.transform(features[square.ravel()]),
                               rtol=1e-5)


def test_an_analysis_without_its_stream_says_how_to_get_features():
    from viz.analysis import analyses

    model = tiny()
    captured = capture(model, images(1, (32, 32)), np.float32)
    loaded = type("Loaded", (), {"model": model, "labels": (), "name": "tiny"})()
    a = analyses(loaded, captured, [None])[0]
    with pytest.raises(ValueError, match="keep_stream=True"):
        patch_features(a)


def test_feature_pictures_have_the_photos_size():
    from PIL import Image

    photo = Image.new("RGB", (40, 32), (90, 120, 150))
    rng = np.random.default_rng(3)
    features = rng.normal(size=(20, 8)).astype(np.float32)
    rgb, pca = pca_rgb(features, (4, 5))
    picture = pca_picture(photo, rgb, 3, pca.explained_variance_ratio)
    assert picture.width == 40 and picture.height > 32                 # the caption strip underneath
    np.testing.assert_array_equal(np.asarray(picture)[:8, :8], np.full((8, 8, 3), np.round(rgb[0, 0] * 255)))
    similarity = patch_similarity(features, (4, 5), 1, 2)
    assert similarity_picture(photo, similarity, (1, 2), label="cos").height == 32
    joint = joint_picture([photo, photo], [pca.project(features).reshape(4, 5, 3)] * 2, 3, pca.explained_variance_ratio)
    assert joint.width > 2 * 40
