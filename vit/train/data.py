"""Training data: an image folder (one sub-folder per class) or CIFAR-10, split into train and validation sets.

Every dataset here yields ``(PIL RGB image, class index)``; the tensors are made by the transforms in
``transforms.py``, so validation sees exactly the pixels the app's preprocessing gives the model.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from PIL import Image, ImageOps
from torch.utils.data import Dataset, Subset
from torchvision.datasets import CIFAR10
from torchvision.datasets.folder import IMG_EXTENSIONS, find_classes, make_dataset

CIFAR_FOLDER = "cifar-10-batches-py"      # torchvision's name for the python-batches folder
VAL_FOLDERS = ("val", "valid", "validation")


@dataclass
class TrainData:
    """The two splits and the class names (index i of a label is ``classes[i]``)."""
    train: Dataset
    val: Dataset
    classes: list[str]
    description: str  # one line for the log, e.g. "image folder shapes/ (train/ + val/): 4 classes, 96 train, 32 val"
    kind: str         # "folder" or "cifar10": picks the default image size


def open_data(path: str | Path, val_share: float, seed: int, download: bool = False) -> TrainData:
    """Find out what ``path`` holds and open it.

    - ``path/cifar-10-batches-py`` or that folder itself -> CIFAR-10 (its 50,000 train and 10,000 test images);
      with ``download`` a missing CIFAR-10 is fetched into ``path`` by torchvision.
    - ``path/train`` and ``path/val`` -> an image folder already split; the class names come from ``train/``
      (``train/`` alone: the held-out share comes from it).
    - otherwise ``path/<class>/<image>`` -> an image folder; a share ``val_share`` of each class is held out,
      chosen by ``seed`` (the same seed always holds out the same images).
    """
    path = Path(path).expanduser()
    if (path / "batches.meta").is_file() or (path / CIFAR_FOLDER).is_dir() or download:
        return open_cifar10(path, download)
    if not path.is_dir():
        raise FileNotFoundError(f"Training data not found: {str(path)!r} is not a folder! Expected an image folder "
                                f"with one sub-folder per class, or a folder holding {CIFAR_FOLDER}/ "
                                f"(add --download to fetch CIFAR-10 there when online).")
    train_dir = path / "train"
    val_dir = next((path / v for v in VAL_FOLDERS if (path / v).is_dir()), None)
    if train_dir.is_dir() and val_dir is not None:
        return open_split_folders(train_dir, val_dir)
    if train_dir.is_dir():  # train/ alone: hold out from it, rather than take "train" for a class
        return open_folder_with_holdout(train_dir, val_share, seed)
    return open_folder_with_holdout(path, val_share, seed)


def open_cifar10(path: Path, download: bool) -> TrainData:
    """CIFAR-10 through torchvision's loader; ``path`` may be the python-batches folder itself or its parent."""
    root = path.parent if (path / "batches.meta").is_file() else path
    if (path / "batches.meta").is_file() and path.name != CIFAR_FOLDER:
        raise ValueError(f"{str(path)!r} looks like CIFAR-10 python batches, but torchvision expects the folder to be "
                         f"named {CIFAR_FOLDER!r}! Rename it or pass its parent folder.")
    try:
        train = CIFAR10(str(root), train=True, download=download)
        val = CIFAR10(str(root), train=False, download=download)
    except RuntimeError as e:  # torchvision: "Dataset not found or corrupted. You can use download=True ..."
        raise FileNotFoundError(f"CIFAR-10 not usable in {str(root)!r}: {e} Expected {root / CIFAR_FOLDER}/ with "
                                f"data_batch_1…5, test_batch and batches.meta (add --download when online).") from e
    return TrainData(train, val, list(train.classes), f"CIFAR-10 in {root}: {len(train.classes)} classes, "
                     f"{len(train)} train, {len(val)} val (the test batch)", "cifar10")


