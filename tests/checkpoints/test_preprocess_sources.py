"""Protects "every checkpoint sees the input its own pipeline makes": for every source, the project's input tensor is
the source library's own, on photos of every shape (wide, tall, square, odd-sized, tiny), and so are the outputs.

- Hugging Face: every image processor class of the families we load (ViT, DeiT, BEiT, DINOv2's Bit, CLIP, SigLIP),
  built with transformers, saved with save_pretrained and reopened by the project, and the Hub folders' own settings
  (older ones, MAE, MSN, data2vec-vision, DINOv2 with registers), against the PIL processor's pixel_values
  (AutoImageProcessor, backend "pil": the slow one); a tiny random model's probabilities against transformers' on
  those pixel values.
- timm: ``create_transform(**resolve_data_config({}, model=m))`` for every crop mode, for a Hub folder opened by
  timm itself (``local-dir:``), and for the shared files' timm tags.
- torchvision: every ViT weights enum's ``transforms()``; open_clip: its ``preprocess`` for every resize mode.

Tolerance: one grey level before normalisation (|ours − theirs| × std ≤ rescale). Measured: 0 everywhere.
"""
from __future__ import annotations

import json

import pytest
import timm
import torch
import transformers
from PIL import Image
from safetensors.torch import save_file
from skimage import data
from timm.data import create_transform, resolve_data_config
from transformers import AutoImageProcessor

import vit
from reference_models import open_clip_tiny, randomize_, write_vocab_files
from vit.checkpoints import registry
from vit.checkpoints.pipelines import (HF_COMMON, HF_MODEL_PROCESSORS, HF_PROCESSORS, huggingface_preprocess,
                                       huggingface_processor_name, open_clip_preprocess, timm_preprocess)
from vit.clip import zero_shot


@pytest.fixture(scope="module")
def photos() -> dict[str, Image.Image]:
    coffee, cat = Image.fromarray(data.coffee()), Image.fromarray(data.chelsea())     # 600×400, 451×300
    return {"wide": coffee, "tall": cat.transpose(Image.Transpose.ROTATE_90),           # 300×451
            "square": Image.fromarray(data.camera()).convert("RGB"),                   # 512×512
            "odd": coffee.crop((0, 0, 597, 401)),                                      # odd margins both ways
            "tiny": cat.resize((45, 29), Image.Resampling.BICUBIC)}                    # enlarged by every source


def grey_levels(ours: torch.Tensor, theirs: torch.Tensor, prep: vit.Preprocess) -> float:
    """The largest difference of two normalised inputs, in grey levels (1 = one pixel step before normalising)."""
    theirs = theirs.unsqueeze(0) if theirs.dim() == 3 else theirs
    assert tuple(ours.shape) == tuple(theirs.shape), (tuple(ours.shape), tuple(theirs.shape))
    std = torch.tensor(prep.std).view(1, 3, 1, 1)
    return float(((ours - theirs).abs() * std).max() / prep.rescale)


def assert_same_input(prep: vit.Preprocess, reference, photos: dict) -> None:
    """``reference``: photo -> its library's (3, H, W) or (1, 3, H, W) tensor."""
    for name, photo in photos.items():
        assert grey_levels(prep(photo), reference(photo), prep) <= 1.0, name


# --- Hugging Face image processors ---------------------------------------------------------------------------------

