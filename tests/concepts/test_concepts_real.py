"""The real AugReg ViT-Ti (../shared/weights): an SAE on the stream after block 6, trained by ``python -m
viz.concepts train`` on scikit-image's bundled photos (each with 7 random crops). metrics.json's numbers are
recomputed independently (the SAE written out in numpy, scikit-learn's PCA, and timm's own ViT-Ti with a forward hook
for the spliced model); the SAE at L0 = k explains more than PCA with k components; the spliced model's top-1
agreement is reported; switching a latent off equals timm's forward with its direction taken out of block 6's
patch tokens by a hook."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import skimage
import timm
import torch
from safetensors.torch import load_file
from sklearn.decomposition import PCA

import vit
from vit.image_file import open_image
from viz.concepts.activations import Activations
from viz.cli.concepts import main
from viz.concepts.sae import SparseAutoencoder
from viz.concepts.view import edit, open_concepts, photo_concepts, strongest

pytestmark = pytest.mark.slow    # caching 24 photos × 8 views, training on 34,496 tokens: minutes on 2 cores

LAYER, LATENTS, K = 6, 768, 16
PHOTOS = Path(skimage.__file__).parent / "data"        # the photos scikit-image's wheel carries


@pytest.fixture(scope="module")
def run(augreg_weights, tmp_path_factory):
    root = tmp_path_factory.mktemp("augreg_concepts")
    photos = root / "photos"
    photos.mkdir()
    for path in sorted(PHOTOS.iterdir()):
        if path.suffix in (".png", ".jpg") and not path.name.startswith("chessboard"):
            shutil.copy(path, photos / path.name)
    out = root / "sae"
    assert main(["train", str(photos), "--weights", augreg_weights, "--layer", str(LAYER), "--latents", str(LATENTS),
                 "--k", str(K), "--crops", "7", "--epochs", "8", "--out", str(out), "--quiet"]) == 0
    return photos, out


@pytest.fixture(scope="module")
def reference(augreg_weights):
    model = timm.create_model("vit_tiny_patch16_224", pretrained=False)
    model.load_state_dict(load_file(augreg_weights))
    return model.eval()


def numpy_sae(sae: SparseAutoencoder):
    W_enc, b_enc, W_dec = (getattr(sae, n).double().numpy() for n in ("W_enc", "b_enc", "W_dec"))
    mean, scale = sae.input_mean.double().numpy(), sae.scale

    def codes(x: np.ndarray) -> np.ndarray:
        pre = np.maximum(((x - mean) * scale) @ W_enc + b_enc, 0)
        keep = np.argsort(-pre, axis=-1, kind="stable")[..., :sae.k]
        out = np.zeros_like(pre)
        np.put_along_axis(out, keep, np.take_along_axis(pre, keep, axis=-1), axis=-1)
        return out

    return codes, lambda c: c @ W_dec / scale + mean, W_dec / scale


def hooked(reference, inputs, replace):
    """timm's logits (photos, 1000) with block 6's patch tokens replaced by ``replace(patches (N, D) float64)``."""
    def hook(module, args, output):
        patches = np.ascontiguousarray(replace(output[0, 1:].double().numpy()))   # (a broadcast mean is read-only)
        return torch.cat([output[:, :1], torch.from_numpy(patches).float()[None]], dim=1)

    handle = reference.blocks[LAYER].register_forward_hook(hook)
    try:
        with torch.inference_mode():
            return torch.cat([reference(x) for x in inputs])
    finally:
        handle.remove()


def test_metrics_are_recomputed_and_the_sae_beats_pca(run, reference, augreg_weights):
    photos, out = run
    metrics = json.loads((out / "metrics.json").read_text())
    acts = Activations.load(out / "activations")
    sae = SparseAutoencoder.load(out)
    codes, decode, _ = numpy_sae(sae)
    train = np.concatenate([p["tokens"].double().numpy() for p in acts.chunks("train")])
    held = np.concatenate([p["tokens"].double().numpy() for p in acts.chunks("held_out")])
    c = codes(held)
    variance = ((held - held.mean(0)) ** 2).sum()
    fvu = ((held - decode(c)) ** 2).sum() / variance
    pca = PCA(n_components=K).fit(train)
    pca_fvu = ((held - pca.inverse_transform(pca.transform(held))) ** 2).sum() / variance
    assert metrics["fvu"] == pytest.approx(fvu, rel=1e-4)
    assert metrics["l0"] == pytest.approx((c > 0).sum(1).mean(), abs=1e-9) and metrics["l0"] == K
    assert metrics["dead_fraction"] == pytest.approx(1 - (c > 0).any(0).mean(), abs=1e-9)
    assert metrics["pca_fvu_at_l0"] == pytest.approx(pca_fvu, rel=1e-4)

    loaded = vit.load(augreg_weights)
    inputs = [loaded.preprocess(open_image(photos / acts.photos[i])) for i in np.flatnonzero(acts.held_out)]
    own = hooked(reference, inputs, lambda p: p)
    spliced = hooked(reference, inputs, lambda p: decode(codes(p)))
    ablated = hooked(reference, inputs, lambda p: np.broadcast_to(sae.input_mean.double().numpy(), p.shape))
    kl = lambda a, b: float((torch.softmax(a.double(), -1) * (torch.log_softmax(a.double(), -1)     # noqa: E731
                                                              - torch.log_softmax(b.double(), -1))).sum(-1).mean())
    agreement = float((own.argmax(-1) == spliced.argmax(-1)).double().mean())
    assert metrics["spliced"]["kl"] == pytest.approx(kl(own, spliced), rel=2e-3)
    assert metrics["spliced"]["kl_mean_ablation"] == pytest.approx(kl(own, ablated), rel=2e-3)
    assert metrics["spliced"]["top1_agreement"] == agreement
    print(f"\nAugReg ViT-Ti, layer {LAYER}, {LATENTS} latents, k = {K}, {metrics['held_out']['photos']} held-out photos "
          f"({metrics['held_out']['tokens']} tokens): FVU {metrics['fvu']:.3f}, PCA with {K} components "
          f"{metrics['pca_fvu_at_l0']:.3f}, dead {metrics['dead_fraction']:.1%}, spliced KL "
          f"{metrics['spliced']['kl']:.3f} nats (mean ablation {metrics['spliced']['kl_mean_ablation']:.3f}), top-1 "
          f"agreement {agreement:.0%}")
    assert metrics["fvu"] < metrics["pca_fvu_at_l0"]


def test_switching_a_latent_off_equals_timm_with_its_direction_removed(run, reference, augreg_weights, cat):
    _, out = run
    loaded = vit.load(augreg_weights)
    source = open_concepts(out, loaded)
    pc = photo_concepts(loaded, source, loaded.preprocess.crop_image(cat))
    codes, _, directions = numpy_sae(source.sae)
    for concept in strongest(pc, source, 2):
        latent = concept.latent
        e = edit(loaded, source, pc, {latent: 0.0})
        expected = hooked(reference, [pc.x], lambda p: p - codes(p)[:, [latent]] * directions[latent])
        np.testing.assert_allclose(e.probabilities, torch.softmax(expected[0].double(), -1).numpy(), rtol=1e-3,
                                   atol=1e-6)
        print(f"\nthe cat without latent {latent} (mean {concept.mean:.2f}): {e.top_after[:2]} (before "
              f"{e.top_before[:2]}), KL {e.kl:.4f}")
