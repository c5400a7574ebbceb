"""Protects the command lines' contracts: ``python -m viz.concepts train FOLDER --weights W --layer L --latents M --k
K [--kind] [--crops N] [--epochs E] --out DIR`` writes sae.safetensors, sae.json, metrics.json and top_patches.npz
with exactly the documented keys and shapes, metrics.json's numbers recomputed independently (numpy and
scikit-learn's PCA on the cached tokens, the spliced model by forward hooks on the model's own blocks), the top
patches equal to a brute-force search; ``python -m viz IMAGE --concepts DIR`` adds concepts.png, ``concepts``
(8, gh, gw) and ``concept_ids`` (8,) to attention.npz and "concepts" to result.json, for our SAEs and sae-lens'; a
person's mistakes get one line."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from sklearn.decomposition import PCA

import vit
from vit.image_file import open_image
from tiny_run import noise_images, tiny_checkpoint
from viz.cli import main as viz_main
from viz.concepts.activations import Activations
from viz.cli.concepts import main
from viz.concepts.sae import SparseAutoencoder
from viz.concepts.view import open_concepts, photo_concepts, strongest

PUBLISHED = Path(__file__).resolve().parent / "published"
M, K = 24, 3


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A tiny model (width 16, 2 blocks, 4 × 4 patches, 6 classes), 12 photos, an SAE trained on layer 0."""
    root = tmp_path_factory.mktemp("concepts")
    weights = tiny_checkpoint(root / "tiny.pt")
    photos = root / "photos"
    noise_images(photos, 12)
    out = root / "sae"
    assert main(["train", str(photos), "--weights", str(weights), "--layer", "0", "--latents", str(M), "--k", str(K),
                 "--crops", "1", "--epochs", "3", "--tokens-per-step", "64", "--out", str(out), "--quiet"]) == 0
    return weights, photos, out


def test_train_writes_the_four_files_with_the_documented_keys(run):
    weights, photos, out = run
    assert {"sae.safetensors", "sae.json", "metrics.json", "top_patches.npz", "activations"} <= {
        p.name for p in out.iterdir()}
    config = json.loads((out / "sae.json").read_text())
    assert {"model", "layer", "hook_point", "d_model", "latents", "k", "kind", "input_normalisation"} <= set(config)
    assert (config["model"], config["layer"], config["hook_point"], config["d_model"], config["latents"], config["k"],
            config["kind"]) == ("tiny", 0, "residual", 16, M, K, "topk")
    assert config["input_normalisation"]["kind"] == "centre_scale" and config["input_normalisation"]["scale"] > 0
    assert config["training"]["library"].startswith("overcomplete ") and len(config["training"]["logs"]["r2"]) == 3
    assert set(load_file(out / "sae.safetensors")) == {"W_enc", "b_enc", "W_dec", "b_dec", "b_pre", "input_mean"}
    metrics = json.loads((out / "metrics.json").read_text())
    assert {"fvu", "l0", "dead_fraction", "pca_fvu_at_l0", "spliced"} <= set(metrics)
    assert set(metrics["spliced"]) == {"kl", "top1_agreement", "kl_mean_ablation"}
    with np.load(out / "top_patches.npz") as top:
        assert set(top.files) == {"image_index", "row", "col", "activation", "images"}
        assert all(top[k].shape == (M, 64) for k in ("image_index", "row", "col", "activation"))
        assert top["images"].tolist() == [f"{i:04d}.png" for i in range(12)]        # relative to FOLDER


