"""``python -m viz FOLDER --weights SWIN``: the data-set loop for a Swin, whose attention lives in windows per stage
(``viz.analysis.windows``). Batches decoded by workers, each process its share (torchrun), each image's files through
the caller's writer, and the statistics summed exactly across images and processes (``viz.dataset.statistics``).

Per-image values: ``mean_distance`` (L, max heads) in pixels of the input, 0 where a block has fewer heads (reported
as null), ``entropy`` (L, max heads) of the window attention in nats, averaged over each block's tokens, and
``top1`` / ``top5`` for labelled images. ``summary/statistics.json`` and ``statistics.md`` hold their means and
spreads with the stages' shapes; ``summary/mean_distance.npz`` the mean and every image's table.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
from PIL import Image
from tqdm import tqdm

from ..analysis.capture import block_analyses, capture_blocks, model_input
from ..maps import windows as hierarchy
from . import distributed
from .distributed import Processes
from .files import ImageEntry
from .loader import image_loader, shard
from .report import _plain
from .run import RunResult, _combined
from .statistics import Statistics


def window_values(attention: Sequence[np.ndarray], layouts: Sequence, probabilities: np.ndarray,
                  label: int | None) -> dict[str, np.ndarray]:
    """One image's per-image values (module docstring): attention per block (nW, H, N, N) with its layout."""
    heads = max(a.shape[1] for a in attention)
    distance = np.zeros((len(attention), heads))
    entropy = np.zeros((len(attention), heads))
    for i, (a, layout) in enumerate(zip(attention, layouts)):
        a = np.asarray(a, dtype=np.float64)
        H = a.shape[1]
        distance[i, :H] = hierarchy.attention_distance(a, layout, layout.token_size)
        entropy[i, :H] = -(a * np.log(np.maximum(a, 1e-30))).sum(axis=-1).mean(axis=(0, 2))
    values = {"mean_distance": distance, "entropy": entropy}
    if label is not None:
        top5 = np.argsort(-probabilities, kind="stable")[:5]
        values["top1"] = np.float64(top5[0] == label)
        values["top5"] = np.float64(label in top5)
    return values


def swin_info(loaded, processes: Processes, device: torch.device, dtype: torch.dtype, weights: str) -> dict:
    """What statistics.json says about a Swin run besides the statistics."""
    height, width = loaded.preprocess.crop
    layouts = loaded.model.architecture(height, width).blocks
    cfg = loaded.model.cfg
    stages = []
    for stage in range(cfg.num_stages):
        blocks = [i for i, layout in enumerate(layouts) if layout.stage == stage]
        first = layouts[blocks[0]]
        stages.append({"grid": list(first.grid), "window": list(first.window), "heads": cfg.num_heads[stage],
                       "blocks": blocks})
    return {"model": getattr(loaded, "name", ""), "weights": weights, "input_size": [height, width],
            "preprocess": loaded.preprocess.to_dict(), "assumptions": list(getattr(loaded, "assumptions", [])),
            "architecture": "swin", "grid": list(layouts[0].grid), "patch_size": cfg.patch_size, "stages": stages,
            "depth": len(layouts), "heads": [cfg.num_heads[l.stage] for l in layouts],
            "device": device.type, "dtype": str(dtype).removeprefix("torch."), "processes": processes.world}


def _masked(values, heads: list[int]) -> list:
    """A (L, max heads) table as nested lists with None where a block has fewer heads."""
    return [[v if h < heads[l] else None for h, v in enumerate(row)] for l, row in enumerate(_plain(values))]


