"""One forward pass gives the panels what the model computed: the same probabilities as the plain forward,
attention rows that sum to 1, the exact pixels the model saw, and a float16 cache that changes maps little."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import torch
import vit
from PIL import Image
from viz import panels
from viz.analysis import analyze, model_arrays
from viz.maps.distance import mean_attention_distance
from viz.maps.rollout import fuse_heads


def tiny_loaded(**overrides):
    torch.manual_seed(0)
    cfg = vit.ViTConfig(embed_dim=32, depth=3, num_heads=4, mlp_dim=64, num_classes=6, **overrides)
    return SimpleNamespace(model=vit.VisionTransformer(cfg).eval(), preprocess=vit.Preprocess(),
                           labels=list("abcdef"), name="tiny")


def test_analysis_matches_the_plain_forward(cat):
    loaded = tiny_loaded()
    a = analyze(loaded, cat)
    with torch.inference_mode():
        expected = loaded.model(loaded.preprocess(cat)).softmax(-1)[0].numpy()
    np.testing.assert_allclose(a.probabilities, expected, atol=1e-6)
    assert [label for label, _ in a.top_k(6)] == [loaded.labels[i] for i in np.argsort(-expected)]
    np.testing.assert_allclose(a.attention.sum(-1), 1.0, rtol=1e-5)
    assert np.asarray(a.image).tobytes() == np.asarray(loaded.preprocess.crop_image(cat)).tobytes()
    assert set(a.timings) >= {"preprocess", "forward"}
    for fusion in ("mean", "max", "min"):                 # the per-image caches are what they stand for
        np.testing.assert_allclose(a.fused[fusion], fuse_heads(a.attention, fusion), rtol=1e-5)
    np.testing.assert_allclose(panels.mean_distance_of(a),
                               mean_attention_distance(a.attention, 1, (14, 14), 16), rtol=1e-5)  # float32 sums


def test_float16_cache_changes_maps_little(cat):
    loaded = tiny_loaded(distilled=True)
    a32 = analyze(loaded, cat)
    a16 = analyze(loaded, cat, attention_dtype=np.float16)
    assert a16.attention.dtype == np.float16 and a16.attention.nbytes * 2 == a32.attention.nbytes
    np.testing.assert_allclose(panels.rollout_of(a16), panels.rollout_of(a32), rtol=1e-3)
    # a discard ranks entries, and float16 rounding reorders near-ties; the map stays the same picture
    r32, r16 = (panels.rollout_of(a, discard_ratio=0.5, fusion="max") for a in (a32, a16))
    assert np.corrcoef(r16.ravel(), r32.ravel())[0, 1] > 0.99


def test_model_arrays_copy_the_figure7_tensors():
    loaded = tiny_loaded(num_reg_tokens=4)
    m = model_arrays(loaded.model, "tiny")
    assert m.patch_weight.shape == (32, 3, 16, 16)
    assert m.pos_embed.shape == (1 + 196, 32)         # registers have no position embedding
    assert (m.native_grid, m.num_prefix, m.depth, m.heads) == ((14, 14), 5, 3, 4)


def test_labels_that_do_not_match_the_head_become_class_numbers():
    loaded = tiny_loaded()
    loaded.labels = ["only one"]
    a = analyze(loaded, Image.new("RGB", (64, 48), "gray"))
    assert a.labels[:2] == ("class 0", "class 1") and len(a.labels) == 6
