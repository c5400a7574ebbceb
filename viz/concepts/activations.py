"""A layer's patch tokens over a folder of photos, streamed to disk: what a sparse autoencoder learns from.

Each photo is shown to the model as the model's own preprocessing shows it (view 0) and, with ``crops`` N, as N
random crops (views 1 … N: a random box of 25–100 % of the photo's area and aspect ratio 3/4–4/3, resized to the
model's input, seeded by the photo's index and the view's, so any process draws the same boxes). The patch tokens at
the hook point (``vit.inside.hooks``: the residual stream after block L, or what its attention or its MLP adds)
are written as they come, never all kept:

    DIR/activations/shard-00000.safetensors   tokens (n, D) float32, photo (n,) int32, view, row, col (n,) int16
    DIR/activations/shard-00001.safetensors   …   (its header's metadata: the run's fingerprint, its photos)
    DIR/activations/index.json                the photos (paths relative to FOLDER), which are held out, the shards
                                              with their token counts, the grid, the layer, the hook, the model

A shard holds a fixed run of consecutive photos (as many as fit in ``shard_mb``; a photo that cannot be read is left
out and named in index.json), so its contents depend on the folder and the settings alone. Batches never cross a
shard, and under ``torchrun`` the shards are split across the processes as ``python -m viz FOLDER`` splits its
images (``viz.folders.loader.shard``): two processes write the same files as one. Memory: the model, one batch and
one shard's buffer. Each shard is written atomically once complete; ``resume`` keeps the shards whose fingerprint
matches and writes the rest. Held-out photos (every ``1 / holdout``-th, evenly spread) are cached like the others
and marked in the index: the metrics are measured on their tokens.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from torch.utils.data import DataLoader, Dataset
from tqdm import tqdm

from vit.device import forward_precision
from vit.image_file import open_image
from vit.inside.hooks import check_hook, hook_tokens
from vit.preprocess import upright_rgb

from ..analysis import model_input
from ..folders import distributed
from ..folders.distributed import Processes
from ..folders.files import ImageEntry, list_images
from ..folders.identity import images_digest, weights_digest
from ..folders.loader import collate, shard

SHARD_MB = 32.0                 # tokens per shard file, in MB of float32
CROP_SCALE = (0.25, 1.0)        # a random crop's share of the photo's area
CROP_RATIO = (3 / 4, 4 / 3)     # and its aspect ratio (width / height), drawn on a log scale
INDEX = "index.json"


@dataclass(frozen=True)
class CacheOptions:
    layer: int                          # 0-based block (negative: from the end)
    hook: str = "residual"              # vit.inside.hooks.HOOK_POINTS
    crops: int = 0                      # random crops per photo besides the photo itself
    seed: int = 0                       # the crops' boxes
    holdout: float = 0.1                # share of the photos held out for the metrics
    batch_size: int = 16                # photos per forward pass (each with its 1 + crops views)
    workers: int = 0                    # decoding processes (0: in this one)
    shard_mb: float = SHARD_MB
    dtype: torch.dtype = torch.float32  # the forward pass's format; tokens are stored as float32
    resume: bool = False
    progress: bool = True
    weights: str = ""                   # --weights as given (recorded)


@dataclass
class Activations:
    """A cached folder's index.json, read back, and its shards."""
    folder: Path
    photos: list[str]                   # paths relative to the photo folder, in run order
    held_out: np.ndarray                # (photos,) bool
    shards: list[dict]                  # {"file", "tokens", "first", "last"} in order
    failed: dict[int, str]              # photo index -> why it could not be read
    info: dict = field(default_factory=dict)   # model, weights, layer, hook, d_model, grid, views, input_size, ...

    @property
    def d_model(self) -> int:
        return int(self.info["d_model"])

    @property
    def tokens(self) -> int:
        return sum(s["tokens"] for s in self.shards)

    def read(self, i: int) -> dict[str, torch.Tensor]:
        """Shard ``i``'s tensors: tokens (n, D) float32, photo (n,) int32, view, row, col (n,) int16."""
        return load_file(self.folder / self.shards[i]["file"])

    def chunks(self, which: str = "all", views: Sequence[int] | None = None) -> Iterator[dict[str, torch.Tensor]]:
        """Shard by shard, the tokens of the "train" photos, the "held_out" ones or "all", of ``views`` (None:
        every view): dicts like ``read``'s."""
        held = torch.from_numpy(self.held_out)
        for i in range(len(self.shards)):
            part = self.read(i)
            keep = torch.ones(len(part["photo"]), dtype=torch.bool)
            if which != "all":
                keep &= held[part["photo"].long()] == (which == "held_out")
            if views is not None:
                keep &= torch.isin(part["view"], torch.tensor(list(views), dtype=part["view"].dtype))
            if keep.all():
                yield part
            elif keep.any():
                yield {name: tensor[keep] for name, tensor in part.items()}

    @classmethod
    def load(cls, folder: Path) -> "Activations":
        folder = Path(folder)
        path = folder / INDEX
        if not path.is_file():
            raise ValueError(f"No cached activations in {folder}: {INDEX} is missing (the caching did not finish).")
        index = json.loads(path.read_text())
        held = np.zeros(len(index["photos"]), dtype=bool)
        held[index["held_out"]] = True
        failed = {int(k): v for k, v in index["failed"].items()}
        info = {k: v for k, v in index.items() if k not in ("photos", "held_out", "shards", "failed")}
        return cls(folder, index["photos"], held, index["shards"], failed, info)


