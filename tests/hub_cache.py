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
import re
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


class FakeHub:
    """The Hugging Face Hub's HTTP answers for a few repositories, served to huggingface_hub's own client (a
    ``MockTransport``): file listings, repository info, files (HEAD and GET) at "main" or the commit, the 404 of a
    missing repository or revision, the 403 "GatedRepo" of a gated repository and the 404 of a private one to a
    request without their token. ``requests`` records (method, path)."""

    def __init__(self, repos: dict[str, Path], gated: dict[str, str] | None = None,
                 private: dict[str, str] | None = None, commit: str = COMMIT):
        self.repos, self.gated, self.private, self.commit = repos, gated or {}, private or {}, commit
        self.requests: list[tuple[str, str]] = []

    def handler(self, request):
        import httpx2
        path = request.url.path
        self.requests.append((request.method, path))
        for repo, folder in self.repos.items():
            if f"/{repo}/" not in path + "/":
                continue
            sent = request.headers.get("authorization")
            if repo in self.gated and sent != f"Bearer {self.gated[repo]}":
                return httpx2.Response(403, request=request, headers={
                    "X-Error-Code": "GatedRepo", "X-Error-Message": f"Access to model {repo} is restricted. You must "
                                                                    f"have access to it and be authenticated."})
            if repo in self.private and sent != f"Bearer {self.private[repo]}":
                break   # the Hub does not say a private repository exists
            revision = re.search(rf"/{re.escape(repo)}/(?:tree|revision|resolve)/([^/]+)", path)
            if revision and revision[1] not in ("main", self.commit):
                return httpx2.Response(404, request=request, headers={"X-Error-Code": "RevisionNotFound"})
            files = {p.name: p.read_bytes() for p in sorted(folder.iterdir())}
            if path.startswith(f"/api/models/{repo}/tree/"):
                return httpx2.Response(200, request=request, json=[
                    {"type": "file", "path": n, "size": len(d), "oid": hashlib.sha1(d).hexdigest()}
                    for n, d in files.items()])
            if path.startswith(f"/api/models/{repo}/revision/"):
                return httpx2.Response(200, request=request, json={"id": repo, "sha": self.commit,
                                                                   "siblings": [{"rfilename": n} for n in files]})
            name = path.rsplit("/", 1)[1]
            if path.startswith(f"/{repo}/resolve/") and name in files:
                data = files[name]
                headers = {"X-Repo-Commit": self.commit, "ETag": f'"{hashlib.sha1(data).hexdigest()}"',
                           "Content-Length": str(len(data))}
                return httpx2.Response(200, request=request, headers=headers,
                                       content=b"" if request.method == "HEAD" else data)
        return httpx2.Response(404, request=request, headers={"X-Error-Code": "RepoNotFound"})

    def fetched(self) -> set[str]:
        """The names of the files whose bytes were downloaded."""
        return {path.rsplit("/", 1)[1] for method, path in self.requests if method == "GET" and "/resolve/" in path}


def online_hub(monkeypatch, cache: Path, hub: FakeHub) -> None:
    """huggingface_hub online against ``hub`` (no real network), downloading into ``cache``, with no token unless a
    test sets HF_TOKEN (this machine's login is not read); everything restored by monkeypatch."""
    import httpx2
    import huggingface_hub.constants
    from huggingface_hub.utils import _http
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    for name in ("HF_HUB_OFFLINE", "VIT_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_OIDC_RESOURCE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_TOKEN_PATH", str(cache / "no_token"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_STORED_TOKENS_PATH", str(cache / "no_stored_tokens"))
    monkeypatch.setattr(_http, "_GLOBAL_CLIENT_FACTORY",
                        lambda: httpx2.Client(transport=httpx2.MockTransport(hub.handler)))
    monkeypatch.setattr(_http, "_GLOBAL_CLIENT", None)   # the next request builds a client from the factory above
