"""Class names: ImageNet-1k from the list shipped beside this file, placeholders for anything else."""
from __future__ import annotations

from functools import cache
from pathlib import Path

IMAGENET_CLASSES = Path(__file__).with_name("imagenet_classes.txt")  # torchvision's _IMAGENET_CATEGORIES, one per line
IMAGENET_WNIDS = Path(__file__).with_name("imagenet_wnids.txt")  # the WordNet IDs in the same order (sorted)


@cache
def _imagenet_classes() -> tuple[str, ...]:
    # A text file rather than torchvision's own list: importing torchvision costs a server ~170 MB of RSS.
    # tests/checkpoints/test_preprocess.py checks the file against torchvision's list.
    return tuple(IMAGENET_CLASSES.read_text(encoding="utf-8").splitlines())


def imagenet_labels() -> list[str]:
    """The 1000 ImageNet-1k class names in the standard index order (torchvision's _IMAGENET_CATEGORIES)."""
    return list(_imagenet_classes())


@cache
def imagenet_wnids() -> tuple[str, ...]:
    """The WordNet IDs of the 1000 ImageNet-1k classes in index order (``n01440764`` is class 0, tench): the
    folder names of ImageNet's own train/ and val/ layouts. tests/test_dataset_files.py checks them against timm's."""
    return tuple(IMAGENET_WNIDS.read_text(encoding="utf-8").split())


def default_labels(num_classes: int) -> list[str]:
    """Names for a head of ``num_classes`` outputs without labels of its own: ImageNet-1k for 1000, else "class i"."""
    if num_classes == 1000:
        return imagenet_labels()
    return [f"class {i}" for i in range(num_classes)]
