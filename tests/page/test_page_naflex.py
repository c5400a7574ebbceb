"""Protects the page and the command line on a NaFlex model (a tiny SigLIP 2 NaFlex tower, random weights): a wide
photo keeps its aspect ratio, so the maps are drawn on the photo's own non-square grid (6×9 for the 600×400 coffee,
at most 64 patches of 16), the outline, its note and the summary say so in both languages, squash gives the square
8×8 input instead, and ``python -m viz`` writes the same grid; photos of two shapes cannot share a batch, which the
command line says before it starts."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import transformers
from PIL import Image
from skimage import data

import app_server  # noqa: F401  (gives this process its own GRADIO_TEMP_DIR before the app is built)
from reference_models import randomize_
from vit.preprocess import size_for_patches
from vit_explorer import state, views
from vit_explorer.controls import ControlValues
from viz.cli import main
from viz.i18n import t


@pytest.fixture(scope="module")
def naflex(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("siglip2") / "siglip2-tiny"
    torch.manual_seed(0)
    model = transformers.Siglip2VisionModel(transformers.Siglip2VisionConfig(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, patch_size=16,
        num_patches=64))
    randomize_(model, std=0.05).save_pretrained(folder)
    transformers.Siglip2ImageProcessorPil(patch_size=16, max_num_patches=64).save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def wide(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("naflex_photos") / "coffee.png"
    Image.fromarray(data.coffee()).save(path)                                   # 600×400
    return str(path)


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_the_page_draws_the_photos_own_grid_and_says_so(naflex, wide, lang):
    assert size_for_patches(400, 600, 16, 64) == (96, 144)                      # 6×9 patches: 54 of at most 64
    own = views.page_analyze(None, wide, naflex, ControlValues(layer=1), None, lang)
    a = state.ANALYSES.get(own["session"].key)
    assert a.grid == (6, 9) and a.input_size == (96, 144) and a.image.size == (144, 96)
    assert own["crop_note"] == t("note.aspect", lang, crop="144×96", grid="6×9", most=64)
    assert t("summary.aspect", lang) in own["summary"] and "6×9" in own["summary"]
    width, height = own["query_photo"].size                                    # the photo the query clicks land on
    assert abs(width / height - 1.5) < 0.02
    squash = views.switch_preprocess("squash", own["session"], ControlValues(layer=1), lang)
    assert state.ANALYSES.get(squash["session"].key).grid == (8, 8)
    assert squash["crop_note"] == t("note.stretched", lang, crop="128×128")


def test_the_command_line_writes_the_photos_own_grid(naflex, wide, tmp_path):
    assert main([wide, "--weights", naflex, "--out", str(tmp_path / "out")]) == 0
    folder = tmp_path / "out" / "coffee"
    result = json.loads((folder / "result.json").read_text())
    assert result["grid"] == [6, 9] and result["input_size"] == [96, 144]
    assert result["preprocess"]["resize_mode"] == "patches" and result["preprocess"]["patch"] == 16
    arrays = np.load(folder / "attention.npz")
    assert arrays["rollout"].shape == (6, 9) and arrays["attention"].shape == (2, 4, 54, 54)
    assert Image.open(folder / "input.png").size == (144, 96)


def test_photos_of_two_shapes_cannot_share_a_batch(naflex, wide, tmp_path, capsys):
    tall = tmp_path / "tall.png"
    Image.fromarray(np.ascontiguousarray(np.rot90(data.chelsea()))).save(tall)
    assert main([wide, str(tall), "--weights", naflex, "--out", str(tmp_path / "o"), "--batch-size", "2"]) == 2
    assert "cannot share a batch" in capsys.readouterr().err
    assert main([wide, str(tall), "--weights", naflex, "--out", str(tmp_path / "o")]) == 0     # one at a time
    summary = json.loads((tmp_path / "o" / "summary" / "statistics.json").read_text())
    assert summary["images"] == 2 and summary["input_varies"] is True
