"""Protects where checkpoints come from and what comes with them: weights/ and the torch hub cache, the
default model's download into the torch hub cache, our own format, sidecar JSONs, Hugging Face preprocessing,
and position embeddings resampled for another resolution."""
from __future__ import annotations

import dataclasses
import json
import urllib.error

import pytest
import timm
import torch
from safetensors.torch import save_file
from timm.layers import resample_abs_pos_embed
from torchvision.models import vision_transformer as tv

import vit
from vit.preprocess import IMAGENET_MEAN, IMAGENET_STD

DEFAULT_FILE = "vit_b_16-c867db91.pth"
DEFAULT_URL = "https://download.pytorch.org/models/" + DEFAULT_FILE


def small_torchvision_state_dict() -> dict:
    """A 1-layer torchvision ViT at 224/16: the default file's layout, at a fraction of its size."""
    torch.manual_seed(0)
    return tv.VisionTransformer(image_size=224, patch_size=16, num_layers=1, num_heads=1, hidden_dim=64,
                                mlp_dim=64, num_classes=1000).state_dict()


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """Empty weights/ and torch hub cache, so nothing on this machine is found by accident."""
    weights, torch_home = tmp_path / "weights", tmp_path / "torch_home"
    weights.mkdir()
    monkeypatch.setenv("VIT_WEIGHTS_DIR", str(weights))
    monkeypatch.setenv("TORCH_HOME", str(torch_home))
    monkeypatch.delenv("VIT_OFFLINE", raising=False)
    return weights, torch_home / "hub" / "checkpoints"


def test_default_found_in_weights_folder(isolated):
    weights, _ = isolated
    torch.save(small_torchvision_state_dict(), weights / DEFAULT_FILE)
    loaded = vit.load()
    assert loaded.name == "vit_b_16.imagenet1k_v1" and loaded.format == "torchvision"
    assert loaded.source == str(weights / DEFAULT_FILE)
    assert loaded.preprocess == vit.Preprocess(resize=256, crop=(224, 224), interpolation="bilinear",
                                               mean=IMAGENET_MEAN, std=IMAGENET_STD)  # torchvision's transforms
    assert loaded.labels == vit.imagenet_labels() and loaded.labels[0] == "tench"
    assert vit.load("default").name == vit.load("vit_b_16").name == loaded.name
    assert DEFAULT_FILE in vit.list_local_checkpoints()


def test_default_found_in_torch_hub_cache(isolated):
    _, hub = isolated
    hub.mkdir(parents=True)
    torch.save(small_torchvision_state_dict(), hub / DEFAULT_FILE)
    assert vit.load(None).source == str(hub / DEFAULT_FILE)


def test_default_downloads_safely(isolated, monkeypatch):
    """Online, the default comes through torch.hub's downloader as torchvision's weights enums call it:
    hash-checked and weights-only."""
    calls = []

    def fake_download(url, *args, **kwargs):
        calls.append((url, kwargs))
        return small_torchvision_state_dict()

    monkeypatch.setattr("torch.hub.load_state_dict_from_url", fake_download)
    loaded = vit.load()
    assert calls == [(DEFAULT_URL, {"progress": True, "check_hash": True, "weights_only": True})]
    assert loaded.name == "vit_b_16.imagenet1k_v1" and loaded.config.num_classes == 1000


def test_offline_without_weights_says_what_to_download_and_where(isolated, monkeypatch):
    weights, hub = isolated

    def no_network(url, *args, **kwargs):
        raise urllib.error.URLError("[Errno -2] Name or service not known")

    monkeypatch.setattr("torch.hub.load_state_dict_from_url", no_network)
    with pytest.raises(FileNotFoundError) as err:
        vit.load()
    message = str(err.value)
    for expected in (DEFAULT_URL, str(weights / DEFAULT_FILE), str(hub / DEFAULT_FILE), "Downloading failed",
                     "VIT_WEIGHTS_DIR"):
        assert expected in message
    monkeypatch.setenv("VIT_OFFLINE", "1")
    with pytest.raises(FileNotFoundError, match="Downloading is off"):
        vit.load()


def test_own_format_round_trip(tmp_path):
    torch.manual_seed(0)
    model = vit.VisionTransformer(vit.variant("tiny", depth=2, img_size=(32, 48), num_classes=3, num_reg_tokens=2,
                                              pos_embed_prefix=False)).eval()
    labels = ["cat", "dog", "fish"]
    prep = vit.Preprocess(resize=40, crop=(32, 48), interpolation="bilinear", mean=(0.5,) * 3, std=(0.25,) * 3)
    path = vit.save_checkpoint(tmp_path / "mine.pt", model, labels, prep, extra={"name": "my tiny", "epochs": 3})
    raw = torch.load(path, weights_only=True)
    assert (raw["format"], raw["version"], raw["labels"], raw["extra"]) == ("vit-explorer", 1, labels,
                                                                          {"name": "my tiny", "epochs": 3})
    loaded = vit.load(path)
    assert (loaded.name, loaded.labels, loaded.preprocess, loaded.config) == ("my tiny", labels, prep, model.cfg)
    x = torch.randn(2, 3, 32, 48)
    with torch.no_grad():
        assert torch.equal(loaded.model(x), model(x))


