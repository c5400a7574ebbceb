"""The guided walk through the ViT shows this model's real shapes: every shape equals the shape of the tensor the
model's own modules produce (caught with forward hooks), for ViT-Ti, ViT-B and a 224×320 input; the steps
compute what the model computes, in every family (the blocks get the model's relative biases and rotary angles); the
texts and pictures come in both languages."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from PIL import Image

import tiny_models
import vit
from viz.learn import steps as walkthrough
from viz.learn.walkthrough import walk
from viz.i18n import LANGUAGES
from walk_cases import CASES, hooked_shapes, quick_random_model

AUGREG = "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors"


@pytest.fixture(scope="module")
def augreg(real_weights_dir):
    return vit.load(real_weights_dir / AUGREG)


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow) if c == "ViT-B/16" else c for c in CASES])
def test_the_shapes_are_the_models_real_tensor_shapes(case, augreg, cat):
    if CASES[case] is None:
        model, pre, labels = augreg.model, augreg.preprocess, augreg.labels
    else:
        model = quick_random_model(vit.variant(CASES[case]["variant"]))
        pre = dataclasses.replace(augreg.preprocess, crop=CASES[case]["crop"])
        labels = None
    w = walk(model, pre, cat, labels)
    x = pre(cat)
    seen, logits = hooked_shapes(model, x)
    H, W = pre.crop
    assert w.shapes["image"] == seen["image"][0] == (H, W, 3)
    assert w.shapes["embeddings"] == seen["embeddings"][0]
    assert w.shapes["embedded"] == seen["embedded"][0] == w.shapes["tokens"]
    assert all(shape == w.shapes["layers"] for shape in seen["layers"]) and len(seen["layers"]) == w.depth
    assert w.shapes["attention"] == seen["attention"][0]
    assert w.shapes["logits"] == seen["logits"][0] == w.shapes["probabilities"]
    assert (w.shapes["output"][0],) == (seen["norm"][0][-1],)      # one token's D numbers after the final norm
    N, D = seen["embeddings"][0]
    P = model.patch_embed.proj.kernel_size[0]
    assert w.shapes["patches"] == (N, 3 * P * P) and N == (H // P) * (W // P)
    np.testing.assert_allclose(w.logits, logits[0].numpy(), rtol=1e-4, atol=1e-4)   # the model's own answer
    texts = walkthrough.step_texts(w, layer=-1)
    assert [s.shape for s in texts] == ["×".join(map(str, w.shapes[k])) for k in
                                        ("image", "patches")] + [str(3 * P * P)] + \
        ["×".join(map(str, w.shapes[k])) for k in ("embeddings", "tokens", "embedded", "layers", "output", "logits")]


def test_the_steps_compute_what_the_model_computes(augreg, cat):
    w = walk(augreg.model, augreg.preprocess, cat, augreg.labels)
    weight = augreg.model.patch_embed.proj.weight.detach().numpy()  # (D, C, P, P)
    bias = augreg.model.patch_embed.proj.bias.detach().numpy()
    projected = w.patches @ weight.reshape(weight.shape[0], -1).T + bias   # x_p E: the linear projection
    np.testing.assert_allclose(projected, w.embeddings, atol=1e-4)
    np.testing.assert_allclose(w.tokens[1:], w.embeddings, atol=0)          # CLS in front, patches unchanged
    np.testing.assert_allclose(w.tokens[0], augreg.model.cls_token.detach().numpy()[0, 0])
    pos = augreg.model.pos_embed.detach().numpy()[0]
    np.testing.assert_allclose(w.embedded, w.tokens + pos, atol=1e-5)       # z₀ = [CLS; x_p E] + E_pos
    np.testing.assert_allclose(w.cls_attention.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(w.probabilities.sum(), 1.0, atol=1e-5)
    assert w.labels[int(w.probabilities.argmax())] == "Egyptian cat"
    np.testing.assert_allclose(np.diag(w.position_similarity), 1.0, atol=1e-6)
    # one patch's 768 numbers are its pixels, normalised as the model's preprocessing does
    row, col = 6, 3
    pixels = np.asarray(w.image, dtype=np.float32)[row * 16:(row + 1) * 16, col * 16:(col + 1) * 16] / 255
    expected = ((pixels - 0.5) / 0.5).transpose(2, 0, 1).ravel()           # (C, P, P), AugReg: mean = std = 0.5
    np.testing.assert_allclose(w.patches[w.patch_index(row, col)], expected, atol=1e-6)
    with pytest.raises(ValueError, match="outside the 14×14 grid"):
        w.patch_index(14, 0)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_texts_and_pictures_in_both_languages(augreg, cat, lang):
    w = walk(augreg.model, augreg.preprocess, cat, augreg.labels)
    texts = walkthrough.step_texts(w, layer=5, row=6, col=3, lang=lang)
    assert [s.key for s in texts] == ["crop", "patches", "flatten", "projection", "cls", "position", "layers",
                                      "output", "logits"]
    assert "224×224×3" in texts[0].text and "16·16·3 = 768" in texts[2].text and "197×192" in texts[4].text
    assert f"Egyptian cat{'（' if lang == 'zh-CN' else ' ('}{w.probabilities.max():.0%}" in texts[-1].text
    pictures = [walkthrough.grid_picture(w, 6, 3, 448, lang), walkthrough.patch_picture(w, 6, 3, 448, lang),
                walkthrough.vector_picture(w.embeddings[w.patch_index(6, 3)], "D = 192", 512, lang),
                walkthrough.tokens_picture(w, "embedded", 448, lang),
                walkthrough.position_patch_picture(w, 6, 3, 448, lang),
                walkthrough.attention_picture(w, 5, None, 448, lang), walkthrough.logits_picture(w, 5, lang)]
    for picture in pictures:
        assert picture.mode == "RGB" and min(picture.size) > 20
    assert pictures[0].width == 448 and pictures[5].height == 448


@pytest.mark.parametrize("family", sorted(tiny_models.FAMILIES))
def test_every_family_walks_its_own_forward(family):
    """Each block gets the model's positions (relative biases, rotary angles), so the walk's logits are the model's;
    a model without a position table shows why there is no position picture."""
    model = tiny_models.tiny(**tiny_models.FAMILIES[family])
    photo = Image.fromarray(np.random.default_rng(0).integers(0, 256, (40, 48, 3), dtype=np.uint8))
    prep = vit.Preprocess(resize=32, crop=(32, 32))
    w = walk(model, prep, photo)
    with torch.no_grad():
        np.testing.assert_allclose(w.logits, model(prep(photo))[0].numpy(), rtol=1e-5, atol=1e-5)
    picture = walkthrough.position_patch_picture(w, 1, 2, 224)
    assert (w.position_similarity is None) == (model.pos_embed is None and not model.cfg.rope) and picture.width > 0
