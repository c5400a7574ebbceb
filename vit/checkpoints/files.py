"""Reading checkpoint files without running code, and writing our own checkpoint format.

Only three readers are used: safetensors, ``torch.load(weights_only=True)`` and ``numpy.load(allow_pickle=False)``.
A pickle that names anything but tensors and plain containers (the way a malicious file runs code) is
refused before any of it executes. The file kind is sniffed from its bytes, not trusted from its name.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import re
import struct
import zipfile
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

OWN_FORMAT = "vit-explorer"
OWN_VERSION = 1
CHECKPOINT_SUFFIXES = (".pt", ".pth", ".bin", ".safetensors", ".npz", ".ckpt")


def sniff_kind(path: Path) -> str:
    """"safetensors", "npz" or "torch" from the file's first bytes; ValueError for anything else."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(9)
    if len(head) == 9 and head[8:9] == b"{" and struct.unpack("<Q", head[:8])[0] < size:
        return "safetensors"
    if head[:4] == b"PK\x03\x04":
        try:
            with zipfile.ZipFile(path) as z:
                names = z.namelist()
        except zipfile.BadZipFile as e:
            raise ValueError(f"{path} is a damaged zip archive (truncated download?): {e}") from None
        if names and all(n.endswith(".npy") for n in names):
            return "npz"
        return "torch"
    if head[:1] == b"\x80":  # pickle protocol 2+: torch's legacy (non-zip) serialization
        return "torch"
    raise ValueError(f"{path} is not a checkpoint! Expected a safetensors file, a torch .pt/.pth/.bin file or a "
                     f"Google .npz, but the file starts with {head[:9]!r}.")


def read_file(path: str | Path) -> dict:
    """Read one checkpoint file into a dict (tensors for safetensors/torch, numpy arrays for .npz).

    Raises ValueError for files that are not checkpoints, are damaged, or would need to run code.
    """
    path = Path(path)
    kind = sniff_kind(path)
    if kind == "safetensors":
        return _read_safetensors(path)
    if kind == "npz":
        return _read_npz(path)
    return _read_torch(path)


def _read_safetensors(path: Path) -> dict:
    from safetensors import SafetensorError
    from safetensors.torch import load_file
    try:
        return load_file(str(path))
    except (SafetensorError, OSError) as e:
        raise ValueError(f"{path} is a damaged safetensors file (truncated download?): {e}") from None


def _read_npz(path: Path) -> dict:
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except ValueError as e:
        if "allow_pickle" in str(e):  # numpy refuses object arrays, which would need pickle
            raise ValueError(f"Refusing to load {path}: it holds pickled Python objects, not plain arrays "
                             f"({e}).") from None
        raise ValueError(f"{path} is a damaged .npz file (truncated download?): {e}") from None
    except (OSError, zipfile.BadZipFile, EOFError) as e:
        raise ValueError(f"{path} is a damaged .npz file (truncated download?): {e}") from None


def _is_torchscript(path: Path) -> bool:
    """A TorchScript archive (torch.jit.save): a zip holding the module's code beside its tensors."""
    try:
        with zipfile.ZipFile(path) as z:
            return any("/code/" in n for n in z.namelist()) and any(n.endswith("constants.pkl") for n in z.namelist())
    except zipfile.BadZipFile:
        return False


def _read_torch(path: Path) -> dict:
    if _is_torchscript(path):
        raise ValueError(
            f"Refusing to load {path}: it is a TorchScript archive (as OpenAI released CLIP), which carries code that "
            f"would run on loading. Save its weights once, where you trust the file: "
            f"torch.save(torch.jit.load(path).state_dict(), 'clip_state_dict.pt'), or use open_clip's or Hugging "
            f"Face's copy of the weights.")
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        found = re.search(r"GLOBAL ([\w.]+)", str(e))  # name only: torch's advice to allowlist it is not ours
        if found is None:  # no object named: the pickle itself is broken (a truncated download)
            raise ValueError(f"{path} is not a readable torch checkpoint (damaged or truncated?): "
                             f"{_last_line(e)}") from None
        raise ValueError(
            f"Refusing to load {path}: it is a pickle that holds Python objects other than tensors, which could run "
            f"code when loaded. Only weights-only checkpoints and safetensors are loaded; re-save the state dict "
            f"with torch.save(model.state_dict(), ...) or as safetensors. The safe loader stopped at: the Python "
            f"object {found[1]}") from None
    except (RuntimeError, EOFError, OSError, IndexError, struct.error) as e:  # what a cut pickle raises
        raise ValueError(f"{path} is not a readable torch checkpoint (damaged or truncated?): "
                         f"{_last_line(e)}") from None
    if not isinstance(obj, dict):
        raise ValueError(f"{path} holds a {type(obj).__name__}, not a checkpoint! Expected a dict of tensors "
                         f"(a state dict) or a dict that wraps one.")
    return obj


def _last_line(e: Exception) -> str:
    """An exception's most specific line (torch wraps the unpickler's in advice of its own)."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    return next((line for line in reversed(lines) if "error" in line.lower()), lines[-1] if lines else type(e).__name__)


def sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def save_checkpoint(path: str | Path, model: torch.nn.Module, labels: list[str], preprocess,
                    extra: dict | None = None) -> Path:
    """Write ``model`` with its config, class names and preprocessing as one weights-only torch file.

    The file is ``{"format": "vit-explorer", "version": 1, "config", "labels", "preprocess", "model", "extra"}``
    and loads with ``torch.load(weights_only=True)``, so ``extra`` may only hold tensors, numbers, strings,
    lists, tuples, dicts and None; ``extra["name"]`` becomes the loaded model's display name. Written to a temporary file first, so a crash never leaves half a checkpoint.
    """
    path = Path(path)
    num_classes = model.cfg.num_classes
    if len(labels) != num_classes:
        raise ValueError(f"Wrong number of labels! Expected {num_classes} (the model's classes) but got {len(labels)}.")
    ckpt = {
        "format": OWN_FORMAT,
        "version": OWN_VERSION,
        "config": {**asdict(model.cfg), "img_size": list(model.cfg.img_size)},
        "labels": [str(label) for label in labels],
        "preprocess": preprocess.to_dict(),
        "model": {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()},
        "extra": dict(extra or {}),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(ckpt, tmp)
    try:
        torch.load(tmp, map_location="cpu", weights_only=True)  # prove it reloads safely before publishing it
    except pickle.UnpicklingError as e:
        tmp.unlink()
        raise ValueError(f"extra must hold only tensors, numbers, strings and containers of them: {e}") from None
    os.replace(tmp, path)
    return path
