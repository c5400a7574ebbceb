"""Protects ``--protocol chefer2021`` (viz.trust.chefer), Chefer et al. 2021's positive and negative perturbation
test as their public code runs it: on a hand-built model whose class depends on known pixels, the accuracy curves
and AUCs of a tiny labelled set equal the ones worked out by hand; the pixel order follows ``torch.topk`` of the
bilinearly upsampled map; the CLI writes summary/chefer2021.json and .md with the contracted keys and the
library's numbers, and says when the folder is not ImageNet.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PIL import Image

import vit
from tiny_models import tiny
from viz.cli import main
from viz.trust.chefer import (STEPS, X, black_pixel, chefer_auc, chefer_hits, chefer_summary, perturbed_inputs,
                              pixel_relevance)

A = 4.0                                   # class-0 logit: A · (bright − dark pixels) / 20
BIAS = A * 0.5 / 20                       # class-1 logit: class 0 needs at least one more bright than dark pixel


def pixel_model() -> vit.VisionTransformer:
    """4 × 5 pixels, 1-pixel patches, no blocks, mean pooling, 2 classes: pixel i becomes the token v_i·[1, −1]
    (v_i its red value), the final LayerNorm turns it into sign(v_i)·[1, −1] (0 for a black pixel), the mean over
    the 20 pixels is c/20·[1, −1] with c = #bright − #dark pixels, and the head gives (A·c/20, BIAS): class 0 iff
    c ≥ 1."""
    model = vit.VisionTransformer(vit.ViTConfig(img_size=(4, 5), patch_size=1, embed_dim=2, depth=0, num_heads=1,
                                                mlp_dim=4, num_classes=2, class_token=False, readout="mean",
                                                pos_embed_kind="none")).eval()
    with torch.no_grad():
        model.patch_embed.proj.weight.zero_()
        model.patch_embed.proj.weight[0, 0] = 1.0
        model.patch_embed.proj.weight[1, 0] = -1.0
        model.patch_embed.proj.bias.zero_()
        model.head.weight.copy_(torch.tensor([[A, 0.0], [0.0, 0.0]]))
        model.head.bias.copy_(torch.tensor([0.0, BIAS]))
    return model


def image(bright=(), dark=()) -> torch.Tensor:
    x = torch.zeros(1, 3, 4, 5)
    for i in bright:
        x[0, 0].view(-1)[i] = 1.0
    for i in dark:
        x[0, 0].view(-1)[i] = -1.0
    return x


def test_the_accuracy_curves_of_a_hand_built_model_are_the_hand_computed_ones():
    """Image 1 (label 0): bright pixels 0–4, a dark pixel 19, so c = 4. Its map ranks 0 > 1 > … > 4 (values 14 …
    10), then the black pixels 18 > … > 5, then 19 (−5). Positive perturbation removes int(20·s) = 2, 4, …, 18
    pixels, the most relevant first: 3 bright pixels are left at 10 % (c = 2, a hit), 1 at 20 % (c = 0: class
    1, a miss), none after: hits 1, 1, 0, …, 0. Negative removes 19 and the black pixels first (15 of them), so
    at most 3 bright pixels go (at 90 %, c = 2): all hits. Image 2 (label 1): one dark pixel, c ≤ 0 whatever is
    removed: all hits."""
    model, black = pixel_model(), black_pixel((0, 0, 0), (1, 1, 1))
    relevance = np.zeros(20)
    relevance[:5] = [14, 13, 12, 11, 10]
    relevance[5:19] = np.arange(5, 19) / 100
    relevance[19] = -5
    one = chefer_hits(model, image(range(5), [19]), 0, {"m": relevance.reshape(4, 5)}, black, patch=1)
    assert one["positive"]["m"].tolist() == [1, 1] + [0] * 8
    assert one["negative"]["m"].tolist() == [1] * 10
    two = chefer_hits(model, image(dark=[0]), 1, {"m": relevance.reshape(4, 5)}, black, patch=1)
    assert two["positive"]["m"].tolist() == two["negative"]["m"].tolist() == [1] * 10
    accuracy = {s: {"m": (one[s]["m"] + two[s]["m"]) / 2} for s in ("positive", "negative")}
    # positive: 0.1·(1 + 1)/2 + 0.1·(1 + 0.5)/2 + 7 · 0.1 · 0.5 = 0.525; negative: 0.9 (every image, every step)
    assert chefer_auc(accuracy["positive"]["m"]) == pytest.approx(52.5)
    assert chefer_auc(accuracy["negative"]["m"]) == pytest.approx(90.0)
    summary = chefer_summary(accuracy, "predicted", 2, imagenet=False)
    assert summary["positive"] == {"m": pytest.approx(52.5)} and summary["class"] == "predicted"
    assert summary["published"]["source"].startswith("Chefer, Gur & Wolf 2021")
    assert summary["published"]["imagenet_classes"] is False
    assert X.tolist() == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9])


def test_pixels_are_removed_in_the_order_of_the_bilinearly_upsampled_map():
    """Their code: ``F.interpolate(Res, scale_factor=16, mode='bilinear')``, min-max normalised, ``torch.topk`` of
    int(224·224·step) pixels set to 0 in [0, 1] (here: the model input of a black pixel)."""
    rng = np.random.default_rng(0)
    relevance = rng.random((2, 3))
    upsampled = torch.nn.functional.interpolate(torch.tensor(relevance, dtype=torch.float32)[None, None],
                                                scale_factor=16, mode="bilinear").reshape(-1)
    r = pixel_relevance(relevance, 16)
    torch.testing.assert_close(r, (upsampled - upsampled.min()) / (upsampled.max() - upsampled.min()))
    x = torch.rand(1, 3, 32, 48, generator=torch.Generator().manual_seed(1))
    black = black_pixel((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))
    assert black.tolist() == [-1.0, -1.0, -1.0]
    for sign, vis in (("positive", r), ("negative", -r)):
        images = perturbed_inputs(x, r, black, sign)
        assert images.shape == (len(STEPS), 3, 32, 48)
        for step, out in zip(STEPS, images):
            k = int(32 * 48 * step)
            idx = torch.topk(vis, k).indices
            changed = (out != x[0]).any(dim=0).reshape(-1)
            assert torch.equal(torch.sort(torch.nonzero(changed).ravel()).values, torch.sort(idx).values)
            assert torch.all(out.reshape(3, -1)[:, idx] == -1.0)


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    """A tiny checkpoint (5 classes "class 0" … "class 4") and a folder labelled by sub-folder index."""
    folder = tmp_path_factory.mktemp("chefer")
    weights = vit.save_checkpoint(folder / "tiny.pt", tiny(), [f"class {i}" for i in range(5)], vit.Preprocess(32, 32))
    rng = np.random.default_rng(0)
    for label, name in ((0, "a"), (1, "b"), (3, "c")):
        (folder / "images" / str(label)).mkdir(parents=True)
        Image.fromarray(rng.integers(0, 255, (40, 48, 3), dtype=np.uint8)).save(folder / "images" / str(label) /
                                                                                f"{name}.png")
    return str(weights), folder / "images"


@pytest.mark.parametrize("cls", ["predicted", "target"])
def test_the_cli_writes_chefer2021_json_and_md_with_the_librarys_numbers(labelled, tmp_path, cls):
    weights, folder = labelled
    argv = [str(folder), "--weights", weights, "--out", str(tmp_path), "--explain", "gae,random",
            "--protocol", "chefer2021", "--stats-only", "--quiet"] + (["--target", "label"] if cls == "target" else [])
    assert main(argv) == 0
    out = json.loads((tmp_path / "summary" / "chefer2021.json").read_text())
    assert set(out) >= {"positive", "negative", "class", "published"} and out["class"] == cls
    assert list(out["positive"]) == ["gae", "random"] and out["images"] == 3
    assert "source" in out["published"] and out["published"]["numbers"] is None    # the table was not found
    assert all(q["source"].startswith("https://github.com/hila-chefer/") and q["auc"] > 0     # each quote named
               for q in out["published"]["quoted"])
    loaded = vit.load(weights)
    black = black_pixel(loaded.preprocess.mean, loaded.preprocess.std)
    hits = []
    from viz.explain.explainer import explain_tensor
    from vit.explain import ClassTarget
    for label, name in ((0, "a"), (1, "b"), (3, "c")):
        with Image.open(folder / str(label) / f"{name}.png") as photo:
            x = loaded.preprocess.to_tensor(loaded.preprocess.crop_image(photo.convert("RGB")))
        e = explain_tensor(loaded.model, x, ClassTarget(label) if cls == "target" else ClassTarget(), ["gae", "random"])
        hits.append(chefer_hits(loaded.model, x, label, {m: e.map(m) for m in ("gae", "random")}, black, 8))
    for sign in ("positive", "negative"):
        for m in ("gae", "random"):
            accuracy = np.mean([h[sign][m] for h in hits], axis=0)
            assert out[sign][m] == pytest.approx(chefer_auc(accuracy), abs=1e-9)
    md = (tmp_path / "summary" / "chefer2021.md").read_text()
    assert "This folder is not ImageNet" in md and f"| gae | {out['positive']['gae']:.2f} |" in md
    assert "| rollout | negative | predicted | 53.10 | https://github.com/hila-chefer/" in md


def test_chefer2021_needs_a_labelled_folder(labelled, tmp_path, capsys):
    weights, folder = labelled
    one = next(folder.glob("*/*.png"))
    assert main([str(one), "--weights", weights, "--out", str(tmp_path), "--explain", "gae",
                 "--protocol", "chefer2021", "--quiet"]) == 2
    assert "labelled folder" in capsys.readouterr().err
