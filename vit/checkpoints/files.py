"""Reading checkpoint files without running code, and writing our own checkpoint format.

Only three readers are used: safetensors, ``torch.load(weights_only=True)`` and ``numpy.load(allow_pickle=False)``.
A pickle that names anything but tensors and plain containers (the way a malicious file runs code) is
refused before any of it executes. The file kind is sniffed from its bytes, not trusted from its name.

Before a byte is read, ``regular_file`` refuses what is not a regular file with bytes in it: a FIFO or a device
would block the reader (or never end), and the kernel's pseudo files (/proc, /sys) are not what their sizes say. A
zip archive (a .npz or a torch file) whose members declare more bytes than weights can be compressed from is
refused from its directory, before anything is decompressed. Errors name the file and what is wrong with it, never
its bytes.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import re
import stat
import struct
import zipfile
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from ..video import VIDEO_FAMILIES

OWN_FORMAT = "vit-explorer"
OWN_VERSION = 1
CHECKPOINT_SUFFIXES = (".pt", ".pth", ".bin", ".safetensors", ".npz", ".ckpt")
PSEUDO_FILE_SYSTEMS = ("/proc", "/sys", "/dev")   # files whose size says nothing, reads that may block or never end
# A zip member may declare at most ZIP_EXPANSION times the archive's bytes (plus ZIP_SLACK) in all: trained weights
# compress by a few per cent (zeroed tensors by more, but they are a small part of a checkpoint), a decompression
# bomb by a thousand times and more.
ZIP_EXPANSION = 8
ZIP_SLACK = 16 * 2**20
_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def regular_file(path: str | Path) -> Path:
    """``path`` when it is a regular file with bytes in it, outside the kernel's pseudo file systems; ValueError
    (FileNotFoundError when there is nothing) otherwise, decided from ``os.stat`` alone: nothing is opened."""
    path = Path(path)
    mode, size = (st := os.stat(path)).st_mode, st.st_size       # follows symlinks: what a reader would open
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
        raise ValueError(f"{path} is not a checkpoint: it is {kind}, not a file! Expected the path of a checkpoint "
                         f"file.")
    real = os.path.realpath(path)
    if any(real == root or real.startswith(root + os.sep) for root in PSEUDO_FILE_SYSTEMS):
        raise ValueError(f"{path} is not a checkpoint: it is one of the system's pseudo files ({real.split(os.sep)[1]}"
                         f"), not a file on disk! Expected the path of a checkpoint file.")
    if size == 0:
        raise ValueError(f"{path} is not a checkpoint: the file is empty (0 bytes), an interrupted download or save? "
                         f"Download or save it again.")
    return path


def _check_zip_sizes(path: Path, archive: zipfile.ZipFile, size: int) -> None:
    """Refuse an archive whose members declare more bytes than ``ZIP_EXPANSION`` × its size (+ ``ZIP_SLACK``): read
    from the zip's directory, before any member is decompressed."""
    declared = sum(member.file_size for member in archive.infolist())
    if declared > ZIP_EXPANSION * size + ZIP_SLACK:
        raise ValueError(f"Refusing to load {path}: its members declare {declared / 2**20:,.0f} MB in an archive of "
                         f"{size / 2**20:,.1f} MB, more than weights can be compressed from (a decompression bomb?). "
                         f"It was refused before anything was decompressed; if you trust the file, save its arrays "
                         f"uncompressed (numpy.savez, torch.save) or as safetensors.")


def sniff_kind(path: Path) -> str:
    """"safetensors", "npz" or "torch" from the file's first bytes; ValueError for anything else (and for what is no
    regular file, or a zip whose members declare too much, before it is opened or decompressed)."""
    size = regular_file(path).stat().st_size
    with open(path, "rb") as f:
        head = f.read(9)
    if len(head) == 9 and head[8:9] == b"{" and struct.unpack("<Q", head[:8])[0] < size:
        return "safetensors"
    if head[:4] == b"PK\x03\x04":
        try:
            with zipfile.ZipFile(path) as z:
                names = z.namelist()
                _check_zip_sizes(path, z, size)
        except zipfile.BadZipFile:
            raise ValueError(f"{path} is a damaged zip archive (truncated download?).") from None
        if names and all(n.endswith(".npy") for n in names):
            return "npz"
        return "torch"
    if head[:1] == b"\x80":  # pickle protocol 2+: torch's legacy (non-zip) serialization
        return "torch"
    raise ValueError(f"{path} is not a checkpoint! Expected a safetensors file, a torch .pt/.pth/.bin file or a "
                     f"Google .npz, but its first bytes are those of none of them.")


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
    except ValueError as e:   # the message names no byte of the file
        if "allow_pickle" in str(e):  # numpy refuses object arrays, which would need pickle
            raise ValueError(f"Refusing to load {path}: it holds pickled Python objects, not plain arrays.") from None
        raise ValueError(f"{path} is a damaged .npz file (truncated download?).") from None
    except (OSError, zipfile.BadZipFile, EOFError):
        raise ValueError(f"{path} is a damaged .npz file (truncated download?).") from None


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
            raise ValueError(f"{path} is not a readable torch checkpoint (damaged or truncated?).") from None
        raise ValueError(
            f"Refusing to load {path}: it is a pickle that holds Python objects other than tensors, which could run "
            f"code when loaded. Only weights-only checkpoints and safetensors are loaded; re-save the state dict "
            f"with torch.save(model.state_dict(), ...) or as safetensors. The safe loader stopped at: the Python "
            f"object {found[1]}") from None
    except (RuntimeError, EOFError, OSError, IndexError, struct.error):  # what a cut pickle raises
        raise ValueError(f"{path} is not a readable torch checkpoint (damaged or truncated?).") from None
    if not isinstance(obj, dict):
        raise ValueError(f"{path} holds a {type(obj).__name__}, not a checkpoint! Expected a dict of tensors "
                         f"(a state dict) or a dict that wraps one.")
    return obj


def sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def save_checkpoint(path: str | Path, model: torch.nn.Module, labels: list[str], preprocess,
                    extra: dict | None = None) -> Path:
    """Write ``model`` with its config, class names and preprocessing as one weights-only torch file.

    The file is ``{"format": "vit-explorer", "version": 1, "config", "labels", "preprocess", "model", "extra"}``, and
    ``"arch": "swin"`` for a ``vit.swin.SwinTransformer``, ``"video"`` for a ``vit.video.VideoTransformer``,
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
    if model.cfg.family == "swin":   # which config class reads "config" (absent: a ViT, as every older file)
        ckpt["arch"] = "swin"
    elif model.cfg.family in VIDEO_FAMILIES:
        ckpt["arch"] = "video"
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
