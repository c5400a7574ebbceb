"""Protects preprocessing: the pixels the model sees equal torchvision's transforms, whatever the photo's
orientation, mode or aspect ratio; and the class names are ImageNet's in the standard order."""
from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from PIL import Image
from torchvision import transforms as T

import vit
from vit.preprocess import IMAGENET_MEAN, IMAGENET_STD


@pytest.mark.parametrize("interpolation", ["bicubic", "bilinear"])
def test_equals_torchvision_transforms(cat, interpolation):
    prep = vit.Preprocess(resize=256, crop=(224, 224), interpolation=interpolation, mean=IMAGENET_MEAN, std=IMAGENET_STD)
    reference = T.Compose([T.Resize(256, interpolation=T.InterpolationMode(interpolation)), T.CenterCrop(224),
                           T.ToTensor(), T.Normalize(IMAGENET_MEAN, IMAGENET_STD)])
    x = prep(cat)
    assert x.shape == (1, 3, 224, 224) and x.dtype == torch.float32
    assert torch.equal(x[0], reference(cat))


def test_crop_image_is_what_the_tensor_holds(cat):
    prep = vit.Preprocess(mean=(0.0,) * 3, std=(1.0,) * 3)
    seen = prep.crop_image(cat)
    assert seen.size == (224, 224) and seen.mode == "RGB"
    assert torch.equal(prep(cat)[0].permute(1, 2, 0), torch.from_numpy(np.asarray(seen, np.float32) / 255))


def test_exif_orientation_is_applied(cat):
    buf = io.BytesIO()
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90° clockwise to display"
    cat.save(buf, format="JPEG", exif=exif, quality=95)
    stored = Image.open(io.BytesIO(buf.getvalue()))
    assert stored.size == (451, 300)
    prep = vit.Preprocess(resize=300, crop=(451, 300))  # the whole upright photo
    assert prep.crop_image(stored).size == (300, 451)  # (W, H): portrait after the EXIF rotation


@pytest.mark.parametrize("mode", ["L", "RGBA", "LA", "P", "CMYK", "I;16", "I", "F", "1"])
def test_any_mode_becomes_rgb(cat, mode):
    image = cat.convert("L").convert(mode) if mode in ("I;16", "I", "F", "1", "LA") else cat.convert(mode)
    seen = vit.Preprocess().crop_image(image)
    assert seen.mode == "RGB" and seen.size == (224, 224)
    assert np.asarray(seen).std() > 10  # still the photo, not a blank or clipped image


def test_transparent_pixels_become_white():
    image = Image.new("RGBA", (64, 64), (0, 0, 0, 0))
    seen = vit.Preprocess(resize=32, crop=(32, 32)).crop_image(image)
    assert np.asarray(seen).min() == 255


def test_wide_crop_on_a_portrait_photo():
    """"shorter" is torchvision's Resize(int) + CenterCrop, which pads a crop wider than the resized photo; "cover"
    (timm's ResizeKeepRatio, what ``at_size`` gives a non-square input) scales until the crop fits."""
    portrait = Image.fromarray(np.random.default_rng(0).integers(0, 255, (400, 300, 3), dtype=np.uint8))
    reference = T.Compose([T.Resize(224, interpolation=T.InterpolationMode.BICUBIC), T.CenterCrop((224, 320))])
    padded = vit.Preprocess(resize=224, crop=(224, 320)).crop_image(portrait)
    assert np.array_equal(np.asarray(padded), np.asarray(reference(portrait)))
    seen = vit.Preprocess(resize=224, crop=(224, 224)).at_size((224, 320)).crop_image(portrait)
    assert seen.size == (320, 224)
    assert np.asarray(seen)[:, :8].std() > 10 and np.asarray(seen)[:8].std() > 10  # real pixels up to the border


def test_dict_round_trip_and_validation():
    prep = vit.Preprocess(resize=248, crop=(224, 240), interpolation="bilinear", mean=(0.5,) * 3, std=(0.5,) * 3)
    assert vit.Preprocess.from_dict(prep.to_dict()) == prep
    with pytest.raises(ValueError, match="Unknown interpolation 'cubic'"):
        vit.Preprocess(interpolation="cubic")
    with pytest.raises(ValueError, match=r"Unknown preprocessing fields \['size'\]"):
        vit.Preprocess.from_dict({"size": 3})
    assert vit.Preprocess.for_crop(384) == vit.Preprocess(resize=438, crop=(384, 384))


def test_imagenet_labels():
    """The shipped list is torchvision's, in its order."""
    from torchvision.models._meta import _IMAGENET_CATEGORIES
    labels = vit.imagenet_labels()
    assert labels == list(_IMAGENET_CATEGORIES)
    assert len(labels) == 1000 and len(set(labels)) > 990
    assert (labels[0], labels[281], labels[285], labels[999]) == ("tench", "tabby", "Egyptian cat", "toilet tissue")
