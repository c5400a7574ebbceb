"""Command-line options of ``python -m vit.train`` and the defaults that depend on the data or the checkpoint."""
from __future__ import annotations

import argparse
import dataclasses
import re
from dataclasses import dataclass

from ..command import program
from ..model import POS_EMBED_KINDS, ViTConfig, variant
from ..swin import SwinConfig
from ..video import VIDEO_FAMILIES

ARCHS = ("vit", "swin", "video")   # --arch: a ViT (vit.model), a Swin (vit.swin) or a video transformer (vit.video)
SWIN_ONLY = ("window", "depths")           # options that shape a Swin alone
VIT_ONLY = ("depth", "mlp_dim")   # options that shape a ViT (or a video transformer) alone
VIDEO_ONLY = ("frames", "tubelet")   # options that shape a video transformer alone
SWIN_POS_EMBED = ("none", "learned")   # a Swin's --pos-embed: none (the papers') or the original Swin's learnt one

@dataclass
class TrainOptions:
    """Everything that defines a training run. ``None`` means "choose for me" (see ``resolve``)."""
    data: str | None = None
    out: str = "weights/model.pt"
    arch: str = "vit"                             # "vit" or "swin" (from scratch; --init keeps the checkpoint's)
    variant: str | None = None                    # scratch: "tiny", "small", "base", "tiny-8", … (default "tiny")
    init: str | None = None                       # fine-tune: any source vit.load reads
    img_size: tuple[int, int] | None = None       # default: the checkpoint's; 32 for CIFAR-10; 224 for folders
    preprocess: str = "own"                       # validation (and saved) preprocessing: own, crop or squash
    patch_size: int | None = None                 # default: the variant's if named ("tiny-8"), else 4 (≤ 64 px) / 16
    depth: int | None = None                      # scratch overrides, e.g. for a tiny test model
    embed_dim: int | None = None
    num_heads: int | tuple[int, ...] | None = None   # a Swin: one per stage (one number: every stage)
    mlp_dim: int | None = None
    window: int | None = None                     # a Swin: W×W-token windows in every stage (default: the variant's 7)
    depths: tuple[int, ...] | None = None         # a Swin: blocks per stage (default: the variant's)
    pos_embed: str | None = None                  # "learned" (a ViT's default), "sincos2d" (fixed) or "none" (a Swin's)
    epochs: int = 30
    batch_size: int = 64
    lr: float | None = None                       # peak rate; default 5e-4 from scratch, 1e-4 fine-tuning
    weight_decay: float = 0.05
    warmup_epochs: float = 2.0
    label_smoothing: float = 0.1
    drop_path: float = 0.1
    augment: str = "auto"
    seed: int = 0
    val_share: float = 0.2
    workers: int = 2
    device: str = "auto"
    download: bool = False
    resume: bool = False
    snapshot_every: int = 0                       # keep a checkpoint every N epochs (and before the first step); 0: off
    frames: int | None = None                     # a video model: frames per clip (default 8)
    tubelet: int | None = None                    # a video model: frames per token (default 2)

    def to_dict(self) -> dict:
        """Plain values only (stored in the checkpoint's ``extra``, which must load with weights_only=True)."""
        return dataclasses.asdict(self)


def flag(name: str) -> str:
    """Option name -> its command-line flag, for messages."""
    return "--heads" if name == "num_heads" else "--" + name.replace("_", "-")


# Options a resumed run may change: where the data lives and how it is read; everything else must match.
RESUME_MAY_CHANGE = ("data", "workers", "device", "download", "snapshot_every")


def _check_arch(opts: TrainOptions, arch: str) -> None:
    """The options that shape the other architecture are refused, as are a Swin's heads given per stage to a ViT."""
    if arch not in ARCHS:
        raise ValueError(f"Unknown --arch {arch!r}! Expected one of {', '.join(ARCHS)}.")
    if arch == "video":
        wrong = [flag(k) for k in SWIN_ONLY if getattr(opts, k) is not None]
        if isinstance(opts.num_heads, tuple):
            wrong.append("--heads with one number per stage")
        if opts.pos_embed not in (None, "learned"):
            wrong.append(f"--pos-embed {opts.pos_embed}")
        if opts.augment not in ("auto", "none"):      # a flip or a crop moves what moves
            wrong.append(f"--augment {opts.augment}")
        if wrong:
            raise ValueError(f"{', '.join(wrong)} do{'es' if len(wrong) == 1 else ''} not apply to --arch video!")
        return
    video_only = [flag(k) for k in VIDEO_ONLY if getattr(opts, k) is not None]
    if video_only:
        raise ValueError(f"{', '.join(video_only)} only apply to --arch video, not to --arch {arch}!")
    wrong = [flag(k) for k in (VIT_ONLY if arch == "swin" else SWIN_ONLY) if getattr(opts, k) is not None]
    if arch == "vit" and isinstance(opts.num_heads, tuple):
        wrong.append("--heads with one number per stage")
    if arch == "swin" and opts.pos_embed not in (None, *SWIN_POS_EMBED):
        wrong.append(f"--pos-embed {opts.pos_embed}")
    if wrong:
        raise ValueError(f"{', '.join(wrong)} only apply to --arch {'vit' if arch == 'swin' else 'swin'}, not to "
                         f"--arch {arch}!")