def test_metrics_are_recomputed_independently(run):
    weights, photos, out = run
    acts = Activations.load(out / "activations")
    sae = SparseAutoencoder.load(out)
    metrics = json.loads((out / "metrics.json").read_text())
    train = np.concatenate([p["tokens"].double().numpy() for p in acts.chunks("train")])
    held = np.concatenate([p["tokens"].double().numpy() for p in acts.chunks("held_out")])
    # the SAE written out in numpy: centre and scale, top-k of the ReLU, decode, undo
    W_enc, b_enc, W_dec = (getattr(sae, n).double().numpy() for n in ("W_enc", "b_enc", "W_dec"))
    mean, scale = sae.input_mean.double().numpy(), sae.scale
    pre = np.maximum(((held - mean) * scale) @ W_enc + b_enc, 0)
    keep = np.argsort(-pre, axis=1, kind="stable")[:, :K]
    codes = np.zeros_like(pre)
    np.put_along_axis(codes, keep, np.take_along_axis(pre, keep, axis=1), axis=1)
    x_hat = codes @ W_dec / scale + mean
    variance = ((held - held.mean(0)) ** 2).sum()
    assert metrics["fvu"] == pytest.approx(((held - x_hat) ** 2).sum() / variance, rel=1e-4)
    assert metrics["l0"] == pytest.approx((codes > 0).sum(1).mean(), abs=1e-9)
    assert metrics["dead_fraction"] == pytest.approx(1 - (codes > 0).any(0).mean(), abs=1e-9)
    pca = PCA(n_components=round(metrics["l0"])).fit(train)
    pca_fvu = ((held - pca.inverse_transform(pca.transform(held))) ** 2).sum() / variance
    assert metrics["pca_fvu_at_l0"] == pytest.approx(pca_fvu, rel=1e-4)
    # the spliced model: the held-out photos' patch tokens after block 0 replaced by a forward hook
    loaded = vit.load(str(weights))
    model = loaded.model
    stored = torch.from_numpy

    def reconstruct(tokens):
        t = tokens.double().numpy()
        pre = np.maximum(((t - mean) * scale) @ W_enc + b_enc, 0)
        top = np.argsort(-pre, axis=-1, kind="stable")[..., :K]
        c = np.zeros_like(pre)
        np.put_along_axis(c, top, np.take_along_axis(pre, top, axis=-1), axis=-1)
        return stored(c @ W_dec / scale + mean).float()

    def hooked(replace):
        handle = model.blocks[0].register_forward_hook(
            lambda module, inputs, output: (torch.cat([output[0][:, :1], replace(output[0][:, 1:])], 1), output[1]))
        try:
            with torch.inference_mode():
                return torch.stack([model(loaded.preprocess(open_image(photos / acts.photos[i])))[0]
                                    for i in np.flatnonzero(acts.held_out)])
        finally:
            handle.remove()

    own = hooked(lambda t: t)
    spliced = hooked(reconstruct)
    ablated = hooked(lambda t: stored(mean).float().expand_as(t))
    kl = lambda a, b: (torch.softmax(a.double(), -1) * (torch.log_softmax(a.double(), -1)          # noqa: E731
                                                         - torch.log_softmax(b.double(), -1))).sum(-1).mean()
    assert metrics["spliced"]["kl"] == pytest.approx(float(kl(own, spliced)), rel=1e-3, abs=1e-7)
    assert metrics["spliced"]["kl_mean_ablation"] == pytest.approx(float(kl(own, ablated)), rel=1e-3, abs=1e-7)
    assert metrics["spliced"]["top1_agreement"] == float((own.argmax(-1) == spliced.argmax(-1)).double().mean())


def test_top_patches_are_every_latent_s_strongest_over_the_folder(run):
    _, _, out = run
    acts = Activations.load(out / "activations")
    sae = SparseAutoencoder.load(out)
    parts = list(acts.chunks("all", views=[0]))
    codes = torch.cat([sae.encode(p["tokens"]) for p in parts]).numpy()                 # (photos · 16, M)
    where = np.concatenate([np.stack([p["photo"], p["row"], p["col"]], 1) for p in parts])
    with np.load(out / "top_patches.npz") as top:
        for latent in range(M):
            values = np.sort(codes[:, latent])[::-1][:64]
            shown = top["activation"][latent]
            np.testing.assert_allclose(shown[shown > 0], values[values > 0], rtol=1e-6)
            for i in np.flatnonzero(shown > 0):
                found = where[codes[:, latent] == shown[i]]
                assert [top["image_index"][latent, i], top["row"][latent, i], top["col"][latent, i]] in found.tolist()
            assert (top["image_index"][latent][shown == 0] == -1).all()


