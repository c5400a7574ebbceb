"""Protects models by Hub name: ``vit.load("facebook/dinov2-small")``, ``"timm/…"`` and timm's ``"hf-hub:"`` open
from the Hugging Face cache through huggingface_hub, offline (HF_HUB_OFFLINE=1), equal to their reference; only
weights and configuration are ever fetched (never code: a snapshot whose file list holds code and pickled weights
is complete without them, code in a snapshot never runs, and a download asks for json and safetensors alone, pickles
only where there are no safetensors); a gated repository (the Hub's own 403 GatedRepo answer, through
huggingface_hub's client and a fake Hub, no network) says to accept its licence and log in, and opens once logged in;
a missing one says why.
"""
from __future__ import annotations

import json

import huggingface_hub
import pytest
import timm
import torch
import transformers

import vit
from hub_cache import FakeHub, offline_hub, online_hub, put_in_cache
from reference_models import assert_close, images, randomize_
from vit.checkpoints.hub import chosen_files, hub_name


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "hf_cache"
    folder.mkdir()
    offline_hub(monkeypatch, folder)
    return folder


def dinov2_folder(tmp_path):
    torch.manual_seed(0)
    ref = randomize_(transformers.Dinov2Model(transformers.Dinov2Config(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, patch_size=8, image_size=32)))
    ref.save_pretrained(tmp_path / "dinov2")
    (tmp_path / "dinov2" / "preprocessor_config.json").write_text(json.dumps({
        "image_processor_type": "BitImageProcessor", "size": {"shortest_edge": 36}, "crop_size": {"height": 32,
        "width": 32}, "do_center_crop": True, "resample": 3, "image_mean": [0.485, 0.456, 0.406],
        "image_std": [0.229, 0.224, 0.225]}))
    return ref, tmp_path / "dinov2"


