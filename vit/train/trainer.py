"""``fit(options)``: one training run from data to checkpoints, resumable after any finished epoch.

Files next to ``--out weights/NAME.pt``:
  NAME.pt            the best epoch (validation accuracy), a normal checkpoint for vit.load and the app
  NAME.last.pt       the latest epoch, also a normal checkpoint, plus what ``--resume`` needs in its ``extra``
  NAME.metrics.csv   one row per epoch;  NAME.curves.png  loss and accuracy curves
  NAME.snapshots/    with --snapshot-every N: a checkpoint before any step and every N epochs (see snapshots.py)

Determinism: every epoch re-seeds torch from (seed, epoch) and shuffles with its own generator, so an epoch's
batches, augmentations and dropout depend only on the seed, the epoch number and the weights it starts from.
A resumed run therefore repeats exactly what the uninterrupted run would have done (bit for bit on CPU with
the same --workers; on CUDA up to the nondeterminism of fused kernels).
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from torch.utils.data import DataLoader

from ..checkpoints.files import read_file, save_checkpoint
from ..checkpoints.load import load
from ..device import pick_device
from ..model import VisionTransformer
from ..preprocess import Preprocess
from ..video_file import VideoPreprocess
from .build import build_model, fine_tune_model, param_groups, scratch_config, scratch_preprocess, \
    scratch_video_preprocess, swin_scratch_config, video_scratch_config
from .data import TrainData, open_data
from .video_data import VideoTransform, open_video_data
from .loop import Precision, evaluate, train_one_epoch
from .options import TrainOptions, merge_resumed, resolve
from .report import best_row, write_curves, write_metrics
from .schedule import WarmupCosine
from .snapshots import is_snapshot_epoch, save_snapshot, snapshot_dir
from .transforms import EvalTransform, Transformed, resolve_augment, train_transform


@dataclass(frozen=True)
class RunFiles:
    best: Path
    last: Path
    metrics: Path
    curves: Path

    @classmethod
    def next_to(cls, out: str | Path) -> "RunFiles":
        """weights/NAME.pt -> NAME.pt, NAME.last.pt, NAME.metrics.csv, NAME.curves.png in weights/."""
        out = Path(out)
        if out.suffix not in (".pt", ".pth"):
            raise ValueError(f"--out must name a .pt file (the app lists weights/*.pt) but got {str(out)!r}! "
                             f"Expected e.g. weights/NAME.pt.")
        return cls(out, out.with_name(f"{out.stem}.last.pt"), out.with_name(f"{out.stem}.metrics.csv"),
                   out.with_name(f"{out.stem}.curves.png"))


@dataclass
class TrainResult:
    options: TrainOptions        # with every default filled in
    history: list[dict]          # one row per epoch: epoch, lr, train_loss, train_acc, val_loss, val_acc, seconds
    best: dict                   # the history row of the saved best epoch
    files: RunFiles
    model: VisionTransformer     # weights after the last epoch (eval mode), identical to NAME.last.pt
    labels: list[str]
    preprocess: Preprocess


@dataclass
class _Start:
    """Where a run starts: a fresh model, or the state saved by an interrupted run."""
    options: TrainOptions
    model: VisionTransformer
    preprocess: Preprocess
    data: TrainData
    saved: dict | None = None    # the interrupted run's extra["train"]
    note: str = ""
    assumptions: tuple[str, ...] = ()  # what loading --init assumed rather than read (``LoadedModel.assumptions``)


def epoch_seed(seed: int, epoch: int) -> int:
    """The torch seed of one epoch (0-based): a function of the run's seed and the epoch number only."""
    return (seed + 1) * 1_000_003 + epoch


def _explicit_from_defaults(opts: TrainOptions) -> set[str]:
    """For calls from Python: the options that differ from the defaults count as given."""
    defaults = TrainOptions()
    return {f.name for f in dataclasses.fields(opts) if getattr(opts, f.name) != getattr(defaults, f.name)}


def _open_data(opts: TrainOptions) -> TrainData:
    """A folder of videos for --arch video, else an image folder or CIFAR-10."""
    if opts.arch == "video":
        return open_video_data(opts.data, opts.val_share, opts.seed)
    return open_data(opts.data, opts.val_share, opts.seed, opts.download)


