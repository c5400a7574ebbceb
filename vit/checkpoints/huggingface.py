"""Hugging Face Hub folders: transformers' ``save_pretrained`` folders and timm's Hub folders.

transformers (``model_type`` in config.json): ViTForImageClassification / DeiT / BEiT (format "huggingface"),
CLIPModel, CLIPVisionModel(WithProjection), SiglipVisionModel and SiglipModel's image tower (format
"huggingface-clip"). Tensors are renamed by the format's filter in ``vit.checkpoints.formats``; this module
reads what lies around them: config.json (heads, LayerNorm eps, activation, image size, id2label, the text
tower's config), preprocessor_config.json, and a CLIP tokenizer's vocab.json + merges.txt.

timm (config.json with ``architecture`` and ``pretrained_cfg``, as on huggingface.co/timm): the architecture
name says what the tensors cannot (QuickGELU for ``*_quickgelu_*``), the pretrained config gives the
preprocessing (input size, crop_pct, crop_mode, interpolation, mean, std).

open_clip (open_clip_config.json beside open_clip_model.safetensors or open_clip_pytorch_model.bin): the
model config says whether the model uses QuickGELU, the preprocess config gives the preprocessing.

Every folder's preprocessing is its source's own (``vit.checkpoints.pipelines``).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from .files import read_file, regular_file
from .pipelines import huggingface_preprocess, open_clip_preprocess, timm_preprocess
from ..clip.tokenizer import Tokenizer
from ..preprocess import Preprocess

HF_ACTIVATIONS = {"gelu": "gelu", "quick_gelu": "quick_gelu", "gelu_pytorch_tanh": "gelu_tanh",
                  "gelu_new": "gelu_tanh"}  # transformers' hidden_act -> ViTConfig.mlp_act
CLIP_TYPES = ("clip", "clip_vision_model", "siglip", "siglip_vision_model")


@dataclass(frozen=True)
class HuggingFaceFolder:
    state: dict                 # tensors under Hugging Face (or timm) key names
    config: dict                # ViTConfig fields: num_heads, layer_norm_eps, img_size, mlp_act, …
    labels: list[str] | None    # id2label in index order; None for HF's LABEL_i placeholders
    preprocess: Preprocess | None  # the source's own; None: the family's default (``load.default_preprocess``)
    format: str = "huggingface"    # the format of ``state``: "huggingface", "huggingface-clip" or "timm"
    text_config: dict = field(default_factory=dict)  # TextConfig fields of a CLIP text tower
    tokenizer: Tokenizer | None = None                # the folder's own CLIP tokenizer files, when it has them


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
    if kind in ("vit", "deit"):
        return _read_vit_folder(folder, hf)
    if kind == "beit":
        return _read_beit_folder(folder, hf)
    if kind in CLIP_TYPES:
        return _read_clip_folder(folder, hf)
    raise ValueError(f"{folder}: unsupported Hugging Face model_type {kind!r}! Expected one of 'vit', 'deit', "
                     f"'beit', {', '.join(repr(t) for t in CLIP_TYPES)}, or a timm folder (config.json with "
                     f"'architecture').")


def _read_vit_folder(folder: Path, hf: dict) -> HuggingFaceFolder:
    if hf.get("hidden_act", "gelu") != "gelu":
        raise ValueError(f"{folder}: hidden_act {hf['hidden_act']!r} is not supported! Expected 'gelu' (exact GELU).")
    config = _encoder_config(hf, default_eps=1e-12)
    return HuggingFaceFolder(_read_weights(folder), config, _labels(hf.get("id2label") or {}),
                             _processor(folder, hf["model_type"], config["img_size"]))


def _read_beit_folder(folder: Path, hf: dict) -> HuggingFaceFolder:
    if hf.get("use_shared_relative_position_bias"):
        raise ValueError(f"{folder}: a BEiT with one relative position bias shared by all blocks (a pre-training "
                         f"checkpoint) is not supported! Expected use_relative_position_bias (one per block).")
    config = _encoder_config(hf, default_eps=1e-12)
    config["mlp_act"] = _activation(folder, hf)
    return HuggingFaceFolder(_read_weights(folder), config, _labels(hf.get("id2label") or {}),
                             _processor(folder, "beit", config["img_size"]))


def _read_clip_folder(folder: Path, hf: dict) -> HuggingFaceFolder:
    """CLIP / SigLIP: the image tower's settings live in vision_config (or at the top level for a vision model)."""
    kind = hf["model_type"]
    vision = hf.get("vision_config", hf) if kind in ("clip", "siglip") else hf
    config = _encoder_config(vision, default_eps=1e-5 if kind.startswith("clip") else 1e-6)
    config["mlp_act"] = _activation(folder, vision)
    if kind.startswith("siglip") and not vision.get("vision_use_head", True):
        raise ValueError(f"{folder}: a SigLIP image tower without its attention-pooling head (vision_use_head "
                         f"false) is not supported! Expected the MAP head.")
    state = _read_weights(folder)
    text_config, tokenizer = {}, None
    if kind == "siglip":  # SigLIP's text tower is not CLIP's (no causal mask, sigmoid loss): its image tower only
        state = {k: v for k, v in state.items() if not k.startswith("text_model.") and k not in
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
    return HuggingFaceFolder(state, config, None, _processor(folder, kind, config["img_size"]),
                             "huggingface-clip", text_config, tokenizer)


def _read_timm_folder(folder: Path, timm_cfg: dict) -> HuggingFaceFolder:
    """A timm Hub folder: config.json {"architecture", "num_classes", "pretrained_cfg": {...}} + the weights."""
    arch = str(timm_cfg["architecture"])
    pretrained = timm_cfg.get("pretrained_cfg") or {}
    config = {"mlp_act": "quick_gelu"} if "quickgelu" in arch else {}
    preprocess = None
    if "input_size" in pretrained:  # else the architecture's own config, which only timm knows: the loader's default
        preprocess = timm_preprocess(pretrained)
        config["img_size"] = preprocess.crop
    labels = pretrained.get("label_names") or timm_cfg.get("label_names")
    return HuggingFaceFolder(_read_weights(folder), config, list(labels) if labels else None, preprocess, "timm")


def _read_open_clip_folder(folder: Path, oc: dict) -> HuggingFaceFolder:
    """An open_clip Hub folder: {"model_cfg": {"quick_gelu", "vision_cfg", "text_cfg"}, "preprocess_cfg": {...}}."""
    model_cfg, pre = oc.get("model_cfg") or {}, oc.get("preprocess_cfg") or {}
    act = "quick_gelu" if model_cfg.get("quick_gelu") else "gelu"
    size = (model_cfg.get("vision_cfg") or {}).get("image_size", 224)
    crop = tuple(size) if isinstance(size, (list, tuple)) else (size, size)
    preprocess = open_clip_preprocess(crop, pre)
    names = ("open_clip_model.safetensors", "open_clip_pytorch_model.bin")
    weights = next((folder / n for n in names if (folder / n).is_file()), None)
    if weights is None:
        raise FileNotFoundError(f"{folder}: no {' or '.join(names)} beside open_clip_config.json.")
    return HuggingFaceFolder(read_file(weights), {"mlp_act": act, "img_size": crop}, None, preprocess,
                             "openai-clip", {"mlp_act": act})


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


def _processor(folder: Path, model_type: str, img_size: tuple[int, int]) -> Preprocess:
    """The folder's image processor (preprocessor_config.json, else its class's defaults at the model's size)."""
    try:
        return huggingface_preprocess(_read_json(folder / "preprocessor_config.json"), model_type, img_size)
    except ValueError as e:
        raise ValueError(f"{folder}: {e}") from None


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
