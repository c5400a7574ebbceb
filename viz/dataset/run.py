"""The loop of ``python -m viz`` over many images, for every architecture: batches decoded by workers, the model on
each batch (captured as its description says: ``viz.dataset.batch``), per-image files through the caller's writer,
statistics streamed, progress saved for ``--resume``, processes combined.

Memory stays flat as the folder grows: a batch's arrays are dropped once its images are written and their
per-image values added to the running sums (``viz.dataset.statistics``); with ``--stats-only`` the attention maps
are never even kept for a whole batch (each block is reduced on the device as it runs).
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch
from PIL import Image
from tqdm import tqdm

from vit.architecture import stage_records

from ..analysis import model_input
from ..explain.explainer import explain_tensor
from ..folders import distributed
from ..folders.distributed import Processes
from ..folders.files import ImageEntry
from ..folders.identity import images_digest, weights_digest
from ..folders.loader import image_loader, shard
from ..maps.distance import uniform_distance
from ..trust.chefer import SIGNS, black_pixel, chefer_hits
from ..trust.dataset import image_scores, score_columns
from ..trust.job import trust_check
from . import features, report, state
from .batch import capture_batch
from .statistics import CHEFER, FAITHFULNESS, Statistics, declared, uniform_entropy

# (entry, its analysis, seconds to decode[, its viz.trust.TrustReport with RunOptions.faithfulness]) -> files
ImageWriter = Callable[..., None]


@dataclass(frozen=True)
class RunOptions:
    out: Path                               # --out: per-image folders and summary/
    batch_size: int = 1                     # images per forward pass
    workers: int = 0                        # decoding processes (0: in this process)
    summary: bool = True                    # write summary/ (statistics, plots) and save progress for --resume
    resume: bool = False                    # continue the progress saved in summary/partial/
    attention_dtype: object = np.float32    # dtype of the maps handed to the writer (np.float16 with --float16)
    dtype: torch.dtype = torch.float32      # the forward pass's format (--dtype)
    norm_ratio: float = 3.0                 # high-norm rule (--norm-ratio)
    distance_renormalise: bool = False      # which mean distance (--distance-renormalise)
    progress: bool = True                   # a progress bar (on the first process only)
    weights: str = ""                       # --weights, as given (recorded in statistics.json)
    faithfulness: tuple[str, ...] = ()      # --explain methods scored per image (--faithfulness; viz.trust.job)
    faithfulness_target: object = None      # their class (vit.explain.ClassTarget); None: each image's predicted class
    perturbation: tuple[str, ...] = ("tokens",)   # --perturbation: one protocol or several
    steps: int = 11                         # --steps: points per curve
    sanity: bool = False                    # --sanity: the randomisation curves too
    chefer: str | None = None               # --protocol chefer2021: "predicted" or "target" (each image's label)
    chefer_methods: tuple[str, ...] = ()    # the --explain methods it scores
    inside: object = None                   # viz.cli.inside.InsideRequest: head importance and the lens's accuracy
    keep_stream: bool = False               # hand the writer each image's residual stream (--features)
    features_layer: int | None = None       # --features in a folder: one PCA over every photo's patches of this layer


@dataclass
class RunResult:
    done: int                               # images analysed, in all processes and sessions
    failed: list[tuple[Path, str]]          # files that could not be read (all processes), with their messages
    summary: dict | None                    # statistics.json's contents (on the first process; None elsewhere)


def fingerprint(entries: Sequence[ImageEntry], loaded, options: RunOptions, writes_images: bool) -> dict:
    """What a resumed run must share with the interrupted one: the images, the model and what the numbers
    depend on (not the batch size, the workers, the processes or the device)."""
    return json.loads(json.dumps({
        "images": images_digest(entries), "count": len(entries), "weights": options.weights,
        "weights_sha256": weights_digest(loaded.model), "input_size": list(loaded.preprocess.crop),
        "preprocess": loaded.preprocess.to_dict(), "dtype": str(options.dtype),
        "norm_ratio": options.norm_ratio, "distance_renormalise": options.distance_renormalise,
        "per_image_files": writes_images, **_faithfulness_options(options), **_inside_options(options),
        **({"features_layer": options.features_layer} if options.features_layer is not None else {})}))


def _faithfulness_options(options: RunOptions) -> dict:
    """What the faithfulness scores depend on (nothing when none are asked for, so older runs resume unchanged)."""
    out = {}
    if options.chefer:
        out.update(chefer2021=options.chefer, chefer_methods=list(options.chefer_methods))
    if not options.faithfulness:
        return out
    target = options.faithfulness_target
    protocols = list(options.perturbation)
    return {**out, "faithfulness_order": list(options.faithfulness),
            "perturbation": protocols[0] if len(protocols) == 1 else protocols,
            **({"steps": options.steps} if options.steps != 11 else {}), "sanity": options.sanity,
            "faithfulness_class": "predicted" if target is None else target.describe()["name"]}


def _inside_options(options: RunOptions) -> dict:
    """What the inside values depend on (nothing when none are asked for)."""
    request = options.inside
    if request is None:
        return {}
    describe = lambda target: None if target is None else target.describe()["name"]     # noqa: E731
    return {"inside_views": list(request.views), "inside_target": describe(request.target),
            "inside_contrast": describe(request.contrast), "inside_ablation": request.ablation}


def architecture(loaded):
    """The model's description at its input size (``vit.architecture``)."""
    return loaded.model.architecture(*loaded.preprocess.crop)