def _fresh_start(opts: TrainOptions) -> _Start:
    if not opts.data:
        raise ValueError("--data is required! Expected an image folder or a CIFAR-10 folder.")
    data = _open_data(opts)
    num_classes = len(data.classes)
    if opts.init:
        pretrained = load(opts.init, **({"img_size": opts.img_size} if opts.img_size else {}))
        opts = resolve(opts, data.kind, pretrained.config)
        torch.manual_seed(opts.seed)  # the new head's initialisation
        model = fine_tune_model(pretrained.model, num_classes, opts.drop_path)
        note = f"fine-tuning {pretrained.name} ({pretrained.source}) with a new {num_classes}-class head"
        return _Start(opts, model, pretrained.preprocess.choose(opts.preprocess), data, note=note,
                      assumptions=tuple(pretrained.assumptions))
    opts = resolve(opts, data.kind, None)
    torch.manual_seed(opts.seed)
    if opts.arch == "swin":
        cfg = swin_scratch_config(opts.variant, num_classes, opts.img_size, opts.patch_size, opts.drop_path,
                                  opts.depths, opts.embed_dim, opts.num_heads, opts.window, opts.pos_embed)
        note = (f"Swin {opts.variant} from scratch (blocks per stage {cfg.depths}, width {cfg.embed_dim}, heads "
                f"{cfg.num_heads}, windows of {cfg.window_size[0]}, {opts.pos_embed} absolute position embedding)")
        model = build_model(cfg)
        model.architecture(*cfg.img_size)        # a size the stages cannot take fails now, with sizes that work
    elif opts.arch == "video":
        cfg = video_scratch_config(opts.variant, num_classes, opts.img_size, opts.patch_size, opts.drop_path,
                                   opts.frames, opts.tubelet, opts.depth, opts.embed_dim, opts.num_heads, opts.mlp_dim)
        note = (f"video transformer {opts.variant} from scratch ({cfg.num_frames} frames in tubelets of "
                f"{cfg.tubelet_size}, depth {cfg.depth}, width {cfg.embed_dim}, {cfg.num_heads} heads, joint "
                f"space-time attention)")
        return _Start(opts, build_model(cfg), scratch_video_preprocess(opts.img_size, opts.frames), data, note=note)
    else:
        cfg = scratch_config(opts.variant, num_classes, opts.img_size, opts.patch_size, opts.drop_path, opts.depth,
                             opts.embed_dim, opts.num_heads, opts.mlp_dim, opts.pos_embed)
        note = (f"ViT {opts.variant} from scratch (depth {cfg.depth}, width {cfg.embed_dim}, {cfg.num_heads} heads, "
                f"{cfg.pos_embed_kind} position embedding)")
        model = build_model(cfg)
    return _Start(opts, model, scratch_preprocess(opts.img_size).choose(opts.preprocess), data, note=note)


def _resumed_start(given: TrainOptions, explicit: set[str], files: RunFiles) -> _Start:
    if not files.last.is_file():
        raise FileNotFoundError(f"Nothing to resume: {files.last} does not exist! It is written after every epoch of "
                                f"a run with --out {files.best}; start without --resume.")
    saved = read_file(files.last).get("extra", {}).get("train")
    if not isinstance(saved, dict) or "optimizer" not in saved:
        raise ValueError(f"{files.last} holds no training state to resume from! Expected a NAME.last.pt written "
                         f"by python -m vit.train.")
    opts = merge_resumed(saved["options"], given, explicit)
    data = _open_data(opts)
    last = load(str(files.last))
    if list(last.labels) != list(data.classes):
        raise ValueError(f"The classes in {opts.data} changed since the interrupted run! Expected {last.labels} "
                         f"but found {data.classes}.")
    note = f"resuming {files.last} after epoch {saved['epoch']} of {opts.epochs}"
    return _Start(opts, last.model, last.preprocess, data, saved, note)


def _loader(dataset, opts: TrainOptions, device: torch.device, generator: torch.Generator | None = None):
    """Shuffled when given a generator (training), in order otherwise (validation)."""
    return DataLoader(dataset, batch_size=opts.batch_size, shuffle=generator is not None, generator=generator,
                      num_workers=opts.workers, pin_memory=device.type == "cuda")


