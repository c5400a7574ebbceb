"""Hugging Face Hub folders: transformers' ``save_pretrained`` folders and timm's Hub folders.

transformers (``model_type`` in config.json): ViTForImageClassification / DeiT / BEiT / data2vec-vision, DINOv2
(with or without registers), MAE's encoder and MSN (format "huggingface"), CLIPModel,
CLIPVisionModel(WithProjection), SiglipVisionModel and SiglipModel's image tower, Siglip2VisionModel and Siglip2Model's
NaFlex image tower (format "huggingface-clip"), DINOv3ViTModel / DINOv3ViTBackbone (format "huggingface-dinov3"),
Swin and Swin v2 (format "huggingface-swin", read by ``vit.checkpoints.swin_formats``).
Tensors are renamed by the format's filter in ``vit.checkpoints.formats``; this module reads what lies around them:
config.json (heads, LayerNorm eps, activation, image size, id2label, the text tower's config),
preprocessor_config.json, and a CLIP tokenizer's vocab.json + merges.txt.

timm (config.json with ``architecture`` and ``pretrained_cfg``, as on huggingface.co/timm): the architecture
name says what the tensors cannot (QuickGELU for ``*_quickgelu_*``), the pretrained config gives the
preprocessing (input size, crop_pct, crop_mode, interpolation, mean, std).

open_clip (open_clip_config.json beside open_clip_model.safetensors or open_clip_pytorch_model.bin): the
model config says whether the model uses QuickGELU and how many heads its image tower has, or names the timm model
its image tower is (SigLIP, SigLIP 2: format "open-clip-timm"); the preprocess config gives the preprocessing.

What a folder does not say is listed (``assumptions``): a missing preprocessor_config.json.

Every folder's preprocessing is its source's own (``vit.checkpoints.pipelines``).
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from . import assumptions
from .files import read_file, regular_file
from .infer import CLIP_LAYER_NORM_EPS
from .pipelines import huggingface_preprocess, huggingface_processor_name, open_clip_preprocess, timm_preprocess
from .timm_library import TimmArchitecture
from .timm_names import Named, architecture_config, named, plain_mlp_activation
from .sam_formats import huggingface_sam_config, sam_preprocess
from .swin_formats import huggingface_swin_config, timm_swin_config
from .video_formats import VIDEO_TYPES, huggingface_video_config, huggingface_video_preprocess
from ..clip.tokenizer import Tokenizer
from ..readout import TIMM_POOLS
from ..preprocess import Preprocess

HF_ACTIVATIONS = {"gelu": "gelu", "quick_gelu": "quick_gelu", "gelu_pytorch_tanh": "gelu_tanh",
                  "gelu_new": "gelu_tanh"}  # transformers' hidden_act -> ViTConfig.mlp_act
CLIP_TYPES = ("clip", "clip_vision_model", "siglip", "siglip_vision_model", "siglip2", "siglip2_vision_model")
VIT_TYPES = ("vit", "deit", "vit_msn", "vit_mae", "ijepa")  # ViT's layout (MAE: its encoder, unmasked; I-JEPA no CLS)
BEIT_TYPES = ("beit", "data2vec-vision")                  # relative position bias, layer scale, mean pooling
DINOV2_TYPES = ("dinov2", "dinov2_with_registers")        # layer scale, registers, SwiGLU for the giant
SWIN_TYPES = ("swin", "swinv2")
SAM_TYPES = ("sam", "sam_vision_model")                   # SamModel (its image encoder) and SamVisionModel
AIMV2_TYPES = ("aimv2_vision_model", "aimv2")              # Aimv2VisionModel, Aimv2Model's image tower
SUPPORTED_TYPES = (*VIT_TYPES, *BEIT_TYPES, *DINOV2_TYPES, *CLIP_TYPES, "dinov3_vit", *SWIN_TYPES, *SAM_TYPES,
                   *AIMV2_TYPES, *VIDEO_TYPES)
OPEN_CLIP_TIMM_PROJECTIONS = ("none", "linear", None)  # open_clip's timm_proj: none, a bias-free Linear, or (null)
                                                       # timm's own head, with its bias


@dataclass(frozen=True)
class HuggingFaceFolder:
    state: dict                 # tensors under Hugging Face (or timm) key names
    config: dict                # ViTConfig fields: num_heads, layer_norm_eps, img_size, mlp_act, …
    labels: list[str] | None    # id2label in index order; None for HF's LABEL_i placeholders
    preprocess: Preprocess | None  # the source's own; None: the family's default (``load.default_preprocess``)
    format: str = "huggingface"    # the format of ``state``: "huggingface", "huggingface-clip" or "timm"
    text_config: dict = field(default_factory=dict)  # TextConfig fields of a CLIP text tower
    tokenizer: Tokenizer | None = None                # the folder's own CLIP tokenizer files, when it has them
    activation: str | None = None   # a plain MLP's activation named by a timm architecture (a gated MLP's tensors win)
    assumptions: tuple = ()         # what the folder does not say (``vit.checkpoints.assumptions.Assumption``)
    timm: TimmArchitecture | None = None   # the timm architecture it names, as timm builds it (None without timm)
    head_projects: bool = False     # timm's head is the projection into an image–text space (PE core)


def read_folder(folder: Path) -> HuggingFaceFolder:
    open_clip = _read_json(folder / "open_clip_config.json")
    if open_clip is not None:
        return _read_open_clip_folder(folder, open_clip)
    hf = _read_json(folder / "config.json")
    if hf is None:
        raise ValueError(f"{folder} is a folder but not a Hugging Face model: no config.json (nor "
                         f"open_clip_config.json) inside.")
    if "architecture" in hf and "model_type" not in hf:
        return _read_timm_folder(folder, hf)
    kind = hf.get("model_type")
    if kind in VIT_TYPES:
        return _read_vit_folder(folder, hf)
    if kind in BEIT_TYPES:
        return _read_beit_folder(folder, hf)
    if kind in DINOV2_TYPES:
        return _read_dinov2_folder(folder, hf)
    if kind in CLIP_TYPES:
        return _read_clip_folder(folder, hf)
    if kind == "dinov3_vit":
        return _read_dinov3_folder(folder, hf)
    if kind in SWIN_TYPES:
        return _read_swin_folder(folder, hf)
    if kind in VIDEO_TYPES:
        return _read_video_folder(folder, hf)
    if kind in AIMV2_TYPES:
        return _read_aimv2_folder(folder, hf)
    if kind in SAM_TYPES:
        config = huggingface_sam_config(hf)
        return HuggingFaceFolder(_read_weights(folder), config, None, sam_preprocess(config["img_size"]),
                                 "huggingface-sam")
    raise ValueError(f"{folder}: unsupported Hugging Face model_type {kind!r}! Expected one of "
                     f"{', '.join(repr(t) for t in SUPPORTED_TYPES)}, or a timm folder (config.json with "
                     f"'architecture') or an open_clip folder (open_clip_config.json).")


def _read_vit_folder(folder: Path, hf: dict) -> HuggingFaceFolder:
    if hf.get("hidden_act", "gelu") != "gelu":
        raise ValueError(f"{folder}: hidden_act {hf['hidden_act']!r} is not supported! Expected 'gelu' (exact GELU).")
    config = _encoder_config(hf, default_eps=1e-12)
    if hf["model_type"] == "deit":   # the class says whether the distillation token has a head of its own
        with_teacher = "DeiTForImageClassificationWithTeacher" in (hf.get("architectures") or ())
        config["readout"] = "distilled" if with_teacher else "cls"
    state = _read_weights(folder)
    if hf["model_type"] == "vit_mae":  # ViTMAEForPreTraining: the encoder; its decoder reconstructs masked patches
        state = {k: v for k, v in state.items() if not k.startswith("decoder.")}
    return _folder(folder, hf, state, config, hf["model_type"])


def _read_beit_folder(folder: Path, hf: dict) -> HuggingFaceFolder:
    """BEiT and data2vec-vision: one relative position bias per block, or one shared by all blocks (pre-training
    checkpoints: the loader gives every block the shared table)."""
    config = _encoder_config(hf, default_eps=1e-12)
    config["mlp_act"] = _activation(folder, hf)
    return _folder(folder, hf, _read_weights(folder), config, hf["model_type"])


def _read_dinov2_folder(folder: Path, hf: dict) -> HuggingFaceFolder:
    """DINOv2 (Dinov2Model, and its registers variant): layer scale, registers without position embedding, SwiGLU for
    the giant; the registers variant resizes its position table with antialiasing, as Meta's register models do.
    The classifiers (Dinov2ForImageClassification) read the CLS token and the mean of the patches side by side: their
    head, 2·D wide, says so (``infer.readout_fields``)."""
    config = _encoder_config(hf, default_eps=1e-6)
    config["mlp_act"] = "swiglu" if hf.get("use_swiglu_ffn") else _activation(folder, hf)
    if hf["model_type"] == "dinov2_with_registers":
        config["pos_embed_antialias"] = True
    return _folder(folder, hf, _read_weights(folder), config, hf["model_type"])


def _read_aimv2_folder(folder: Path, hf: dict) -> HuggingFaceFolder:
    """AIMv2's image tower (Aimv2VisionModel, or Aimv2Model's): RMSNorm, SwiGLU, its heads and biases from
    config.json; its head (use_head) an attention pooling whose probe is the query, else the mean of the patches.
    The native-resolution variant (a sine-cosine table made per photo) is refused."""
    vision = hf.get("vision_config", hf)
    if vision.get("is_native"):
        raise ValueError(f"{folder}: AIMv2's native-resolution tower (is_native true: a sine-cosine table made for "
                         f"each photo's grid) is not one this explorer builds! Expected a learnt position table.")
    if vision.get("hidden_act", "silu") != "silu":
        raise ValueError(f"{folder}: AIMv2 with hidden_act {vision['hidden_act']!r} is not supported! Expected "
                         f"'silu' (SwiGLU).")
    size = vision.get("image_size", 224)
    config = dict(img_size=(size, size), num_heads=vision.get("num_attention_heads", 8),
                  layer_norm_eps=vision.get("rms_norm_eps", 1e-5), mlp_act="swiglu",
                  readout="map" if vision.get("use_head", True) else "mean")
    state = _read_weights(folder)
    preprocess, assumed = _processor(folder, hf["model_type"], config["img_size"])
    return HuggingFaceFolder(state, config, None, preprocess, "huggingface-aimv2", assumptions=assumed)


def _folder(folder: Path, hf: dict, state: dict, config: dict, model_type: str) -> HuggingFaceFolder:
    """A transformers folder in format "huggingface": its labels and its image processor (or its class's defaults,
    said to be assumed)."""
    preprocess, assumed = _processor(folder, model_type, config["img_size"])
    return HuggingFaceFolder(state, config, _labels(hf.get("id2label") or {}), preprocess, assumptions=assumed)


def _read_swin_folder(folder: Path, hf: dict) -> HuggingFaceFolder:
    """SwinForImageClassification / Swinv2ForImageClassification (or their bare models): vit.swin's config fields."""
    config = huggingface_swin_config(hf, folder)
    preprocess, assumed = _processor(folder, hf["model_type"], config["img_size"])
    return HuggingFaceFolder(_read_weights(folder), config, _labels(hf.get("id2label") or {}), preprocess,
                             "huggingface-swin", assumptions=assumed)