def run_info(loaded, options: RunOptions, processes: Processes, device: torch.device) -> dict:
    """What statistics.json says about the run besides the statistics: the model's description as result.json gives
    it ("architecture", "stages"), and with one sequence of tokens its length and what uniform attention over it
    would give."""
    height, width = loaded.preprocess.crop
    arch = architecture(loaded)
    heads = arch.heads
    varies = getattr(loaded.preprocess, "varies", False)   # NaFlex: each photo's own size; the square one's here
    info = {"model": getattr(loaded, "name", ""), "weights": options.weights, "input_size": [height, width],
            "input_varies": varies,
            "preprocess": {"mode": getattr(loaded, "preprocess_choice", "own"), **loaded.preprocess.to_dict()},
            "assumptions": list(getattr(loaded, "assumptions", [])), "architecture": arch.family,
            "grid": list(arch.grid), "patch_size": arch.patch_size, "num_prefix_tokens": arch.num_prefix,
            "stages": stage_records(arch), "depth": arch.depth,
            "heads": heads[0] if len(set(heads)) == 1 else list(heads)}   # one number when every block has as many
    if arch.one_sequence:
        tokens = arch.blocks[0].num_tokens
        info.update(tokens=tokens, uniform_distance=uniform_distance(tuple(arch.grid), arch.patch_size),
                    uniform_entropy=uniform_entropy(tokens))
    return {**info, "options": {"norm_ratio": options.norm_ratio, "distance_renormalise": options.distance_renormalise},
            "device": device.type, "dtype": str(options.dtype).removeprefix("torch."), "processes": processes.world}


def _declared(loaded, options: RunOptions) -> dict[str, tuple[int, ...]]:
    """The per-image values every image has, with their shapes (so a process that got no image still has them)."""
    shapes = declared(architecture(loaded))
    if options.features_layer is not None:
        shapes.update(features.declared(loaded.model.cfg.embed_dim))
    return shapes