def check_numbers(opts: TrainOptions) -> None:
    """Refuse option values no run can use, before anything is read or written."""
    problems = [f"{name} must be {rule} but got {value}" for name, value, ok, rule in (
        ("--epochs", opts.epochs, opts.epochs >= 1, "at least 1"),
        ("--batch-size", opts.batch_size, opts.batch_size >= 1, "at least 1"),
        ("--workers", opts.workers, opts.workers >= 0, "at least 0"),
        ("--lr", opts.lr, opts.lr is None or opts.lr > 0, "positive"),
        ("--weight-decay", opts.weight_decay, opts.weight_decay >= 0, "at least 0"),
        ("--warmup-epochs", opts.warmup_epochs, opts.warmup_epochs >= 0, "at least 0"),
        ("--label-smoothing", opts.label_smoothing, 0 <= opts.label_smoothing < 1, "in [0, 1)"),
        ("--drop-path", opts.drop_path, 0 <= opts.drop_path < 1, "in [0, 1)"),
        ("--snapshot-every", opts.snapshot_every, opts.snapshot_every >= 0, "at least 0 (0: no snapshots)"),
    ) if not ok]
    if problems:
        raise ValueError("; ".join(problems) + "!")


@dataclass
class _Optimization:
    optimizer: torch.optim.AdamW
    scheduler: torch.optim.lr_scheduler.LambdaLR
    precision: Precision
    steps_per_epoch: int

    def state(self) -> dict:
        return {"optimizer": self.optimizer.state_dict(), "scheduler": self.scheduler.state_dict(),
                "scaler": self.precision.scaler.state_dict() if self.precision.scaler is not None else None}


def _optimization(model: VisionTransformer, opts: TrainOptions, num_train: int, device: torch.device,
                  saved: dict | None) -> _Optimization:
    """AdamW with the warmup + cosine schedule over the whole run; an interrupted run's states loaded back in."""
    steps_per_epoch = math.ceil(num_train / opts.batch_size)
    optimizer = torch.optim.AdamW(param_groups(model, opts.weight_decay), lr=opts.lr)
    schedule = WarmupCosine(opts.epochs * steps_per_epoch, round(opts.warmup_epochs * steps_per_epoch))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    precision = Precision.for_device(device)
    if saved is not None:
        if saved["scheduler"]["lr_lambdas"][0] != vars(schedule):
            raise ValueError(f"The training data changed since the interrupted run! Its schedule had "
                             f"{saved['scheduler']['lr_lambdas'][0]}, the data now gives {vars(schedule)}.")
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        if precision.scaler is not None and saved.get("scaler"):
            precision.scaler.load_state_dict(saved["scaler"])
    return _Optimization(optimizer, scheduler, precision, steps_per_epoch)


def _print_plan(start: _Start, model: VisionTransformer, optim: _Optimization, files: RunFiles) -> None:
    opts, cfg = start.options, model.cfg
    n_params = sum(p.numel() for p in model.parameters())
    print(f"data:   {start.data.description}\n"
          f"model:  {start.note}; {n_params / 1e6:.2f}M parameters; {cfg.img_size[0]}x{cfg.img_size[1]} input, "
          f"patch {cfg.patch_size} ({cfg.grid[0] * cfg.grid[1]} patches)\n"
          f"train:  {opts.epochs} epochs x {optim.steps_per_epoch} steps of {opts.batch_size}; AdamW lr {opts.lr:g}, "
          f"weight decay {opts.weight_decay:g}, warmup {opts.warmup_epochs:g} epochs then cosine; label smoothing "
          f"{opts.label_smoothing:g}; drop path {opts.drop_path:g}; "
          f"{'no' if opts.arch == 'video' else resolve_augment(opts.augment, start.preprocess)} augmentation; "
          f"seed {opts.seed}\n"
          f"device: {optim.precision.device} ({optim.precision.name})\n"
          f"files:  {files.best} (best), {files.last}, {files.metrics}, {files.curves}"
          + (f"\n        {snapshot_dir(files.best)}/ (a snapshot before training, then every {opts.snapshot_every} "
             f"epoch{'s' if opts.snapshot_every > 1 else ''})" if opts.snapshot_every else "")
          + "".join(f"\nassumed: {sentence}" for sentence in start.assumptions), flush=True)


