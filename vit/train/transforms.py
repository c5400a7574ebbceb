"""Image -> tensor for training (augmented) and validation (the checkpoint's own ``Preprocess``, as the app does it)."""
from __future__ import annotations

import torch
import torchvision.transforms as T
from PIL import Image

from ..preprocess import Preprocess

# "auto" picks "light" for images of at most this many pixels a side: a crop of 8% of a 32×32 image keeps nothing.
LIGHT_MAX_SIDE = 64
AUGMENTATIONS = ("auto", "standard", "light", "none")


class EvalTransform:
    """PIL image -> (3, H, W) through ``Preprocess``: resize, center crop, normalize, exactly like inference."""

    def __init__(self, preprocess: Preprocess):
        self.preprocess = preprocess

    def __call__(self, img: Image.Image) -> torch.Tensor:
        return self.preprocess(img)[0]


def resolve_augment(augment: str, preprocess: Preprocess) -> str:
    """The augmentation strength to use: ``auto`` -> ``light`` for small images, ``standard`` otherwise."""
    if augment not in AUGMENTATIONS:
        raise ValueError(f"Unknown augmentation {augment!r}! Expected one of {AUGMENTATIONS}.")
    if augment == "auto":
        return "light" if max(preprocess.crop) <= LIGHT_MAX_SIDE else "standard"
    return augment


def train_transform(augment: str, preprocess: Preprocess):
    """Random crop + horizontal flip, then the checkpoint's normalization; PIL image -> (3, H, W).

    ``standard``: RandomResizedCrop with scale (0.08, 1), the usual ImageNet recipe.
    ``light``: RandomResizedCrop with scale (0.6, 1) and near-square ratios, for small images or few of them.
    ``none``: the validation transform (no randomness).
    """
    augment = resolve_augment(augment, preprocess)
    if augment == "none":
        return EvalTransform(preprocess)
    scale, ratio = ((0.08, 1.0), (3 / 4, 4 / 3)) if augment == "standard" else ((0.6, 1.0), (0.9, 1.1))
    interpolation = T.InterpolationMode(preprocess.interpolation)
    return T.Compose([
        T.RandomResizedCrop(preprocess.crop, scale=scale, ratio=ratio, interpolation=interpolation),
        T.RandomHorizontalFlip(),
        T.ToTensor(),
        T.Normalize(preprocess.mean, preprocess.std),
    ])


class Transformed(torch.utils.data.Dataset):
    """A ``(PIL image, label)`` dataset with ``transform`` applied to the image."""

    def __init__(self, dataset, transform):
        self.dataset, self.transform = dataset, transform

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        img, label = self.dataset[i]
        return self.transform(img), label
