"""``python -m viz IMAGE [IMAGE ...] --weights PATH --out DIR``: every panel as PNG, plus the numbers behind them.

Per image, in ``DIR/<image name>/``: one PNG per panel, ``result.json`` (top-k classes, model, input size,
options, timings) and ``attention.npz`` (the attention itself and every map drawn, so a figure can be
reproduced exactly). With several images, ``DIR/summary/`` holds statistics over them (``statistics.json``,
``statistics.md``, plots; the paper's Figure 7, right, is such an average): see ``viz.dataset``. Folders run in
batches (``--batch-size``) decoded by worker processes (``--workers``), on any device (``--device``), in one
process or many (``torchrun --nproc-per-node N -m viz FOLDER ...``), and resume after an interruption (``--resume``).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from . import panels
from .result import Analysis
from .maps.rollout import FUSIONS

if TYPE_CHECKING:   # viz.dataset imports torch, which ``--help`` should not wait for
    from .dataset.files import ImageEntry

PANEL_HELP = """panels written per image (PNG):
  input              the cropped image the model saw
  rollout            attention rollout of the CLS token (Abnar & Zuidema 2020)
  attention          CLS attention of --layer / --head
  threshold          DINO mask: smallest patch set holding --share of the attention mass
  heads              CLS attention of every layer (rows) and head (columns)
  query_row          where the --query patch attends (its attention row)
  query_column       who attends to the --query patch (its attention column)
  filters            Figure 7 left: top 28 principal components of the patch-embedding filters
  pos_similarity     Figure 7 centre: cosine similarity of the position embeddings
  mean_distance      Figure 7 right: mean attention distance of every head against depth
  token_norms        L2 norm of every patch token after each block, high-norm tokens outlined
  token_norm_curves  token norms against depth, flagged tokens in red

attention.npz holds: attention (L, H, T, T), rollout (gh, gw), num_prefix_tokens, grid (gh, gw),
patch_size, pos_similarity (N, N) on the checkpoint's native grid, mean_distance (L, H) in pixels,
token_norms (L, T), probabilities (K,), cls_attention, query_row, query_column (gh, gw), query_patch,
high_norm_flags (L, gh, gw). Layers and heads are 0-based; negative indices count from the end.

With several images (or --stats-only), DIR/summary/ holds statistics.json (images, mean_distance L x H,
entropy L x H, prefix_share L, high_norm_share L, top1/top5 for a folder labelled by sub-folder, with their
standard deviations over images), statistics.md, mean_distance.png, entropy.png, attention_shares.png and
mean_distance.npz. A folder whose images sit in sub-folders is labelled: each sub-folder names a class by
index (281), WordNet ID (n02123045) or class name (tabby).