def _save_epoch(start: _Start, model: VisionTransformer, history: list[dict], optim: _Optimization,
                files: RunFiles) -> bool:
    """After an epoch: the best checkpoint (if this epoch is best), the resumable last one, the report.
    Returns whether this epoch is the best so far."""
    opts, data, row = start.options, start.data, history[-1]
    is_best = best_row(history) is row
    if is_best:
        save_checkpoint(files.best, model, data.classes, start.preprocess, extra={"train": {
            "options": opts.to_dict(), "epoch": row["epoch"], "metrics": row, "data": data.description}})
    save_checkpoint(files.last, model, data.classes, start.preprocess, extra={"train": {
        "options": opts.to_dict(), "epoch": row["epoch"], "history": history, "data": data.description,
        **optim.state()}})
    write_metrics(files.metrics, history)
    write_curves(files.curves, history, title=files.best.stem)
    if is_snapshot_epoch(row["epoch"], opts.snapshot_every, opts.epochs):
        _snapshot(start, model, files, row["epoch"], row)
    return is_best


def _snapshot(start: _Start, model: VisionTransformer, files: RunFiles, epoch: int, metrics: dict) -> None:
    """Keep the model after ``epoch`` epochs (0: the initialisation) in NAME.snapshots/."""
    save_snapshot(snapshot_dir(files.best), model, start.data.classes, start.preprocess, epoch, metrics["val_acc"],
                  metrics["val_loss"], files.best.stem,
                  run={"options": start.options.to_dict(), "data": start.data.description})


def fit(opts: TrainOptions, explicit: set[str] | None = None) -> TrainResult:
    """Train as ``opts`` says and write the run's files (see the module docstring). ``explicit``: the options
    given on the command line (checked against the saved run on --resume); from Python, the non-defaults."""
    files = RunFiles.next_to(opts.out)
    explicit = _explicit_from_defaults(opts) if explicit is None else explicit
    check_numbers(opts)
    pick_device(opts.device)  # fail fast on a bad --device, before reading data or checkpoints
    start = _resumed_start(opts, explicit, files) if opts.resume else _fresh_start(opts)
    opts, data = start.options, start.data
    device = pick_device(opts.device)
    model = start.model.to(device)
    optim = _optimization(model, opts, len(data.train), device, start.saved)
    if isinstance(start.preprocess, VideoPreprocess):     # clips: the same frames as inference, no augmentation
        train_set = Transformed(data.train, VideoTransform(start.preprocess))
        val_loader = _loader(Transformed(data.val, VideoTransform(start.preprocess)), opts, device)
    else:
        train_set = Transformed(data.train, train_transform(opts.augment, start.preprocess))
        val_loader = _loader(Transformed(data.val, EvalTransform(start.preprocess)), opts, device)
    history = list(start.saved["history"]) if start.saved else []
    _print_plan(start, model, optim, files)
    if opts.snapshot_every and not history:  # the initialisation, validated, before any step (changes no RNG state
        # the run uses: every epoch re-seeds torch)
        _snapshot(start, model, files, 0, evaluate(model, val_loader, optim.precision, desc="validation at init"))

    for epoch in range(len(history), opts.epochs):
        torch.manual_seed(epoch_seed(opts.seed, epoch))
        loader = _loader(train_set, opts, device, torch.Generator().manual_seed(epoch_seed(opts.seed, epoch)))
        tic = time.perf_counter()
        row = {"epoch": epoch + 1}
        row.update(train_one_epoch(model, loader, optim.optimizer, optim.scheduler, optim.precision,
                                   opts.label_smoothing, desc=f"epoch {epoch + 1}/{opts.epochs}"))
        row.update(evaluate(model, val_loader, optim.precision, desc="validation"))
        row["seconds"] = round(time.perf_counter() - tic, 3)
        history.append(row)
        is_best = _save_epoch(start, model, history, optim, files)
        print(f"epoch {epoch + 1}/{opts.epochs}: train loss {row['train_loss']:.4f} acc {row['train_acc']:.3f} | "
              f"val loss {row['val_loss']:.4f} acc {row['val_acc']:.3f}{'  * best, saved' if is_best else ''} "
              f"({row['seconds']:.1f}s)", flush=True)

    model.eval()
    return TrainResult(opts, history, best_row(history), files, model, list(data.classes), start.preprocess)
