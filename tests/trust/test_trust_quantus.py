"""Protects the pixel protocols against Quantus 0.6 (Hedström et al. 2023), a metrics library nobody here wrote:
the ``mean_colour`` and ``blur`` deletion curves equal Quantus's ``RegionPerturbation`` (16 × 16 patches, most
relevant first, the project's fill as its ``perturb_func``) and ``Selectivity``, point for point; and the sanity
check is compared with Quantus's ``MPRT`` on the same maps of the real AugReg ViT-Ti.

Quantus 0.6 computes its AUCs with ``np.trapz``, which numpy 2.4 removed; the tests put ``np.trapezoid`` (the same
function under its numpy 2 name) back as ``np.trapz`` for their own duration only.
"""
from __future__ import annotations

import numpy as np
import pytest
import quantus
import torch
from skimage import data

import vit
from viz.explain.explainer import explain_map
from viz.trust import spearman
from viz.trust.job import trust_report
from viz.trust.protocols import fill
from vit.explain import ClassTarget

PATCH = 16


@pytest.fixture(autouse=True)
def trapz(monkeypatch):
    """Quantus 0.6 calls np.trapz, gone from numpy 2.4: lend it np.trapezoid (the same rule) for the test."""
    monkeypatch.setattr(np, "trapz", np.trapezoid, raising=False)


def small_vit() -> vit.VisionTransformer:
    """A random ViT with 16-pixel patches on a 64 × 64 input (4 × 4 patches): cheap enough to perturb every patch."""
    torch.manual_seed(0)
    cfg = vit.ViTConfig(img_size=64, patch_size=PATCH, embed_dim=48, depth=2, num_heads=3, mlp_dim=96, num_classes=5)
    model = vit.VisionTransformer(cfg).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.2 * torch.randn_like(p))
    return model


def quantus_fill(protocol: str, x: torch.Tensor):
    """The project's fill as Quantus's ``perturb_func``: arr (B, C·H·W), indices (B, n) -> arr with the pixels at
    those indices replaced by the fill image's."""
    filled = fill(x, protocol, PATCH).reshape(1, -1).numpy()

    def perturb(arr: np.ndarray, indices: np.ndarray, **_) -> np.ndarray:
        out = arr.copy()
        rows = np.arange(arr.shape[0])[:, None]
        out[rows, indices] = filled[0, indices]
        return out
    return perturb


def pixel_map(relevance: np.ndarray) -> np.ndarray:
    """A (gh, gw) map as Quantus's attributions: each patch's value on its pixels, (1, 1, H, W)."""
    return np.kron(relevance, np.ones((PATCH, PATCH)))[None, None].astype(np.float32)


@pytest.mark.parametrize("protocol", ["mean_colour", "blur"])
def test_pixel_curves_equal_quantus_region_perturbation_and_selectivity(protocol):
    model = small_vit()
    x = torch.randn(1, 3, 64, 64, generator=torch.Generator().manual_seed(1))
    target = int(model(x).argmax())
    report = trust_report(model, x, ClassTarget(target), ["gae", "random"], protocol=protocol, points=17)
    for name in ("gae", "random"):
        m = report.methods[name]
        assert len(np.unique(m.map)) == m.map.size                       # no ties: the orders are the same
        ours = np.array(m.faithfulness.deletion)                         # 17 points: k = 0 … 16 patches removed
        common = dict(patch_size=PATCH, perturb_func=quantus_fill(protocol, x), normalise=False, abs=False,
                      disable_warnings=True, display_progressbar=False)
        args = dict(model=model, x_batch=x.numpy(), y_batch=np.array([target]), a_batch=pixel_map(m.map),
                    device="cpu", softmax=True, channel_first=True)
        drops = quantus.RegionPerturbation(order="morf", regions_evaluation=16, **common)(**args)[0]
        np.testing.assert_allclose(ours[0] - np.asarray(drops), ours[1:], rtol=0, atol=5e-6)
        kept = quantus.Selectivity(**common)(**args)[0]                   # the probability after each patch
        np.testing.assert_allclose(np.asarray(kept)[:16], ours[1:], rtol=0, atol=5e-6)


@pytest.mark.slow
def test_the_sanity_check_beside_quantus_mprt_on_the_real_vit_ti(real_weights_dir):
    """Both re-initialise the model from the top and compare each map with the trained model's (Spearman), but
    they randomise different things: ours re-draws one *block* at a time (as ``VisionTransformer`` initialises
    it) and keeps the head, the final norm, the patch embedding, the positions and LayerScale; Quantus's MPRT
    calls ``reset_parameters`` on every module that has one, one at a time from the last, so it randomises the
    head first, then the final norm, every Linear and LayerNorm of every block, and finally the patch embedding.
    So the curves are not the same numbers; what must agree is the verdict: the random map never changes
    under either (ρ = 1 throughout: flagged), and GAE's map ends far from its trained self under both."""
    loaded = vit.load(real_weights_dir / "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors")
    from PIL import Image
    x = loaded.preprocess.to_tensor(loaded.preprocess.crop_image(Image.fromarray(data.chelsea())))
    target = int(loaded.model(x).argmax())
    ours = trust_report(loaded.model, x, ClassTarget(target), ["gae", "random"], sanity=True)

    def explain(model, inputs, targets, method="gae", **_):
        """Our map of each input as Quantus wants attributions: on the pixels, (B, 1, H, W)."""
        xx = torch.as_tensor(inputs, dtype=torch.float32)
        return np.concatenate([pixel_map(explain_map(method, model.eval(), xx[i:i + 1], ClassTarget(int(t))))
                               for i, t in enumerate(targets)])

    def similarity(a, b, batched=True, **_):
        """Our Spearman between the patch maps (one pixel per patch of the flattened (H, W) attributions)."""
        H, W = x.shape[-2:]
        patches = lambda v: v.reshape(H, W)[::PATCH, ::PATCH]
        return np.array([spearman(patches(u), patches(v)) for u, v in zip(a, b)])

    for method in ("gae", "random"):
        original = explain(loaded.model, x.numpy(), [target], method)
        mprt = quantus.MPRT(layer_order="top_down", similarity_func=similarity, abs=False, normalise=False,
                            skip_layers=True, disable_warnings=True, display_progressbar=False)   # the end alone
        scores = mprt(model=loaded.model, x_batch=x.numpy(), y_batch=np.array([target]), a_batch=original,
                      explain_func=explain, explain_func_kwargs={"method": method}, device="cpu", channel_first=True)
        assert list(scores) == ["original", "patch_embed.proj"]            # the patch embedding is randomised last
        everything = scores["patch_embed.proj"][0]                        # every module re-initialised
        if method == "random":
            assert everything == pytest.approx(1.0) and ours.methods["random"].sanity[-1] == pytest.approx(1.0)
            assert ours.methods["random"].flagged
        else:
            assert everything < 0.5 and ours.methods["gae"].sanity[-1] < 0.5 and not ours.methods["gae"].flagged
    order = [name for name, _ in quantus.PyTorchModel(loaded.model).get_random_layer_generator("top_down")]
    assert order[:2] == ["head", "norm"] and order[-1] == "patch_embed.proj"   # head first, patch embedding last