# (processor class, model_type, settings over the class's defaults): every class as save_pretrained writes it, and
# the settings users' folders hold (a bare number as size, another filter, no normalisation, no resize, a rescale
# factor of 1/127.5, a crop of a squashed photo, a non-square squash).
PROCESSORS = [
    ("ViTImageProcessor", "vit", {}),
    ("DeiTImageProcessor", "deit", {}),
    ("BeitImageProcessor", "beit", {}),
    ("BitImageProcessor", "dinov2", {"size": {"shortest_edge": 256}, "image_mean": [0.485, 0.456, 0.406],
                                     "image_std": [0.229, 0.224, 0.225]}),            # facebook/dinov2-*'s settings
    ("CLIPImageProcessor", "clip", {}),
    ("SiglipImageProcessor", "siglip", {}),
    ("ViTImageProcessor", "vit", {"size": 240, "resample": 3, "do_normalize": False}),
    ("DeiTImageProcessor", "deit", {"do_resize": False}),                              # crops (and pads) the photo
    ("BeitImageProcessor", "beit", {"size": 256, "do_center_crop": True, "resample": 1}),
    ("CLIPImageProcessor", "clip", {"size": 250, "crop_size": 231, "rescale_factor": 1 / 127.5, "resample": 2}),
    ("SiglipImageProcessor", "siglip", {"size": {"height": 160, "width": 288}}),
]
# SigLIP 2's NaFlex processor: the defaults (256 patches of 16), another budget and patch, another filter
NAFLEX = [{}, {"max_num_patches": 64, "patch_size": 14}, {"max_num_patches": 1024, "resample": 3}]


@pytest.mark.parametrize("settings", NAFLEX, ids=["default", "64x14", "1024-bicubic"])
def test_siglip2_processor_pixel_values(settings, photos, tmp_path):
    """Siglip2ImageProcessor hands the model the (P, P, C) patches of the resized photo, padded to max_num_patches:
    ours is that photo, its sides spatial_shapes × P, the same pixels patch for patch."""
    from transformers.models.siglip2.image_processing_siglip2 import convert_image_to_patches
    save_processor(tmp_path, "Siglip2ImageProcessor", "siglip2_vision_model", settings)
    prep = huggingface_preprocess(json.loads((tmp_path / "preprocessor_config.json").read_text()),
                                  "siglip2_vision_model", (224, 224))
    processor = AutoImageProcessor.from_pretrained(tmp_path, backend="pil")
    P = processor.patch_size
    for name, photo in photos.items():
        out = processor(images=photo, return_tensors="pt")
        gh, gw = (int(v) for v in out["spatial_shapes"][0])
        x = prep(photo)
        assert x.shape[-2:] == (gh * P, gw * P) and gh * gw <= processor.max_num_patches, name
        patches = convert_image_to_patches(x[0], P)
        assert float((patches - out["pixel_values"][0, :gh * gw]).abs().max() * 0.5 * 255) <= 1.0, name


def save_processor(folder, name: str, model_type: str, settings: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"model_type": model_type}))
    getattr(transformers, name + "Pil")(**settings).save_pretrained(folder)


def hf_reference(folder):
    processor = AutoImageProcessor.from_pretrained(folder, backend="pil")   # the slow, PIL-based processor
    return lambda photo: processor(images=photo, return_tensors="pt")["pixel_values"]


@pytest.mark.parametrize("name, model_type, settings", PROCESSORS,
                         ids=[f"{p[0]}{'+' + ','.join(p[2]) if p[2] else ''}" for p in PROCESSORS])
def test_huggingface_processor_pixel_values(name, model_type, settings, photos, tmp_path):
    save_processor(tmp_path, name, model_type, settings)
    prep = huggingface_preprocess(json.loads((tmp_path / "preprocessor_config.json").read_text()), model_type,
                                  (224, 224))
    assert_same_input(prep, hf_reference(tmp_path), photos)


