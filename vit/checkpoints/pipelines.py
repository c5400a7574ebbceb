"""Each checkpoint source's own preprocessing, read from the settings it ships, as one ``vit.Preprocess``.

- Hugging Face folders: what ``AutoImageProcessor`` builds for the folder (the processor class named in
  preprocessor_config.json, else the model type's), its settings over the class's defaults: ``size`` as height
  and width squashes, ``shortest_edge`` resizes the shorter side, ``do_center_crop`` + ``crop_size`` cut out the
  centre (offset rounded down), ``resample``, ``rescale_factor``, ``do_resize`` / ``do_rescale`` /
  ``do_normalize`` false.
- timm: ``pretrained_cfg`` (``input_size``, ``crop_pct``, ``crop_mode``, ``interpolation``, ``mean``, ``std``) as
  ``resolve_data_config`` + ``create_transform`` read it.
- open_clip: ``image_transform`` of its preprocess config (``resize_mode`` shortest, squash or longest).
- torchvision's weights: their enum's ``ImageClassification`` transform (``vit.checkpoints.registry``).

No reference library is imported here: the defaults are written out, and the tests compare every rule with
transformers', timm's, open_clip's and torchvision's own transforms.
"""
from __future__ import annotations

import math

from ..preprocess import IMAGENET_MEAN, IMAGENET_STD, INCEPTION_MEAN, INCEPTION_STD, OPENAI_CLIP_MEAN, \
    OPENAI_CLIP_STD, Preprocess

PIL_RESAMPLE = {0: "nearest", 1: "lanczos", 2: "bilinear", 3: "bicubic", 4: "box", 5: "hamming"}  # PIL's enum values

# The image processors of the families we load: transformers' class defaults (``XImageProcessorPil`` attributes)
# for the settings a preprocessor_config.json may leave out. ``square``: whether a bare number as ``size`` means
# height = width (True) or the shortest edge (False), transformers' ``default_to_square``.
HF_PROCESSORS = {
    "ViTImageProcessor": dict(size={"height": 224, "width": 224}, do_center_crop=False, resample=2,
                              image_mean=INCEPTION_MEAN, image_std=INCEPTION_STD, square=True),
    "DeiTImageProcessor": dict(size={"height": 256, "width": 256}, crop_size={"height": 224, "width": 224},
                               do_center_crop=True, resample=3, image_mean=INCEPTION_MEAN, image_std=INCEPTION_STD,
                               square=True),
    "BeitImageProcessor": dict(size={"height": 224, "width": 224}, crop_size={"height": 224, "width": 224},
                               do_center_crop=False, resample=3, image_mean=INCEPTION_MEAN, image_std=INCEPTION_STD,
                               square=True),
    "BitImageProcessor": dict(size={"shortest_edge": 224}, crop_size={"height": 224, "width": 224},
                              do_center_crop=True, resample=3, image_mean=OPENAI_CLIP_MEAN, image_std=OPENAI_CLIP_STD,
                              square=False),  # DINOv2's processor
    "CLIPImageProcessor": dict(size={"shortest_edge": 224}, crop_size={"height": 224, "width": 224},
                               do_center_crop=True, resample=3, image_mean=OPENAI_CLIP_MEAN,
                               image_std=OPENAI_CLIP_STD, square=False),
    "SiglipImageProcessor": dict(size={"height": 224, "width": 224}, do_center_crop=False, resample=3,
                                 image_mean=INCEPTION_MEAN, image_std=INCEPTION_STD, square=False),
    # NaFlex: no size, the photo keeps its aspect ratio in at most max_num_patches patches (resize_mode "patches")
    "Siglip2ImageProcessor": dict(size=None, do_center_crop=False, resample=2, image_mean=INCEPTION_MEAN,
                                  image_std=INCEPTION_STD, patch_size=16, max_num_patches=256, square=True),
    # DINOv3's processor resizes float tensors with torchvision (antialiased bilinear), not PIL: equal to ours up to
    # the resampling's rounding (tests/checkpoints/test_dinov3_preprocess.py, within 1.5 grey levels)
    "DINOv3ViTImageProcessor": dict(size={"height": 224, "width": 224}, do_center_crop=False, resample=2,
                                    image_mean=IMAGENET_MEAN, image_std=IMAGENET_STD, square=True),
}
HF_COMMON = dict(do_resize=True, do_rescale=True, rescale_factor=1 / 255, do_normalize=True)  # every class's
# The processor AutoImageProcessor picks from config.json's model_type when preprocessor_config.json names none.
HF_MODEL_PROCESSORS = {"vit": "ViTImageProcessor", "deit": "DeiTImageProcessor", "beit": "BeitImageProcessor",
                       "dinov2": "BitImageProcessor", "dinov2_with_registers": "BitImageProcessor",
                       "vit_mae": "ViTImageProcessor", "vit_msn": "ViTImageProcessor",
                       "data2vec-vision": "BeitImageProcessor", "clip": "CLIPImageProcessor",
                       "clip_vision_model": "CLIPImageProcessor", "siglip": "SiglipImageProcessor",
                       "siglip_vision_model": "SiglipImageProcessor", "siglip2": "Siglip2ImageProcessor",
                       "siglip2_vision_model": "Siglip2ImageProcessor", "dinov3_vit": "DINOv3ViTImageProcessor",
                       "swin": "ViTImageProcessor", "swinv2": "ViTImageProcessor", "ijepa": "ViTImageProcessor",
                       "aimv2_vision_model": "CLIPImageProcessor", "aimv2": "CLIPImageProcessor"}