def run(loaded, entries: Sequence[ImageEntry], options: RunOptions, processes: Processes,
        write_image: ImageWriter | None = None) -> RunResult:
    """Analyse this process's share of ``entries``, hand each image to ``write_image`` (None: statistics only),
    and, with ``options.summary``, write DIR/summary/ from the statistics of all processes and sessions.

    ValueError when ``--resume`` finds progress made with other images or settings.
    """
    model = loaded.model
    device = next(model.parameters()).device
    count = len(entries)
    key = fingerprint(entries, loaded, options, write_image is not None)
    previous = state.Progress(count)
    if options.summary and options.resume:
        previous = state.load(options.out, key, count)
        if processes.main and options.progress:
            print(f"resuming: {int(previous.done.sum())} of {count} images were done in {previous.session} earlier "
                  f"session(s)", file=sys.stderr)
    elif options.summary and processes.main:
        state.clear(options.out)
    distributed.barrier(processes)          # every process has read the saved progress before any writes its own

    todo = [i for i in shard(count, processes.rank, processes.world) if not previous.done[i]]
    mine = state.Progress(count, session=previous.session)
    mine.statistics.declare(_declared(loaded, options))
    failed: list[tuple[int, str]] = []
    loader = image_loader(entries, loaded.preprocess, todo, options.batch_size, options.workers,
                          pin_memory=device.type == "cuda")
    share = f" (process {processes.rank + 1} of {processes.world})" if processes.distributed else ""
    bar = tqdm(total=len(todo), desc=f"images{share}", unit="image", dynamic_ncols=True,
               disable=not (options.progress and processes.main))
    for batch in loader:
        for index, message in batch.failed:
            failed.append((index, message))
            tqdm.write(f"error: {entries[index].path}: {message}", file=sys.stderr)
        if batch.indices:
            _analyse_batch(loaded, entries, batch, options, write_image, mine, device)
            if options.summary:
                state.save(options.out, mine.session, processes.rank, key, mine)
        bar.update(len(batch.indices) + len(batch.failed))
    bar.close()

    statistics = _combined(processes, mine.statistics, previous.statistics)
    scores = dict(previous.scores)
    for part in distributed.gather_objects(processes, mine.scores):
        scores.update(part)
    failed_all = [item for part in distributed.gather_objects(processes, failed) for item in part]
    failed_set = {index for index, _ in failed_all}
    done = [i for i in range(count) if i not in failed_set]
    summary = None
    if options.summary and processes.main:
        folder = options.out / "summary"
        info = {**run_info(loaded, options, processes, device), "failed": len(failed_all),
                **_faithfulness_options(options)}
        if options.chefer:
            info["chefer_classes"] = loaded.model.cfg.num_classes
        table = None
        if options.faithfulness:
            columns = score_columns(options.perturbation, options.faithfulness)
            table = (columns, np.array([scores[i] for i in sorted(scores)]).reshape(-1, len(columns)))
        heads = architecture(loaded).heads
        summary = report.write(folder, statistics, info, table, heads)
        per_image = None if write_image is None else [_saved_distance(options.out / entries[i].name) for i in done]
        report.write_distance_npz(folder, statistics, heads, [str(entries[i].path) for i in done], per_image)
        if options.features_layer is not None and done:
            features.write_joint(folder, statistics, loaded, [entries[i].path for i in done], options.features_layer,
                                 device, options.dtype)
    distributed.barrier(processes)
    return RunResult(len(done), [(entries[i].path, message) for i, message in sorted(failed_all)], summary)


def _analyse_batch(loaded, entries, batch, options: RunOptions, write_image: ImageWriter | None,
                   mine: state.Progress, device: torch.device) -> None:
    """One batch through the model: per-image files (when writing them) and per-image values into ``mine``."""
    t0 = time.perf_counter()
    x = model_input(batch.pixels, loaded.preprocess, device)
    t1 = time.perf_counter()
    captured = capture_batch(loaded, x, options, write_image is not None)
    # the explanation methods' curves, once per image, for the summary and for the image's own files
    reports = [trust_check(loaded.model, x[b:b + 1].float(), options.faithfulness_target, list(options.faithfulness),
                           protocols=options.perturbation, sanity=options.sanity, points=options.steps,
                           labels=loaded.labels)
               for b in range(len(batch.indices))] if options.faithfulness else None
    inside = _inside_values(loaded, x, [entries[i].label for i in batch.indices], options) if options.inside else None
    if write_image is not None:
        B = len(batch.indices)
        timings = {"preprocess": (t1 - t0) / B, **{k: v / B for k, v in captured.timings.items()}, "batch_size": B}
        images = [Image.fromarray(pixels.numpy()) for pixels in batch.pixels]
        for b, (a, index, decode_s) in enumerate(zip(captured.analyses(images, timings), batch.indices,
                                                     batch.decode_s)):
            extras = {"trust": reports[b]} if reports else {}
            if inside and "inside.head_importance" in inside[b]:   # computed once, for the summary and the files
                extras["head_importance"] = inside[b]["inside.head_importance"]
            write_image(entries[index], a, decode_s, **extras)
    for b, index in enumerate(batch.indices):
        mine.done[index] = True
        if not options.summary:                    # one image: its files are all there is
            continue
        values = captured.values(b, entries[index].label)
        if reports:   # summed, combined, resumed and reported like the rest (viz.dataset.statistics)
            values.update(faithfulness_values(reports[b]))
            mine.scores[index] = image_scores(reports[b], score_columns(options.perturbation, options.faithfulness))
        if options.chefer and entries[index].label is not None:
            values.update(chefer_values(loaded, x[b:b + 1].float(), entries[index].label, options))
        if inside:
            values.update(inside[b])
        mine.statistics.add_image(values)