LEGACY = [  # preprocessor_config.json as older Hub folders have it: the class from feature_extractor_type or the model
    ("vit", {"feature_extractor_type": "ViTFeatureExtractor", "size": 224, "resample": 2,
             "image_mean": [0.5] * 3, "image_std": [0.5] * 3, "do_normalize": True, "do_resize": True}),
    ("deit", {"feature_extractor_type": "DeiTFeatureExtractor", "size": 256, "crop_size": 224,
              "do_center_crop": True, "image_mean": [0.485, 0.456, 0.406], "image_std": [0.229, 0.224, 0.225],
              "resample": 3}),
    ("clip", {"feature_extractor_type": "CLIPFeatureExtractor", "size": 224, "crop_size": 224,
              "do_center_crop": True, "resample": 3}),
    ("siglip", {"size": 200}),            # no class named: SigLIP's, whose bare number is the shortest edge …
    ("dinov2", {"crop_size": 200}),       # … and DINOv2's Bit processor
    ("vit", {"image_processor_type": "ViTImageProcessorFast", "size": [180, 260]}),
    # the families' Hub folders as they ship (facebook/vit-mae-base, vit-msn-small, data2vec-vision-base-ft1k,
    # dinov2-with-registers-small): the model type's processor where none is named
    ("vit_mae", {"feature_extractor_type": "ViTFeatureExtractor", "size": 224, "resample": 3, "do_resize": True,
                 "image_mean": [0.485, 0.456, 0.406], "image_std": [0.229, 0.224, 0.225], "do_normalize": True}),
    ("vit_msn", {"size": 224, "resample": 2, "image_mean": [0.485, 0.456, 0.406],
                 "image_std": [0.229, 0.224, 0.225]}),
    ("data2vec-vision", {"feature_extractor_type": "BeitFeatureExtractor", "size": 224, "crop_size": 224,
                         "do_center_crop": False, "resample": 2, "image_mean": [0.5] * 3, "image_std": [0.5] * 3}),
    ("dinov2_with_registers", {"image_processor_type": "BitImageProcessor", "size": {"shortest_edge": 256},
                               "crop_size": {"height": 224, "width": 224}, "do_center_crop": True, "resample": 3,
                               "image_mean": [0.485, 0.456, 0.406], "image_std": [0.229, 0.224, 0.225],
                               "do_convert_rgb": True}),
]


@pytest.mark.parametrize("model_type, settings", LEGACY, ids=[f"{m}-{i}" for i, (m, _) in enumerate(LEGACY)])
def test_huggingface_legacy_configs(model_type, settings, photos, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": model_type}))
    (tmp_path / "preprocessor_config.json").write_text(json.dumps(settings))
    processor = AutoImageProcessor.from_pretrained(tmp_path, backend="pil")
    assert huggingface_processor_name(settings, model_type) == type(processor).__name__.removesuffix("Pil")
    if "size" in settings and settings["size"] == 200 and model_type == "siglip":   # shortest edge, no crop
        with pytest.raises(ValueError, match="without a centre crop"):
            huggingface_preprocess(settings, model_type, (224, 224))
        return
    assert_same_input(huggingface_preprocess(settings, model_type, (224, 224)), hf_reference(tmp_path), photos)


@pytest.mark.parametrize("name", sorted(HF_PROCESSORS))
def test_processor_defaults_are_transformers_own(name):
    """The written-out defaults are the classes' own attributes (DINOv3's processor has no PIL backend: its
    torchvision one)."""
    cls = getattr(transformers, name + "Pil", None) or getattr(transformers, name)
    ours = {**HF_COMMON, **HF_PROCESSORS[name]}
    theirs = {k: getattr(cls, k, None) for k in ("size", "crop_size", "do_center_crop", "resample", "image_mean",
                                                 "image_std", "do_resize", "do_rescale", "rescale_factor",
                                                 "do_normalize")}
    theirs.update({k: getattr(cls, k) for k in ("patch_size", "max_num_patches") if hasattr(cls, k)})  # NaFlex
    theirs.update(square=cls.default_to_square, do_center_crop=bool(theirs["do_center_crop"]),
                  resample=int(theirs["resample"]), image_mean=tuple(theirs["image_mean"]),
                  image_std=tuple(theirs["image_std"]))
    ours = {k: ours.get(k) for k in theirs}
    assert ours == theirs


@pytest.mark.parametrize("model_type", sorted(set(HF_MODEL_PROCESSORS) - {"clip_vision_model", "siglip_vision_model",
                                                                           "siglip2_vision_model",
                                                                           "dinov2_with_registers"}))
def test_each_model_type_picks_transformers_processor(model_type, tmp_path):
    """(For a CLIP, SigLIP or SigLIP 2 vision-model folder or a DINOv2-with-registers folder whose
    preprocessor_config.json names no class, transformers finds none; the project takes the family's:
    BitImageProcessor for the registers variant, as facebook/dinov2-with-registers-* name it.)"""
    config = transformers.AutoConfig.for_model(model_type)
    config.save_pretrained(tmp_path)
    (tmp_path / "preprocessor_config.json").write_text("{}")
    processor = AutoImageProcessor.from_pretrained(tmp_path, backend="pil")
    assert HF_MODEL_PROCESSORS[model_type] == type(processor).__name__.removesuffix("Pil")


def test_unknown_processor_is_refused_by_name():
    with pytest.raises(ValueError, match="'ConvNextImageProcessor', whose preprocessing is not reproduced"):
        huggingface_preprocess({"image_processor_type": "ConvNextImageProcessor"}, "vit", (224, 224))


# --- Hugging Face models: the probabilities of the whole pipeline --------------------------------------------------

def _tiny(kind: str):
    """(model, model_type, processor class, processor settings) at a 32×32 input."""
    fields = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, image_size=32,
                  patch_size=8, attn_implementation="eager")
    labels = dict(num_labels=5, id2label={i: f"thing {i}" for i in range(5)})
    torch.manual_seed(0)
    if kind == "vit":
        model = transformers.ViTForImageClassification(transformers.ViTConfig(**fields, **labels))
        return model, "vit", "ViTImageProcessor", {"size": {"height": 32, "width": 32}}
    if kind == "deit":
        model = transformers.DeiTForImageClassificationWithTeacher(transformers.DeiTConfig(**fields, **labels))
        return model, "deit", "DeiTImageProcessor", {"size": {"height": 37, "width": 37},
                                                     "crop_size": {"height": 32, "width": 32}}
    if kind == "beit":
        model = transformers.BeitForImageClassification(transformers.BeitConfig(
            **fields, **labels, use_relative_position_bias=True, use_absolute_position_embeddings=False,
            use_mean_pooling=True, layer_scale_init_value=0.1))
        return model, "beit", "BeitImageProcessor", {"size": {"height": 32, "width": 32}}
    if kind == "dinov2":   # DINOv2's processor in front of a ViT classifier
        model = transformers.ViTForImageClassification(transformers.ViTConfig(**fields, **labels))
        return model, "vit", "BitImageProcessor", {"size": {"shortest_edge": 37}, "crop_size": 32}
    if kind == "clip":
        vision = {k: v for k, v in fields.items() if k != "attn_implementation"}
        model = transformers.CLIPModel(transformers.CLIPConfig(
            vision_config=vision, projection_dim=16,
            text_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4)))
        return model, "clip", "CLIPImageProcessor", {"size": {"shortest_edge": 32}, "crop_size": 32}
    model = transformers.SiglipVisionModel(transformers.SiglipVisionConfig(**fields))
    return model, "siglip_vision_model", "SiglipImageProcessor", {"size": {"height": 32, "width": 32}}


