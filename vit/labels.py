"""Class names: ImageNet-1k from torchvision's own metadata, placeholders for anything else."""
from __future__ import annotations


def imagenet_labels() -> list[str]:
    """The 1000 ImageNet-1k class names in the standard index order (torchvision's _IMAGENET_CATEGORIES)."""
    from torchvision.models._meta import _IMAGENET_CATEGORIES
    return list(_IMAGENET_CATEGORIES)


def default_labels(num_classes: int) -> list[str]:
    """Names for a head of ``num_classes`` outputs without labels of its own: ImageNet-1k for 1000, else "class i"."""
    if num_classes == 1000:
        return imagenet_labels()
    return [f"class {i}" for i in range(num_classes)]