def _inside_values(loaded, x: torch.Tensor, labels: list[int | None], options: RunOptions) -> list[dict]:
    """Each image's "inside.head_importance" (L, H) and, when labelled, "inside.lens_top1" (L,): one batch."""
    from ..inside.job import dataset_values

    request = options.inside
    return dataset_values(loaded.model, x.float(), labels, request.target, request.contrast, request.views,
                          loaded.labels, request.means)


def faithfulness_values(report) -> dict[str, np.ndarray]:
    """A ``viz.trust.TrustReport`` (or a ``ProtocolsReport``: its first protocol's) -> per-image values
    "faithfulness.<method>.<score>": deletion_auc and insertion_auc (), the deletion and insertion curves
    (points,), the sanity curve (L,) when it was run."""
    values = {}
    report = getattr(report, "first", report)
    for name, m in report.methods.items():
        f, key = m.faithfulness, f"{FAITHFULNESS}{name}."
        values.update({key + "deletion_auc": np.float64(f.deletion_auc), key + "insertion_auc": np.float64(f.insertion_auc),
                       key + "deletion": np.array(f.deletion), key + "insertion": np.array(f.insertion)})
        if m.sanity is not None:
            values[key + "sanity"] = np.array(m.sanity)
    return values


def chefer_values(loaded, x: torch.Tensor, label: int, options: RunOptions) -> dict[str, np.ndarray]:
    """One labelled image's hits under Chefer et al. 2021's test (``viz.trust.chefer``), as per-image values summed
    like every other (their mean over the images is the accuracy curve)."""
    from vit.explain import ClassTarget

    target = ClassTarget(label) if options.chefer == "target" else ClassTarget()
    e = explain_tensor(loaded.model, x, target, list(options.chefer_methods), loaded.labels)
    hits = chefer_hits(loaded.model, x, label, {m: e.map(m) for m in options.chefer_methods},
                       black_pixel(loaded.preprocess.mean, loaded.preprocess.std), loaded.model.cfg.patch_size)
    return {f"{CHEFER}{sign}.{m}": hits[sign][m] for sign in SIGNS for m in options.chefer_methods}


def _combined(processes: Processes, mine: Statistics, previous: Statistics) -> Statistics:
    """This session's sums of every process (one all-reduce) plus the earlier sessions' (the same everywhere)."""
    shapes: dict = {}
    for theirs in distributed.gather_objects(processes, mine.shapes()):
        shapes.update(theirs)
    mine.declare(shapes)
    mine.from_flat(distributed.sum_int64(processes, mine.to_flat()))
    total = Statistics()
    total.merge(previous)
    total.merge(mine)
    return total


def _saved_distance(folder: Path) -> np.ndarray:
    """The mean distance (L, H) an image's attention.npz holds (read back rather than kept: memory stays flat), 0 past
    a block's heads (NaN there in the file), as the statistics summed it."""
    with np.load(folder / "attention.npz") as saved:
        return np.nan_to_num(saved["mean_distance"], nan=0.0)