def test_save_checkpoint_refuses_wrong_labels_and_code_in_extra(tmp_path):
    model = vit.VisionTransformer(vit.variant("tiny", depth=1, img_size=32, num_classes=3))
    with pytest.raises(ValueError, match="Expected 3 .* but got 2"):
        vit.save_checkpoint(tmp_path / "a.pt", model, ["a", "b"], vit.Preprocess())
    with pytest.raises(ValueError, match="extra must hold only"):
        vit.save_checkpoint(tmp_path / "b.pt", model, ["a", "b", "c"], vit.Preprocess(), extra={"f": vit.Preprocess()})
    assert not (tmp_path / "b.pt").exists() and not list(tmp_path.glob("*.tmp"))


def test_sidecar_names_heads_preprocessing_and_labels(tmp_path):
    """An unknown file with 2 heads of 48 dims: only the sidecar can say so, and the logits prove it was used."""
    torch.manual_seed(0)
    ref = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=48, embed_dim=96, depth=2,
                            num_heads=2, num_classes=3).eval()
    save_file(ref.state_dict(), str(tmp_path / "mystery.safetensors"))
    sidecar = {"name": "mystery ViT", "config": {"num_heads": 2}, "labels": ["a", "b", "c"],
               "preprocess": {"resize": 48, "crop": [48, 48], "interpolation": "bicubic",
                              "mean": [0.5, 0.5, 0.5], "std": [0.5, 0.5, 0.5]}}
    (tmp_path / "mystery.json").write_text(json.dumps(sidecar))
    loaded = vit.load(tmp_path / "mystery.safetensors")
    assert (loaded.name, loaded.labels, loaded.config.num_heads) == ("mystery ViT", ["a", "b", "c"], 2)
    assert loaded.preprocess == vit.Preprocess.from_dict(sidecar["preprocess"])
    x = torch.randn(1, 3, 48, 48)
    with torch.no_grad():
        torch.testing.assert_close(loaded.model(x), ref(x), atol=1e-4, rtol=0)


def test_sidecar_variant_gives_the_heads(tmp_path):
    cfg = vit.variant("small", img_size=32, num_classes=2, num_heads=6)
    with torch.device("meta"):
        shapes = vit.VisionTransformer(cfg).state_dict()
    torch.save({k: torch.zeros(v.shape) for k, v in shapes.items()}, tmp_path / "s.pt")
    (tmp_path / "s.json").write_text(json.dumps({"variant": "vit_s_16", "labels": ["x", "y"]}))
    assert vit.load(tmp_path / "s.pt").config == dataclasses.replace(cfg, pos_embed_antialias=True)  # timm's layout


def test_position_embeddings_resampled_for_another_resolution(tmp_path):
    """A 64×64 checkpoint loaded for 96×128: bicubic resampling of the patch grid with antialiasing (timm's
    resample_abs_pos_embed, as timm resizes a table when it loads one and when it runs at another size), CLS position
    untouched; the model at 96×128 equals timm's own at that size."""
    torch.manual_seed(0)
    ref = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=64, depth=2, num_classes=5).eval()
    save_file(ref.state_dict(), str(tmp_path / "t64.safetensors"))
    native = vit.load(tmp_path / "t64.safetensors")
    wide = vit.load(tmp_path / "t64.safetensors", img_size=(96, 128))
    assert wide.config.img_size == (96, 128) and wide.model.pos_embed.shape == (1, 1 + 6 * 8, 192)
    expected = resample_abs_pos_embed(ref.pos_embed.detach(), new_size=(6, 8), num_prefix_tokens=1)
    torch.testing.assert_close(wide.model.pos_embed.detach(), expected, atol=1e-6, rtol=0)
    assert wide.preprocess.crop == (96, 128) and native.config.pos_embed_antialias
    x = torch.randn(1, 3, 96, 128)
    dynamic = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=64, depth=2, num_classes=5,
                                dynamic_img_size=True).eval()
    dynamic.load_state_dict(ref.state_dict())
    with torch.no_grad():  # resampling on load equals the model's own resampling at run time, and timm's
        torch.testing.assert_close(wide.model(x), native.model(x), atol=1e-5, rtol=0)
        torch.testing.assert_close(native.model(x), dynamic(x), atol=1e-5, rtol=0)


def test_huggingface_preprocessor_config_is_used(tmp_path):
    import transformers
    config = transformers.ViTConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                                    image_size=32, patch_size=8, num_labels=1000)
    transformers.ViTForImageClassification(config).save_pretrained(tmp_path / "hf")
    (tmp_path / "hf" / "preprocessor_config.json").write_text(json.dumps(
        {"image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "resample": 3,
         "size": {"height": 32, "width": 32}}))
    loaded = vit.load(tmp_path / "hf")
    assert loaded.preprocess == vit.Preprocess(resize=(32, 32), crop=(32, 32), interpolation="bicubic",
                                               mean=(0.5,) * 3, std=(0.5,) * 3, resize_mode="squash",
                                               centre="floor")   # ViTImageProcessor squashes the whole photo
    assert loaded.labels == vit.imagenet_labels()  # placeholder LABEL_i names replaced by ImageNet's for 1000 classes


def test_list_local_checkpoints(tmp_path):
    (tmp_path / "a.safetensors").write_bytes(b"")
    (tmp_path / "b.pth").write_bytes(b"")
    (tmp_path / "b.last.pth").write_bytes(b"")  # training's resume file: not a model to pick
    (tmp_path / "notes.txt").write_text("")
    (tmp_path / "hf_vit").mkdir()
    (tmp_path / "hf_vit" / "config.json").write_text("{}")
    (tmp_path / "other").mkdir()
    assert vit.list_local_checkpoints(tmp_path) == ["a.safetensors", "b.pth", "hf_vit"]
    assert vit.list_local_checkpoints(tmp_path / "missing") == []