def held_out(count: int, share: float) -> np.ndarray:
    """(count,) bool: the photos held out, ``share`` of them evenly spread (photo i when ⌊(i+1)·share⌋ > ⌊i·share⌋),
    at least one and never all; ValueError for fewer than 2 photos."""
    if count < 2:
        raise ValueError(f"Training and measuring an SAE needs at least 2 photos (one held out) but the folder has "
                         f"{count}.")
    if not 0.0 < share < 1.0:
        raise ValueError(f"The held-out share must be between 0 and 1 (exclusive) but got {share}.")
    i = np.arange(count)
    held = np.floor((i + 1) * share) > np.floor(i * share)
    if not held.any():
        held[-1] = True
    if held.all():
        held[0] = False
    return held


def folder_photos(folder: Path) -> list[ImageEntry]:
    """The folder's photos as ``python -m viz FOLDER`` reads them (its images, or its sub-folders' when it has none
    of its own); a sub-folder's name is only a name here (no classes are needed)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"{folder} is not a folder of photos.")
    names = sorted(p.name for p in folder.iterdir() if p.is_dir())
    return list_images([folder], names)


def random_box(size: tuple[int, int], rng: np.random.Generator) -> tuple[int, int, int, int]:
    """A (left, top, right, bottom) box in a (W, H) photo: 25–100 % of its area, aspect ratio 3/4–4/3 (log-uniform),
    the whole photo when ten draws do not fit (torchvision's RandomResizedCrop, drawn from ``rng``)."""
    W, H = size
    for _ in range(10):
        area = W * H * rng.uniform(*CROP_SCALE)
        ratio = math.exp(rng.uniform(math.log(CROP_RATIO[0]), math.log(CROP_RATIO[1])))
        w, h = round(math.sqrt(area * ratio)), round(math.sqrt(area / ratio))
        if 0 < w <= W and 0 < h <= H:
            left, top = int(rng.integers(0, W - w + 1)), int(rng.integers(0, H - h + 1))
            return left, top, left + w, top + h
    return 0, 0, W, H


class PhotoViews(Dataset):
    """Photo i -> (i, its views (V, H, W, 3) uint8 or None, seconds, error message or None): view 0 the model's own
    crop, views 1 … crops random crops resized to the input (in the preprocessing's interpolation)."""

    def __init__(self, entries: Sequence[ImageEntry], preprocess, crops: int, seed: int):
        self.entries, self.preprocess, self.crops, self.seed = entries, preprocess, crops, seed
        self.squash = preprocess.choose("squash")       # a box stretched to the input, in the model's interpolation

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, i: int):
        t0 = time.perf_counter()
        try:
            photo = upright_rgb(open_image(self.entries[i].path))
            views = [self.preprocess.crop_image(photo)]
        except (ValueError, OSError) as error:
            return i, None, time.perf_counter() - t0, str(error)
        for v in range(1, self.crops + 1):
            box = random_box(photo.size, np.random.default_rng([self.seed, i, v]))
            views.append(self.squash.crop_image(photo.crop(box)))
        pixels = np.stack([np.asarray(view, dtype=np.uint8) for view in views])
        return i, torch.from_numpy(pixels), time.perf_counter() - t0, None


