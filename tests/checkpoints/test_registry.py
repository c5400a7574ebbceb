"""Protects the table of torchvision's ViT weights in vit/checkpoints/registry.py (written out so that serving never
imports torchvision): every entry equals what torchvision's own weights enums say, and none is missing."""
from __future__ import annotations

import pytest

import subprocess
import sys
from pathlib import Path

from torchvision.models import (ViT_B_16_Weights, ViT_B_32_Weights, ViT_H_14_Weights, ViT_L_16_Weights,
                                ViT_L_32_Weights)

from vit.checkpoints import registry
from vit.preprocess import IMAGENET_MEAN, IMAGENET_STD, Preprocess

ROOT = Path(__file__).resolve().parents[2]
ENUMS = {"vit_b_16": ViT_B_16_Weights, "vit_b_32": ViT_B_32_Weights, "vit_l_16": ViT_L_16_Weights,
         "vit_l_32": ViT_L_32_Weights, "vit_h_14": ViT_H_14_Weights}


def test_table_matches_torchvision_weights_enums():
    ours = {ck.name: ck for ck in registry.torchvision_checkpoints()}
    theirs = {f"{arch}.{w.name.lower()}": w for arch, enum in ENUMS.items() for w in enum}
    assert sorted(ours) == sorted(theirs)  # 10 weights: 3 + 1 + 3 + 1 + 2
    assert len(ours) == 10
    for name, w in theirs.items():
        ck, kw = ours[name], w.transforms.keywords
        crop = kw["crop_size"]
        interpolation = kw.get("interpolation")
        assert ck.url == w.url and ck.filename == w.url.rsplit("/", 1)[-1], name
        assert ck.preprocess == Preprocess(resize=kw.get("resize_size", 256), crop=(crop, crop),
                                           interpolation=interpolation.value if interpolation else "bilinear",
                                           mean=IMAGENET_MEAN, std=IMAGENET_STD), name
        assert ck.config == {"img_size": tuple(w.meta["min_size"])}, name
        assert ck.format == "torchvision" and ck.downloadable, name


def test_default_is_torchvisions_vit_b_16_v1():
    ck = registry.by_name("default")
    assert ck.url == ViT_B_16_Weights.IMAGENET1K_V1.url == "https://download.pytorch.org/models/vit_b_16-c867db91.pth"
    assert registry.by_name("vit_b_16") == registry.by_name("VIT_B_16-C867DB91.PTH") == ck
    assert not any(c.downloadable for c in registry.SHARED_CHECKPOINTS)  # test fixtures, not downloads


@pytest.mark.slow
def test_serving_never_imports_torchvision():
    """The app, the library and the CLI run without torchvision in memory (~170 MB of RSS saved)."""
    code = ("import sys, app, vit, viz.cli, vit_explorer.layout; vit_explorer.state.model_choices(); "
            "vit.imagenet_labels(); "
            "vit.checkpoints.registry.by_name('default'); print('torchvision' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "False"