Many processes: torchrun --nproc-per-node N -m viz FOLDER ... (each takes its share of the images; the
statistics equal one process's)."""


def head_arg(text: str) -> int | None:
    """--head: an integer, or "mean" for the mean of heads."""
    if text.lower() == "mean":
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a head number or 'mean' but got {text!r}") from None


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1 but got {text}")
    return value


def non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 0 but got {text}")
    return value


def fraction(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1 but got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m viz", description="Write every attention panel of a Vision Transformer as PNG, plus the "
                                            "numbers behind them (result.json, attention.npz).",
                                epilog=PANEL_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("images", nargs="+", metavar="IMAGE", help="image files, or folders of images (not recursive)")
    p.add_argument("--weights", default="default", metavar="PATH",
                   help="checkpoint: a file, a Hugging Face folder, a known name or a file in weights/ "
                        "(default: torchvision's ViT-B/16)")
    p.add_argument("--out", default="out", type=Path, metavar="DIR", help="output folder (default: out)")
    p.add_argument("--input-size", nargs=2, type=int, metavar=("H", "W"),
                   help="run the model at this input size instead of the checkpoint's (multiples of the patch "
                        "size; position embeddings are resampled, Figure 7 keeps the native grid)")
    g = p.add_argument_group("device, batches and data sets")
    g.add_argument("--device", default="auto", metavar="{auto,cpu,cuda,mps}",
                   help="where the model runs: auto (default: CUDA when available, else the CPU), cpu, cuda, "
                        "cuda:N or mps")
    g.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), default="float32",
                   help="number format of the forward pass (default: float32); bfloat16/float16 run the matrix "
                        "products in 16 bits under autocast, for GPUs (slower than float32 on most CPUs)")
    g.add_argument("--batch-size", type=positive, default=1, metavar="N", help="images per forward pass (default: 1)")
    g.add_argument("--workers", type=non_negative, default=0, metavar="K",
                   help="processes decoding images (default: 0, in the main process)")
    g.add_argument("--stats-only", action="store_true",
                   help="write only DIR/summary/ (statistics over the images), no per-image files")
    g.add_argument("--resume", action="store_true",
                   help="continue an interrupted run into the same --out, skipping the images it finished")
    g = p.add_argument_group("rollout")
    g.add_argument("--fusion", choices=FUSIONS, default="mean", help="head fusion (default: mean)")
    g.add_argument("--discard-ratio", type=float, default=0.0, metavar="R",
                   help="set the lowest fraction R (0 <= R < 1) of each fused matrix to 0, never entries in the "
                        "row or column of the read-out token (default: 0, as in the paper)")
    g.add_argument("--start-layer", type=int, default=0, metavar="L", help="first block of the product (default: 0)")
    g.add_argument("--mask-artifacts", action="store_true",
                   help="drop high-norm artifact tokens (see --norm-ratio) before rollout")
    g = p.add_argument_group("attention, patch query and mask")
    g.add_argument("--layer", type=int, default=-1, help="block for the attention, query and mask panels (default: -1, the last)")
    g.add_argument("--head", type=head_arg, default=None, help="head number, or 'mean' (default: mean of heads)")
    g.add_argument("--query", nargs=2, type=int, metavar=("ROW", "COL"),
                   help="patch for the query panels (default: the centre of the grid)")
    g.add_argument("--query-rollout", action="store_true",
                   help="query panels from the rollout matrix (all blocks) instead of --layer")
    g.add_argument("--share", type=fraction, default=0.6,
                   help="threshold mask: share of the attention mass kept (default: 0.6, as in DINO)")
    g.add_argument("--mask-source", choices=("attention", "rollout"), default="attention",
                   help="threshold mask of the CLS attention of --layer or of the rollout (default: attention)")
    g = p.add_argument_group("token norms and attention distance")
    g.add_argument("--norm-ratio", type=float, default=3.0, metavar="Q",
                   help="flag a patch whose norm exceeds Q times its block's median patch norm (default: 3)")
    g.add_argument("--distance-renormalise", action="store_true",
                   help="mean attention distance over patch tokens only, rows renormalised (default: attention "
                        "to prefix tokens counts as distance 0, as in the common reproduction)")
    g = p.add_argument_group("rendering and files")
    g.add_argument("--cmap", default="inferno", help="matplotlib colormap for the maps (default: inferno)")
    g.add_argument("--alpha", type=fraction, default=0.6, help="opacity of the heat map over the photo (default: 0.6)")
    g.add_argument("--no-colorbar", action="store_true", help="overlays without a colour bar")
    g.add_argument("--scale", type=int, default=1, help="enlarge the overlays this many times (default: 1)")
    g.add_argument("--top-k", type=int, default=5, help="classes listed in result.json (default: 5)")
    g.add_argument("--float16", action="store_true", help="store attention as float16 (half the file size)")
    g.add_argument("--compress", action="store_true", help="compress attention.npz (smaller, slower)")
    g.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def options_from(args: argparse.Namespace) -> panels.MapOptions:
    return panels.MapOptions(layer=args.layer, head=args.head, fusion=args.fusion, discard_ratio=args.discard_ratio,
                             start_layer=args.start_layer, mask_artifacts=args.mask_artifacts,
                             norm_ratio=args.norm_ratio, query=tuple(args.query) if args.query else None,
                             query_rollout=args.query_rollout, share=args.share, mask_source=args.mask_source,
                             distance_renormalise=args.distance_renormalise, cmap=args.cmap, alpha=args.alpha,
                             colorbar=not args.no_colorbar, scale=args.scale)


