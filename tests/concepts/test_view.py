"""Protects the Concepts view (``viz.concepts.view``, Gradio-free) on a tiny model and hand-made SAEs of every hook
point: the strongest latents are the ranking of the codes computed apart (a forward hook on the model's module, the
SAE in numpy); maps, the latents at a patch and the click geometry; a latent's top patches as thumbnails of the right
photos; switching a latent off (or scaling it) equals the forward pass recomputed with a forward hook that takes its
activation times its decoder direction out of that layer's patch tokens, the rollout before it equal to the
explorer's rollout of the model's own attention; labels files; an SAE made for another model refused; pictures in
both languages."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PIL import Image

import tiny_models
import vit
from tiny_run import noise_images
from viz.concepts.sae import SaeInfo, SparseAutoencoder
from viz.concepts.view import (ConceptsSource, check_fit, concept_maps, edit, edit_view, latents_at, open_concepts,
                               patch_at, photo_concepts, photo_view, read_labels, strongest, strongest_view,
                               top_patches_view)
from viz.i18n import t
from viz.maps.rollout import rollout_map

MODULE = {"residual": None, "attention": "ls1", "mlp": "ls2"}


def loaded_tiny(**kw):
    """The tiny model (width 32, 2 blocks, 4 × 4 patches of 8 px, 5 classes) as ``vit.load`` gives a model."""
    model = tiny_models.tiny(0, **kw)
    return vit.LoadedModel(model, vit.Preprocess.for_crop(32), [f"class {i}" for i in range(5)], "tiny", "tiny",
                           model.cfg, "ours")


def sae_for(hook: str, layer: int = 0, kind: str = "topk", seed: int = 0, latents: int = 40) -> SparseAutoencoder:
    torch.manual_seed(seed)
    return SparseAutoencoder(torch.randn(32, latents) * 0.3, torch.randn(latents) * 0.1, torch.randn(latents, 32) * 0.3,
                             torch.randn(32) * 0.1, kind, 4 if kind == "topk" else None, None, "centre_scale",
                             torch.randn(32) * 0.1, 0.5, info=SaeInfo(layer, hook, "tiny"))


def crop(seed: int = 1) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (32, 32, 3), dtype=np.uint8))


def hooked_tokens(model, x, layer, hook):
    seen = {}
    block = model.blocks[layer]
    module = block if MODULE[hook] is None else getattr(block, MODULE[hook])
    def keep(m, inputs, output):
        seen["t"] = (output[0] if isinstance(output, tuple) else output).detach().clone()

    handle = module.register_forward_hook(keep)
    with torch.inference_mode():
        model(x)
    handle.remove()
    return seen["t"]


def numpy_codes(sae: SparseAutoencoder, tokens: np.ndarray) -> np.ndarray:
    W_enc, b_enc = sae.W_enc.double().numpy(), sae.b_enc.double().numpy()
    pre = np.maximum(((tokens - sae.input_mean.double().numpy()) * sae.scale) @ W_enc + b_enc, 0)
    keep = np.argsort(-pre, axis=1, kind="stable")[:, :sae.k]
    codes = np.zeros_like(pre)
    np.put_along_axis(codes, keep, np.take_along_axis(pre, keep, axis=1), axis=1)
    return codes


@pytest.mark.parametrize("hook", ["residual", "attention", "mlp"])
def test_the_strongest_latents_are_the_ranking_of_the_codes(hook):
    loaded = loaded_tiny()
    source = ConceptsSource(sae_for(hook), None, labels={3: "stripes"})
    pc = photo_concepts(loaded, source, crop())
    tokens = hooked_tokens(loaded.model, loaded.preprocess.to_tensor(crop()), 0, hook)[0, 1:].double().numpy()
    codes = numpy_codes(source.sae, tokens)                                    # (16, 40)
    np.testing.assert_allclose(pc.codes.toarray(), codes, rtol=1e-5, atol=1e-6)
    mean, top = codes.mean(0), codes.max(0)
    order = sorted(range(40), key=lambda i: (-mean[i], -top[i], i))[:8]
    found = strongest(pc, source)
    assert [c.latent for c in found] == order
    assert [c.mean for c in found] == pytest.approx(mean[order].tolist(), rel=1e-5)
    assert all(c.label == ("stripes" if c.latent == 3 else "") for c in found)
    np.testing.assert_allclose(concept_maps(pc, order), codes[:, order].T.reshape(8, 4, 4), rtol=1e-5, atol=1e-6)
    at = latents_at(pc, source, 2, 1)
    row = codes[2 * 4 + 1]
    assert [c.latent for c in at] == sorted(np.flatnonzero(row > 0).tolist(), key=lambda i: (-row[i], i))
    assert [c.mean for c in at] == pytest.approx(sorted(row[row > 0].tolist(), reverse=True), rel=1e-5)


def test_a_click_on_the_photo_finds_its_patch():
    pc = photo_concepts(loaded_tiny(), ConceptsSource(sae_for("residual"), None), crop())
    photo = photo_view(pc, (1, 2))
    assert photo.size == (448, 448)
    assert patch_at(pc, 2.5 * 112, 1.5 * 112) == (1, 2) and patch_at(pc, 447, 0) == (0, 3)
    assert np.asarray(photo)[112, 2 * 112 + 50].tolist() == [0, 255, 0]              # the frame


@pytest.mark.parametrize("hook, layer", [("residual", 0), ("attention", 1), ("mlp", 0)])
def test_switching_a_latent_off_is_the_forward_with_its_direction_removed_at_that_layer(hook, layer):
    loaded = loaded_tiny(depth=3)
    sae = sae_for(hook, layer)
    source = ConceptsSource(sae, None)
    pc = photo_concepts(loaded, source, crop())
    latent = strongest(pc, source, 1)[0].latent
    x = loaded.preprocess.to_tensor(crop())
    block = loaded.model.blocks[layer]
    module = block if MODULE[hook] is None else getattr(block, MODULE[hook])
    W_dec = sae.W_dec.double().numpy()

    def remove(factor):
        def hook_fn(m, inputs, output):
            tokens = output[0] if isinstance(output, tuple) else output
            patches = tokens[0, 1:].double().numpy()
            codes = numpy_codes(sae, patches)
            new = patches + (factor - 1) * codes[:, [latent]] * W_dec[latent] / sae.scale
            tokens = torch.cat([tokens[:, :1], torch.from_numpy(new).float()[None]], dim=1)
            return (tokens, *output[1:]) if isinstance(output, tuple) else tokens
        return hook_fn

    for factor in (0.0, 2.5):
        handle = module.register_forward_hook(remove(factor))
        with torch.inference_mode():
            expected = torch.softmax(loaded.model(x)[0].double(), -1).numpy()
        handle.remove()
        e = edit(loaded, source, pc, {latent: factor})
        np.testing.assert_allclose(e.probabilities, expected, rtol=1e-4, atol=1e-6)
        assert e.top_after[0][0] == loaded.labels[int(np.argmax(expected))]
        assert e.kl > 0 and e.removed.max() > 0
    same = edit(loaded, source, pc, {latent: 1.0})
    assert [c for c, _ in same.top_after] == [c for c, _ in same.top_before]
    assert [p for _, p in same.top_after] == pytest.approx([p for _, p in same.top_before], rel=1e-6)
    assert same.kl == pytest.approx(0, abs=1e-9)
    assert not same.removed.any()


def test_the_rollout_before_an_edit_is_the_explorer_s_rollout_of_the_model():
    loaded = loaded_tiny()
    source = ConceptsSource(sae_for("residual"), None)
    pc = photo_concepts(loaded, source, crop())
    e = edit(loaded, source, pc, {0: 0.0})
    with torch.inference_mode():
        attention = loaded.model.forward_with_attention(loaded.preprocess.to_tensor(crop())).attention[0].numpy()
    np.testing.assert_allclose(e.rollout_before, rollout_map(attention, 1, (4, 4)), rtol=1e-4, atol=1e-6)
    picture, line = edit_view(source, pc, e)
    assert picture.width > 3 * 224 and line.startswith("Top-5 with latent 0 switched off: ")
    _, line = edit_view(source, pc, e, lang="zh-CN")
    assert line.startswith("关闭潜变量 0 后的前五类：")


def test_edits_name_the_latents_and_factors_they_cannot_take():
    loaded = loaded_tiny()
    source = ConceptsSource(sae_for("residual"), None)
    pc = photo_concepts(loaded, source, crop())
    with pytest.raises(ValueError, match="No latent 40: this SAE has latents 0 to 39"):
        edit(loaded, source, pc, {40: 0.0})
    with pytest.raises(ValueError, match="finite number"):
        edit(loaded, source, pc, {1: float("nan")})
    with pytest.raises(ValueError, match="没有潜变量 -1"):
        edit(loaded, source, pc, {-1: 0.0}, lang="zh-CN")


def test_labels_files(tmp_path):
    (tmp_path / "labels.json").write_text(json.dumps({"3": "grass", "12": " sky "}))
    (tmp_path / "labels.txt").write_text("# latent\tlabel\n3\tgrass\n\n12: sky\n")
    assert read_labels(tmp_path / "labels.json") == read_labels(tmp_path / "labels.txt") == {3: "grass", 12: "sky"}
    (tmp_path / "bad.txt").write_text("3 grass\n")
    with pytest.raises(ValueError, match="line 1: expected 'LATENT<TAB>LABEL' or 'LATENT: LABEL'"):
        read_labels(tmp_path / "bad.txt")
    (tmp_path / "bad.json").write_text('{"grass": 3}')
    with pytest.raises(ValueError, match="'grass' is not a latent number"):
        read_labels(tmp_path / "bad.json")


def test_an_sae_made_for_another_model_is_refused():
    loaded = loaded_tiny()
    narrow = SparseAutoencoder(torch.randn(16, 8), torch.zeros(8), torch.randn(8, 16), torch.zeros(16), "relu",
                               info=SaeInfo(0, "residual"))
    with pytest.raises(ValueError, match="reads tokens of width 16, but the model's are 32 wide"):
        check_fit(narrow, loaded)
    with pytest.raises(ValueError, match="reads layer 5, but the model has layers 0 to 1"):
        check_fit(sae_for("residual", layer=5), loaded)
    other = sae_for("residual")
    other.info.weights_sha256, other.info.model = "0" * 64, "someone else's ViT"
    with pytest.raises(ValueError, match="trained on another model's tokens \\(someone else's ViT\\)"):
        check_fit(other, loaded)


def test_top_patches_show_the_training_photos_with_the_patch_framed(tmp_path):
    """A trained SAE's folder: its top_patches.npz, its photo folder (recorded in sae.json) and labels.json."""
    from tiny_run import tiny_checkpoint
    from viz.cli.concepts import main

    weights = tiny_checkpoint(tmp_path / "tiny.pt")
    noise_images(tmp_path / "photos", 8)
    out = tmp_path / "sae"
    assert main(["train", str(tmp_path / "photos"), "--weights", str(weights), "--layer", "0", "--latents", "12",
                 "--k", "2", "--epochs", "1", "--out", str(out), "--quiet"]) == 0
    (out / "labels.json").write_text(json.dumps({"0": "noise"}))
    loaded = vit.load(str(weights))
    source = open_concepts(out, loaded)
    assert source.labels == {0: "noise"} and source.folder == (tmp_path / "photos").resolve()
    latent = int(np.argmax((source.top.activation > 0).sum(1)))
    count = int((source.top.activation[latent] > 0).sum())
    picture = top_patches_view(source, latent)
    rows = -(-count // 8)
    assert picture.width == 8 * 96 + 7 * 6 and picture.height > rows * 112
    pc = photo_concepts(loaded, source, loaded.preprocess.crop_image(Image.open(tmp_path / "photos" / "0001.png")))
    for lang in ("en", "zh-CN"):
        picture = strongest_view(source, pc, lang=lang)
        assert picture.height > 8 * 224
    assert t("concepts.picture.latent_label", "zh-CN", latent=0, label="noise") == "潜变量 0：noise"