def _read_video_folder(folder: Path, hf: dict) -> HuggingFaceFolder:
    """VideoMAE, TimeSformer, ViViT and V-JEPA 2 classifiers: vit.video's config fields, and their video processor
    (video_preprocessor_config.json, else preprocessor_config.json, else the class's defaults, said to be assumed)."""
    from ..video import VideoConfig
    kind = hf["model_type"]
    config = huggingface_video_config(hf, str(folder))
    settings = _read_json(folder / "video_preprocessor_config.json") or _read_json(folder / "preprocessor_config.json")
    try:
        preprocess = huggingface_video_preprocess(settings, kind, VideoConfig(**config))
    except ValueError as e:
        raise ValueError(f"{folder}: {e}") from None
    assumed = () if settings is not None else (assumptions.Assumption(
        "processor", processor=VIDEO_PROCESSOR_NAMES[kind], **assumptions.described(preprocess)),)
    return HuggingFaceFolder(_read_weights(folder), config, _labels(hf.get("id2label") or {}), preprocess,
                             f"huggingface-{kind}", assumptions=assumed)


VIDEO_PROCESSOR_NAMES = {"videomae": "VideoMAEVideoProcessor", "timesformer": "TimesformerVideoProcessor",
                         "vivit": "VivitVideoProcessor", "vjepa2": "VJEPA2VideoProcessor"}


