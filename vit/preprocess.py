"""Per-checkpoint image preprocessing: the exact pixels a model sees, and the tensor made from them.

A checkpoint is only as good as the preprocessing it was trained and evaluated with, and sources differ:
torchvision and timm resize the shorter side and cut out the centre (timm's ``crop_pct`` says how much of it:
224 / 0.9 = 248 → 224), Hugging Face's ViT, BEiT and SigLIP processors squash the whole photo to H × W, timm's
``border`` mode fits the photo inside and pads it. One ``Preprocess`` describes any of them
(``vit.checkpoints.pipelines`` reads each source's own settings into one), and ``choose`` gives the alternative
a user may ask for: ``"own"`` (the source's), ``"crop"`` (keep the aspect ratio, cut out the centre) or
``"squash"`` (the whole photo stretched to the model's input).

Each step is done as the sources do it on PIL images: PIL's resampling filters, torchvision's truncation of the
longer side, timm's rounding of both sides (ResizeKeepRatio), torchvision's or Hugging Face's centre offset,
padding, then pixels × rescale, minus mean, over std, in float32.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

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
             "nearest": Image.Resampling.NEAREST, "lanczos": Image.Resampling.LANCZOS,
             "box": Image.Resampling.BOX, "hamming": Image.Resampling.HAMMING}

# How the photo is resized before the centre crop (``Preprocess.resize_mode``).
RESIZE_MODES = {
    "shorter": "the shorter side becomes `resize` pixels, the longer one keeps the aspect ratio, truncated "
               "(torchvision's Resize(int), Hugging Face's shortest_edge, timm's center mode)",
    "cover": "the aspect ratio kept, both sides rounded, just covering `resize` (H, W) (timm's ResizeKeepRatio, "
             "its center mode for a non-square size)",
    "squash": "stretched to `resize` (H, W) whatever the photo's aspect ratio (Hugging Face's height and width, "
              "timm's squash mode)",
    "fit": "the aspect ratio kept, both sides rounded, just fitting inside `resize` (H, W); the crop pads what is "
           "missing (timm's border mode, open_clip's longest)",
    "none": "not resized (Hugging Face's do_resize false)",
    "patches": "the aspect ratio kept, each side rounded up to a multiple of the patch `patch`, as large as fits in "
               "at most `resize` patches; nothing is cut away and the input's shape follows the photo (NaFlex: "
               "Hugging Face's Siglip2ImageProcessor, timm's ResizeToSequence)",
}
# Where the centre crop starts when (size - crop) is odd, or negative (the crop then pads) (``Preprocess.centre``).
CENTRES = {
    "round": "round((size - crop) / 2) half to even; a crop larger than the image pads (crop - size) // 2 before "
             "(torchvision's CenterCrop, timm, open_clip)",
    "floor": "(size - crop) // 2, also when negative (Hugging Face's center_crop)",
    "start": "0: the photo at the top left, a crop larger than it padded after (SAM's ResizeLongestSide and pad)",
}
# What a user may ask for instead of a checkpoint's own preprocessing (``Preprocess.choose``).
CHOICES = ("own", "crop", "squash")


@dataclass(frozen=True)
class Preprocess:
    resize: int | tuple[int, int] = 256             # "shorter": the shorter side in pixels; else the (H, W) target
    crop: tuple[int, int] = (224, 224)              # (H, W) of the centre crop: the model's input
    interpolation: str = "bicubic"                  # PIL filter: bicubic, bilinear, nearest, lanczos, box, hamming
    mean: tuple[float, float, float] = IMAGENET_MEAN  # per-channel mean subtracted from the rescaled pixels
    std: tuple[float, float, float] = IMAGENET_STD    # per-channel std the result is divided by
    resize_mode: str = "shorter"                    # how the photo is resized, one of RESIZE_MODES
    rescale: float = 1 / 255                        # pixel values 0…255 times this (Hugging Face's rescale_factor)
    centre: str = "round"                           # the crop's offset for odd or negative margins, one of CENTRES
    fill: tuple[int, int, int] = (0, 0, 0)          # RGB 0…255 of the padding where the crop reaches past the photo
    patch: int | None = None                        # "patches": the model's patch side; the input's sides are multiples

    def __post_init__(self):
        def pair(value, name: str) -> tuple[int, int]:
            v = (value, value) if isinstance(value, (int, np.integer)) else tuple(value)
            if len(v) != 2 or not all(isinstance(x, (int, np.integer)) and x >= 1 for x in v):
                raise ValueError(f"Preprocess {name} must be a positive size (H, W)! Got {name}={value!r}.")
            return int(v[0]), int(v[1])

        if self.resize_mode not in RESIZE_MODES:
            raise ValueError(f"Unknown resize_mode {self.resize_mode!r}! Expected one of {list(RESIZE_MODES)}.")
        if self.resize_mode in ("shorter", "patches"):
            what = "pixels (the shorter side)" if self.resize_mode == "shorter" else "patches (the most the input has)"
            if not isinstance(self.resize, (int, np.integer)) or self.resize < 1:
                raise ValueError(f"Preprocess with resize_mode {self.resize_mode!r} needs resize as a positive number "
                                 f"of {what}! Got resize={self.resize!r}.")
            object.__setattr__(self, "resize", int(self.resize))
            if self.resize_mode == "patches" and not (isinstance(self.patch, (int, np.integer)) and self.patch >= 1):
                raise ValueError(f"Preprocess with resize_mode 'patches' needs patch, the model's patch side in "
                                 f"pixels! Got patch={self.patch!r}.")
        else:
            object.__setattr__(self, "resize", pair(self.resize, "resize"))
        object.__setattr__(self, "crop", pair(self.crop, "crop"))
        object.__setattr__(self, "mean", tuple(float(m) for m in self.mean))
        object.__setattr__(self, "std", tuple(float(s) for s in self.std))
        object.__setattr__(self, "fill", tuple(int(c) for c in self.fill))
        object.__setattr__(self, "rescale", float(self.rescale))
        if self.interpolation not in _RESAMPLE:
            raise ValueError(f"Unknown interpolation {self.interpolation!r}! Expected one of {sorted(_RESAMPLE)}.")
        if len(self.mean) != 3 or len(self.std) != 3 or min(self.std) <= 0:
            raise ValueError(f"mean and std need 3 values each, std > 0! Got mean={self.mean}, std={self.std}.")
        if self.centre not in CENTRES:
            raise ValueError(f"Unknown centre {self.centre!r}! Expected one of {list(CENTRES)}.")
        if not self.rescale > 0:
            raise ValueError(f"rescale must be a positive factor (1/255 maps pixels to [0, 1])! Got {self.rescale}.")
        if len(self.fill) != 3 or not all(0 <= c <= 255 for c in self.fill):
            raise ValueError(f"fill must be an RGB colour, 3 values in 0…255! Got fill={self.fill}.")

    # --- geometry: where the photo's pixels go ---

    def resized_size(self, size: tuple[int, int]) -> tuple[int, int]:
        """(width, height) of an upright photo -> its (width, height) after the resize step, before the crop."""
        w, h = size
        if self.resize_mode == "none":
            return w, h
        if self.resize_mode == "patches":
            height, width = size_for_patches(h, w, self.patch, self.resize)
            return width, height
        if self.resize_mode == "shorter":  # torchvision's _compute_resized_output_size (Hugging Face's too)
            short, long = min(w, h), max(w, h)
            if short == self.resize:
                return w, h
            new_long = int(self.resize * long / short)
            return (self.resize, new_long) if w <= h else (new_long, self.resize)
        H, W = self.resize
        if self.resize_mode == "squash":
            return W, H
        ratio_h, ratio_w = h / H, w / W  # timm's ResizeKeepRatio: the ratio that covers (or fits), sides rounded
        ratio = min(ratio_h, ratio_w) if self.resize_mode == "cover" else max(ratio_h, ratio_w)
        return round(w / ratio), round(h / ratio)

    def input_size(self, size: tuple[int, int]) -> tuple[int, int]:
        """The model input (H, W) made from an upright photo of ``size`` = (width, height): ``crop``, except for
        "patches", whose input is the whole resized photo (its shape follows the photo's aspect ratio)."""
        if self.resize_mode == "patches":
            w, h = self.resized_size(size)
            return h, w
        return self.crop

    @property
    def varies(self) -> bool:
        """Whether the model input's shape depends on the photo ("patches": each photo's own grid); ``crop`` is then
        the input of a square photo."""
        return self.resize_mode == "patches"

    def _crop_in_resized(self, resized: tuple[int, int]) -> tuple[int, int, int, int]:
        """The centre crop (left, top, right, bottom) in pixels of the resized image; it reaches past the image
        (negative left/top) where the crop pads."""
        w, h = resized
        if self.resize_mode == "patches":   # the whole resized photo is the input
            return 0, 0, w, h
        crop_h, crop_w = self.crop
        left, top = _offset(w, crop_w, self.centre), _offset(h, crop_h, self.centre)
        return left, top, left + crop_w, top + crop_h

    def scale(self, size: tuple[int, int]) -> tuple[float, float]:
        """How much the resize step enlarges an upright photo of ``size`` = (width, height): (along x, along y).
        Above 1 the model sees enlarged (blurred) pixels; the two differ when the photo is stretched (squash)."""
        resized = self.resized_size(size)
        return resized[0] / size[0], resized[1] / size[1]

    def crop_box(self, size: tuple[int, int]) -> tuple[float, float, float, float]:
        """The part of an upright (EXIF-applied) photo of ``size`` = (width, height) that the model sees, as
        (left, top, right, bottom) in that photo's pixel coordinates (floats: the resize scales them). A squashed
        photo's box is the whole photo; a padded one (``fit``) reaches past it.

        Two checkpoints with different preprocessing see different parts of the same photo; their maps can only be
        compared on the overlap of these boxes.
        """
        sx, sy = self.scale(size)
        left, top, right, bottom = self._crop_in_resized(self.resized_size(size))
        return left / sx, top / sy, right / sx, bottom / sy

    @property
    def stretches(self) -> bool:
        """Whether the photo's aspect ratio is given up (squash): a non-square photo is shown stretched."""
        return self.resize_mode == "squash"

    # --- pixels and tensors ---

    def crop_image(self, image: Image.Image) -> Image.Image:
        """Any PIL image -> the RGB image of size crop (W, H) that the model sees.

        EXIF orientation is applied, any mode becomes RGB (transparency over white), the photo is resized as
        ``resize_mode`` says, then the centre is cut out (padded with ``fill`` where the crop reaches past it).
        """
        image = upright_rgb(image)
        size = self.resized_size(image.size)
        if size != image.size:
            image = image.resize(size, _RESAMPLE[self.interpolation])
        left, top, right, bottom = self._crop_in_resized(size)
        if left >= 0 and top >= 0 and right <= size[0] and bottom <= size[1]:
            return image.crop((left, top, right, bottom))
        canvas = Image.new("RGB", (right - left, bottom - top), self.fill)
        canvas.paste(image, (-left, -top))
        return canvas

    def normalise(self, pixels: torch.Tensor) -> torch.Tensor:
        """RGB pixels (B, 3, H, W) uint8, on any device -> model input (B, 3, H, W) float32: × rescale, − mean, ÷ std.

        The division by 1 / rescale (255 for the usual factor) is torchvision's ToTensor exactly; Hugging Face's
        float64 multiplication is the same to the last bit for 1/255."""
        x = pixels.float() / (1.0 / self.rescale)
        mean = torch.tensor(self.mean, device=x.device).view(1, 3, 1, 1)
        std = torch.tensor(self.std, device=x.device).view(1, 3, 1, 1)
        return (x - mean) / std

    def to_tensor(self, image: Image.Image) -> torch.Tensor:
        """Cropped RGB image -> normalised float tensor (1, 3, H, W)."""
        pixels = torch.from_numpy(np.array(image.convert("RGB"), dtype=np.uint8))      # (H, W, 3)
        return self.normalise(pixels.permute(2, 0, 1).unsqueeze(0))                     # (1, 3, H, W)

    def __call__(self, image: Image.Image) -> torch.Tensor:
        """PIL image -> (1, 3, H, W) model input."""
        return self.to_tensor(self.crop_image(image))

    # --- the user's choice, other input sizes, files ---

    def choose(self, choice: str) -> "Preprocess":
        """The preprocessing a user asked for: "own" (this one), "crop" (keep the aspect ratio and cut out the
        centre: this one if it already does, else the shorter side resized in this one's proportion to the crop)
        or "squash" (the whole photo stretched to the crop size, nothing cut away)."""
        if choice not in CHOICES:
            raise ValueError(f"Unknown preprocessing {choice!r}! Expected one of {list(CHOICES)}.")
        if choice == "own" or (choice == "crop" and self.resize_mode in ("shorter", "cover")):
            return self
        if choice == "squash":
            return dataclasses.replace(self, resize_mode="squash", resize=self.crop, patch=None)
        return dataclasses.replace(self, **_keep_ratio(self.crop, self._margin()), patch=None)

    def at_size(self, crop: tuple[int, int]) -> "Preprocess":
        """The same preprocessing for a model input of ``crop`` = (H, W): the resize keeps its proportion to the
        crop (256 / 224 at 224 becomes 438 at 384), a non-square crop is covered as timm does."""
        crop = (crop, crop) if isinstance(crop, int) else (int(crop[0]), int(crop[1]))
        if self.resize_mode == "none":
            return dataclasses.replace(self, crop=crop)
        if self.resize_mode == "patches":   # as many patches as the crop holds
            return dataclasses.replace(self, crop=crop, resize=(crop[0] // self.patch) * (crop[1] // self.patch))
        if self.resize_mode in ("shorter", "cover"):
            return dataclasses.replace(self, crop=crop, **_keep_ratio(crop, self._margin()))
        (H, W), (h, w) = self.resize, self.crop
        return dataclasses.replace(self, crop=crop, resize=(round(crop[0] * H / h), round(crop[1] * W / w)))

    def _margin(self) -> float:
        """How much larger than the crop the photo is resized (1 / timm's crop_pct): 256 / 224 for 256 → 224."""
        if self.resize_mode == "shorter":
            return self.resize / min(self.crop)
        if self.resize_mode in ("none", "patches"):
            return 1.0
        return max(self.resize[0] / self.crop[0], self.resize[1] / self.crop[1])

    def to_dict(self) -> dict:
        """Every field, JSON-ready (lists for tuples); ``from_dict`` reads it back."""
        d = dataclasses.asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}

    @classmethod
    def from_dict(cls, d: dict) -> "Preprocess":
        """Fields as ``to_dict`` writes them; the ones left out take their defaults (older files have only resize,
        crop, interpolation, mean and std)."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"Unknown preprocessing fields {sorted(unknown)}! Expected some of {sorted(known)}.")
        return cls(**d)

    @classmethod
    def for_crop(cls, crop: int | tuple[int, int], crop_pct: float = 0.875, crop_mode: str = "center",
                 **kw) -> "Preprocess":
        """timm's evaluation transform (``transforms_imagenet_eval``): the photo scaled to floor(crop / crop_pct),
        then cropped to ``crop`` = (H, W). ``crop_mode`` "center": the shorter side (both sides rounded for a
        non-square size), "squash": stretched, "border": fitted inside and padded with the mean colour.
        224 at 0.875 -> 256 -> 224; at 0.9 -> 248 -> 224."""
        crop = (crop, crop) if isinstance(crop, int) else (int(crop[0]), int(crop[1]))
        if not 0 < crop_pct:
            raise ValueError(f"crop_pct must be positive (0.875 crops 224 out of 256)! Got {crop_pct}.")
        scaled = (math.floor(crop[0] / crop_pct), math.floor(crop[1] / crop_pct))
        if crop_mode == "squash":
            return cls(resize=scaled, crop=crop, resize_mode="squash", **kw)
        if crop_mode == "border":
            fill = tuple(round(255 * m) for m in kw.get("mean", IMAGENET_MEAN))
            return cls(resize=scaled, crop=crop, resize_mode="fit", **{"fill": fill, **kw})
        if crop_mode != "center":
            raise ValueError(f"Unknown crop_mode {crop_mode!r}! Expected 'center', 'squash' or 'border' (timm's).")
        if scaled[0] == scaled[1]:
            return cls(resize=scaled[0], crop=crop, resize_mode="shorter", **kw)
        return cls(resize=scaled, crop=crop, resize_mode="cover", **kw)


def size_for_patches(height: int, width: int, patch: int, max_patches: int, eps: float = 1e-5) -> tuple[int, int]:
    """(H, W) of a photo of height×width resized for a NaFlex model: the aspect ratio kept, each side rounded up to a
    multiple of ``patch`` (at least one patch), the largest such size with at most ``max_patches`` patches.

    The scale is found by bisection on [eps/10, 100] until the interval is narrower than ``eps``, exactly as
    transformers' ``get_image_size_for_max_num_patches`` and timm's ``get_image_size_for_seq`` find it (the same
    steps, so the same size to the pixel)."""
    def side(scale: float, size: int) -> int:
        return int(max(patch, math.ceil(size * scale / patch) * patch))

    low, high = eps / 10, 100.0
    while high - low >= eps:
        mid = (low + high) / 2
        if (side(mid, height) / patch) * (side(mid, width) / patch) <= max_patches:
            low = mid
        else:
            high = mid
    return side(low, height), side(low, width)


def _offset(size: int, crop: int, centre: str) -> int:
    """Where a centre crop of ``crop`` pixels starts in ``size`` pixels (negative: it pads before)."""
    if centre == "floor":
        return (size - crop) // 2
    if centre == "start":
        return 0
    if crop > size:
        return -((crop - size) // 2)
    return int(round((size - crop) / 2.0))


def _keep_ratio(crop: tuple[int, int], margin: float) -> dict:
    """Preprocess fields that resize a photo ``margin`` times the crop, keeping its aspect ratio."""
    if crop[0] == crop[1]:
        return {"resize_mode": "shorter", "resize": round(crop[0] * margin)}
    return {"resize_mode": "cover", "resize": (round(crop[0] * margin), round(crop[1] * margin))}


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