def shard_photos(options: CacheOptions, views: int, patches: int, width: int) -> int:
    """How many consecutive photos one shard holds: as many as fit in ``shard_mb`` of float32 tokens (at least 1)."""
    per_photo = views * patches * width * 4
    return max(1, int(options.shard_mb * 2**20 // per_photo))


def fingerprint(entries: Sequence[ImageEntry], loaded, options: CacheOptions) -> dict:
    """What a shard must share with the run that resumes it: the photos, the model and its preprocessing, the layer,
    hook point, crops and seed."""
    return json.loads(json.dumps({
        "images": images_digest(entries), "count": len(entries), "weights": options.weights,
        "weights_sha256": weights_digest(loaded.model), "input_size": list(loaded.preprocess.crop),
        "preprocess": loaded.preprocess.to_dict(), "dtype": str(options.dtype), "layer": options.layer,
        "hook": options.hook, "crops": options.crops, "seed": options.seed, "shard_mb": options.shard_mb}))


def _key(fp: dict) -> str:
    return json.dumps(fp, sort_keys=True)


def cache(loaded, folder: Path, out: Path, options: CacheOptions, processes: Processes = Processes()) -> Activations:
    """Cache the patch tokens at ``options.hook`` of block ``options.layer`` for every photo of ``folder`` into
    ``out`` (this process's share of the shards), then, on the first process, write index.json; every process returns
    the index. ValueError, saying what to do, for a model or folder that cannot be cached."""
    model = loaded.model
    if getattr(loaded.preprocess, "varies", False):
        raise ValueError("This model sizes each photo's input by its aspect ratio, so photos give different token "
                         "grids; give --preprocess crop or squash for one input size.")
    layer = check_hook(model, options.layer, options.hook)
    options = dataclasses.replace(options, layer=layer)
    entries = folder_photos(folder)
    held = held_out(len(entries), options.holdout)
    device = next(model.parameters()).device
    height, width = loaded.preprocess.crop
    layout = model.token_layout(height, width)
    patches = layout.grid[0] * layout.grid[1]
    views = 1 + options.crops
    per_shard = shard_photos(options, views, patches, model.cfg.embed_dim)
    count = len(entries)
    shards = [(s, min(s + per_shard, count)) for s in range(0, count, per_shard)]
    fp = fingerprint(entries, loaded, options)
    out = Path(out)
    if options.resume:
        _check_resumable(out, fp)
    elif processes.main:
        shutil.rmtree(out, ignore_errors=True)
    distributed.barrier(processes)
    out.mkdir(parents=True, exist_ok=True)

    mine = [s for s in shard(len(shards), processes.rank, processes.world)
            if not (options.resume and _complete(out / shard_name(s), fp))]
    batches = [list(range(i, min(i + options.batch_size, shards[s][1])))
               for s in mine for i in range(shards[s][0], shards[s][1], options.batch_size)]
    loader = DataLoader(PhotoViews(entries, loaded.preprocess, options.crops, options.seed), batch_sampler=batches,
                        num_workers=options.workers, collate_fn=collate, pin_memory=device.type == "cuda")
    share = f" (process {processes.rank + 1} of {processes.world})" if processes.distributed else ""
    bar = tqdm(total=sum(shards[s][1] - shards[s][0] for s in mine), desc=f"caching layer {layer} {options.hook}"
               f"{share}", unit="photo", dynamic_ncols=True, disable=not (options.progress and processes.main))
    buffer = _ShardBuffer(shards, per_shard * views * patches, model.cfg.embed_dim, layout.grid, views)
    for batch in loader:
        for index, message in batch.failed:
            tqdm.write(f"error: {entries[index].path}: {message}", file=sys.stderr)
            buffer.fail(index, message)
        if batch.indices:
            pixels = batch.pixels.reshape(-1, *batch.pixels.shape[2:])            # (B·V, H, W, 3)
            x = model_input(pixels, loaded.preprocess, device)
            with forward_precision(device, options.dtype):
                tokens = hook_tokens(model, x, layer, options.hook).tokens[:, layout.num_prefix:]
            buffer.add(batch.indices, tokens.float().cpu().reshape(len(batch.indices), views, patches, -1))
        bar.update(len(batch.indices) + len(batch.failed))
        if buffer.complete():
            buffer.write(out, fp)
    bar.close()
    distributed.barrier(processes)
    if processes.main:
        info = {"model": getattr(loaded, "name", ""), "weights": options.weights, "layer": layer,
                "hook": options.hook, "d_model": model.cfg.embed_dim, "grid": list(layout.grid),
                "num_prefix_tokens": layout.num_prefix, "patch_size": model.cfg.patch_size,
                "input_size": [height, width], "views": views, "crops": options.crops, "seed": options.seed,
                "preprocess": loaded.preprocess_record(), "fingerprint": fp}
        _write_index(out, entries, folder, held, [shard_name(s) for s in range(len(shards))], info)
    distributed.barrier(processes)
    return Activations.load(out)


def shard_name(s: int) -> str:
    return f"shard-{s:05d}.safetensors"


def _saved_fingerprint(path: Path) -> dict | None:
    """The fingerprint a shard was written with (None for a damaged file, which is written again)."""
    try:
        with safe_open(path, framework="pt") as f:
            return json.loads((f.metadata() or {}).get("fingerprint", "null"))
    except (OSError, ValueError, RuntimeError):
        return None


def _check_resumable(out: Path, fp: dict) -> None:
    """ValueError naming what differs when a shard in ``out`` was cached with other photos or settings."""
    for path in sorted(out.glob("shard-*.safetensors")):
        theirs = _saved_fingerprint(path)
        if theirs is not None and theirs != fp:
            changed = sorted(k for k in fp.keys() | theirs.keys() if theirs.get(k) != fp.get(k))
            raise ValueError(f"Cannot resume: the activations in {out} were cached with other photos or settings "
                             f"({', '.join(changed)} differ). Run again without --resume to start over, or pass the "
                             f"same photos and options.")


def _complete(path: Path, fp: dict) -> bool:
    """A shard file written by a run with this fingerprint (complete: it is renamed into place only when done)."""
    return path.is_file() and _saved_fingerprint(path) == fp


class _ShardBuffer:
    """One shard's tokens as they come, a batch at a time; written when its last photo is in."""

    def __init__(self, shards: list[tuple[int, int]], capacity: int, width: int, grid: tuple[int, int], views: int):
        self.shards, self.grid, self.views = shards, grid, views
        self.tokens = torch.empty(capacity, width)
        self.current: int | None = None
        self.filled, self.seen, self.photos, self.failed = 0, 0, [], {}

    def _start(self, photo: int) -> None:
        s = next(i for i, (a, b) in enumerate(self.shards) if a <= photo < b)
        if s != self.current:
            self.current, self.filled, self.seen, self.photos, self.failed = s, 0, 0, [], {}

    def add(self, photos: list[int], tokens: torch.Tensor) -> None:
        """Photos' tokens (B, V, N, D), in order."""
        self._start(photos[0])
        n = tokens.shape[1] * tokens.shape[2]
        for b, photo in enumerate(photos):
            self.tokens[self.filled:self.filled + n] = tokens[b].reshape(n, -1)
            self.filled += n
            self.photos.append(photo)
        self.seen += len(photos)

    def fail(self, photo: int, message: str) -> None:
        self._start(photo)
        self.failed[photo] = message
        self.seen += 1

    def complete(self) -> bool:
        if self.current is None:
            return False
        first, last = self.shards[self.current]
        return self.seen == last - first

    def write(self, out: Path, fp: dict) -> None:
        first, last = self.shards[self.current]
        gh, gw = self.grid
        N = gh * gw
        photos = torch.tensor(self.photos, dtype=torch.int32)
        per_photo = self.views * N
        tensors = {
            "tokens": self.tokens[:self.filled],             # contiguous rows: no copy
            "photo": photos.repeat_interleave(per_photo),
            "view": torch.arange(self.views, dtype=torch.int16).repeat_interleave(N).repeat(len(self.photos)),
            "row": (torch.arange(N, dtype=torch.int16) // gw).repeat(self.views * len(self.photos)),
            "col": (torch.arange(N, dtype=torch.int16) % gw).repeat(self.views * len(self.photos)),
        }
        path = out / shard_name(self.current)
        temporary = path.with_name(f".{path.name}.tmp")
        save_file(tensors, temporary, metadata={"fingerprint": _key(fp), "first": str(first), "last": str(last),
                                                "failed": json.dumps({str(k): v for k, v in self.failed.items()})})
        os.replace(temporary, path)
        self.current = None


def _write_index(out: Path, entries: Sequence[ImageEntry], folder: Path, held: np.ndarray, files: list[str],
                 info: dict) -> None:
    shards, failed = [], {}
    for name in files:
        with safe_open(out / name, framework="pt") as f:
            meta = f.metadata()
            tokens = f.get_slice("tokens").get_shape()[0]
        shards.append({"file": name, "tokens": tokens, "first": int(meta["first"]), "last": int(meta["last"])})
        failed.update(json.loads(meta["failed"]))
    index = {**info, "photos": [str(Path(e.path).relative_to(folder)) for e in entries],
             "held_out": np.flatnonzero(held).tolist(), "shards": shards, "failed": failed}
    temporary = out / f".{INDEX}.tmp"
    temporary.write_text(json.dumps(index, indent=1) + "\n")
    os.replace(temporary, out / INDEX)