def _read_clip_folder(folder: Path, hf: dict) -> HuggingFaceFolder:
    """CLIP / SigLIP: the image tower's settings live in vision_config (or at the top level for a vision model)."""
    kind = hf["model_type"]
    vision = hf.get("vision_config", hf) if kind in ("clip", "siglip", "siglip2") else hf
    config = _encoder_config(vision, default_eps=1e-5 if kind.startswith("clip") else 1e-6)
    config["mlp_act"] = _activation(folder, vision)
    defaults = {}
    if kind.startswith("siglip2"):  # NaFlex: without preprocessor_config.json, the model's patch and table size
        defaults = {"patch_size": vision.get("patch_size", 16), "max_num_patches": vision.get("num_patches", 256)}
    preprocess, assumed = _processor(folder, kind, config["img_size"], defaults)
    if kind.startswith("siglip2"):  # a square table of num_patches resized to each photo's own grid
        side = math.isqrt(int(vision.get("num_patches", 256)))
        config.update(pos_embed_grid=(side, side), pos_embed_interp="bilinear", pos_embed_antialias=True,
                      img_size=preprocess.crop)
    if kind.startswith("siglip") and not vision.get("vision_use_head", True):
        raise ValueError(f"{folder}: a SigLIP image tower without its attention-pooling head (vision_use_head "
                         f"false) is not supported! Expected the MAP head.")
    state = _read_weights(folder)
    text_config, tokenizer = {}, None
    if kind in ("siglip", "siglip2"):  # SigLIP's text tower is not CLIP's (no causal mask, sigmoid loss): its image
        state = {k: v for k, v in state.items() if not k.startswith("text_model.") and k not in  # tower only
                 ("logit_scale", "logit_bias")}
    if kind == "clip":
        text = hf.get("text_config", {})
        text_config = {"mlp_act": _activation(folder, text), "layer_norm_eps": text.get("layer_norm_eps", 1e-5)}
        if "num_attention_heads" in text:
            text_config["num_heads"] = text["num_attention_heads"]
        if (folder / "vocab.json").is_file() and (folder / "merges.txt").is_file():
            tokenizer = Tokenizer.from_vocab_files(folder / "vocab.json", folder / "merges.txt",
                                                   text.get("max_position_embeddings", 77))
        if tokenizer is not None:  # EOS pooling: the tokenizer's end-of-text id
            text_config["eot_token_id"] = tokenizer.eot_id
        elif text.get("eos_token_id", 2) != 2:  # 2: configs from before transformers knew it (argmax pooling)
            text_config["eot_token_id"] = text["eos_token_id"]
    return HuggingFaceFolder(state, config, None, preprocess, "huggingface-clip", text_config, tokenizer,
                             assumptions=assumed)


