"""DINOv3's preprocessing against its sources' own: transformers' DINOv3ViTImageProcessor (which has no PIL backend:
it resizes float tensors with torchvision, antialiased bilinear) and facebookresearch/dinov3's make_transform (which
resizes the uint8 tensor with torchvision), where ours resizes the photo with PIL. The inputs agree within 1.5 grey
levels (measured: one) on wide, square, tall and tiny photos; the geometry (squashed to 224×224, or 256×256) and the
normalisation are the same."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers
from PIL import Image
from skimage import data

from vit.checkpoints.pipelines import huggingface_preprocess
from vit.preprocess import IMAGENET_STD

GREY_LEVELS = 1.5


@pytest.mark.parametrize("photo", ["wide", "square", "tall", "tiny"])
def test_dinov3_processor_input(photo):
    pixels = {"wide": data.chelsea(), "square": data.astronaut(), "tall": np.ascontiguousarray(data.coffee()[:, :250]),
              "tiny": data.chelsea()[:50, :70]}[photo]
    image = Image.fromarray(pixels)
    ours = huggingface_preprocess(None, "dinov3_vit", (224, 224))(image)[0]
    theirs = transformers.DINOv3ViTImageProcessor()(images=image, return_tensors="pt")["pixel_values"][0]
    assert ours.shape == theirs.shape == (3, 224, 224)
    tolerance = GREY_LEVELS / 255 / torch.tensor(IMAGENET_STD)[:, None, None]      # per channel, normalised units
    assert bool(((ours - theirs).abs() <= tolerance).all())


@pytest.mark.parametrize("photo", ["wide", "tiny"])
def test_meta_dinov3_transform_input(photo):
    """facebookresearch/dinov3's make_transform (its README): ToImage, Resize((256, 256), antialias) on the uint8
    tensor, ToDtype(float32, scale), Normalize(ImageNet): equal to ours within the same 1.5 grey levels."""
    from torchvision.transforms import v2

    from vit.checkpoints.families import meta_dinov3_preprocess

    pixels = {"wide": data.chelsea(), "tiny": data.chelsea()[:50, :70]}[photo]
    image = Image.fromarray(pixels)
    make_transform = v2.Compose([v2.ToImage(), v2.Resize((256, 256), antialias=True),
                                 v2.ToDtype(torch.float32, scale=True),
                                 v2.Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))])
    ours, theirs = meta_dinov3_preprocess()(image)[0], make_transform(image)
    assert ours.shape == theirs.shape == (3, 256, 256)
    tolerance = GREY_LEVELS / 255 / torch.tensor(IMAGENET_STD)[:, None, None]
    assert bool(((ours - theirs).abs() <= tolerance).all())