def resolve(opts: TrainOptions, data_kind: str, pretrained: ViTConfig | SwinConfig | None) -> TrainOptions:
    """Fill the "choose for me" options from the data (``"folder"``/``"cifar10"``) and the pretrained config."""
    if pretrained is not None:
        if pretrained.family in VIDEO_FAMILIES:
            raise ValueError("Fine-tuning a video model (--init) is not supported; train one from scratch with "
                             "--arch video --variant.")
        arch = "swin" if pretrained.family == "swin" else "vit"
        if opts.arch != "vit" and opts.arch != arch:       # "vit" is the default: only a given other arch clashes
            raise ValueError(f"--arch {opts.arch} does not fit --init's checkpoint, which is a {arch}!")
        scratch_only = [flag(k) for k in ("depth", "embed_dim", "num_heads", "mlp_dim", "window", "depths")
                        if getattr(opts, k) is not None]
        if scratch_only:
            raise ValueError(f"{', '.join(scratch_only)} only apply to training from scratch (--variant); "
                             f"--init keeps the checkpoint's architecture!")
        if opts.patch_size is not None and opts.patch_size != pretrained.patch_size:
            raise ValueError(f"--patch-size cannot change when fine-tuning! The checkpoint uses patches of "
                             f"{pretrained.patch_size} but got --patch-size {opts.patch_size}.")
        kind = getattr(pretrained, "pos_embed_kind", None) or \
            ("learned" if getattr(pretrained, "absolute_pos_embed", False) else "none")
        if opts.pos_embed is not None and opts.pos_embed != kind:
            raise ValueError(f"--pos-embed cannot change when fine-tuning! The checkpoint's position embedding is "
                             f"{kind!r} but got --pos-embed {opts.pos_embed}.")
        img_size = opts.img_size or pretrained.img_size
        patch_size = pretrained.patch_size
        lr = 1e-4 if opts.lr is None else opts.lr
        name = None
        pos_embed = kind
    else:
        arch = opts.arch
        _check_arch(opts, arch)
        name = opts.variant or "tiny"
        img_size = opts.img_size or ((32, 32) if data_kind == "cifar10" else (224, 224))
        if opts.patch_size is not None:
            patch_size = opts.patch_size
        elif arch == "video":                   # small clips: 8-pixel patches
            patch_size = 8 if max(img_size) <= 64 else 16
        elif arch == "swin":                    # Swin's patches are 4 pixels in every size
            patch_size = 4
        elif re.search(r"\d+$", name):          # "tiny-8", "vit_b_16": the name says it
            patch_size = variant(name).patch_size
        else:
            patch_size = 4 if max(img_size) <= 64 else 16
        lr = 5e-4 if opts.lr is None else opts.lr
        pos_embed = opts.pos_embed or ("none" if arch == "swin" else "learned")
    video = dict(frames=opts.frames or 8, tubelet=opts.tubelet or 2, augment="none") if arch == "video" else {}
    return dataclasses.replace(opts, arch=arch, variant=name, img_size=tuple(img_size), patch_size=patch_size, lr=lr,
                               pos_embed=pos_embed, **video)


def merge_resumed(saved: dict, given: TrainOptions, explicit: set[str]) -> TrainOptions:
    """The interrupted run's options, with only ``RESUME_MAY_CHANGE`` taken from the command line.

    ``explicit`` names the options given on the command line; any other of them that differs from the saved run
    is an error rather than silently ignored, because changing it mid-run would not continue the same run.
    """
    fields = {f.name for f in dataclasses.fields(TrainOptions)}
    saved_opts = TrainOptions(**{k: v for k, v in saved.items() if k in fields})
    for name in ("img_size", "depths", "num_heads"):    # tuples come back as lists from older saves
        if isinstance(getattr(saved_opts, name), list):
            setattr(saved_opts, name, tuple(getattr(saved_opts, name)))
    changed = []
    for name in sorted(explicit - set(RESUME_MAY_CHANGE) - {"out", "resume"}):
        new, old = getattr(given, name), getattr(saved_opts, name)
        if name == "img_size" and new is not None:
            new = tuple(new)
        if new != old:
            changed.append(f"{flag(name)} (saved {old!r}, got {new!r})")
    if changed:
        raise ValueError(f"--resume continues the interrupted run with its own settings, but these differ: "
                         f"{', '.join(changed)}! Leave them out, or start a new run without --resume.")
    keep = {name: getattr(given, name) for name in RESUME_MAY_CHANGE if name in explicit}
    return dataclasses.replace(saved_opts, **keep, out=given.out, resume=True)