def _read_dinov3_folder(folder: Path, hf: dict) -> HuggingFaceFolder:
    """DINOv3ViTModel / DINOv3ViTBackbone: its rotation's base (rope_theta), heads, eps, size and MLP from config.json
    (the rest of DINOv3's rotation is its family's, ``vit.checkpoints.families``)."""
    for name in ("proj_bias", "mlp_bias"):
        if not hf.get(name, True):
            raise ValueError(f"{folder}: a DINOv3 without {name.replace('_', ' ')}es ({name} false) is not supported! "
                             f"Expected the published models' biases.")
    if hf.get("query_bias", True) != hf.get("value_bias", True):
        raise ValueError(f"{folder}: a query bias without a value bias (or the reverse) is not supported! Expected "
                         f"query_bias and value_bias both true (DINOv3's) or both false.")
    gated = bool(hf.get("use_gated_mlp", False))
    if gated and hf.get("hidden_act", "silu") != "silu":
        raise ValueError(f"{folder}: a gated MLP with hidden_act {hf['hidden_act']!r} is not supported! Expected "
                         f"'silu' (SwiGLU, DINOv3's).")
    config = _encoder_config(hf, default_eps=1e-5)
    config.update(mlp_act="swiglu" if gated else _activation(folder, hf),
                  rope_temperature=float(hf.get("rope_theta", 100.0)))
    preprocess, assumed = _processor(folder, "dinov3_vit", config["img_size"])
    return HuggingFaceFolder(_read_weights(folder), config, None, preprocess, "huggingface-dinov3",
                             assumptions=assumed)


