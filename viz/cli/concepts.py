"""``python -m viz.concepts train FOLDER --weights W --layer L --latents M --k K --out DIR``: a sparse autoencoder on
one layer's patch tokens over a folder of photos, in one command.

1. the tokens at the hook point of every photo (and ``--crops N`` random crops of each) are cached to
   DIR/activations/ (``viz.concepts.activations``; ``--resume`` keeps the finished shards; ``torchrun --nproc-per-node
   N -m viz.concepts train …`` splits the shards across processes, the first one trains);
2. overcomplete trains the SAE on the training photos' tokens (``viz.concepts.train``) -> DIR/sae.safetensors and
   DIR/sae.json;
3. the held-out photos measure it (``viz.concepts.metrics``) -> DIR/metrics.json;
4. every latent's strongest patches over the folder (``viz.concepts.top_patches``) -> DIR/top_patches.npz.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from vit.command import program

from .options import PREPROCESS_CHOICES, add_no_verify, non_negative, positive

HOOK_POINTS = ("residual", "attention", "mlp")   # vit.inside.hooks.HOOK_POINTS, without importing torch for --help
KINDS = ("topk", "batchtopk")                    # viz.concepts.train.TRAINED_KINDS

EPILOG = """Writes DIR/sae.safetensors and DIR/sae.json (model, weights, layer, hook_point, d_model, latents, k, kind,
input_normalisation, training), DIR/metrics.json (fvu, l0, dead_fraction, pca_fvu_at_l0, spliced: {kl,
top1_agreement, kl_mean_ablation}, on the held-out photos' tokens), DIR/top_patches.npz (image_index, row, col,
activation: (M, 64) each, strongest first; images: the photos' paths relative to FOLDER) and the cached tokens in
DIR/activations/. Layers are counted from 0. Then: python -m viz IMAGE --weights W --concepts DIR.

Many processes: torchrun --nproc-per-node N -m viz.concepts train FOLDER ... (the caching is split; the first
process trains). Training needs the optional package overcomplete: pip install 'vit-attention-explorer[concepts]'."""


def fraction_open(text: str) -> float:
    value = float(text)
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1 (exclusive) but got {text}")
    return value


def positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number but got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=program("viz.concepts"),
                                description="Sparse autoencoders on a Vision Transformer layer's patch tokens: the "
                                            "concepts a model found.")
    commands = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    t = commands.add_parser("train", help="cache a layer's tokens over a folder, train an SAE, measure it",
                            description="Cache one layer's patch tokens over a folder of photos, train a sparse "
                                        "autoencoder on them with overcomplete, and measure it on held-out photos.",
                            epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    t.add_argument("folder", type=Path, metavar="FOLDER",
                   help="photos (their own files, or one sub-folder each of them when it has none)")
    t.add_argument("--weights", default="default", metavar="PATH",
                   help="checkpoint, as for python -m viz (default: torchvision's ViT-B/16)")
    add_no_verify(t)
    t.add_argument("--layer", type=int, required=True, metavar="L", help="block whose tokens are read (0-based; -1 "
                                                                         "the last)")
    t.add_argument("--hook", choices=HOOK_POINTS, default="residual",
                   help="residual: the stream after the block (default); attention / mlp: what the block's attention "
                        "or MLP adds to it")
    t.add_argument("--latents", type=positive, required=True, metavar="M", help="the dictionary's size")
    t.add_argument("--k", type=positive, required=True, metavar="K", help="active latents per token")
    t.add_argument("--kind", choices=KINDS, default="topk",
                   help="topk: the k strongest per token (default); batchtopk: the k·B strongest over a batch of B "
                        "tokens, a learnt threshold when applied")
    t.add_argument("--crops", type=non_negative, default=0, metavar="N",
                   help="random crops per photo besides the photo itself (default: 0)")
    t.add_argument("--epochs", type=positive, default=10, metavar="E", help="passes over the tokens (default: 10)")
    t.add_argument("--out", type=Path, required=True, metavar="DIR", help="output folder")
    g = t.add_argument_group("training")
    g.add_argument("--lr", type=positive_float, default=1e-3, help="Adam's learning rate (default: 1e-3)")
    g.add_argument("--tokens-per-step", type=positive, default=1024, metavar="B",
                   help="tokens per training step (default: 1024)")
    g.add_argument("--holdout", type=fraction_open, default=0.1, metavar="SHARE",
                   help="share of the photos held out for metrics.json (default: 0.1)")
    g.add_argument("--seed", type=int, default=0, help="the crops, the shuffling and the initial weights (default: 0)")
    g = t.add_argument_group("caching")
    g.add_argument("--preprocess", choices=PREPROCESS_CHOICES, default="own",
                   help="how a photo becomes the model's input, as for python -m viz (default: own)")
    g.add_argument("--input-size", nargs=2, type=int, metavar=("H", "W"),
                   help="run the model at this input size instead of the checkpoint's")
    g.add_argument("--device", default="auto", metavar="{auto,cpu,cuda,mps}", help="where the model and the SAE run")
    g.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), default="float32",
                   help="the forward pass's number format while caching (tokens are stored as float32)")
    g.add_argument("--batch-size", type=positive, default=16, metavar="N",
                   help="photos per forward pass, each with its crops (default: 16)")
    g.add_argument("--workers", type=non_negative, default=0, metavar="K", help="processes decoding photos (default: 0)")
    g.add_argument("--shard-mb", type=positive_float, default=32.0, metavar="MB",
                   help="size of a shard of cached tokens (default: 32)")
    g.add_argument("--resume", action="store_true",
                   help="keep the shards an interrupted run finished in DIR/activations/ and cache the rest")
    g.add_argument("--quiet", action="store_true", help="no progress bars")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return train_command(args)


def fixed_mmap_threshold() -> None:
    """Every buffer of 512 KB or more mapped afresh and returned when freed, as MALLOC_MMAP_THRESHOLD_=524288 would:
    glibc otherwise raises the threshold to the largest buffer freed so far (a written shard), and the batches'
    activations then leave holes in its heap, so the RSS climbed with every shard (+38 MB over 440 photos of a
    ViT-Ti; flat with the threshold fixed). No-op where the C library has no mallopt."""
    import ctypes

    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is not None:
        mallopt(-3, 512 * 2**10)          # M_MMAP_THRESHOLD


def train_command(args: argparse.Namespace) -> int:
    from vit.device import pick_device, pick_dtype

    from ..concepts import activations, metrics, top_patches, train
    from ..concepts.sae import SaeInfo
    from ..folders import distributed
    from .options import load_model

    try:
        if args.k > args.latents:
            raise ValueError(f"--k must be at most --latents ({args.latents}) but got {args.k}.")
        train.overcomplete_sae()          # before the caching: say at once when the extra is missing
        device = pick_device(args.device, distributed.local_rank())
        dtype = pick_dtype(args.dtype)
        loaded = load_model(args)
        loaded.model.to(device)
        options = activations.CacheOptions(layer=args.layer, hook=args.hook, crops=args.crops, seed=args.seed,
                                           holdout=args.holdout, batch_size=args.batch_size, workers=args.workers,
                                           shard_mb=args.shard_mb, dtype=dtype, resume=args.resume,
                                           progress=not args.quiet, weights=args.weights)
        train_options = train.TrainOptions(latents=args.latents, k=args.k, kind=args.kind, epochs=args.epochs,
                                           batch_size=args.tokens_per_step, lr=args.lr, seed=args.seed,
                                           device=device, progress=not args.quiet)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    fixed_mmap_threshold()
    processes = distributed.start(device)
    try:
        t0 = time.perf_counter()
        acts = activations.cache(loaded, args.folder, args.out / "activations", options, processes)
        t1 = time.perf_counter()
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        distributed.finish(processes)
        return 2
    distributed.finish(processes)
    if not processes.main:
        return 0
    for index, message in sorted(acts.failed.items()):
        print(f"note: left out {acts.photos[int(index)]}: {message}", file=sys.stderr)
    train_moments = metrics.moments(acts, "train")
    fp = acts.info["fingerprint"]
    info = SaeInfo(acts.info["layer"], args.hook, acts.info["model"], args.weights, fp["weights_sha256"],
                   extra={"tokens": "patches", "grid": acts.info["grid"], "input_size": acts.info["input_size"],
                          "preprocess": acts.info["preprocess"], "folder": str(args.folder.resolve()),
                          "photos": len(acts.photos), "held_out_photos": int(acts.held_out.sum())})
    trained = train.train(acts, train_options, info, train.input_statistics(train_moments))
    sae = trained.sae
    t2 = time.perf_counter()
    sae.info.extra["training"] = {"library": f"overcomplete {_version('overcomplete')}", "epochs": args.epochs,
                                  "tokens_per_step": args.tokens_per_step, "lr": args.lr, "seed": args.seed,
                                  "crops": args.crops, "training_tokens": train_moments.count,
                                  "aux_penalty": train_options.aux_penalty, "logs": trained.logs}
    sae.save(args.out)
    measured = metrics.evaluate(sae, loaded, acts, args.folder, train_moments, args.batch_size, args.workers,
                                progress=not args.quiet)
    (args.out / "metrics.json").write_text(json.dumps(measured, indent=2) + "\n")
    top_patches.top_patches(sae, acts, progress=not args.quiet).save(args.out / "top_patches.npz")
    t3 = time.perf_counter()
    if not args.quiet:
        print(f"cached {acts.tokens} tokens in {t1 - t0:.1f} s, trained in {t2 - t1:.1f} s, measured in "
              f"{t3 - t2:.1f} s: fvu {measured['fvu']:.3f} (PCA with {measured['pca_components']} components: "
              f"{measured['pca_fvu_at_l0']:.3f}), l0 {measured['l0']:.1f}, dead {measured['dead_fraction']:.1%}; "
              f"wrote {args.out}", file=sys.stderr)
    return 0


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "?"