PROMPTS = ["a photo of a cat", "a cup of coffee", "a camera on a tripod"]


@pytest.mark.parametrize("kind", ["vit", "deit", "beit", "dinov2", "clip", "siglip"])
def test_probabilities_equal_the_huggingface_pipeline(kind, photos, tmp_path):
    model, model_type, processor, settings = _tiny(kind)
    ref = randomize_(model)
    ref.save_pretrained(tmp_path)
    getattr(transformers, processor + "Pil")(**settings).save_pretrained(tmp_path)
    if kind == "clip":
        write_vocab_files(tmp_path)
    loaded = vit.load(tmp_path)
    pixels = hf_reference(tmp_path)
    for name, photo in photos.items():
        x = pixels(photo)
        assert grey_levels(loaded.preprocess(photo), x, loaded.preprocess) <= 1.0, name
        with torch.no_grad():
            if kind == "clip":       # zero-shot probabilities of the image and text towers
                out = ref(input_ids=loaded.text.tokenizer(PROMPTS), pixel_values=x).logits_per_image.softmax(-1)
                ours = zero_shot(loaded, photo, PROMPTS)
            elif kind == "siglip":   # an image tower: no classes, its embedding
                out, ours = ref(pixel_values=x).pooler_output, loaded.model(loaded.preprocess(photo))
            else:
                out, ours = ref(pixel_values=x).logits.softmax(-1), loaded.model(loaded.preprocess(photo)).softmax(-1)
        torch.testing.assert_close(ours, out, atol=1e-5, rtol=1e-4, msg=name)


