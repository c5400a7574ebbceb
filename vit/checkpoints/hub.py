"""Checkpoints by name from the Hugging Face Hub: ``vit.load("facebook/dinov2-small")``,
``vit.load("timm/vit_small_patch16_dinov3.lvd1689m")``, timm's ``"hf-hub:timm/…"``, a revision after ``@``.

Through huggingface_hub, the Hub's own client: its cache (``HF_HUB_CACHE``, ``HF_HOME``), its offline switch
(``HF_HUB_OFFLINE``), its login (``hf auth login`` or ``HF_TOKEN``), its progress bars. Only weights and configuration
are downloaded: the repository's top-level .json, .txt and .safetensors files, and its pickled weights (.bin, .pth,
.pt) only when it has no safetensors, read weights-only like any local file; never code (a repository's .py files
are never fetched, let alone run). The snapshot then opens as a local folder (``vit.checkpoints.huggingface``).
"""
from __future__ import annotations

import importlib
import os
import re
from pathlib import Path

HUB_NAME = re.compile(r"(?:hf-hub:)?(?P<repo>[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*)(?:@(?P<revision>[\w./-]+))?")
CONFIG_SUFFIXES = (".json", ".txt")              # configs, preprocessing, labels, a CLIP tokenizer's files
SAFE_WEIGHTS = (".safetensors",)
PICKLED_WEIGHTS = (".bin", ".pth", ".pt")         # read with torch.load(weights_only=True), as local files are
OFFLINE_PATTERNS = [f"*{s}" for s in CONFIG_SUFFIXES + SAFE_WEIGHTS + PICKLED_WEIGHTS]


def hub_name(text: str) -> tuple[str, str | None] | None:
    """``(repo id, revision or None)`` when ``text`` is a Hub model name ("org/name", "hf-hub:org/name",
    "org/name@revision"), else None."""
    m = HUB_NAME.fullmatch(text.strip())
    return (m["repo"], m["revision"]) if m else None


def chosen_files(listing: list[str]) -> list[str]:
    """The files of a repository worth fetching: top-level configuration and safetensors weights; the pickled
    weights only when there are no safetensors. Never code, nor other frameworks' weights, nor anything in folders."""
    top = [f for f in listing if "/" not in f]
    safe = [f for f in top if f.endswith(SAFE_WEIGHTS)]
    weights = safe or [f for f in top if f.endswith(PICKLED_WEIGHTS)]
    return sorted([f for f in top if f.endswith(CONFIG_SUFFIXES)] + weights)


def offline(download: bool = True) -> bool:
    """Whether only the cache may be used: ``download`` False, or HF_HUB_OFFLINE set (read now, not at import)."""
    from huggingface_hub import constants
    flag = os.environ.get("HF_HUB_OFFLINE", "").strip().upper()
    return not download or flag in ("1", "ON", "YES", "TRUE") or bool(constants.HF_HUB_OFFLINE)


def fetch(repo: str, revision: str | None = None, download: bool = True) -> Path:
    """The local snapshot folder of a Hub model repository, downloaded into the Hub cache when needed (only the
    ``chosen_files``). FileNotFoundError when it is not on the Hub or not in the cache while offline; ValueError
    when it is gated or private and this machine is not logged in with access."""
    import huggingface_hub
    from huggingface_hub import errors

    cache = os.environ.get("HF_HUB_CACHE") or None    # else huggingface_hub's own default (HF_HOME/hub)
    local_only = offline(download)
    try:
        listing = None if local_only else huggingface_hub.HfApi().list_repo_files(repo, revision=revision)
    except (errors.GatedRepoError, errors.RepositoryNotFoundError, errors.RevisionNotFoundError) as e:
        raise _refusal(repo, revision, e) from None
    except _unreachable_errors():   # offline or no network: what the cache holds
        listing = None
    if listing is None:
        listing = _cached_listing(huggingface_hub, repo, revision, cache)
    patterns = chosen_files(listing) if listing is not None else OFFLINE_PATTERNS
    try:
        folder = huggingface_hub.snapshot_download(repo, revision=revision, cache_dir=cache, allow_patterns=patterns,
                                                   local_files_only=local_only)
    except (errors.GatedRepoError, errors.RepositoryNotFoundError, errors.RevisionNotFoundError,
            errors.LocalEntryNotFoundError) as e:
        raise _refusal(repo, revision, e) from None
    return Path(folder)


def _cached_listing(huggingface_hub, repo: str, revision: str | None, cache: str | None) -> list[str] | None:
    """The repository's file list as the cache recorded it at its last download (None where this version of
    huggingface_hub keeps none, or nothing was downloaded)."""
    cached_tree = getattr(huggingface_hub, "get_cached_repo_tree", None)
    if cached_tree is None:
        return None
    try:
        return [f.path for f in cached_tree(repo, revision=revision, cache_dir=cache)]
    except huggingface_hub.errors.CachedRepoTreeNotFoundError:
        return None


def _unreachable_errors() -> tuple[type[BaseException], ...]:
    """What an unreachable Hub raises: huggingface_hub's offline mode and connection errors (OSError), and its
    HTTP client's transport errors (httpx2 in huggingface_hub 2, httpx in 1)."""
    kinds: list[type[BaseException]] = [OSError]
    for client in ("httpx2", "httpx"):
        try:
            kinds.append(importlib.import_module(client).TransportError)
        except ImportError:
            continue
    return tuple(kinds)


def _refusal(repo: str, revision: str | None, e: Exception) -> Exception:
    """The Hub's error as one sentence that says what to do."""
    from huggingface_hub import errors

    page = f"https://huggingface.co/{repo}"
    if isinstance(e, errors.GatedRepoError):
        return ValueError(f"{repo} is a gated repository on the Hugging Face Hub: accept its licence on {page} while "
                          f"logged in, then log in on this machine with `hf auth login` (or set HF_TOKEN to an access "
                          f"token of that account) and load it again.")
    if isinstance(e, errors.RevisionNotFoundError):
        return FileNotFoundError(f"{repo} has no revision {revision!r} on the Hugging Face Hub. Leave out @{revision} "
                                 f"for its main branch, or give a branch, tag or commit that {page} lists.")
    if isinstance(e, errors.RepositoryNotFoundError):
        return FileNotFoundError(f"No checkpoint {repo!r}: it is not an existing path or a known name, and not a model "
                                 f"on the Hugging Face Hub (if it is a private one, log in with `hf auth login` or set "
                                 f"HF_TOKEN).")
    return FileNotFoundError(f"{repo} is not in the Hugging Face cache and the Hub cannot be reached (HF_HUB_OFFLINE "
                             f"or VIT_OFFLINE set, or no network). Load it once with the network on, or download "
                             f"it with `hf download {repo}`; or pass the path of a folder that holds it.")
