"""A Hugging Face Hub cache prepared by a test, in the layout huggingface_hub keeps (its docs' "Understand caching"
and ``huggingface_hub/_tree_cache.py``), and the environment that makes vit.load use only it:

    HF_HUB_CACHE/models--<org>--<name>/
        refs/main                      the commit the branch points at
        blobs/<sha256>                 each file's bytes, named by content
        snapshots/<commit>/<file>      a relative symlink to its blob
        trees/<commit>.json            the repository's file list at that commit, as the Hub listed it
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def put_in_cache(cache: Path, repo: str, folder: Path, listed_only: dict[str, int] | None = None,
                 commit: str = COMMIT) -> Path:
    """Place every file of ``folder`` into the cache as ``repo``'s snapshot at ``commit``; ``listed_only``: files
    (name -> size) the Hub lists for the repository that were never downloaded (its code, its pickles). Returns the
    snapshot folder."""
    storage = cache / ("models--" + repo.replace("/", "--"))
    snapshot = storage / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (storage / "blobs").mkdir(exist_ok=True)
    (storage / "refs").mkdir(exist_ok=True)
    (storage / "refs" / "main").write_text(commit)
    files = {}
    for path in sorted(folder.iterdir()):
        data = path.read_bytes()
        blob = storage / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        os.symlink(os.path.relpath(blob, snapshot), snapshot / path.name)
        files[path.name] = {"size": len(data), "blob_id": hashlib.sha1(data).hexdigest()}
    for name, size in (listed_only or {}).items():
        files[name] = {"size": size, "blob_id": hashlib.sha1(name.encode()).hexdigest()}
    (storage / "trees").mkdir(exist_ok=True)
    (storage / "trees" / f"{commit}.json").write_text(json.dumps({"format_version": 1, "files": files}, indent=1))
    return snapshot


def offline_hub(monkeypatch, cache: Path) -> None:
    """vit.load sees only ``cache``, offline (HF_HUB_OFFLINE=1), however huggingface_hub was imported before."""
    import huggingface_hub.constants
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