def timm_folder(tmp_path):
    torch.manual_seed(0)
    ref = randomize_(timm.create_model("vit_small_patch14_reg4_dinov2", depth=2, img_size=28, num_classes=0))
    folder = tmp_path / "timm"
    folder.mkdir()
    from safetensors.torch import save_file
    save_file({k: v.contiguous() for k, v in ref.state_dict().items()}, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps({
        "architecture": "vit_small_patch14_reg4_dinov2", "num_classes": 0, "num_features": 384,
        "pretrained_cfg": {"tag": "lvd142m", "input_size": [3, 28, 28], "crop_pct": 1.0, "interpolation": "bicubic",
                           "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}}))
    return ref, folder


def test_names_are_recognised():
    assert hub_name("facebook/dinov2-small") == ("facebook/dinov2-small", None)
    assert hub_name("hf-hub:timm/vit_small_patch16_dinov3.lvd1689m") == ("timm/vit_small_patch16_dinov3.lvd1689m",
                                                                         None)
    assert hub_name("org/name@v1.0") == ("org/name", "v1.0")
    assert hub_name("model.safetensors") is None and hub_name("/abs/path.pt") is None and hub_name("a/b/c") is None


def test_only_configuration_and_weights_are_chosen_never_code():
    listing = ["config.json", "preprocessor_config.json", "model.safetensors", "pytorch_model.bin", "modeling_x.py",
               "configuration_x.py", "tf_model.h5", "flax_model.msgpack", "onnx/model.onnx", "README.md",
               "merges.txt", ".gitattributes"]
    assert chosen_files(listing) == ["config.json", "merges.txt", "model.safetensors", "preprocessor_config.json"]
    pickles_only = ["config.json", "pytorch_model.bin", "custom.py"]   # pickles when there is nothing safer
    assert chosen_files(pickles_only) == ["config.json", "pytorch_model.bin"]


def test_a_transformers_model_by_name_from_the_offline_cache(tmp_path, cache):
    """The snapshot lists code and a pickle beside the safetensors: loading fetches neither (huggingface_hub checks
    the snapshot against its file list, so asking for them offline would fail) and equals the reference."""
    ref, folder = dinov2_folder(tmp_path)
    put_in_cache(cache, "facebook/dinov2-small", folder,
                 listed_only={"modeling_dinov2_custom.py": 120, "pytorch_model.bin": 9999})
    loaded = vit.load("facebook/dinov2-small")
    assert loaded.name == "facebook/dinov2-small" and loaded.source == "facebook/dinov2-small"
    assert loaded.format == "huggingface" and loaded.config.layer_scale and loaded.assumptions == []
    assert loaded.preprocess.resize == 36 and loaded.preprocess.crop == (32, 32)
    x = images(2, (32, 32))
    with torch.no_grad():
        assert_close(loaded.model(x), ref(pixel_values=x).pooler_output)
    with pytest.raises(huggingface_hub.errors.IncompleteSnapshotError):   # what fetching code would have met
        huggingface_hub.snapshot_download("facebook/dinov2-small", allow_patterns=["*.py"], local_files_only=True)


@pytest.mark.parametrize("name", ["timm/vit_small_patch14_reg4_dinov2.lvd142m",
                                  "hf-hub:timm/vit_small_patch14_reg4_dinov2.lvd142m"])
def test_a_timm_model_by_name_and_by_hf_hub_prefix(name, tmp_path, cache):
    ref, folder = timm_folder(tmp_path)
    put_in_cache(cache, "timm/vit_small_patch14_reg4_dinov2.lvd142m", folder)
    loaded = vit.load(name)
    assert loaded.format == "timm" and loaded.config.num_reg_tokens == 4
    assert loaded.preprocess.crop == (28, 28) and loaded.preprocess.mean == (0.485, 0.456, 0.406)
    x = images(2, (28, 28))
    with torch.no_grad():
        assert_close(loaded.model(x), ref(x))


def test_code_in_a_snapshot_never_runs(tmp_path, cache):
    ref, folder = dinov2_folder(tmp_path)
    marker = tmp_path / "code_ran"
    (folder / "modeling_dinov2.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (folder / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    put_in_cache(cache, "someone/dinov2-with-code", folder)
    vit.load("someone/dinov2-with-code")
    assert not marker.exists()


def test_a_name_not_in_the_cache_while_offline_says_how_to_get_it(cache):
    with pytest.raises(FileNotFoundError, match=r"facebook/dinov2-base is not in the Hugging Face cache.*"
                                                r"HF_HUB_OFFLINE.*hf download facebook/dinov2-base"):
        vit.load("facebook/dinov2-base")


def test_download_false_keeps_to_the_cache_too(tmp_path, cache, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    with pytest.raises(FileNotFoundError, match="not in the Hugging Face cache"):
        vit.load("facebook/dinov2-base", download=False)


# --- the Hub's answers, through huggingface_hub's own client ------------------------------------------------------

def test_a_download_fetches_configuration_and_weights_only(tmp_path, monkeypatch):
    """Online (a fake Hub answering huggingface_hub's client): the repository also holds code, a pickle and another
    framework's weights; only its json files and safetensors are downloaded, into the Hub cache, and the model is
    the reference's."""
    ref, folder = dinov2_folder(tmp_path)
    (folder / "modeling_dinov2.py").write_text("raise SystemExit('code ran')\n")
    (folder / "pytorch_model.bin").write_bytes(b"\x80not really a pickle")
    (folder / "tf_model.h5").write_bytes(b"HDF")
    hub = FakeHub({"facebook/dinov2-small": folder})
    online_hub(monkeypatch, tmp_path / "hf_cache", hub)
    loaded = vit.load("facebook/dinov2-small")
    assert hub.fetched() == {"config.json", "model.safetensors", "preprocessor_config.json"}
    assert list((tmp_path / "hf_cache").glob("models--facebook--dinov2-small/snapshots/*/model.safetensors"))
    x = images(2, (32, 32))
    with torch.no_grad():
        assert_close(loaded.model(x), ref(pixel_values=x).pooler_output)


def test_pickled_weights_are_fetched_only_without_safetensors_and_read_weights_only(tmp_path, monkeypatch):
    ref, folder = timm_folder(tmp_path)
    torch.save(ref.state_dict(), folder / "pytorch_model.bin")
    (folder / "model.safetensors").unlink()
    hub = FakeHub({"timm/vit_small_patch14_reg4_dinov2.lvd142m": folder})
    online_hub(monkeypatch, tmp_path / "hf_cache", hub)
    loaded = vit.load("hf-hub:timm/vit_small_patch14_reg4_dinov2.lvd142m")
    assert hub.fetched() == {"config.json", "pytorch_model.bin"}
    with torch.no_grad():
        assert_close(loaded.model(images(1, (28, 28))), ref(images(1, (28, 28))))


def test_a_gated_repository_says_to_accept_its_licence_and_log_in_and_then_opens(tmp_path, monkeypatch):
    """The Hub's own 403 GatedRepo answer (as for facebook/dinov3-*) becomes one sentence that says what to do; done
    (a token of an account with access in HF_TOKEN), the same call opens the model."""
    ref, folder = dinov2_folder(tmp_path)
    repo = "facebook/dinov3-vits16-pretrain-lvd1689m"
    hub = FakeHub({repo: folder}, gated={repo: "hf_granted"})
    online_hub(monkeypatch, tmp_path / "hf_cache", hub)
    with pytest.raises(ValueError) as err:
        vit.load(repo)
    message = str(err.value)
    for expected in ("gated repository", f"accept its licence on https://huggingface.co/{repo}", "hf auth login",
                     "HF_TOKEN"):
        assert expected in message
    assert hub.fetched() == set()
    monkeypatch.setenv("HF_TOKEN", "hf_granted")         # what `hf auth login` with access gives
    loaded = vit.load(repo)
    with torch.no_grad():
        assert_close(loaded.model(images(1, (32, 32))), ref(pixel_values=images(1, (32, 32))).pooler_output)


def test_a_name_the_hub_does_not_have(tmp_path, monkeypatch):
    online_hub(monkeypatch, tmp_path / "hf_cache", FakeHub({}))
    with pytest.raises(FileNotFoundError, match=r"No checkpoint 'nobody/nothing'.*not a model on the Hugging Face "
                                                r"Hub.*hf auth login"):
        vit.load("nobody/nothing")