def test_the_old_short_side_crop_was_not_the_processors_input(photos, tmp_path):
    """Why it matters: on a 600×400 photo the short-side crop differs from ViTImageProcessor's squash by far more
    than a grey level; ``crop`` is still there when asked for."""
    save_processor(tmp_path, "ViTImageProcessor", "vit", {})
    squash = huggingface_preprocess(json.loads((tmp_path / "preprocessor_config.json").read_text()), "vit",
                                    (224, 224))
    x = hf_reference(tmp_path)(photos["wide"])
    assert grey_levels(squash(photos["wide"]), x, squash) == 0.0
    assert grey_levels(squash.choose("crop")(photos["wide"]), x, squash) > 50


# --- timm ----------------------------------------------------------------------------------------------------------

TIMM_CFGS = [  # pretrained_cfg of a Hub folder: every crop mode, crop_pct below, at and above 1, non-square inputs
    dict(input_size=[3, 64, 64], crop_pct=0.9, crop_mode="center", interpolation="bicubic", mean=[0.5] * 3,
         std=[0.5] * 3),
    dict(input_size=[3, 48, 64], crop_pct=0.875, crop_mode="center", interpolation="bilinear"),
    dict(input_size=[3, 64, 64], crop_pct=0.95, crop_mode="squash", interpolation="bicubic"),
    dict(input_size=[3, 48, 64], crop_pct=1.0, crop_mode="squash", interpolation="nearest"),
    dict(input_size=[3, 64, 64], crop_pct=1.0, crop_mode="border", interpolation="bicubic",
         mean=[0.48145466, 0.4578275, 0.40821073], std=[0.26862954, 0.26130258, 0.27577711]),
    dict(input_size=[3, 48, 64], crop_pct=0.9, crop_mode="border", interpolation="bilinear"),
    dict(input_size=[3, 64, 64]),                                    # everything else timm's default
]


@pytest.mark.parametrize("cfg", TIMM_CFGS, ids=[f"{c.get('crop_mode', 'default')}-{c['input_size'][1]}x"
                                                  f"{c['input_size'][2]}-{c.get('crop_pct', '')}" for c in TIMM_CFGS])
