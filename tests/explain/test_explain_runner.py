"""Protects what the explanation runner (viz.explain.explainer) promises end to end: class specificity on
real weights, the default target, contrasts, and every method on every token layout.

Class specificity: the two-object photo (tests/two_objects.py: the cat strip left, the espresso strip right)
with the real AugReg ViT-Ti. The two classes are the model's own top-1 for each strip alone ("Egyptian
cat" 0.90, "espresso" 0.74); on the whole photo both are in the top 5. A class-specific method must put
most of its positive mass on its object's half; rollout must not change with the class.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import vit
from two_objects import halves, two_object_photo
from viz.analysis import analyze
from viz.explain.explainer import explain, explain_tensor
from viz.explain import METHODS, contrast
from oracles import gae_matrix
from viz.explain.gradcam import gradcam_values
from vit.explain import ClassTarget, gradient_pass

# Share of the positive mass on the object's own half, measured with the AugReg ViT-Ti (left class / right class):
# gae 0.68 / 0.62, attnlrp 0.78 / 0.73 (and grad_rollout 0.77 / 0.74, gradcam 0.99 / 0.88, cp_lrp 0.91 / 0.76).
MOST = 0.5


@pytest.fixture(scope="module")
def augreg(augreg_weights):
    return vit.load(augreg_weights)


def top1(loaded, image) -> int:
    with torch.no_grad():
        return int(loaded.model(loaded.preprocess(image)).argmax())


def left_share(values: np.ndarray) -> float:
    """Share of the map's positive mass on the left half of the grid (columns 0 … gw/2 - 1)."""
    positive = np.maximum(np.asarray(values, dtype=np.float64), 0)
    return float(positive[:, : positive.shape[1] // 2].sum() / positive.sum())


@pytest.fixture(scope="module")
def two_objects(augreg):
    cat, cup = halves()
    left, right = top1(augreg, cat), top1(augreg, cup)
    photo = two_object_photo()
    methods = ["gae", "attnlrp", "rollout", "attention"]
    return left, right, photo, explain(augreg, photo, left, methods), explain(augreg, photo, right, methods)


def test_the_two_classes_are_the_models_own_for_each_half(augreg, two_objects):
    left, right, photo, *_ = two_objects
    assert (augreg.labels[left], augreg.labels[right]) == ("Egyptian cat", "espresso")
    top5 = {name for name, _ in analyze(augreg, photo).top_k(5)}
    assert {"Egyptian cat", "espresso"} <= top5


@pytest.mark.parametrize("method", ["gae", "attnlrp"])
def test_each_class_is_explained_by_its_own_half(two_objects, method):
    _, _, _, cat, espresso = two_objects
    assert cat.target["name"] == "Egyptian cat" and espresso.target["name"] == "espresso"
    assert left_share(cat.map(method)) > MOST
    assert 1 - left_share(espresso.map(method)) > MOST


@pytest.mark.parametrize("method", ["rollout", "attention"])
def test_class_agnostic_maps_are_identical_for_both_classes(two_objects, method):
    _, _, _, cat, espresso = two_objects
    np.testing.assert_array_equal(cat.map(method), espresso.map(method))
    assert not np.any(contrast(cat, espresso, method))


def test_the_default_target_is_the_top1_class(augreg, cat):
    e = explain(augreg, cat, methods=["gradcam"])
    probabilities = analyze(augreg, cat).probabilities
    top = int(np.argmax(probabilities))
    assert e.target == {"index": top, "name": augreg.labels[top]} == {"index": 285, "name": "Egyptian cat"}
    np.testing.assert_array_equal(e.map("gradcam"), explain(augreg, cat, 285, ["gradcam"]).map("gradcam"))
    assert e.probability == pytest.approx(probabilities[top], abs=1e-5) and e.readout == "the CLS token"


def test_contrast_of_a_class_with_itself_is_zero_and_with_another_is_not(augreg, two_objects):
    left, right, photo, cat, espresso = two_objects
    again = explain(augreg, photo, "Egyptian cat", ["gae", "attnlrp", "rollout", "attention"])
    for method in ("gae", "attnlrp", "rollout", "attention"):
        assert not np.any(contrast(cat, again, method)), method
    assert np.abs(contrast(cat, espresso, "gae")).max() > 0.1 * cat.map("gae").max()


def test_every_method_runs_and_the_maps_are_small(augreg, two_objects):
    photo = two_objects[2]
    e = explain(augreg, photo, "espresso")
    assert list(e.maps) == list(METHODS)
    assert all(m.shape == (14, 14) and m.dtype == np.float32 and np.isfinite(m).all() for m in e.maps.values())
    assert e.nbytes == len(METHODS) * 14 * 14 * 4
    assert set(e.timings) >= {"gradient", "attnlrp", "cp_lrp", "formulas", "preprocess"}


# --- token layouts (tiny random models) ------------------------------------------------------------------------

LAYOUTS = {
    "registers": dict(num_reg_tokens=4),
    "distilled": dict(distilled=True),
    "avg_pool_no_cls": dict(readout="mean", class_token=False),
}


def tiny(**kw) -> vit.VisionTransformer:
    torch.manual_seed(0)
    model = vit.VisionTransformer(vit.ViTConfig(**{**dict(embed_dim=32, depth=2, num_heads=2, mlp_dim=64, num_classes=5), **kw}))
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return model.eval()


@pytest.mark.parametrize("name", LAYOUTS)
def test_every_method_handles_the_prefix_tokens_on_a_224x320_input(name):
    """14×20 patches after 5, 2 or 0 prefix tokens: every map is (14, 20); GAE reads the readout's row of R
    over the patch columns only, and Grad-CAM weights and sums the patch rows only."""
    model = tiny(**LAYOUTS[name])
    x = torch.randn(1, 3, 224, 320, generator=torch.Generator().manual_seed(1))
    e = explain_tensor(model, x, ClassTarget(3))
    assert {k: v.shape for k, v in e.maps.items()} == {k: (14, 20) for k in METHODS}
    p = gradient_pass(model, x, ClassTarget(3))
    n = model.cfg.num_prefix_tokens
    assert e.num_prefix == n and e.grid == (14, 20)
    R = gae_matrix(*(torch.stack(blocks, dim=1)[0].numpy() for blocks in (p.attention, p.attention_grad)))
    expected = {"registers": R[0], "distilled": 0.5 * (R[0] + R[1]), "avg_pool_no_cls": R.mean(axis=0)}[name]
    np.testing.assert_allclose(e.map("gae"), expected[n:].reshape(14, 20), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(e.map("gradcam"), gradcam_values(p.tokens[0].numpy(), p.tokens_grad[0].numpy(), n, (14, 20)),
                               rtol=1e-5, atol=1e-7)


def test_one_image_at_a_time():
    with pytest.raises(ValueError, match=r"one image \(1, C, H, W\)"):
        explain_tensor(tiny(), torch.zeros(2, 3, 224, 224))


def test_a_backbone_has_no_class_to_explain_but_any_target_on_its_features_works():
    """A DINO-style backbone (no head) returns features: a class target is refused, while a Target that scores
    the features (here: similarity to a fixed direction, as a CLIP text target would) is explained."""
    model = tiny(num_classes=0)
    x = torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(2))
    with pytest.raises(ValueError, match="no classifier head"):
        explain_tensor(model, x, ClassTarget(0))

    class Direction:
        def __init__(self, d):
            self.d = d

        def score(self, output):
            return 10 * torch.nn.functional.cosine_similarity(output, self.d[None], dim=1)

        def probability(self, output):
            return torch.sigmoid(self.score(output))

        def describe(self):
            return {"text": "a fixed direction"}

    e = explain_tensor(model, x, Direction(torch.ones(32)), ["gae", "attnlrp"])
    assert e.target == {"text": "a fixed direction"} and e.map("gae").shape == e.map("attnlrp").shape == (14, 14)
