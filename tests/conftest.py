"""Shared fixtures: the real checkpoints in ../shared/weights (found through $VIT_TEST_WEIGHTS) and real photos."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from PIL import Image
from skimage import data

REPO = Path(__file__).resolve().parent.parent
REAL_WEIGHTS = {  # file name -> timm architecture (see PROVENANCE.md next to them)
    "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors": "vit_tiny_patch16_224",
    "deit_tiny_patch16_224.pipevit_ln_fixedpoint.safetensors": "deit_tiny_patch16_224",
}


@pytest.fixture(scope="session")
def real_weights_dir() -> Path:
    """Folder with the real checkpoints: $VIT_TEST_WEIGHTS, default <repo>/../shared/weights. Missing -> fail, never skip."""
    folder = Path(os.environ.get("VIT_TEST_WEIGHTS") or REPO.parent / "shared" / "weights")
    missing = [name for name in REAL_WEIGHTS if not (folder / name).is_file()]
    if missing:
        pytest.fail(f"Real weights missing from {folder}: {', '.join(missing)}. Point VIT_TEST_WEIGHTS at the folder "
                    f"that holds them (see PROVENANCE.md there).", pytrace=False)
    return folder


@pytest.fixture(scope="session")
def cat() -> Image.Image:
    return Image.fromarray(data.chelsea())  # 451×300 RGB photo of a tabby cat


@pytest.fixture(scope="session")
def camera() -> Image.Image:
    return Image.fromarray(data.camera())  # 512×512 grayscale photo of a man with a camera on a tripod


@pytest.fixture(scope="module")
def augreg_weights(real_weights_dir) -> str:
    """Path of the real AugReg ViT-Ti checkpoint (ImageNet-1k classifier)."""
    return str(real_weights_dir / "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors")


@pytest.fixture(scope="module")
def augreg_url(augreg_weights):
    """URL of the app served in this process on 127.0.0.1 with the AugReg ViT-Ti, one server per test module."""
    from app_server import running_app  # imports the app (Gradio): only for the modules that serve it
    with running_app(augreg_weights) as address:
        yield address
