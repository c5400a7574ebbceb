"""Every map and panel has the right shape for any token layout: 224/16, 384/16, a non-square input, a
distilled model (CLS + DIST) and a register model (CLS + 4 registers) — tiny random models, real forward."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import vit
from PIL import Image
from oracles import render_all
from viz import panels
from viz.analysis import analyze, model_arrays
from viz.heads.view import heads_panel
from viz.rollout.view import rollout_overlay

LAYOUTS = {  # name: (config overrides, model input (H, W)), patch size 16
    "224": (dict(), (224, 224)),
    "384": (dict(img_size=384), (384, 384)),
    "non-square": (dict(), (224, 320)),          # a 224 model run on a wider input: position embeddings resampled
    "distilled": (dict(distilled=True), (224, 224)),
    "registers": (dict(num_reg_tokens=4), (224, 224)),
}


def tiny_loaded(overrides: dict, crop: tuple[int, int]):
    cfg = vit.ViTConfig(embed_dim=24, depth=2, num_heads=2, mlp_dim=48, num_classes=7, **overrides)
    torch_model = vit.VisionTransformer(cfg).eval()
    return SimpleNamespace(model=torch_model, preprocess=vit.Preprocess(resize=min(crop), crop=crop),
                           labels=[f"c{i}" for i in range(7)], name="tiny")


@pytest.fixture(scope="module")
def photo() -> Image.Image:
    return Image.fromarray(np.random.default_rng(0).integers(0, 256, (300, 451, 3), dtype=np.uint8))


@pytest.mark.parametrize("name", LAYOUTS)
def test_every_map_and_panel_has_the_layout_shape(name, photo):
    overrides, (H, W) = LAYOUTS[name]
    loaded = tiny_loaded(overrides, (H, W))
    a = analyze(loaded, photo)
    m = model_arrays(loaded.model)
    cfg = loaded.model.cfg
    gh, gw = H // 16, W // 16
    prefix = 1 + cfg.distilled + cfg.num_reg_tokens
    T = prefix + gh * gw
    assert (a.num_prefix, a.grid, a.input_size) == (prefix, (gh, gw), (H, W))
    assert a.attention.shape == (2, 2, T, T) and a.token_norms.shape == (2, T)
    assert a.image.size == (W, H)
    np.testing.assert_allclose(a.probabilities.sum(), 1.0, rtol=1e-5)

    images, arrays = render_all(a, m, panels.MapOptions(colorbar=False))
    for key in ("rollout", "cls_attention", "query_row", "query_column"):
        assert arrays[key].shape == (gh, gw), key
    assert arrays["mean_distance"].shape == (2, 2)
    assert arrays["high_norm_flags"].shape == (2, gh, gw)
    native = cfg.grid[0] * cfg.grid[1]
    assert arrays["pos_similarity"].shape == (native, native)     # the checkpoint's own grid
    for key in ("input", "rollout", "attention", "threshold", "query_row", "query_column"):
        assert images[key].size == (W, H), key                    # overlays sit on the pixels the model saw
    heads, layout = heads_panel(a)
    assert (layout.rows, layout.cols) == (2, 2) and layout.cell[1] == round(layout.cell[0] * gw / gh)
    assert heads.size == images["heads"].size
    values = panels.rollout_of(a)
    assert rollout_overlay(a, values, None, scale=2, colorbar=False).size == (2 * W, 2 * H)
    assert rollout_overlay(a, values, None).size[0] > W    # the colour bar is appended on the right
    for image in images.values():
        assert image.mode == "RGB" and min(image.size) > 0