def _read_timm_folder(folder: Path, timm_cfg: dict) -> HuggingFaceFolder:
    """A timm Hub folder: config.json {"architecture", "num_classes", "pretrained_cfg": {...}} + the weights."""
    arch = str(timm_cfg["architecture"])
    pretrained = timm_cfg.get("pretrained_cfg") or {}
    state = _read_weights(folder)
    model_args = timm_cfg.get("model_args") or {}
    name = named(arch, model_args, state) if not arch.startswith("swin") else None
    config = dict(name.fields) if name else {}
    preprocess = None
    if "input_size" in pretrained:  # else the architecture's own config, which only timm knows: the loader's default
        patch = re.search(r"_patch(\d+)", arch) if arch.startswith("naflexvit_") else None
        preprocess = timm_preprocess(pretrained, naflex_patch=int(patch[1]) if patch else None)
        if "pos_embed" not in state and "img_size" not in config:   # a table's grid is the model's own size; without
            config["img_size"] = preprocess.crop                     # one, the input its preprocessing gives
    config.update(timm_swin_config(arch))   # a Swin's window: {} for other models
    labels = pretrained.get("label_names") or timm_cfg.get("label_names")
    fmt = "timm-naflex" if "embeds.proj.weight" in state else "timm"     # NaFlexViT keeps its embeddings apart
    return HuggingFaceFolder(state, config, list(labels) if labels else None, preprocess, fmt,
                             activation=name and name.activation, assumptions=name.said if name else (),
                             timm=name and name.timm, head_projects=bool(name and name.head_projects))


