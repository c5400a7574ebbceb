"""A concept with a known answer: a ViT trained on the bundled squares (``python -m vit.train.squares``, then
``python -m vit.train`` with docs/training.md's demonstration recipe, fewer epochs), an SAE on a middle layer's
tokens over the squares folder (``python -m viz.concepts train``). At least one latent's 64 strongest patches all lie
on a square; the latent is chosen without being told which (among those, the one whose map best separates square
patches from background patches on the training photos), and its map separates them on the held-out photos with
an AUROC of at least 0.95. The ground truth comes from the pixels: a square is a patch of one bright colour (every
channel 170 or more) on a background of grey levels below 100 plus noise."""
from __future__ import annotations

import numpy as np
import pytest
from PIL import Image
from sklearn.metrics import roc_auc_score

from viz.concepts.activations import Activations
from viz.cli.concepts import main as concepts_main
from viz.concepts.sae import SparseAutoencoder
from viz.concepts.top_patches import TopPatches
from vit.train.__main__ import main as train_main
from vit.train.squares import main as squares_main

pytestmark = pytest.mark.slow    # a ViT and an SAE trained: minutes on a 2-core CPU

# docs/training.md's demonstration run (40 epochs there; the squares are seen as bright patches long before the
# model knows their cell, so 3 epochs are enough for the concept)
RECIPE = ["--img-size", "32", "--patch-size", "4", "--depth", "4", "--embed-dim", "96", "--heads", "3", "--lr", "2e-3",
          "--epochs", "40", "--augment", "none", "--epochs", "3", "--workers", "0"]
PATCH, GRID = 4, 8


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("squares")
    assert squares_main([str(root / "squares")]) == 0
    assert train_main(["--data", str(root / "squares"), "--out", str(root / "squares.pt"), *RECIPE]) == 0
    out = root / "sae"
    assert concepts_main(["train", str(root / "squares"), "--weights", str(root / "squares.pt"), "--layer", "2",
                          "--latents", "192", "--k", "8", "--epochs", "6", "--out", str(out), "--quiet"]) == 0
    return root / "squares", out


def square_cover(path) -> np.ndarray:
    """(8, 8): the share of each patch's pixels on the square."""
    pixels = np.asarray(Image.open(path).convert("RGB"))
    return (pixels.min(axis=-1) >= 170).reshape(GRID, PATCH, GRID, PATCH).mean(axis=(1, 3))


def codes_and_truth(sae, acts, which, covers):
    """Codes of the view-0 patches of ``which`` photos, and for the patches wholly off or mostly on a square, whether
    they are on one."""
    codes, truth = [], []
    for part in acts.chunks(which, views=[0]):
        cover = np.array([covers[p][r, c] for p, r, c in zip(part["photo"].tolist(), part["row"].tolist(),
                                                            part["col"].tolist())])
        clear = (cover == 0) | (cover >= 0.5)
        codes.append(sae.encode(part["tokens"]).numpy()[clear])
        truth.append(cover[clear] >= 0.5)
    return np.concatenate(codes), np.concatenate(truth)


def auroc(codes: np.ndarray, truth: np.ndarray, latent: int) -> float:
    return float(roc_auc_score(truth, codes[:, latent])) if codes[:, latent].any() else 0.5


def test_a_latent_is_the_square(trained):
    folder, out = trained
    acts = Activations.load(out / "activations")
    sae = SparseAutoencoder.load(out)
    top = TopPatches.load(out / "top_patches.npz")
    covers = [square_cover(folder / photo) for photo in acts.photos]
    on_square = [latent for latent in range(sae.latents)
                 if len(top.of(latent)) == 64 and all(covers[i][r, c] > 0 for i, r, c, _ in top.of(latent))]
    assert on_square, "no latent has its 64 strongest patches all on a square"
    train_codes, train_truth = codes_and_truth(sae, acts, "train", covers)
    chosen = max(on_square, key=lambda latent: auroc(train_codes, train_truth, latent))
    held_codes, held_truth = codes_and_truth(sae, acts, "held_out", covers)
    score = auroc(held_codes, held_truth, chosen)
    print(f"\n{len(on_square)} latents with their top 64 patches on squares; latent {chosen}: AUROC "
          f"{auroc(train_codes, train_truth, chosen):.4f} on the training photos, {score:.4f} on the "
          f"{int(acts.held_out.sum())} held-out photos ({int(held_truth.sum())} square and {int((~held_truth).sum())} "
          f"background patches)")
    assert score >= 0.95