def huggingface_processor_name(settings: dict, model_type: str) -> str:
    """The image processor class a folder's AutoImageProcessor builds: ``image_processor_type`` (its "Fast" or
    "Pil" backend named the same), an older ``feature_extractor_type`` ("ViTFeatureExtractor" is
    ViTImageProcessor), else the model type's."""
    name = settings.get("image_processor_type") or settings.get("feature_extractor_type")
    if not name:
        if model_type not in HF_MODEL_PROCESSORS:
            raise ValueError(f"No image processor for model_type {model_type!r}! Expected one of "
                             f"{sorted(HF_MODEL_PROCESSORS)}, or image_processor_type in preprocessor_config.json.")
        return HF_MODEL_PROCESSORS[model_type]
    name = name.replace("FeatureExtractor", "ImageProcessor")
    for suffix in ("Fast", "Pil"):
        name = name.removesuffix(suffix)
    if name not in HF_PROCESSORS:
        raise ValueError(f"preprocessor_config.json names the image processor {name!r}, whose preprocessing is not "
                         f"reproduced here! Expected one of {sorted(HF_PROCESSORS)}.")
    return name


def huggingface_preprocess(settings: dict | None, model_type: str, img_size: tuple[int, int]) -> Preprocess:
    """A Hugging Face folder's preprocessing: preprocessor_config.json's ``settings`` over its processor class's
    defaults. Without the file (``settings`` None) the class's defaults, resized to the model's ``img_size``
    in their proportion (what ``XImageProcessor(size=…)`` for that size gives)."""
    name = huggingface_processor_name(settings or {}, model_type)
    s = {**HF_COMMON, **HF_PROCESSORS[name], **(settings or {})}
    if name == "Siglip2ImageProcessor":
        return _naflex_processor(s)
    square = HF_PROCESSORS[name]["square"]
    size = _size_dict(s["size"], square, "size")
    crop = None
    if s.get("do_center_crop"):
        if s.get("crop_size") is None:
            raise ValueError("preprocessor_config.json asks for a centre crop (do_center_crop true) but gives no "
                             "crop_size! Expected crop_size as {\"height\", \"width\"} or a number.")
        crop = _size_dict(s["crop_size"], True, "crop_size")
    common = dict(interpolation=_resample(s["resample"]), centre="floor",
                  rescale=float(s["rescale_factor"]) if s["do_rescale"] else 1.0,
                  mean=_three(s["image_mean"]) if s["do_normalize"] else (0.0,) * 3,
                  std=_three(s["image_std"]) if s["do_normalize"] else (1.0,) * 3)
    if crop is not None:
        crop = (crop["height"], crop["width"])
    if not s["do_resize"]:  # the photo as it is; only the crop (or the model's own size) fixes the input
        prep = Preprocess(resize_mode="none", resize=crop or img_size, crop=crop or img_size, **common)
    elif "height" in size:
        prep = Preprocess(resize_mode="squash", resize=(size["height"], size["width"]),
                          crop=crop or (size["height"], size["width"]), **common)
    else:
        if crop is None:
            raise ValueError(f"The image processor resizes the shortest edge to {size['shortest_edge']} without a "
                             f"centre crop (do_center_crop false), so every photo gives an input of another shape! "
                             f"Expected do_center_crop true with a crop_size, or size as height and width.")
        prep = Preprocess(resize_mode="shorter", resize=size["shortest_edge"], crop=crop, **common)
    return prep if settings is not None or prep.crop == tuple(img_size) else prep.at_size(tuple(img_size))


