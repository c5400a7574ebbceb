"""Which file a loaded model came from, named as people can check it: the file name and the first 8 hex digits of
its sha256 (as PROVENANCE.md and ``sha256sum`` print them), never a truncated path."""
from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlparse

import torch

from . import hub
from .files import sha256

HF_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "open_clip_model.safetensors",
                   "open_clip_pytorch_model.bin")


class Fingerprint(NamedTuple):
    name: str      # file (or Hugging Face folder) name
    sha256: str    # first 8 hex digits of the weights file's sha256

    @property
    def label(self) -> str:
        """"file.safetensors (bb753607)": how figures and reports name a checkpoint."""
        return f"{self.name} ({self.sha256})"


def checkpoint_file(source: str) -> Path:
    """The weights file behind a ``LoadedModel.source``: the file itself, a Hugging Face folder's weights file, for a
    download (a URL) the copy in the torch hub cache, for a Hub name its snapshot's weights file in the Hub cache.
    FileNotFoundError when there is no such file."""
    if "://" in source:
        path = Path(torch.hub.get_dir()) / "checkpoints" / os.path.basename(urlparse(source).path)
    else:
        path = Path(source).expanduser()
        named = None if path.exists() else hub.hub_name(source)
        if named is not None:
            path = hub.fetch(*named, download=False)
        if path.is_dir():
            path = next((path / f for f in HF_WEIGHT_FILES if (path / f).is_file()), path / HF_WEIGHT_FILES[0])
    if not path.is_file():
        raise FileNotFoundError(f"No checkpoint file for {source!r}: expected {path} to exist.")
    return path


def fingerprint(source: str) -> Fingerprint:
    """``LoadedModel.source`` -> (file name, first 8 hex digits of its sha256). A Hugging Face folder is named by the
    folder, a Hub model by its name, and both are hashed by their weights file. Hashes are cached by (path, size,
    modification time)."""
    path = checkpoint_file(source)
    stat = path.stat()
    named = None if Path(source).expanduser().exists() else hub.hub_name(source)
    name = named[0] if named else Path(source).name if Path(source).is_dir() else path.name
    return Fingerprint(name, _sha256_prefix(str(path.resolve()), stat.st_size, stat.st_mtime_ns))


@lru_cache(maxsize=64)
def _sha256_prefix(path: str, size: int, mtime_ns: int) -> str:
    return sha256(path)[:8]
