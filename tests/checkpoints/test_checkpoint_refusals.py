"""Protects users from bad files: pickles carrying code are refused and never run; files that are not
checkpoints, are damaged, or do not fit the model get a ValueError that says what is wrong."""
from __future__ import annotations

import json
import os
import pickle

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

import vit


class Payload:
    """Unpickling this creates ``marker``: the stand-in for arbitrary code in a malicious checkpoint."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return os.mkdir, (self.marker,)   # creates the marker (a folder), leaves no open file behind


def tiny_state_dict(**overrides) -> dict:
    torch.manual_seed(0)
    model = vit.VisionTransformer(vit.variant("tiny", depth=2, img_size=32, num_classes=4, **overrides))
    return model.state_dict()


@pytest.mark.parametrize("zip_format", [True, False])
def test_pickle_with_payload_is_refused_and_never_runs(tmp_path, zip_format):
    marker = tmp_path / "payload_ran"
    path = tmp_path / "evil.pth"
    torch.save({"model": tiny_state_dict(), "hook": Payload(marker)}, path, _use_new_zipfile_serialization=zip_format)
    with pytest.raises(ValueError, match=r"Refusing to load .*evil\.pth.*could run code"):
        vit.load(path)
    assert not marker.exists()
    # the payload is real: an unsafe load would have run it
    torch.load(path, weights_only=False)
    assert marker.exists()


def test_npz_with_pickled_objects_is_refused(tmp_path):
    marker = tmp_path / "payload_ran"
    path = tmp_path / "evil.npz"
    np.savez(path, **{"embedding/kernel": np.zeros((16, 16, 3, 8), np.float32),
                      "cls": np.array([Payload(marker)], dtype=object)})
    with pytest.raises(ValueError, match="Refusing to load .*pickled Python objects"):
        vit.load(path)
    assert not marker.exists()


def test_pickle_disguised_as_state_dict_file_is_refused(tmp_path):
    marker = tmp_path / "payload_ran"
    path = tmp_path / "pytorch_model.bin"
    path.write_bytes(pickle.dumps({"w": Payload(marker)}, protocol=2))
    with pytest.raises(ValueError, match="Refusing to load"):
        vit.load(path)
    assert not marker.exists()


def test_wrong_shape_names_the_offending_key(tmp_path):
    sd = tiny_state_dict()
    sd["blocks.1.mlp.fc1.weight"] = torch.zeros(100, 192)
    save_file(sd, str(tmp_path / "bad.safetensors"))
    with pytest.raises(ValueError) as err:
        vit.load(tmp_path / "bad.safetensors", num_heads=3)
    message = str(err.value)
    assert "shape conflicts (1): blocks.1.mlp.fc1.weight: checkpoint (100, 192) vs model (768, 192)" in message
    assert "missing keys" not in message and "unexpected keys" not in message


def test_missing_and_unexpected_keys_are_listed(tmp_path):
    model = vit.VisionTransformer(vit.variant("tiny", depth=1, img_size=32, num_classes=4))
    path = vit.save_checkpoint(tmp_path / "own.pt", model, [f"c{i}" for i in range(4)], vit.Preprocess())
    ckpt = torch.load(path, weights_only=True)
    del ckpt["model"]["blocks.0.attn.qkv.bias"]
    ckpt["model"]["blocks.0.attn.q_norm.weight"] = torch.ones(64)
    torch.save(ckpt, path)
    with pytest.raises(ValueError, match=r"(?s)missing keys \(1\): blocks\.0\.attn\.qkv\.bias.*"
                                         r"unexpected keys \(1\): blocks\.0\.attn\.q_norm\.weight"):
        vit.load(path)


def test_sidecar_variant_that_does_not_fit_the_weights(tmp_path):
    save_file(tiny_state_dict(), str(tmp_path / "m.safetensors"))
    (tmp_path / "m.json").write_text(json.dumps({"variant": "vit_b_16"}))
    with pytest.raises(ValueError, match=r"(?s)does not match the model \(patch 16.*D=768.*"
                                         r"shape conflicts.*patch_embed\.proj\.weight: checkpoint \(192, 3, 16, 16\) "
                                         r"vs model \(768, 3, 16, 16\)"):
        vit.load(tmp_path / "m.safetensors")


def test_bad_sidecar_is_a_clear_error(tmp_path):
    save_file(tiny_state_dict(), str(tmp_path / "m.safetensors"))
    (tmp_path / "m.json").write_text(json.dumps({"heads": 3}))
    with pytest.raises(ValueError, match=r"Sidecar .*m\.json must be a JSON object with some of"):
        vit.load(tmp_path / "m.safetensors")
    (tmp_path / "m.json").write_text("{not json")
    with pytest.raises(ValueError, match="is not valid JSON"):
        vit.load(tmp_path / "m.safetensors")


@pytest.mark.parametrize("name,content", [
    ("notes.pt", b"hello, I am a text file\n"),
    ("empty.safetensors", b""),
    ("config.json", b'{"model_type": "vit"}'),
])
def test_not_a_checkpoint(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ValueError, match="is not a checkpoint"):
        vit.load(path)


def test_image_is_not_a_checkpoint(tmp_path, cat):
    cat.save(tmp_path / "cat.pth", format="PNG")
    with pytest.raises(ValueError, match=r"is not a checkpoint.*starts with b'\\x89PNG"):
        vit.load(tmp_path / "cat.pth")


def test_torch_file_without_a_dict(tmp_path):
    torch.save(torch.zeros(3), tmp_path / "tensor.pt")
    with pytest.raises(ValueError, match="holds a Tensor, not a checkpoint"):
        vit.load(tmp_path / "tensor.pt")


def test_unknown_keys_are_an_unknown_format(tmp_path):
    torch.save({"fc.weight": torch.zeros(2, 2)}, tmp_path / "resnet.pt")
    with pytest.raises(ValueError, match="Unknown checkpoint format"):
        vit.load(tmp_path / "resnet.pt")


@pytest.mark.parametrize("kind", ["safetensors", "torch-zip", "npz"])
def test_truncated_file(tmp_path, kind):
    sd = tiny_state_dict()
    path = tmp_path / f"model.{ {'safetensors': 'safetensors', 'torch-zip': 'pt', 'npz': 'npz'}[kind] }"
    if kind == "safetensors":
        save_file(sd, str(path))
    elif kind == "torch-zip":
        torch.save(sd, path)
    else:
        np.savez(path, **{"embedding/kernel": np.zeros((16, 16, 3, 192), np.float32)})
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="damaged|not a readable|not a checkpoint"):
        vit.load(path)


def test_heads_that_do_not_divide_the_width(tmp_path):
    save_file(tiny_state_dict(), str(tmp_path / "m.safetensors"))
    with pytest.raises(ValueError, match="embed_dim must be divisible by num_heads"):
        vit.load(tmp_path / "m.safetensors", num_heads=5)


def test_unsupported_huggingface_activation(tmp_path):
    folder = tmp_path / "hf"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "vit", "hidden_act": "relu"}))
    with pytest.raises(ValueError, match="hidden_act 'relu' is not supported"):
        vit.load(folder)


def test_missing_source_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setenv("VIT_WEIGHTS_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=f"No checkpoint 'nope.pt'.*not a file in {tmp_path}"):
        vit.load("nope.pt")
    with pytest.raises(ValueError, match="Empty checkpoint source"):
        vit.load("  ")