def parse_counts(text: str) -> tuple[int, ...]:
    """"2,2,6,2" -> (2, 2, 6, 2): positive whole numbers, comma-separated."""
    try:
        values = tuple(int(v) for v in text.split(","))
    except ValueError:
        values = ()
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive whole numbers separated by commas, like 2,2,6,2, but "
                                         f"got {text!r}")
    return values


def parse_heads(text: str) -> int | tuple[int, ...]:
    """"3" -> 3 (a ViT's heads, or every stage of a Swin); "3,6,12,24" -> one per Swin stage."""
    values = parse_counts(text)
    return values[0] if len(values) == 1 and "," not in text else values


def parse_size(text: str) -> tuple[int, int]:
    """"224" -> (224, 224); "160x224" -> (160, 224)  (height × width)."""
    m = re.fullmatch(r"\s*(\d+)\s*(?:[x×,]\s*(\d+))?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"expected a size like 224 or 160x224 (height x width) but got {text!r}")
    h = int(m.group(1))
    return h, int(m.group(2) or h)


def build_parser() -> argparse.ArgumentParser:
    """The CLI. Options left out stay ``None`` here so that ``--resume`` can tell given options from defaults."""
    d = TrainOptions()
    p = argparse.ArgumentParser(
        prog=program("vit.train"),
        description="Train a Vision Transformer on an image folder or CIFAR-10 (from scratch or fine-tuning a "
                    "checkpoint) and save the best epoch as a checkpoint the app opens: "
                    "python app.py --weights weights/NAME.pt")
    p.add_argument("--data", help="image folder (one sub-folder per class; optional train/ and val/ splits) or "
                                  "a folder holding cifar-10-batches-py/ (or that folder itself)")
    p.add_argument("--out", required=True, help="best checkpoint, e.g. weights/NAME.pt; next to it: NAME.last.pt "
                                                "(for --resume), NAME.metrics.csv and NAME.curves.png")
    which = p.add_argument_group("model (pick one of --variant / --init)")
    model = which.add_mutually_exclusive_group()
    model.add_argument("--variant", help="train from scratch: tiny, small, base (optionally with a patch size, "
                                         "e.g. tiny-8; with --arch swin: Swin-T/S/B/L's tiny, small, base, large) "
                                         "[default: tiny]")
    model.add_argument("--init", help="fine-tune this checkpoint (anything vit.load reads: a file, folder, known "
                                      "name, file in weights/ or Hugging Face Hub name); a new head is sized to the "
                                      "data's classes")
    which.add_argument("--preprocess", choices=("own", "crop", "squash"),
                       help="how validation photos become the model's input, saved with the checkpoint: own "
                            "(--init's own preprocessing, e.g. timm's crop_pct or a Hugging Face processor's squash; "
                            "from scratch the shorter side resized to the input), crop (keep the aspect ratio, cut "
                            "out the centre) or squash (the whole photo stretched) [default: own]")
    p.add_argument("--arch", choices=ARCHS, help="vit: a Vision Transformer; swin: a Swin Transformer (windows, "
                                                 "shifts, patch merging; see docs/swin.md); video: a video "
                                                 "transformer on a folder of videos (joint space-time attention; "
                                                 "see docs/video.md) [default: vit]")
    arch = p.add_argument_group("model shape")
    arch.add_argument("--img-size", type=parse_size, help="input size, 32 or 160x224 [default: the checkpoint's; "
                                                          "32 for CIFAR-10; 224 for image folders]")
    arch.add_argument("--patch-size", type=int, help="patch side in pixels (scratch only) [default: 4 for images "
                                                     "of at most 64 px, else 16]")
    arch.add_argument("--depth", type=int, help="number of blocks (scratch only, vit) [default: the variant's]")
    arch.add_argument("--depths", type=parse_counts, help="blocks per stage, e.g. 2,2,6,2 (scratch only, swin) "
                                                          "[default: the variant's]")
    arch.add_argument("--window", type=int, help="window side in tokens, every stage (scratch only, swin) "
                                                 "[default: the variant's, 7]")
    arch.add_argument("--frames", type=int, help="frames per clip (scratch only, video) [default: 8]")
    arch.add_argument("--tubelet", type=int, help="frames per token (scratch only, video) [default: 2]")
    arch.add_argument("--embed-dim", type=int, help="token width (scratch only; MLP width follows as 4x) "
                                                    "[default: the variant's]")
    arch.add_argument("--heads", dest="num_heads", type=parse_heads,
                      help="attention heads (scratch only); a Swin's per stage, e.g. 3,6,12,24 "
                           "[default: the variant's]")
    arch.add_argument("--mlp-dim", type=int, help="MLP hidden width (scratch only) [default: 4 x embed dim]")
    arch.add_argument("--pos-embed", choices=POS_EMBED_KINDS,
                      help="position embedding (the ViT paper's Appendix D.4 ablation): learned, sincos2d (the fixed "
                           "2-D sine-cosine table, not trained) or none; a Swin: none or learned (the original Swin's "
                           "absolute embedding) [default: learned from scratch, none for a Swin; with --init the "
                           "checkpoint's, which cannot change]")
    opt = p.add_argument_group("optimisation")
    opt.add_argument("--epochs", type=int, help=f"epochs [default: {d.epochs}]")
    opt.add_argument("--batch-size", type=int, help=f"images per step [default: {d.batch_size}]")
    opt.add_argument("--lr", type=float, help="peak AdamW learning rate [default: 5e-4 from scratch, 1e-4 with "
                                              "--init]")
    opt.add_argument("--weight-decay", type=float, help=f"AdamW weight decay (not on biases, norms, embeddings) "
                                                        f"[default: {d.weight_decay}]")
    opt.add_argument("--warmup-epochs", type=float, help=f"linear warmup before the cosine decay "
                                                         f"[default: {d.warmup_epochs}]")
    opt.add_argument("--label-smoothing", type=float, help=f"[default: {d.label_smoothing}]")
    opt.add_argument("--drop-path", type=float, help=f"stochastic depth rate of the last block "
                                                     f"[default: {d.drop_path}]")
    opt.add_argument("--augment", choices=("auto", "standard", "light", "none"),
                     help="training augmentation: standard = RandomResizedCrop(0.08-1) + flip, light = "
                          "RandomResizedCrop(0.6-1) + flip [default: auto = light up to 64 px, else standard]")
    opt.add_argument("--seed", type=int, help=f"seeds the weights, the held-out split, shuffling and augmentation "
                                              f"[default: {d.seed}]")
    run = p.add_argument_group("data and run")
    run.add_argument("--val-share", type=float, help=f"share of each class held out for validation when the "
                                                     f"folder has no val/ [default: {d.val_share}]")
    run.add_argument("--workers", type=int, help=f"data-loading processes (0: load in the main process) "
                                                 f"[default: {d.workers}]")
    run.add_argument("--device", help="auto, cpu, cuda, cuda:1, mps [default: auto = cuda when available]")
    run.add_argument("--download", action="store_true", default=None,
                     help="download CIFAR-10 into --data when it is not there (needs internet)")
    run.add_argument("--resume", action="store_true", default=None,
                     help="continue the run saved in NAME.last.pt next to --out, at the epoch it stopped, with "
                          "its optimizer and schedule state")
    run.add_argument("--snapshot-every", type=int, metavar="N",
                     help="also keep a checkpoint every N epochs, the first before any training step and the last "
                          "after the final epoch, in NAME.snapshots/ next to --out (for python -m viz.dynamics: "
                          "watch the model learn). docs/training.md's demonstration run (python -m vit.train.squares "
                          "data; 4 blocks of width 96, 600 images of 32x32, 40 epochs, --snapshot-every 1) takes "
                          "a few minutes on a 2-core CPU [default: 0, off]")
    p.set_defaults(**{k: None for k in ("epochs", "batch_size", "weight_decay", "warmup_epochs", "label_smoothing",
                                        "drop_path", "augment", "seed", "val_share", "workers", "device",
                                        "snapshot_every")})
    return p


def parse_args(argv: list[str] | None = None) -> tuple[TrainOptions, set[str]]:
    """Command line -> (options with defaults filled in, names of the options that were given explicitly)."""
    ns = vars(build_parser().parse_args(argv))
    explicit = {k for k, v in ns.items() if v is not None}
    opts = TrainOptions(**{k: v for k, v in ns.items() if v is not None})
    return opts, explicit
