"""Train or fine-tune a ViT on an image folder or CIFAR-10: ``python -m vit.train --data PATH --out weights/NAME.pt``.

The best epoch is saved with ``vit.save_checkpoint`` (config, class names and preprocessing inside), so
``vit.load``, the CLI and the app open it directly. From Python: ``fit(TrainOptions(data=..., out=...))``.
"""
from .options import TrainOptions
from .snapshots import SnapshotInfo, list_snapshots, snapshot_dir
from .trainer import RunFiles, TrainResult, fit

__all__ = ["RunFiles", "SnapshotInfo", "TrainOptions", "TrainResult", "fit", "list_snapshots", "snapshot_dir"]
