"""Protects users from bad files: pickles carrying code are refused and never run; files that are not
checkpoints, are damaged, or do not fit the model get a ValueError that says what is wrong."""
from __future__ import annotations

import io
import json
import os
import pickle
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

import vit
from bench.measure import peak_rss_delta_mb
from canaries import FifoCanary
from vit.checkpoints.files import ZIP_EXPANSION, read_file


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


def test_image_is_not_a_checkpoint_and_its_bytes_are_not_repeated(tmp_path, cat):
    cat.save(tmp_path / "cat.pth", format="PNG")
    with pytest.raises(ValueError, match="is not a checkpoint") as refused:
        vit.load(tmp_path / "cat.pth")
    assert "PNG" not in str(refused.value) and "\\x" not in str(refused.value)   # the file's bytes stay on the server


def test_a_text_file_is_refused_without_repeating_it(tmp_path):
    secret = tmp_path / "notes.pt"
    secret.write_text("SECRET-TOKEN-42 and more\n")
    with pytest.raises(ValueError, match="is not a checkpoint") as refused:
        vit.load(secret)
    assert "SECRET" not in str(refused.value) and "TOKEN" not in str(refused.value)


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


# ---- what is not a file: refused before it is opened -------------------------------------------------------------

def test_a_fifo_is_refused_without_being_opened(tmp_path):
    """A FIFO opened for reading blocks until something writes to it: vit.load would hang (and, on a server, hold
    every other visitor back). It is refused from os.stat alone; the canary proves nothing opened it."""
    with FifoCanary(tmp_path / "model.pt") as canary:
        with pytest.raises(ValueError, match="is not a checkpoint: it is a FIFO"):
            vit.load(canary.path)
        folder = tmp_path / "hf"                     # a Hugging Face folder whose config.json is a FIFO
        folder.mkdir()
        (folder / "config.json").symlink_to(canary.path)
        with pytest.raises(ValueError, match="no config.json"):   # not a file: as if there were none
            vit.load(folder)
        assert not canary.opened.is_set()


@pytest.mark.parametrize("path, words", [("/dev/zero", "it is a character device"),
                                         ("/proc/self/environ", "pseudo files (proc)"),
                                         ("/sys/kernel/mm/transparent_hugepage/enabled", "pseudo files (sys)")])
def test_devices_and_pseudo_files_are_refused(path, words):
    """/dev/zero never ends; /proc and /sys files are not what their sizes say (and some block)."""
    if not Path(path).exists():
        pytest.fail(f"{path} is not on this machine: the test needs a Linux system file of that kind")
    with pytest.raises(ValueError, match=re.escape(words)):
        vit.load(path)


def test_a_symlink_to_a_pseudo_file_is_refused(tmp_path):
    (tmp_path / "model.pt").symlink_to("/proc/self/status")
    folder = tmp_path / "hf"
    folder.mkdir()
    (folder / "config.json").symlink_to("/proc/self/status")
    for path in (tmp_path / "model.pt", folder):
        with pytest.raises(ValueError, match=re.escape("pseudo files (proc)")) as refused:
            vit.load(path)
        assert "VmRSS" not in str(refused.value)


def _zip_bomb(path: Path, member: str, declared: int, extra: dict[str, bytes] = {}) -> Path:
    """A zip whose ``member`` decompresses to ``declared`` zero bytes (deflated to about a thousandth of that), after
    an .npy header when the member is an array, beside the small ``extra`` members."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, data in extra.items():
            z.writestr(name, data)
        with z.open(member, "w", force_zip64=True) as f:
            if member.endswith(".npy"):
                header = io.BytesIO()
                np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False,
                                                              "shape": (declared // 4,)})
                f.write(header.getvalue())
            chunk = bytes(2**22)
            for _ in range(declared // len(chunk)):
                f.write(chunk)
    return path


@pytest.mark.parametrize("kind", ["npz", "torch"])
def test_a_zip_bomb_is_refused_from_its_directory(tmp_path, kind):
    """256 MiB of declared tensor in a file of a quarter MiB: refused from the zip's directory, before numpy or
    torch decompress anything (the peak memory stays where it was)."""
    declared = 256 * 2**20
    if kind == "npz":
        path = _zip_bomb(tmp_path / "bomb.npz", "embedding/kernel.npy", declared)
    else:
        path = _zip_bomb(tmp_path / "bomb.pt", "archive/data/0", declared, {"archive/data.pkl": b"\x80\x02}q\x00."})
    assert path.stat().st_size < 2**20

    def load():
        with pytest.raises(ValueError, match="refused before anything was decompressed") as refused:
            vit.load(path)
        return str(refused.value)

    rise_mb, message = peak_rss_delta_mb(load)
    assert "declare 256 MB" in message
    assert rise_mb < 40, f"refusing a zip bomb raised the peak RSS by {rise_mb:.0f} MB (decompressing needs 256 MB)"


def test_a_compressed_npz_of_real_weights_is_not_taken_for_a_bomb(tmp_path):
    """Weights compress by a few per cent: np.savez_compressed of a model (zero biases and all) loads."""
    sd = {k.replace(".", "/"): v.numpy() for k, v in tiny_state_dict().items()}
    np.savez_compressed(tmp_path / "m.npz", **sd)
    with zipfile.ZipFile(tmp_path / "m.npz") as z:
        ratio = sum(i.file_size for i in z.infolist()) / (tmp_path / "m.npz").stat().st_size
    assert ratio < ZIP_EXPANSION
    assert set(read_file(tmp_path / "m.npz")) == set(sd)