def _naflex_processor(s: dict) -> Preprocess:
    """Siglip2ImageProcessor: the photo resized, its aspect ratio kept, to sides that are multiples of ``patch_size``
    with at most ``max_num_patches`` patches (``resample``), rescaled and normalised; no crop (the padding it adds to
    max_num_patches is masked in the model, so the input is the resized photo alone)."""
    if not s["do_resize"]:
        raise ValueError("preprocessor_config.json turns the resize off (do_resize false), so the photo's sides need "
                         "not be multiples of the patch! Expected do_resize true for a NaFlex processor.")
    return naflex_preprocess(int(s["max_num_patches"]), int(s["patch_size"]), _resample(s["resample"]),
                             mean=_three(s["image_mean"]) if s["do_normalize"] else (0.0,) * 3,
                             std=_three(s["image_std"]) if s["do_normalize"] else (1.0,) * 3,
                             rescale=float(s["rescale_factor"]) if s["do_rescale"] else 1.0)


def naflex_preprocess(max_patches: int, patch: int, interpolation: str, **kw) -> Preprocess:
    """Each photo kept at its aspect ratio in at most ``max_patches`` patches of ``patch`` pixels (resize_mode
    "patches"); ``crop`` is the input a square photo gets, the largest square of whole patches within the budget."""
    side = math.isqrt(max_patches) * patch
    return Preprocess(resize_mode="patches", resize=max_patches, patch=patch, crop=(side, side),
                      interpolation=interpolation, **kw)


def _size_dict(size, square: bool, name: str) -> dict:
    """transformers' ``get_size_dict``: a number is height = width (``square``) or the shortest edge; a pair is
    (height, width); a dict must hold height and width, or shortest_edge alone."""
    if isinstance(size, int):
        return {"height": size, "width": size} if square else {"shortest_edge": size}
    if isinstance(size, (list, tuple)) and len(size) == 2:
        return {"height": int(size[0]), "width": int(size[1])}
    if isinstance(size, dict) and {"height", "width"} <= set(size):
        return {"height": int(size["height"]), "width": int(size["width"])}
    if isinstance(size, dict) and set(k for k, v in size.items() if v is not None) == {"shortest_edge"}:
        return {"shortest_edge": int(size["shortest_edge"])}
    raise ValueError(f"preprocessor_config.json's {name} {size!r} is not supported! Expected a number, [height, "
                     f"width], {{\"height\", \"width\"}} or {{\"shortest_edge\"}}.")


def _resample(value) -> str:
    if value not in PIL_RESAMPLE:
        raise ValueError(f"preprocessor_config.json's resample {value!r} is not a PIL filter! Expected one of "
                         f"{PIL_RESAMPLE} (PIL's enum values).")
    return PIL_RESAMPLE[value]


def _three(value) -> tuple[float, float, float]:
    """Hugging Face accepts one number for all three channels."""
    return (float(value),) * 3 if isinstance(value, (int, float)) else tuple(float(v) for v in value)


