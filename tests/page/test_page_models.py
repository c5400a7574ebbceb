"""Protects the page's Model box with the models people bring: a Hugging Face Hub name opens (from an offline Hub
cache) through vit.load, and the summary lists what the loader assumed, in the visitor's language; a checkpoint that
assumes nothing adds nothing."""
from __future__ import annotations

import pytest
import timm
import torch
from PIL import Image
from safetensors.torch import save_file
from skimage import data

import app_server  # noqa: F401  (gives this process its own GRADIO_TEMP_DIR before the app is built)
import vit
from hub_cache import offline_hub, put_in_cache
from reference_models import randomize_
from vit_explorer import views
from vit_explorer.controls import ControlValues
from viz.explorer import assumed_text
from viz.i18n import t

CONTROLS = ControlValues(layer=0)


@pytest.fixture(scope="module")
def photo(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("models_photos") / "cat.png"
    Image.fromarray(data.chelsea()).save(path)
    return str(path)


@pytest.fixture
def bare_file(tmp_path) -> str:
    """A timm ViT saved as a bare state dict: heads, input size and preprocessing are assumed."""
    torch.manual_seed(0)
    ref = randomize_(timm.create_model("vit_tiny_patch16_224", depth=2, img_size=32, num_classes=4))
    save_file(ref.state_dict(), str(tmp_path / "bare.safetensors"))
    return str(tmp_path / "bare.safetensors")


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_the_summary_lists_what_was_assumed_in_the_visitors_language(demo, photo, bare_file, lang):
    shown = views.page_analyze(None, photo, bare_file, CONTROLS, None, lang)
    assumptions = vit.load(bare_file).assumptions
    assert [a.key for a in assumptions] == ["heads_known", "img_size", "preprocess"]
    summary = shown["summary"]
    assert t("summary.assumed", lang) in summary
    for a in assumptions:
        assert f"- {assumed_text(a, lang)}" in summary
    if lang == "zh-CN":
        assert "假定为" in summary and "The number of attention heads" not in summary


def test_nothing_assumed_adds_nothing(demo, photo, augreg_weights):
    shown = views.page_analyze(None, photo, augreg_weights, CONTROLS, None, "en")
    assert t("summary.assumed", "en") not in shown["summary"]


def test_a_hub_name_in_the_model_box(demo, photo, bare_file, tmp_path, monkeypatch):
    folder = tmp_path / "timm_folder"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(open(bare_file, "rb").read())
    (folder / "config.json").write_text('{"architecture": "vit_tiny_patch16_224", "num_classes": 4, '
                                        '"pretrained_cfg": {"input_size": [3, 32, 32], "crop_pct": 0.9}}')
    put_in_cache(tmp_path / "hf_cache", "someone/tiny-vit", folder)
    offline_hub(monkeypatch, tmp_path / "hf_cache")
    shown = views.page_analyze(None, photo, "someone/tiny-vit", CONTROLS, None, "en")
    assert shown["session"].key.model == "someone/tiny-vit" and "**someone/tiny-vit**" in shown["summary"]
    # its config.json names timm's architecture: timm builds it (nothing assumed) and the load is checked against it
    assert "Checked against timm" in shown["summary"] and "Assumed when loading" not in shown["summary"]
