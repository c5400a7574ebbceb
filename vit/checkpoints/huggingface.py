"""Hugging Face ``save_pretrained`` folders of ViTForImageClassification / DeiT: config, weights, image processor.

Tensors are renamed by ``vit.checkpoint.huggingface_filter_fn``; this module reads what lies around them:
config.json (heads, LayerNorm eps 1e-12, image size, id2label) and preprocessor_config.json.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .files import read_file
from ..preprocess import INCEPTION_MEAN, INCEPTION_STD, Preprocess

PIL_RESAMPLE = {2: "bilinear", 3: "bicubic", 0: "nearest"}  # HF stores PIL's resample enum values


@dataclass(frozen=True)
class HuggingFaceFolder:
    state: dict                 # tensors under Hugging Face key names
    config: dict                # ViTConfig fields: num_heads, layer_norm_eps, img_size
    labels: list[str] | None    # id2label in index order; None for HF's LABEL_i placeholders
    preprocess: Preprocess


def read_folder(folder: Path) -> HuggingFaceFolder:
    hf = _read_json(folder / "config.json")
    if hf is None:
        raise ValueError(f"{folder} is a folder but not a Hugging Face model: no config.json inside.")
    if hf.get("model_type") not in ("vit", "deit"):
        raise ValueError(f"{folder}: unsupported Hugging Face model_type {hf.get('model_type')!r}! "
                         f"Expected 'vit' or 'deit'.")
    if hf.get("hidden_act", "gelu") != "gelu":
        raise ValueError(f"{folder}: hidden_act {hf['hidden_act']!r} is not supported! Expected 'gelu' (exact GELU).")
    size = hf.get("image_size", 224)
    config = dict(layer_norm_eps=hf.get("layer_norm_eps", 1e-12),
                  img_size=tuple(size) if isinstance(size, (list, tuple)) else (size, size))
    if "num_attention_heads" in hf:
        config["num_heads"] = hf["num_attention_heads"]
    preprocess = _preprocess(_read_json(folder / "preprocessor_config.json") or {}, config["img_size"])
    return HuggingFaceFolder(_read_weights(folder), config, _labels(hf.get("id2label") or {}), preprocess)


def _read_json(path: Path) -> dict | None:
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
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


def _preprocess(d: dict, img_size: tuple[int, int]) -> Preprocess:
    """HF image processor settings -> Preprocess. HF's ViT processor squashes the image to size×size; we resize
    the short side and center-crop, which is the same for square photos and keeps the aspect ratio otherwise."""

    def hw(s) -> tuple[int, int]:
        if isinstance(s, dict):
            return (s["height"], s["width"]) if "height" in s else (s["shortest_edge"],) * 2
        return (s, s) if isinstance(s, int) else tuple(s)

    size = hw(d.get("size", img_size))
    crop = hw(d["crop_size"]) if d.get("do_center_crop") and "crop_size" in d else size
    return Preprocess(resize=min(size), crop=crop, interpolation=PIL_RESAMPLE.get(d.get("resample", 2), "bilinear"),
                      mean=tuple(d.get("image_mean", INCEPTION_MEAN)), std=tuple(d.get("image_std", INCEPTION_STD)))