def write_image_result(path: Path, folder: Path, a: Analysis, model: tuple[dict, dict], o: panels.MapOptions,
                       args: argparse.Namespace, decode_s: float) -> np.ndarray:
    """Render and write one analysed image's panels (with the model's own, ``model``: the result of
    ``panels.model_panels``), result.json and attention.npz; returns its mean distance (L, H)."""
    t2 = time.perf_counter()
    images, arrays = panels.image_panels(a, o)
    t3 = time.perf_counter()
    images, arrays = {**images, **model[0]}, {**arrays, **model[1]}
    folder.mkdir(parents=True, exist_ok=True)
    for name, picture in images.items():
        picture.save(folder / f"{name}.png")
    save = np.savez_compressed if args.compress else np.savez
    save(folder / "attention.npz", attention=a.attention, num_prefix_tokens=np.int64(a.num_prefix),
         grid=np.array(a.grid), patch_size=np.int64(a.patch_size), token_norms=a.token_norms,
         probabilities=a.probabilities, **arrays)
    t4 = time.perf_counter()
    result = {
        "image": str(path),
        "model": a.model_name,
        "weights": args.weights,
        "input_size": list(a.input_size),
        "grid": list(a.grid),
        "num_prefix_tokens": a.num_prefix,
        "top_k": [{"label": label, "probability": p} for label, p in a.top_k(args.top_k)],
        "options": {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(o).items()},
        "timings_s": {"decode": decode_s, **a.timings, "panels": t3 - t2, "write": t4 - t3},
        "files": sorted([f"{name}.png" for name in images] + ["attention.npz", "result.json"]),
    }
    (folder / "result.json").write_text(json.dumps(result, indent=2) + "\n")
    return arrays["mean_distance"]


def load_model(args: argparse.Namespace):
    """``vit.load(--weights)``, set up to run at ``--input-size`` if given; ValueError says what is wrong."""
    import vit

    try:
        loaded = vit.load(args.weights)
    except (ValueError, FileNotFoundError) as error:
        raise ValueError(f"cannot load the weights: {error}") from None
    if args.input_size:
        P = loaded.model.cfg.patch_size
        H, W = args.input_size
        if H % P or W % P or H < P or W < P:
            raise ValueError(f"--input-size {H} {W} must be positive multiples of the patch size {P}.")
        ratio = loaded.preprocess.resize / min(loaded.preprocess.crop)  # keep the checkpoint's crop ratio
        loaded.preprocess = dataclasses.replace(loaded.preprocess, crop=(H, W), resize=round(min(H, W) * ratio))
    return loaded


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import torch   # imported once there is work (``--help`` stays quick)

    from vit.device import pick_device, pick_dtype

    from .analysis import model_arrays
    from .dataset import distributed, files, run

    try:
        device = pick_device(args.device, distributed.local_rank())
        dtype = pick_dtype(args.dtype)
        loaded = load_model(args)
        loaded.model.to(device)
        o = options_from(args)
        grid = loaded.model.token_layout(*loaded.preprocess.crop).grid
        panels.check_options(o, loaded.model.cfg.depth, loaded.model.cfg.num_heads, grid)
        entries = files.list_images(args.images, loaded.labels)
        if not entries:
            raise ValueError("no images found in " + ", ".join(args.images))
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if device.type == "cpu" and dtype != torch.float32 and not args.quiet:
        print(f"note: --dtype {args.dtype} on the CPU runs, but is usually slower than float32 (it is meant for "
              f"GPUs; see the README)", file=sys.stderr)
    data_set = len(entries) > 1 or args.stats_only
    options = run.RunOptions(out=args.out, batch_size=args.batch_size, workers=args.workers, summary=data_set,
                             resume=args.resume, attention_dtype=np.float16 if args.float16 else np.float32,
                             dtype=dtype, norm_ratio=args.norm_ratio, distance_renormalise=args.distance_renormalise,
                             progress=not args.quiet and len(entries) > 1, weights=args.weights)
    writer = None
    if not args.stats_only:
        model = panels.model_panels(model_arrays(loaded.model, loaded.name))   # the same for every image

        def writer(entry: ImageEntry, a: Analysis, decode_s: float) -> None:
            write_image_result(entry.path, args.out / entry.name, a, model, o, args, decode_s)

    processes = distributed.start(device)
    try:
        result = run.run(loaded, entries, options, processes, writer)
    except ValueError as error:   # --resume found another run's progress
        print(f"error: {error}", file=sys.stderr)
        return 2
    finally:
        distributed.finish(processes)
    if not args.quiet and processes.main:
        print(f"{'analysed' if args.stats_only else 'wrote'} {result.done} of {len(entries)} images "
              f"{'for' if args.stats_only else 'to'} {args.out}", file=sys.stderr)
    return 1 if result.failed else 0