def timm_preprocess(pretrained_cfg: dict, naflex_patch: int | None = None) -> Preprocess:
    """timm's evaluation transform of a ``pretrained_cfg`` (as ``resolve_data_config({}, model=m)`` resolves it:
    crop_pct 0.875, crop_mode center, bicubic and ImageNet mean/std where the config says nothing).

    ``naflex_patch`` (a NaFlexViT's patch side): timm's NaFlex transform instead (``transforms_imagenet_eval`` with
    naflex: ``ResizeToSequence``), each photo at its aspect ratio in at most as many patches as ``input_size``
    holds (384 / 16: 576, timm's own default sequence length), no crop."""
    input_size = pretrained_cfg.get("input_size") or (3, 224, 224)
    if naflex_patch:
        H, W = (int(v) for v in input_size[-2:])
        return naflex_preprocess((H // naflex_patch) * (W // naflex_patch), naflex_patch,
                                 pretrained_cfg.get("interpolation") or "bicubic",
                                 mean=tuple(pretrained_cfg.get("mean") or IMAGENET_MEAN),
                                 std=tuple(pretrained_cfg.get("std") or IMAGENET_STD))
    return Preprocess.for_crop(tuple(int(v) for v in input_size[-2:]), pretrained_cfg.get("crop_pct") or 0.875,
                               pretrained_cfg.get("crop_mode") or "center",
                               interpolation=pretrained_cfg.get("interpolation") or "bicubic",
                               mean=tuple(pretrained_cfg.get("mean") or IMAGENET_MEAN),
                               std=tuple(pretrained_cfg.get("std") or IMAGENET_STD))


def open_clip_preprocess(image_size: int | tuple[int, int], preprocess_cfg: dict | None = None) -> Preprocess:
    """open_clip's ``image_transform`` for evaluation: ``preprocess_cfg`` (open_clip_config.json's) over open_clip's
    defaults (OpenAI's mean and std, bicubic, resize_mode "shortest", fill_color 0)."""
    cfg = preprocess_cfg or {}
    size = (image_size, image_size) if isinstance(image_size, int) else (int(image_size[0]), int(image_size[1]))
    mode = cfg.get("resize_mode") or "shortest"
    common = dict(interpolation="bilinear" if cfg.get("interpolation") == "bilinear" else "bicubic",
                  mean=_three(cfg.get("mean") or OPENAI_CLIP_MEAN), std=_three(cfg.get("std") or OPENAI_CLIP_STD))
    if mode == "squash":
        return Preprocess(resize_mode="squash", resize=size, crop=size, **common)
    if mode == "longest":
        return Preprocess(resize_mode="fit", resize=size, crop=size, fill=(int(cfg.get("fill_color", 0)),) * 3,
                          **common)
    if mode != "shortest":
        raise ValueError(f"open_clip resize_mode {mode!r} is not supported! Expected 'shortest', 'squash' or "
                         f"'longest'.")
    if size[0] == size[1]:
        return Preprocess(resize_mode="shorter", resize=size[0], crop=size, **common)
    return Preprocess(resize_mode="cover", resize=size, crop=size, **{**common, "interpolation": "bicubic"})


def torchvision_preprocess(crop_size: int, resize_size: int = 256, interpolation: str = "bilinear",
                           mean=IMAGENET_MEAN, std=IMAGENET_STD) -> Preprocess:
    """torchvision's ``ImageClassification`` transform (a weights enum's ``transforms()``): the shorter side to
    ``resize_size``, the centre ``crop_size`` cut out."""
    return Preprocess(resize_mode="shorter", resize=int(resize_size), crop=(int(crop_size),) * 2,
                      interpolation=interpolation, mean=_three(mean), std=_three(std))


# A sidecar JSON's "preprocess" may give one source's own settings under its name (``source_preprocess``).
SOURCES = {
    "timm": "pretrained_cfg: input_size, crop_pct, crop_mode (center, squash, border), interpolation, mean, std",
    "huggingface": "preprocessor_config.json: image_processor_type, size, do_center_crop, crop_size, resample, "
                   "rescale_factor, image_mean, image_std, do_resize, do_rescale, do_normalize",
    "open_clip": "preprocess_cfg: size, resize_mode (shortest, squash, longest), interpolation, mean, std, "
                 "fill_color",
    "torchvision": "ImageClassification: crop_size, resize_size, interpolation, mean, std",
}


def source_preprocess(d: dict) -> Preprocess:
    """A sidecar's "preprocess": ``vit.Preprocess`` fields (``{"resize_mode": "squash", "resize": [224, 224],
    …}``), or exactly one source's own settings under its name, e.g. ``{"timm": {"input_size": [3, 224, 224],
    "crop_pct": 0.95, "crop_mode": "squash"}}`` (see ``SOURCES``)."""
    named = set(d) & set(SOURCES)
    if not named:
        return Preprocess.from_dict(d)
    if len(d) != 1 or not isinstance(d[next(iter(named))], dict):
        raise ValueError(f"A preprocess naming its source holds that source's settings alone, e.g. {{\"timm\": "
                         f"{{\"crop_pct\": 0.9}}}}! Got keys {sorted(d)}; expected one of {sorted(SOURCES)}.")
    source, settings = next(iter(d.items()))
    if source == "timm":
        return timm_preprocess(settings)
    if source == "huggingface":  # the processor class named in it, else ViT's
        return huggingface_preprocess(settings, "vit", (224, 224))
    if source == "open_clip":
        return open_clip_preprocess(settings.get("size", 224), settings)
    return torchvision_preprocess(**settings)
