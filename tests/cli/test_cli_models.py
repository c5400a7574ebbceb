"""``python -m viz`` with models people bring: a Hub name in --weights and --compare (from an offline Hub cache), and
what the loader assumed printed on stderr and recorded as result.json's, compare.json's and statistics.json's
"assumptions" (empty when nothing was assumed)."""
from __future__ import annotations

import json

import pytest
import timm
import torch
import transformers
from safetensors.torch import save_file

import vit
from hub_cache import offline_hub, put_in_cache
from reference_models import randomize_
from viz.cli import main

AUGREG = "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors"


@pytest.fixture
def photo(cat, tmp_path):
    cat.save(tmp_path / "cat.png")
    return tmp_path / "cat.png"


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """An offline Hub cache holding a small transformers DINOv2 as facebook/dinov2-small (without its processor
    config, so one thing is assumed)."""
    torch.manual_seed(0)
    ref = randomize_(transformers.Dinov2Model(transformers.Dinov2Config(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, patch_size=8, image_size=32)))
    ref.save_pretrained(tmp_path / "dinov2")
    cache = tmp_path / "hf_cache"
    put_in_cache(cache, "facebook/dinov2-small", tmp_path / "dinov2")
    offline_hub(monkeypatch, cache)
    return "facebook/dinov2-small"


def test_a_hub_name_in_weights(photo, hub, tmp_path, capsys):
    out = tmp_path / "out"
    assert main([str(photo), "--weights", hub, "--out", str(out), "--quiet"]) == 0
    result = json.loads((out / "cat" / "result.json").read_text())
    assert result["model"] == hub and result["weights"] == hub and result["input_size"] == [32, 32]
    assert [a.split(":")[0] for a in result["assumptions"]] == ["The folder has no preprocessor_config.json"]
    assert f"assumed ({hub}): The folder has no preprocessor_config.json" in capsys.readouterr().err


def test_a_bare_file_prints_and_records_what_was_assumed(photo, tmp_path, capsys):
    torch.manual_seed(0)
    ref = randomize_(timm.create_model("vit_tiny_patch16_224", depth=1, img_size=32, num_classes=4))
    save_file(ref.state_dict(), str(tmp_path / "mine.safetensors"))
    expected = vit.load(tmp_path / "mine.safetensors").assumptions
    assert [a.key for a in expected] == ["heads_known", "img_size", "preprocess"]
    out = tmp_path / "out"
    assert main([str(photo), "--weights", str(tmp_path / "mine.safetensors"), "--out", str(out), "--quiet"]) == 0
    assert json.loads((out / "cat" / "result.json").read_text())["assumptions"] == list(expected)
    err = capsys.readouterr().err
    for sentence in expected:
        assert f"assumed ({tmp_path / 'mine.safetensors'}): {sentence}" in err


def test_nothing_assumed_is_an_empty_list(photo, real_weights_dir, tmp_path, capsys):
    out = tmp_path / "out"
    assert main([str(photo), "--weights", str(real_weights_dir / AUGREG), "--out", str(out), "--quiet"]) == 0
    assert json.loads((out / "cat" / "result.json").read_text())["assumptions"] == []
    assert "assumed" not in capsys.readouterr().err


def test_a_hub_name_in_compare_and_a_folder_summary(photo, hub, real_weights_dir, tmp_path):
    out = tmp_path / "out"
    assert main([str(photo), "--weights", str(real_weights_dir / AUGREG), "--compare", hub, "--out", str(out),
                 "--quiet"]) == 0
    models = json.loads((out / "cat" / "compare.json").read_text())["models"]
    assert models[0]["assumptions"] == [] and models[1]["name"] == hub and len(models[1]["assumptions"]) == 1
    photos = tmp_path / "photos"
    photos.mkdir()
    for name in ("a.png", "b.png"):
        (photos / name).write_bytes(photo.read_bytes())
    assert main([str(photos), "--weights", hub, "--out", str(tmp_path / "set"), "--stats-only", "--quiet"]) == 0
    statistics = json.loads((tmp_path / "set" / "summary" / "statistics.json").read_text())
    assert len(statistics["assumptions"]) == 1
