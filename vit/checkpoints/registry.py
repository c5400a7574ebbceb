"""Checkpoints we know: the files in ../shared/weights (by sha256), torchvision's ViT weights and Meta's DINOv3 ViTs
(by file name).

A known checkpoint carries what its tensors cannot tell: its preprocessing, its number of heads where
64 dims per head would be wrong, and where to download it. The preprocessing is its source's own: for the
shared files, the ``pretrained_cfg`` of their timm tag (written out here; tests/test_preprocess_sources.py
compares it with timm's); for torchvision's weights, their enum's transforms.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .files import sha256
from .pipelines import timm_preprocess, torchvision_preprocess
from ..preprocess import IMAGENET_MEAN, IMAGENET_STD, INCEPTION_MEAN, INCEPTION_STD, Preprocess


@dataclass(frozen=True)
class KnownCheckpoint:
    name: str                     # short name, accepted by vit.load()
    filename: str                 # the file's usual name (looked up in weights/ and the torch hub cache)
    format: str                   # checkpoint format, see vit.checkpoint.FILTERS
    preprocess: Preprocess        # how its training/evaluation images were prepared
    config: dict = field(default_factory=dict)  # config fields the tensor shapes do not show (e.g. num_heads)
    sha256: str | None = None     # full digest: recognises a renamed copy of the file
    size: int | None = None       # bytes; only files of this size are hashed
    url: str | None = None        # where to download it
    downloadable: bool = False    # whether ``url`` is a file torch.hub can fetch (hash in its name)
    timm_tag: str | None = None   # the timm model whose pretrained_cfg gives ``preprocess``
    imagenet_classes: bool = True  # its head predicts ImageNet-1k's 1000 classes (False: a backbone, no head)


# timm's pretrained_cfg of the shared files' tags (timm 1.0: vision_transformer.py and deit.py): both crop the
# central 90 % (224 / 0.9 -> 248 -> 224), bicubic.
_AUGREG_CFG = dict(input_size=(3, 224, 224), crop_pct=0.9, crop_mode="center", interpolation="bicubic",
                   mean=INCEPTION_MEAN, std=INCEPTION_STD)
_DEIT_CFG = dict(input_size=(3, 224, 224), crop_pct=0.9, crop_mode="center", interpolation="bicubic",
                 mean=IMAGENET_MEAN, std=IMAGENET_STD)

SHARED_CHECKPOINTS = (
    KnownCheckpoint(
        name="vit_tiny_patch16_224.augreg_in21k_ft_in1k",
        filename="vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors",
        format="timm",
        preprocess=timm_preprocess(_AUGREG_CFG),
        config=dict(num_heads=3, img_size=(224, 224)),
        sha256="bb7536071de5e187af0395b4bad61ab56f7663eb293b316cd9f81b5802e14c11",
        size=22_883_528,
        url="https://github.com/codr-shiv/VisionTransformer (parameters/*.bin, repacked; see PROVENANCE.md)",
        timm_tag="vit_tiny_patch16_224.augreg_in21k_ft_in1k",
    ),
    KnownCheckpoint(
        name="deit_tiny_patch16_224.pipevit_ln_fixedpoint",
        filename="deit_tiny_patch16_224.pipevit_ln_fixedpoint.safetensors",
        format="timm",
        preprocess=timm_preprocess(_DEIT_CFG),
        config=dict(num_heads=3, img_size=(224, 224)),
        sha256="d5fb53d84b9f82dd7356c80b4c83240a3fa46bdd867298be402242748a054caf",
        size=22_883_544,
        url="https://github.com/wvfunc/matlab-bit_true-deit_tiny-fix (mat_extract/deit_tiny, repacked; see PROVENANCE.md)",
        timm_tag="deit_tiny_patch16_224.fb_in1k",  # the DeiT-Ti weights it was exported from (PROVENANCE.md)
    ),
)

DEFAULT_NAME = "vit_b_16.imagenet1k_v1"  # torchvision's ViT_B_16_Weights.IMAGENET1K_V1


# torchvision's ViT weights as its ``ViT_*_Weights`` enums describe them: (name, file name, resize, crop,
# interpolation). Written out rather than read from torchvision at run time, since importing torchvision
# costs a server ~170 MB of RSS; tests/test_registry.py checks every field against torchvision's enums.
_TORCHVISION_WEIGHTS = (
    ("vit_b_16.imagenet1k_v1", "vit_b_16-c867db91.pth", 256, 224, "bilinear"),
    ("vit_b_16.imagenet1k_swag_e2e_v1", "vit_b_16_swag-9ac1b537.pth", 384, 384, "bicubic"),
    ("vit_b_16.imagenet1k_swag_linear_v1", "vit_b_16_lc_swag-4e70ced5.pth", 224, 224, "bicubic"),
    ("vit_b_32.imagenet1k_v1", "vit_b_32-d86f8d99.pth", 256, 224, "bilinear"),
    ("vit_l_16.imagenet1k_v1", "vit_l_16-852ce7e3.pth", 242, 224, "bilinear"),
    ("vit_l_16.imagenet1k_swag_e2e_v1", "vit_l_16_swag-4f3808c9.pth", 512, 512, "bicubic"),
    ("vit_l_16.imagenet1k_swag_linear_v1", "vit_l_16_lc_swag-4d563306.pth", 224, 224, "bicubic"),
    ("vit_l_32.imagenet1k_v1", "vit_l_32-c7638314.pth", 256, 224, "bilinear"),
    ("vit_h_14.imagenet1k_swag_e2e_v1", "vit_h_14_swag-80465313.pth", 518, 518, "bicubic"),
    ("vit_h_14.imagenet1k_swag_linear_v1", "vit_h_14_lc_swag-c1eb923e.pth", 224, 224, "bicubic"),
)
TORCHVISION_URL = "https://download.pytorch.org/models/"


def torchvision_checkpoints() -> list[KnownCheckpoint]:
    """Every torchvision ViT weight (vit_b_16 … vit_h_14), named "<arch>.<weights name>" in lower case, with
    ImageNet mean/std and the input size it was trained at."""
    return [KnownCheckpoint(name=name, filename=filename, format="torchvision",
                            preprocess=torchvision_preprocess(crop, resize, interpolation),
                            config=dict(img_size=(crop, crop)), url=TORCHVISION_URL + filename,
                            downloadable=True)
            for name, filename, resize, crop, interpolation in _TORCHVISION_WEIGHTS]


# Meta's DINOv3 ViT files (facebookresearch/dinov3's hub/backbones.py): (name, file name). Their download links are
# given by Meta after its licence is accepted, so they are looked up by file name only; the satellite (SAT-493M)
# models have their own mean and std.
_META_DINOV3 = (
    ("dinov3_vits16", "dinov3_vits16_pretrain_lvd1689m-08c60483.pth"),
    ("dinov3_vits16plus", "dinov3_vits16plus_pretrain_lvd1689m-4057cbaa.pth"),
    ("dinov3_vitb16", "dinov3_vitb16_pretrain_lvd1689m-73cec8be.pth"),
    ("dinov3_vitl16", "dinov3_vitl16_pretrain_lvd1689m-8aa4cbdd.pth"),
    ("dinov3_vitl16.sat493m", "dinov3_vitl16_pretrain_sat493m-eadcf0ff.pth"),
    ("dinov3_vitl16plus", "dinov3_vitl16plus_pretrain_lvd1689m-46503df0.pth"),
    ("dinov3_vith16plus", "dinov3_vith16plus_pretrain_lvd1689m-7c1da9a5.pth"),
    ("dinov3_vit7b16", "dinov3_vit7b16_pretrain_lvd1689m-a955f4ea.pth"),
    ("dinov3_vit7b16.sat493m", "dinov3_vit7b16_pretrain_sat493m-a6675841.pth"),
)
META_DINOV3_URL = "https://ai.meta.com/resources/models-and-libraries/dinov3-downloads/"


def meta_dinov3_checkpoints() -> list[KnownCheckpoint]:
    """Meta's DINOv3 ViTs, each with facebookresearch/dinov3's own transform (squash to 256, its mean and std)."""
    from .families import SAT493M_MEAN, SAT493M_STD, meta_dinov3_preprocess
    return [KnownCheckpoint(name=name, filename=filename, format="dinov3", url=META_DINOV3_URL, imagenet_classes=False,
                            preprocess=meta_dinov3_preprocess(*((SAT493M_MEAN, SAT493M_STD) if "sat493m" in name
                                                                else (IMAGENET_MEAN, IMAGENET_STD))))
            for name, filename in _META_DINOV3]


def known_checkpoints() -> list[KnownCheckpoint]:
    return list(SHARED_CHECKPOINTS) + torchvision_checkpoints() + meta_dinov3_checkpoints()


def by_name(name: str) -> KnownCheckpoint | None:
    """Known checkpoint by name; "default" and a bare torchvision arch ("vit_b_16") mean its IMAGENET1K_V1 weights."""
    name = name.strip().lower()
    if name == "default":
        name = DEFAULT_NAME
    for ck in known_checkpoints():
        aliases = {ck.name.lower(), ck.filename.lower()}
        if ck.name.endswith(".imagenet1k_v1"):
            aliases.add(ck.name.removesuffix(".imagenet1k_v1"))  # "vit_b_16"
        if name in aliases:
            return ck
    return None


def identify(path: Path) -> KnownCheckpoint | None:
    """The known checkpoint this file is: by size and sha256 where known, else by torchvision's file name."""
    size = path.stat().st_size
    for ck in SHARED_CHECKPOINTS:
        if ck.size == size and ck.sha256 == sha256(path):
            return ck
    for ck in torchvision_checkpoints() + meta_dinov3_checkpoints():
        if ck.filename == path.name:
            return ck
    return None