def test_viz_concepts_adds_the_picture_the_arrays_and_the_entry(run, tmp_path):
    weights, photos, out = run
    assert viz_main([str(photos / "0003.png"), "--weights", str(weights), "--out", str(tmp_path / "o"),
                     "--concepts", str(out), "--quiet"]) == 0
    folder = tmp_path / "o" / "0003"
    result = json.loads((folder / "result.json").read_text())
    arrays = np.load(folder / "attention.npz")
    assert (folder / "concepts.png").is_file() and "concepts.png" in result["files"]
    assert arrays["concepts"].shape == (8, 4, 4) and arrays["concept_ids"].shape == (8,)
    assert [set(c) for c in result["concepts"]] == [{"latent", "mean", "max", "label"}] * 8
    loaded = vit.load(str(weights))
    source = open_concepts(out, loaded)
    pc = photo_concepts(loaded, source, loaded.preprocess.crop_image(open_image(photos / "0003.png")))
    expected = strongest(pc, source)
    assert [c["latent"] for c in result["concepts"]] == [c.latent for c in expected] == arrays["concept_ids"].tolist()
    for c, entry, maps in zip(expected, result["concepts"], arrays["concepts"]):
        assert entry["mean"] == pytest.approx(c.mean) and entry["max"] == pytest.approx(float(maps.max()))
        assert maps.mean() == pytest.approx(c.mean, rel=1e-6)


def test_viz_concepts_opens_a_sae_lens_folder(tmp_path):
    """sae-lens' SAE of the stream after block 1 of a width-16 model, on the tiny model (width 16, 2 blocks)."""
    weights = tiny_checkpoint(tmp_path / "tiny.pt")
    photo = noise_images(tmp_path / "photos", 1)[0]
    assert viz_main([str(photo), "--weights", str(weights), "--out", str(tmp_path / "o"), "--concepts",
                     str(PUBLISHED / "sae_lens_topk"), "--quiet"]) == 0
    result = json.loads((tmp_path / "o" / "0000" / "result.json").read_text())
    assert len(result["concepts"]) == 8


@pytest.mark.parametrize("args, message", [
    (["--concepts", str(PUBLISHED / "sae_lens_hook_z")], "every head's output of block 0 before the heads are merged"),
    (["--concepts", "{nowhere}"], "No SAE at"),
])
def test_viz_concepts_refuses_what_it_cannot_open_in_one_line(tmp_path, capsys, args, message):
    weights = tiny_checkpoint(tmp_path / "tiny.pt")
    photo = noise_images(tmp_path / "photos", 1)[0]
    args = [a.replace("{nowhere}", str(tmp_path / "nowhere")) for a in args]
    assert viz_main([str(photo), "--weights", str(weights), "--out", str(tmp_path / "o"), *args, "--quiet"]) == 2
    checked, err = capsys.readouterr().err.strip().split("\n", 1)   # the load's check first, then the error
    assert checked == f"{weights}: not verified (this explorer's own format: it is its own library)", checked
    assert err.startswith("error: --concepts ") and message in err and "\n" not in err


def test_an_sae_of_another_width_or_model_is_refused(run, tmp_path, capsys):
    _, photos, out = run
    wide = tiny_checkpoint(tmp_path / "wide.pt", size=32, patch=8)
    with torch.no_grad():                                    # another model of the same shape: other weights
        other = vit.load(str(wide))
        for p in other.model.parameters():
            p.add_(1.0)
    vit.save_checkpoint(tmp_path / "other.pt", other.model, other.labels, other.preprocess, extra={"name": "other"})
    assert viz_main([str(photos / "0000.png"), "--weights", str(tmp_path / "other.pt"), "--out", str(tmp_path / "o"),
                     "--concepts", str(out), "--quiet"]) == 2
    assert "This SAE was trained on another model's tokens (tiny)" in capsys.readouterr().err


def test_train_refuses_a_k_above_the_latents(tmp_path, capsys):
    assert main(["train", str(tmp_path), "--weights", "x", "--layer", "0", "--latents", "4", "--k", "5", "--out",
                 str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip() == "error: --k must be at most --latents (4) but got 5."