def write_summary(folder: Path, stats: Statistics, info: dict, names: list[str], per_image: list[np.ndarray]) -> dict:
    """statistics.json, statistics.md and mean_distance.npz of a Swin run; returns the JSON's contents."""
    folder.mkdir(parents=True, exist_ok=True)
    s = {"images": stats.images, **info}
    heads = info["heads"]
    for name in ("mean_distance", "entropy"):
        if name in stats.sums:
            s[name] = _masked(stats.sums[name].mean(), heads)
            s[f"{name}_std"] = _masked(stats.sums[name].std(), heads)
    labelled = stats.sums.get("top1")
    if labelled is not None and labelled.count:
        s.update(labelled_images=labelled.count, top1=float(labelled.mean()), top5=float(stats.sums["top5"].mean()))
    lines = [f" {json.dumps(key)}: {json.dumps(value)}" for key, value in s.items()]
    (folder / "statistics.json").write_text("{\n" + ",\n".join(lines) + "\n}\n")
    md = [f"# Window attention statistics over {s['images']} images", "",
          f"Swin **{s['model']}** at {s['input_size'][0]}×{s['input_size'][1]}, {len(s['stages'])} stages, "
          f"{s['depth']} blocks, {s['dtype']} on {s['device']}."]
    if "top1" in s:
        md += ["", f"Accuracy over {s['labelled_images']} labelled images: top-1 **{s['top1']:.4f}**, "
                   f"top-5 **{s['top5']:.4f}**."]
    if s["images"]:
        md += ["", "| block | stage | mean distance (px), heads: mean [lowest–highest] | entropy (nats) |",
               "|---:|---:|---|---|"]
        stage_of = {b: i for i, st in enumerate(s["stages"]) for b in st["blocks"]}
        for l in range(s["depth"]):
            d = np.array(s["mean_distance"][l][:heads[l]], dtype=float)
            e = np.array(s["entropy"][l][:heads[l]], dtype=float)
            md.append(f"| {l} | {stage_of[l]} | {d.mean():.1f} [{d.min():.1f}–{d.max():.1f}] | "
                      f"{e.mean():.2f} [{e.min():.2f}–{e.max():.2f}] |")
    (folder / "statistics.md").write_text("\n".join(md) + "\n")
    arrays = {"mean_distance": stats.sums["mean_distance"].mean(), "std": stats.sums["mean_distance"].std(),
              "heads": np.array(heads)} if "mean_distance" in stats.sums else {}
    if per_image:
        arrays.update(per_image=np.stack(per_image), images=np.array(names))
    np.savez(folder / "mean_distance.npz", **arrays)
    return s


def run_windows(loaded, entries: Sequence[ImageEntry], out: Path, processes: Processes, write_image=None, *,
                batch_size: int = 1, workers: int = 0, summary: bool = True, dtype: torch.dtype = torch.float32,
                progress: bool = True, weights: str = "") -> RunResult:
    """Analyse this process's share of ``entries`` with a Swin, hand each image's ``WindowAnalysis`` to
    ``write_image(entry, analysis, decode_s)`` (None: statistics only) and, with ``summary``, write
    DIR/summary/ from the statistics of all processes."""
    model = loaded.model
    device = next(model.parameters()).device
    count = len(entries)
    todo = shard(count, processes.rank, processes.world)
    stats = Statistics()
    L, H = len(model.blocks), max(model.cfg.num_heads)
    stats.declare({"mean_distance": (L, H), "entropy": (L, H)})
    failed: list[tuple[int, str]] = []
    done: list[int] = []
    per_image: dict[int, np.ndarray] = {}
    share = f" (process {processes.rank + 1} of {processes.world})" if processes.distributed else ""
    bar = tqdm(total=len(todo), desc=f"images{share}", unit="image", dynamic_ncols=True,
               disable=not (progress and processes.main))
    for batch in image_loader(entries, loaded.preprocess, todo, batch_size, workers, pin_memory=device.type == "cuda"):
        for index, message in batch.failed:
            failed.append((index, message))
            tqdm.write(f"error: {entries[index].path}: {message}", file=sys.stderr)
        if batch.indices:
            t0 = time.perf_counter()
            x = model_input(batch.pixels, loaded.preprocess, device)
            preprocess_s = time.perf_counter() - t0
            captured = capture_blocks(model, x, dtype)
            B = len(batch.indices)
            timings = {"preprocess": preprocess_s / B, "batch_size": B}
            images = [Image.fromarray(pixels.numpy()) for pixels in batch.pixels]
            for b, (a, index, decode_s) in enumerate(zip(block_analyses(loaded, captured, images, timings),
                                                         batch.indices, batch.decode_s)):
                if write_image is not None:
                    write_image(entries[index], a, decode_s)
                values = window_values(a.source.attention, a.architecture.blocks, a.probabilities, entries[index].label)
                per_image[index] = values["mean_distance"]
                stats.add_image(values)
                done.append(index)
        bar.update(len(batch.indices) + len(batch.failed))
    bar.close()
    total = _combined(processes, stats, Statistics())
    failed_all = [item for part in distributed.gather_objects(processes, failed) for item in part]
    distances = {}
    for part in distributed.gather_objects(processes, per_image):
        distances.update(part)
    result_summary = None
    if summary and processes.main:
        order = sorted(distances)
        info = {**swin_info(loaded, processes, device, dtype, weights), "failed": len(failed_all)}
        result_summary = write_summary(out / "summary", total, info, [str(entries[i].path) for i in order],
                                       [distances[i] for i in order])
    distributed.barrier(processes)
    return RunResult(len(distances), [(entries[i].path, m) for i, m in sorted(failed_all)],
                     result_summary)