class ImageFiles(Dataset):
    """``(path, class index)`` pairs read as upright RGB PIL images (EXIF orientation applied)."""

    def __init__(self, samples: list[tuple[str, int]]):
        self.samples = samples

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, i: int) -> tuple[Image.Image, int]:
        path, label = self.samples[i]
        with Image.open(path) as img:
            return ImageOps.exif_transpose(img).convert("RGB"), label


def scan_folder(root: Path, classes: list[str] | None = None) -> tuple[list[tuple[str, int]], list[str]]:
    """Images under ``root/<class>/`` (any depth) with their class indices; ``classes`` fixes the name -> index map."""
    found, _ = find_classes(str(root))  # sorted sub-folder names; raises FileNotFoundError when there are none
    classes = classes or found
    unknown = sorted(set(found) - set(classes))
    if unknown:
        raise ValueError(f"{root} has class folders that the training split lacks: {unknown}! "
                         f"Expected only {classes}.")
    index = {c: i for i, c in enumerate(classes)}
    samples = make_dataset(str(root), {c: index[c] for c in found}, extensions=IMG_EXTENSIONS,
                           allow_empty=False)  # FileNotFoundError names an empty class folder
    return samples, classes


def _check_classes(classes: list[str], root: Path) -> None:
    if len(classes) < 2:
        raise ValueError(f"{root} has {len(classes)} class folder(s) ({classes})! Expected at least 2 sub-folders, "
                         f"one per class, each holding that class's images.")


def open_split_folders(train_dir: Path, val_dir: Path) -> TrainData:
    """An image folder with its own ``train/`` and ``val/`` splits."""
    train_samples, classes = scan_folder(train_dir)
    _check_classes(classes, train_dir)
    val_samples, _ = scan_folder(val_dir, classes)
    root = train_dir.parent
    return TrainData(ImageFiles(train_samples), ImageFiles(val_samples), classes,
                     f"image folder {root} ({train_dir.name}/ + {val_dir.name}/): {len(classes)} classes, "
                     f"{len(train_samples)} train, {len(val_samples)} val", "folder")


def holdout_split(labels: list[int], val_share: float, seed: int) -> tuple[list[int], list[int]]:
    """Indices (train, val): from each class, ``round(val_share · n)`` images (at least 1, at most n-1) for validation.

    Per class, so that every class is validated; drawn with a generator seeded by ``seed`` alone, so the split does not
    depend on anything else the run does (a resumed run validates on the same images).
    """
    if not 0.0 < val_share < 1.0:
        raise ValueError(f"--val-share must be between 0 and 1 (exclusive) but got {val_share}!")
    gen = torch.Generator().manual_seed(seed)
    by_class: dict[int, list[int]] = {}
    for i, y in enumerate(labels):
        by_class.setdefault(y, []).append(i)
    train, val = [], []
    for y in sorted(by_class):
        idx = by_class[y]
        if len(idx) < 2:
            raise ValueError(f"Class index {y} has {len(idx)} image! Expected at least 2 per class to hold one out "
                             f"for validation (or give the folder train/ and val/ sub-folders).")
        n_val = min(max(1, round(val_share * len(idx))), len(idx) - 1)
        order = torch.randperm(len(idx), generator=gen).tolist()
        val += [idx[j] for j in order[:n_val]]
        train += [idx[j] for j in order[n_val:]]
    return sorted(train), sorted(val)


def open_folder_with_holdout(root: Path, val_share: float, seed: int) -> TrainData:
    """An image folder without splits: hold out ``val_share`` of each class for validation."""
    samples, classes = scan_folder(root)
    _check_classes(classes, root)
    train_idx, val_idx = holdout_split([y for _, y in samples], val_share, seed)
    files = ImageFiles(samples)
    return TrainData(Subset(files, train_idx), Subset(files, val_idx), classes,
                     f"image folder {root} ({val_share:.0%} of each class held out, seed {seed}): {len(classes)} "
                     f"classes, {len(train_idx)} train, {len(val_idx)} val", "folder")