def test_timm_hub_folder_equals_create_transform(cfg, photos, tmp_path):
    size = cfg["input_size"][1:]
    ref = randomize_(timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=size, depth=2,
                                       num_classes=5))
    save_file({k: v.contiguous() for k, v in ref.state_dict().items()}, str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text(json.dumps({
        "architecture": "vit_tiny_patch16_224", "num_classes": 5,
        "model_args": {"img_size": size, "depth": 2}, "pretrained_cfg": cfg}))
    theirs = timm.create_model(f"local-dir:{tmp_path}", pretrained=False)   # timm reads the same folder
    transform = create_transform(**resolve_data_config({}, model=theirs))
    loaded = vit.load(tmp_path)
    assert loaded.preprocess == timm_preprocess(theirs.pretrained_cfg)
    for name, photo in photos.items():
        x = transform(photo).unsqueeze(0)
        assert grey_levels(loaded.preprocess(photo), x, loaded.preprocess) <= 1.0, name
        with torch.no_grad():
            torch.testing.assert_close(loaded.model(loaded.preprocess(photo)), ref(x), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("ck", [c for c in registry.SHARED_CHECKPOINTS], ids=lambda c: c.name)
def test_shared_files_use_their_timm_tag(ck, photos):
    """The AugReg ViT-Ti: crop_pct 0.9, 224 / 0.9 -> 248 -> 224, bicubic, mean = std = 0.5; the DeiT-Ti file was
    exported from timm's deit_tiny_patch16_224.fb_in1k, whose configuration also crops 90 %."""
    model = timm.create_model(ck.timm_tag, pretrained=False)
    assert ck.preprocess == timm_preprocess(model.pretrained_cfg)
    assert_same_input(ck.preprocess, create_transform(**resolve_data_config({}, model=model)), photos)
    assert (ck.preprocess.resize, ck.preprocess.crop, ck.preprocess.interpolation) == (248, (224, 224), "bicubic")


# (architecture, small model's kwargs, the bare file's own sidecar where the tensors leave a fact open)
TIMM_FAMILIES = [("vit_relpos_small_patch16_224", dict(depth=1), None),
                 ("vit_relpos_base_patch32_plus_rpn_256", dict(depth=1), None),
                 ("vit_small_patch16_18x2_224", dict(depth=1), None),
                 ("naflexvit_base_patch16_map", dict(depth=1, embed_dim=192, num_heads=3), None),
                 ("naflexvit_base_patch16_par_gap", dict(depth=1, embed_dim=192, num_heads=3),
                  {"pos_embed_ar_preserving": True})]


@pytest.mark.parametrize("name, kw, sidecar", TIMM_FAMILIES, ids=[f[0] for f in TIMM_FAMILIES])
def test_a_bare_timm_file_of_the_new_families_gets_its_architectures_transform(name, kw, sidecar, photos, tmp_path):
    """The relpos, parallel-block and NaFlexViT configs' own transform (timm's create_transform of the model's
    pretrained_cfg; NaFlexViT's in NaFlex mode, as many patches as its 384-pixel input holds: timm's 576)."""
    model = timm.create_model(name, pretrained=False, **kw)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(tmp_path / "model.safetensors"))
    if sidecar:
        (tmp_path / "model.json").write_text(json.dumps({"config": sidecar}))
    loaded = vit.load(tmp_path / "model.safetensors")
    naflex = name.startswith("naflexvit_")
    transform = create_transform(**resolve_data_config({}, model=model), naflex=naflex, patch_size=16,
                                 max_seq_len=576)
    assert loaded.preprocess.varies == naflex
    assert_same_input(loaded.preprocess, transform, photos)


# --- torchvision and open_clip -------------------------------------------------------------------------------------

def test_torchvision_weights_equal_their_transforms(photos):
    import torchvision.models as tvm
    enums = {f"{arch}.{w.name.lower()}": w for arch in ("vit_b_16", "vit_b_32", "vit_l_16", "vit_l_32", "vit_h_14")
             for w in tvm.get_model_weights(arch)}
    known = registry.torchvision_checkpoints()
    assert {ck.name for ck in known} == set(enums)
    for ck in known:
        small = {k: photos[k] for k in ("odd", "tiny")}      # the rounding cases; every enum, so two photos
        assert_same_input(ck.preprocess, enums[ck.name].transforms(), small)


OPEN_CLIP = [{}, {"resize_mode": "squash"}, {"resize_mode": "longest", "fill_color": 80},
             {"resize_mode": "shortest", "interpolation": "bilinear", "mean": [0.5] * 3, "std": [0.5] * 3}]


@pytest.mark.parametrize("cfg", OPEN_CLIP, ids=["default", "squash", "longest", "bilinear"])
def test_open_clip_folder_equals_its_preprocess(cfg, photos, tmp_path):
    import open_clip
    ref = open_clip_tiny()
    save_file({k: v.contiguous() for k, v in ref.state_dict().items()}, str(tmp_path / "open_clip_model.safetensors"))
    model_cfg = {"embed_dim": 16, "quick_gelu": True,
                 "vision_cfg": {"layers": 2, "width": 128, "head_width": 64, "patch_size": 16, "image_size": 64},
                 "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 128, "heads": 2, "layers": 2}}
    (tmp_path / "open_clip_config.json").write_text(json.dumps({"model_cfg": model_cfg, "preprocess_cfg": cfg}))
    theirs, _, preprocess = open_clip.create_model_and_transforms(f"local-dir:{tmp_path}")
    loaded = vit.load(tmp_path)
    assert loaded.preprocess == open_clip_preprocess(64, cfg)
    for name, photo in photos.items():
        x = preprocess(photo).unsqueeze(0)
        assert grey_levels(loaded.preprocess(photo), x, loaded.preprocess) <= 1.0, name
        with torch.no_grad():
            torch.testing.assert_close(loaded.model(loaded.preprocess(photo)), theirs.eval().encode_image(x),
                                       atol=1e-4, rtol=1e-4)
