"""Cases for the concepts tests: a cache of tokens written as ``viz.concepts.activations`` documents its files (shards
of tokens with their photo, view, row and column, and index.json), so that an SAE can be trained on tokens of known
structure; and a planted dictionary, tokens made from a known sparse code over known unit directions."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file


def write_cache(folder: Path, tokens: np.ndarray, held_out: np.ndarray, per_shard: int = 50,
                grid: tuple[int, int] | None = None, info: dict | None = None) -> Path:
    """Tokens (photos, views, N, D) as shards of ``per_shard`` photos and index.json; ``grid`` (gh, gw) with
    gh·gw = N (default 1×N)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    P, V, N, D = tokens.shape
    gh, gw = grid or (1, N)
    shards = []
    for s, first in enumerate(range(0, P, per_shard)):
        last = min(first + per_shard, P)
        photo, view, patch = np.meshgrid(np.arange(first, last), np.arange(V), np.arange(N), indexing="ij")
        name = f"shard-{s:05d}.safetensors"
        save_file({"tokens": torch.from_numpy(tokens[first:last].reshape(-1, D).astype(np.float32)),
                   "photo": torch.from_numpy(photo.ravel().astype(np.int32)),
                   "view": torch.from_numpy(view.ravel().astype(np.int16)),
                   "row": torch.from_numpy((patch.ravel() // gw).astype(np.int16)),
                   "col": torch.from_numpy((patch.ravel() % gw).astype(np.int16))},
                  folder / name, metadata={"first": str(first), "last": str(last), "failed": "{}"})
        shards.append({"file": name, "tokens": (last - first) * V * N, "first": first, "last": last})
    index = {"model": "planted", "layer": 0, "hook": "residual", "d_model": D, "grid": [gh, gw],
             "num_prefix_tokens": 0, "views": V, **(info or {}), "photos": [f"{i:04d}.png" for i in range(P)],
             "held_out": np.flatnonzero(held_out).tolist(), "shards": shards, "failed": {}}
    (folder / "index.json").write_text(json.dumps(index))
    return folder


def planted(photos: int = 400, patches: int = 64, width: int = 32, atoms: int = 48, active: int = 3,
            noise: float = 0.01, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(tokens (photos, 1, patches, width) float32, the dictionary (atoms, width) of unit rows, the codes
    (photos · patches, atoms)): every token the sum of ``active`` atoms drawn at random, each with a magnitude
    uniform in [1, 3], plus Gaussian noise of standard deviation ``noise``."""
    rng = np.random.default_rng(seed)
    dictionary = rng.normal(size=(atoms, width))
    dictionary /= np.linalg.norm(dictionary, axis=1, keepdims=True)
    n = photos * patches
    codes = np.zeros((n, atoms))
    chosen = np.argsort(rng.random((n, atoms)), axis=1)[:, :active]
    np.put_along_axis(codes, chosen, rng.uniform(1.0, 3.0, (n, active)), axis=1)
    tokens = codes @ dictionary + noise * rng.normal(size=(n, width))
    return tokens.reshape(photos, 1, patches, width).astype(np.float32), dictionary, codes


def constructed_sae(folder: Path, loaded, layer: int, latents: int = 64, k: int = 8, seed: int = 0,
                    photos: Path | None = None) -> Path:
    """An SAE for ``loaded``'s tokens at ``layer`` with random weights (no zero biases), saved in our format into
    ``folder``, made for that model (its weights' hash); with ``photos`` (a folder the model's preprocessing reads),
    a top_patches.npz of random patches of its photos, strongest first, so that thumbnails are drawn."""
    from viz.concepts.sae import SaeInfo, SparseAutoencoder
    from viz.concepts.top_patches import TopPatches
    from viz.concepts.view import weights_hash

    model = loaded.model
    width, grid = model.cfg.embed_dim, model.architecture(*loaded.preprocess.crop).grid
    g = torch.Generator().manual_seed(seed)
    extra = {"tokens": "patches", "grid": list(grid), "preprocess": loaded.preprocess.to_dict()}
    if photos is not None:
        extra["folder"] = str(photos)
    sae = SparseAutoencoder(torch.randn(width, latents, generator=g) / width ** 0.5,
                            torch.randn(latents, generator=g) * 0.1, torch.randn(latents, width, generator=g),
                            torch.randn(width, generator=g) * 0.1, "topk", k, normalisation="layer_norm",
                            info=SaeInfo(layer, "residual", "constructed", "", weights_hash(loaded), extra=extra))
    sae.save(folder)
    if photos is not None:
        names = sorted(p.name for p in Path(photos).iterdir() if p.suffix.lower() in (".jpg", ".png"))
        rng = np.random.default_rng(seed)
        shape = (latents, 64)
        TopPatches(rng.integers(0, len(names), shape).astype(np.int32),
                   rng.integers(0, grid[0], shape).astype(np.int32), rng.integers(0, grid[1], shape).astype(np.int32),
                   -np.sort(-rng.uniform(0.1, 5, shape), axis=1).astype(np.float32), np.array(names)).save(
            folder / "top_patches.npz")
    return folder