def _read_open_clip_folder(folder: Path, oc: dict) -> HuggingFaceFolder:
    """An open_clip Hub folder: {"model_cfg": {"quick_gelu", "vision_cfg", "text_cfg"}, "preprocess_cfg": {...}}.

    Its own image tower (OpenAI's layout) has ``width`` / ``head_width`` heads; a timm image tower
    (``vision_cfg.timm_model_name``, SigLIP's and SigLIP 2's) is that timm model, pooled as ``timm_pool`` says and
    projected as ``timm_proj`` says; its text tower is not CLIP's, so only the image tower is loaded."""
    model_cfg, pre = oc.get("model_cfg") or {}, oc.get("preprocess_cfg") or {}
    vision = model_cfg.get("vision_cfg") or {}
    size = vision.get("image_size", 224)
    crop = tuple(size) if isinstance(size, (list, tuple)) else (size, size)
    preprocess = open_clip_preprocess(crop, pre)
    names = ("open_clip_model.safetensors", "open_clip_pytorch_model.bin")
    weights = next((folder / n for n in names if (folder / n).is_file()), None)
    if weights is None:
        raise FileNotFoundError(f"{folder}: no {' or '.join(names)} beside open_clip_config.json.")
    timm_name = vision.get("timm_model_name")
    if timm_name:
        state = read_file(weights)
        config, name = _open_clip_timm_config(folder, vision, crop, state)
        if vision.get("timm_proj", "linear") is None:   # timm's own head is the projection into the shared space
            state = {re.sub(r"^((module\.)?visual\.)trunk\.head\.", r"\1head.proj.", k): v for k, v in state.items()}
        return HuggingFaceFolder(state, config, None, preprocess, "open-clip-timm", activation=name.activation,
                                 assumptions=name.said, timm=name.timm)
    act = "quick_gelu" if model_cfg.get("quick_gelu") else "gelu"
    config = {"mlp_act": act, "img_size": crop, "layer_norm_eps": CLIP_LAYER_NORM_EPS,   # open_clip's LayerNorms
              **_open_clip_pooling(folder, vision)}
    if "width" in vision:  # open_clip's VisionTransformer: heads = width / head_width
        config["num_heads"] = max(int(vision["width"]) // int(vision.get("head_width", 64)), 1)
    state = read_file(weights)
    if config.get("fc_norm"):                  # final_ln_after_pool: ln_post normalises the pooled vector
        state = {k.replace("visual.ln_post.", "visual.fc_norm."): v for k, v in state.items()}
    if not _clip_text_tower(model_cfg.get("text_cfg") or {}):   # CLIPA's BERT-tokenized text tower: the image tower
        state = {k: v for k, v in state.items() if re.match(r"(module\.)?visual\.", k)}
    return HuggingFaceFolder(state, config, None, preprocess, "openai-clip", {"mlp_act": act})


def _open_clip_pooling(folder: Path, vision: dict) -> dict:
    """The readout of open_clip's own image tower: the CLS token (``pool_type`` "tok") or the mean of the patches
    ("avg", CLIPA's), its LayerNorm after pooling with ``final_ln_after_pool``; ValueError for attention pooling
    (CoCa's) or no pooling."""
    pool = vision.get("pool_type", "tok")
    if vision.get("attentional_pool") or pool not in ("tok", "avg"):
        how = "attention" if vision.get("attentional_pool") else repr(pool)
        raise ValueError(f"{folder}: open_clip's image tower pools by {how}, not a readout this explorer draws! "
                         f"Expected pool_type 'tok' (the CLS token) or 'avg' (the mean of the patches).")
    readout = {"tok": "cls", "avg": "mean"}[pool]
    return dict(readout=readout, **({"fc_norm": True} if vision.get("final_ln_after_pool") and pool == "avg" else {}))


def _clip_text_tower(text: dict) -> bool:
    """Whether open_clip's text tower is CLIP's (BPE tokenizer, causal mask, the end-of-text token's vector), the one
    this explorer builds; CLIPA's (a BERT tokenizer, no mask, the last token) is not."""
    return not text.get("hf_tokenizer_name") and not text.get("no_causal_mask") and \
        text.get("pool_type", "argmax") == "argmax"


def _open_clip_timm_config(folder: Path, vision: dict, crop: tuple[int, int], state: dict) -> tuple[dict, Named]:
    """ViTConfig fields of open_clip's timm image tower, and what its timm name says (timm's own model of it, made as
    open_clip's TimmModel makes it); ValueError for one that is not a ViT this explorer opens."""
    name = str(vision["timm_model_name"])
    if plain_mlp_activation(name) is None and not architecture_config(name) and not name.startswith("eva02_"):
        raise ValueError(f"{folder}: open_clip's image tower is timm's {name!r}, which is not a ViT this explorer "
                         f"opens! Expected a timm ViT (vit_*, deit*, eva02_*) such as SigLIP's "
                         f"vit_base_patch16_siglip_224.")
    proj = vision.get("timm_proj", "linear")
    if proj not in OPEN_CLIP_TIMM_PROJECTIONS or (proj == "linear" and vision.get("timm_proj_bias")):
        raise ValueError(f"{folder}: open_clip's timm_proj {proj!r}{' with a bias' if proj == 'linear' else ''} is "
                         f"not supported! Expected 'none', none at all (timm's head projects) or a bias-free "
                         f"'linear' projection.")
    pool = vision.get("timm_pool", "avg")
    if pool not in TIMM_POOLS:
        raise ValueError(f"{folder}: open_clip's timm_pool {pool!r} is not supported! Expected 'map', 'avg' or "
                         f"'token'.")
    # open_clip's TimmModel: timm's head is the projection (timm_proj null), none (timm_proj 'none'), or a Linear
    # after a headless trunk (timm_proj 'linear', its pooling reset)
    args = {"global_pool": pool, "num_classes": 0}
    found = named(name, args, {k: v for k, v in state.items() if "head." not in k}, "visual.trunk.")
    config = {**found.fields, "img_size": crop}
    if pool != "map":  # map pooling shows in its tensors (attn_pool); the others do not
        config.setdefault("readout", TIMM_POOLS[pool])
    return config, found


def _encoder_config(hf: dict, default_eps: float) -> dict:
    """ViTConfig fields every transformers vision encoder config has: eps, image size, heads."""
    size = hf.get("image_size", 224)
    config = dict(layer_norm_eps=hf.get("layer_norm_eps", default_eps),
                  img_size=tuple(size) if isinstance(size, (list, tuple)) else (size, size))
    if "num_attention_heads" in hf:
        config["num_heads"] = hf["num_attention_heads"]
    return config


def _activation(folder: Path, hf: dict) -> str:
    act = hf.get("hidden_act", "gelu")
    if act not in HF_ACTIVATIONS:
        raise ValueError(f"{folder}: hidden_act {act!r} is not supported! Expected one of {sorted(HF_ACTIVATIONS)}.")
    return HF_ACTIVATIONS[act]


def _processor(folder: Path, model_type: str, img_size: tuple[int, int],
               defaults: dict | None = None) -> tuple[Preprocess, tuple]:
    """The folder's image processor (preprocessor_config.json, else its class's defaults at the model's size, said
    to be assumed); ``defaults``: settings the model fixes where the file says nothing (a NaFlex tower's patch and
    table size)."""
    settings = _read_json(folder / "preprocessor_config.json")
    given = settings
    if defaults:
        settings = {**defaults, **(settings or {})}
    try:
        preprocess = huggingface_preprocess(settings, model_type, img_size)
    except ValueError as e:
        raise ValueError(f"{folder}: {e}") from None
    if given is not None:
        return preprocess, ()
    name = huggingface_processor_name({}, model_type)
    return preprocess, (assumptions.Assumption("processor", processor=name, **assumptions.described(preprocess)),)


def _read_json(path: Path) -> dict | None:
    if not path.is_file():
        return None
    try:
        return json.loads(regular_file(path).read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path} is not valid JSON: {e}") from None


def _labels(id2label: dict) -> list[str] | None:
    labels = [id2label.get(str(i), id2label.get(i)) for i in range(len(id2label))]
    if not labels or None in labels or all(s == f"LABEL_{i}" for i, s in enumerate(labels)):
        return None  # placeholders: the loader falls back to ImageNet names for 1000 classes
    return labels


def _read_weights(folder: Path) -> dict:
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (folder / name).is_file():
            return read_file(folder / name)
    for index in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
        if (folder / index).is_file():  # sharded: the index maps every tensor to its shard
            shards = sorted(set(_read_json(folder / index)["weight_map"].values()))
            return {k: v for s in shards for k, v in read_file(folder / s).items()}
    raise FileNotFoundError(f"{folder}: no model.safetensors or pytorch_model.bin (nor a sharded index) inside.")
