"""Protects the end-to-end path with real pretrained weights: recognised by sha256, preprocessed as their source
does (timm's pretrained_cfg of their tags: crop_pct 0.9, 248 -> 224), and classifying real photos correctly; with
the preprocessing ../shared/weights/PROVENANCE.md's verification table states (256 -> 224), its numbers."""
from __future__ import annotations

import dataclasses
import shutil

import pytest
import torch
from PIL import Image
from skimage import data

import vit

CAT_CLASSES = {"tabby", "tiger cat", "Persian cat", "Siamese cat", "Egyptian cat", "lynx"}
AUGREG = "vit_tiny_patch16_224.augreg_in21k_ft_in1k"
DEIT = "deit_tiny_patch16_224.pipevit_ln_fixedpoint"
# PROVENANCE.md: top-3 softmax on chelsea (bicubic 256, crop 224, the source's normalisation: its table's preprocessing,
# not the files' own).
PROVENANCE_RESIZE = 256
PROVENANCE_CAT = {
    AUGREG: {"Egyptian cat": 0.733, "tiger cat": 0.177, "tabby": 0.076},
    DEIT: {"Egyptian cat": 0.353, "tabby": 0.256, "tiger cat": 0.239},
}
MEANS = {AUGREG: (0.5, 0.5, 0.5), DEIT: (0.485, 0.456, 0.406)}


@pytest.fixture(scope="module", params=[AUGREG, DEIT])
def loaded(request, real_weights_dir):
    return vit.load(real_weights_dir / f"{request.param}.safetensors")


def top(loaded, image: Image.Image, k: int = 3, preprocess: vit.Preprocess | None = None) -> dict[str, float]:
    with torch.no_grad():
        probs = loaded.model((preprocess or loaded.preprocess)(image)).softmax(-1)[0]
    values, indices = probs.topk(k)
    return {loaded.labels[i]: float(v) for v, i in zip(values, indices)}


def test_recognised_with_its_preprocessing(loaded):
    assert loaded.name in PROVENANCE_CAT
    assert loaded.format == "timm"
    assert loaded.preprocess == vit.Preprocess(resize=248, crop=(224, 224), interpolation="bicubic",
                                               mean=MEANS[loaded.name], std=(0.5,) * 3 if loaded.name == AUGREG
                                               else (0.229, 0.224, 0.225))   # 224 / 0.9, tests/test_preprocess_sources
    assert loaded.config == vit.variant("vit_ti_16", pos_embed_antialias=True)   # resized as timm resizes
    assert len(loaded.labels) == 1000 and loaded.labels[285] == "Egyptian cat"


def test_chelsea_is_a_cat(loaded, cat):
    top3 = top(loaded, cat)
    assert next(iter(top3)) in CAT_CLASSES and set(top3) == set(PROVENANCE_CAT[loaded.name])
    provenance = dataclasses.replace(loaded.preprocess, resize=PROVENANCE_RESIZE)
    top3 = top(loaded, cat, preprocess=provenance)
    for label, p in PROVENANCE_CAT[loaded.name].items():  # loosely: same classes, probabilities within 0.02
        assert top3.get(label, 0.0) == pytest.approx(p, abs=0.02), label


@pytest.mark.slow
def test_other_photos(loaded, camera):
    motorcycle = Image.fromarray(data.stereo_motorcycle()[0])
    assert next(iter(top(loaded, motorcycle, 1))) == "moped"
    assert next(iter(top(loaded, camera, 1))) == "tripod"


def test_captured_attention_path_gives_the_same_prediction(loaded, cat):
    x = loaded.preprocess(cat)
    with torch.no_grad():
        logits, attn = loaded.model.forward_with_attention(x)[:2]
        torch.testing.assert_close(logits, loaded.model(x), atol=1e-4, rtol=0)
    assert attn.shape == (1, 12, 3, 197, 197)
    assert loaded.labels[int(logits.argmax())] in CAT_CLASSES


def test_found_by_name_in_the_weights_folder(real_weights_dir, monkeypatch, cat):
    monkeypatch.setenv("VIT_WEIGHTS_DIR", str(real_weights_dir))
    assert f"{AUGREG}.safetensors" in vit.list_local_checkpoints()
    by_name = vit.load(AUGREG)
    by_file = vit.load(f"{DEIT}.safetensors")
    assert (by_name.name, by_file.name) == (AUGREG, DEIT)
    assert next(iter(top(by_name, cat))) in CAT_CLASSES


def test_renamed_copy_is_recognised_by_sha256(real_weights_dir, tmp_path):
    copy = tmp_path / "mystery.safetensors"
    shutil.copyfile(real_weights_dir / f"{AUGREG}.safetensors", copy)
    loaded = vit.load(copy)
    assert loaded.name == AUGREG
    assert loaded.preprocess.mean == (0.5, 0.5, 0.5)  # the AugReg convention, which a bare file cannot tell
