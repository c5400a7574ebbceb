"""Per-checkpoint image preprocessing: the exact pixels a model sees, and the tensor made from them.

A checkpoint is only as good as the preprocessing it was trained with: Google's AugReg ViTs expect
pixels scaled to [-1, 1] (mean = std = 0.5), torchvision's and DeiT's expect ImageNet mean/std. The
steps mirror torchvision's ``Resize(short side) -> CenterCrop -> ToTensor -> Normalize`` on PIL images.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch
from PIL import Image, ImageOps

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
INCEPTION_MEAN = (0.5, 0.5, 0.5)  # Google's ViT/AugReg convention: pixels mapped to [-1, 1]
INCEPTION_STD = (0.5, 0.5, 0.5)
OPENAI_CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)  # the mean and std of CLIP's training images
OPENAI_CLIP_STD = (0.26862954, 0.26130258, 0.27577711)

_RESAMPLE = {"bicubic": Image.Resampling.BICUBIC, "bilinear": Image.Resampling.BILINEAR,
             "nearest": Image.Resampling.NEAREST}


@dataclass(frozen=True)
class Preprocess:
    resize: int = 256                               # short side after resizing, in pixels
    crop: tuple[int, int] = (224, 224)              # (H, W) of the center crop the model sees
    interpolation: str = "bicubic"                  # "bicubic", "bilinear" or "nearest"
    mean: tuple[float, float, float] = IMAGENET_MEAN  # per-channel mean subtracted from pixels in [0, 1]
    std: tuple[float, float, float] = IMAGENET_STD    # per-channel std the result is divided by

    def __post_init__(self):
        crop = (self.crop, self.crop) if isinstance(self.crop, int) else tuple(int(c) for c in self.crop)
        object.__setattr__(self, "crop", crop)
        object.__setattr__(self, "mean", tuple(float(m) for m in self.mean))
        object.__setattr__(self, "std", tuple(float(s) for s in self.std))
        if len(crop) != 2 or min(crop) < 1 or int(self.resize) < 1:
            raise ValueError(f"Preprocess needs a positive resize and crop (H, W)! Got resize={self.resize}, crop={self.crop}.")
        if self.interpolation not in _RESAMPLE:
            raise ValueError(f"Unknown interpolation {self.interpolation!r}! Expected one of {sorted(_RESAMPLE)}.")
        if len(self.mean) != 3 or len(self.std) != 3 or min(self.std) <= 0:
            raise ValueError(f"mean and std need 3 values each, std > 0! Got mean={self.mean}, std={self.std}.")

    def crop_image(self, image: Image.Image) -> Image.Image:
        """Any PIL image -> the RGB image of size crop (W, H) that the model sees.

        EXIF orientation is applied, any mode becomes RGB (transparency over white), the short side is
        resized to ``resize`` (enlarged further only if the crop would not fit, e.g. a wide crop on a
        portrait photo), then the center is cropped as torchvision's CenterCrop does.
        """
        image = upright_rgb(image)
        size = self.resized_size(image.size)
        if size != image.size:
            image = image.resize(size, _RESAMPLE[self.interpolation])
        return image.crop(self._crop_in_resized(size))

    def resized_size(self, size: tuple[int, int]) -> tuple[int, int]:
        """(width, height) of an upright image -> its (width, height) after the resize step, before the crop."""
        w, h = size
        crop_h, crop_w = self.crop
        scale = max(self.resize / min(w, h), crop_h / h, crop_w / w)
        if min(w, h) * scale == self.resize:  # the usual case: torchvision's rounding of the long side
            return (self.resize, int(self.resize * h / w)) if w <= h else (int(self.resize * w / h), self.resize)
        return max(crop_w, round(w * scale)), max(crop_h, round(h * scale))

    def _crop_in_resized(self, resized: tuple[int, int]) -> tuple[int, int, int, int]:
        """The centre crop (left, top, right, bottom) in pixels of the resized image, as torchvision's CenterCrop."""
        w, h = resized
        crop_h, crop_w = self.crop
        top, left = int(round((h - crop_h) / 2.0)), int(round((w - crop_w) / 2.0))
        return left, top, left + crop_w, top + crop_h

    def crop_box(self, size: tuple[int, int]) -> tuple[float, float, float, float]:
        """The part of an upright (EXIF-applied) photo of ``size`` = (width, height) that the model sees, as
        (left, top, right, bottom) in that photo's pixel coordinates (floats: the resize scales them).

        Two checkpoints with different preprocessing see different parts of the same photo; their maps can only be
        compared on the overlap of these boxes.
        """
        resized = self.resized_size(size)
        sx, sy = size[0] / resized[0], size[1] / resized[1]
        left, top, right, bottom = self._crop_in_resized(resized)
        return left * sx, top * sy, right * sx, bottom * sy

    def to_tensor(self, image: Image.Image) -> torch.Tensor:
        """Cropped RGB image -> normalised float tensor (1, 3, H, W)."""
        pixels = torch.from_numpy(np.asarray(image.convert("RGB"), dtype=np.float32) / 255.0)  # (H, W, 3) in [0, 1]
        x = pixels.permute(2, 0, 1)                                                             # (3, H, W)
        mean = torch.tensor(self.mean).view(3, 1, 1)
        std = torch.tensor(self.std).view(3, 1, 1)
        return ((x - mean) / std).unsqueeze(0)

    def __call__(self, image: Image.Image) -> torch.Tensor:
        """PIL image -> (1, 3, H, W) model input."""
        return self.to_tensor(self.crop_image(image))

    def to_dict(self) -> dict:
        d = asdict(self)
        return {**d, "crop": list(self.crop), "mean": list(self.mean), "std": list(self.std)}

    @classmethod
    def from_dict(cls, d: dict) -> "Preprocess":
        known = {"resize", "crop", "interpolation", "mean", "std"}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"Unknown preprocessing fields {sorted(unknown)}! Expected some of {sorted(known)}.")
        return cls(**d)

    @classmethod
    def for_crop(cls, crop: tuple[int, int], crop_pct: float = 0.875, **kw) -> "Preprocess":
        """timm/torchvision convention: resize the short side to crop/crop_pct, then crop (224 -> 256)."""
        crop = (crop, crop) if isinstance(crop, int) else tuple(crop)
        return cls(resize=int(min(crop) / crop_pct), crop=crop, **kw)


def upright_rgb(image: Image.Image) -> Image.Image:
    """The photo as every model sees it before resizing: EXIF orientation applied, any mode made RGB."""
    return to_rgb(ImageOps.exif_transpose(image))


def to_rgb(image: Image.Image) -> Image.Image:
    """Any PIL mode -> RGB. Transparent pixels are composited over white; 16-bit and float images are rescaled."""
    if image.mode == "RGB":
        return image
    if image.mode in ("I", "I;16", "I;16B", "I;16L", "I;16N", "F"):
        a = np.asarray(image, dtype=np.float64)
        if image.mode == "F":
            a = a * 255.0 if a.max(initial=0) <= 1.0 else a
        elif a.max(initial=0) > 255:
            a = a / 257.0  # 16-bit range 0..65535 -> 0..255
        return Image.fromarray(np.clip(a, 0, 255).astype(np.uint8), "L").convert("RGB")
    if image.mode == "P":
        image = image.convert("RGBA")
    if image.mode in ("RGBA", "LA", "PA", "RGBa", "La"):
        rgba = image.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(background, rgba).convert("RGB")
    return image.convert("RGB")
