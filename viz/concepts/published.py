"""SAEs published by other tools, opened as ``SparseAutoencoder`` where what they read is one of our hook points.

Both name where an SAE reads the model the way TransformerLens does (sae-lens ``metadata.hook_name``, ViT-Prisma
``blocks.{hook_point_layer}.{layer_subtype}``). The names that map (``map_hook``):

    blocks.L.hook_resid_post      the stream after block L          -> layer L, "residual"
    blocks.L.hook_resid_pre       the stream entering block L       -> layer L − 1, "residual" (L ≥ 1)
    blocks.L.hook_attn_out        what block L's attention adds     -> layer L, "attention"
    blocks.L.hook_mlp_out         what block L's MLP adds           -> layer L, "mlp"

Any other (the stream between a block's attention and its MLP, a normalised input, a head's output before the heads
are merged, the MLP's hidden units, the embedding) is refused with what it is and why it does not map.

- **sae-lens** (``SAE.save_model``): ``cfg.json`` and ``sae_weights.safetensors`` (W_enc (d_in, d_sae), W_dec
  (d_sae, d_in), b_enc, b_dec, threshold for jumprelu). Architectures ``standard`` (ReLU), ``topk`` (``k``;
  ``rescale_acts_by_decoder_norm`` folded into the weights) and ``jumprelu``; the input b_dec subtracted when
  ``apply_b_dec_to_input``; normalisations none, layer_norm and constant_norm_rescale (a scaling factor sae-lens
  had not yet folded into the weights, or a whitening, is refused). Configs older than sae-lens 6 are read with the
  names they had (hook_point, activation_fn_str, activation_fn_kwargs.k).
- **ViT-Prisma** (``SparseAutoencoder.load_from_pretrained``'s layout, as its Hugging Face repositories hold them):
  ``config.json`` (VisionModelSAERunnerConfig's fields) and ``weights.pt`` (a state dict: W_enc (d_in, d_sae), W_dec,
  b_enc, b_dec), read weights-only. Architecture ``standard`` with activation relu or topk (``activation_fn_kwargs.k``);
  b_dec is subtracted from the input; normalisations none, layer_norm, constant_norm_rescale. An SAE trained on the
  CLS token alone is refused (the Concepts view reads patch tokens), as are transcoders and gated SAEs.

``open_sae(path)`` opens any of the three formats (ours: ``sae.json``), from the folder or one of its files;
``sae_folders(path)`` finds the SAEs of a folder (itself, or its sub-folders).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import torch

from vit.checkpoints.files import read_file, regular_file

from .sae import CONFIG, WEIGHTS, SaeInfo, SparseAutoencoder

SAE_LENS_CONFIG, SAE_LENS_WEIGHTS = "cfg.json", "sae_weights.safetensors"
PRISMA_CONFIG, PRISMA_WEIGHTS = "config.json", "weights.pt"
CONFIG_BYTES = 2**20              # a config.json is a few KB: a larger one is not a config
NORMALISATIONS = {"none": "none", "layer_norm": "layer_norm", "constant_norm_rescale": "constant_norm_rescale"}

_HOOK = re.compile(r"blocks\.(\d+)\.(.+)")
_MAPPED = {"hook_resid_post": (0, "residual"), "hook_resid_pre": (-1, "residual"), "hook_attn_out": (0, "attention"),
           "hook_mlp_out": (0, "mlp")}
_NOT_MAPPED = {
    "hook_resid_mid": "the stream between block {L}'s attention and its MLP",
    "ln1.hook_normalized": "block {L}'s normalised input to its attention",
    "ln2.hook_normalized": "block {L}'s normalised input to its MLP",
    "attn.hook_z": "every head's output of block {L} before the heads are merged and projected",
    "attn.hook_result": "every head's projected output of block {L}, head by head",
    "attn.hook_q": "block {L}'s queries", "attn.hook_k": "block {L}'s keys", "attn.hook_v": "block {L}'s values",
    "mlp.hook_pre": "block {L}'s MLP hidden units before the activation",
    "mlp.hook_post": "block {L}'s MLP hidden units after the activation",
}
OURS = "the stream after a block (residual), what a block's attention adds (attention) or what its MLP adds (mlp)"


def map_hook(name: str) -> tuple[int, str]:
    """A TransformerLens hook name -> (0-based layer, our hook point); ValueError saying what the name reads and why
    it does not map."""
    match = _HOOK.fullmatch(name or "")
    if match is None:
        raise ValueError(f"The SAE reads {name!r}, which is not inside a block; the Concepts view reads {OURS}.")
    layer, point = int(match[1]), match[2]
    if point in _MAPPED:
        offset, hook = _MAPPED[point]
        if layer + offset < 0:
            raise ValueError(f"The SAE reads {name!r}, the stream entering block 0 (the embedding), which is not one "
                             f"of the hook points; the Concepts view reads {OURS}.")
        return layer + offset, hook
    what = _NOT_MAPPED.get(point, f"{point!r} of block {layer}").format(L=layer)
    raise ValueError(f"The SAE reads {name!r}, {what}, which is not one of the hook points: the Concepts view reads "
                     f"{OURS}, and its edits act there.")


def _json(path: Path) -> dict:
    regular_file(path)
    if path.stat().st_size > CONFIG_BYTES:
        raise ValueError(f"{path} is larger than a configuration file can be ({CONFIG_BYTES // 1024} KB).")
    try:
        config = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path} is not readable JSON ({error}).") from None
    if not isinstance(config, dict):
        raise ValueError(f"{path} holds no configuration object.")
    return config


def _weights(path: Path, names: tuple[str, ...]) -> dict[str, torch.Tensor]:
    tensors = read_file(regular_file(path))
    missing = [n for n in names if n not in tensors]
    if missing:
        raise ValueError(f"{path} lacks {', '.join(missing)}: not an SAE's weights (it holds "
                         f"{', '.join(sorted(map(str, tensors))[:8])}).")
    return tensors


def _normalisation(value, source: str) -> str:
    value = value or "none"
    if value not in NORMALISATIONS:
        reason = ("sae-lens folds this scaling into the weights when training ends; this file was saved before that"
                  if value in ("expected_average_only_in", "covariance_whitening") else "it is not one we read")
        raise ValueError(f"The {source} SAE normalises its input by {value!r}: {reason}.")
    return NORMALISATIONS[value]


def from_sae_lens(folder: Path) -> SparseAutoencoder:
    """An SAE saved by sae-lens (``cfg.json`` + ``sae_weights.safetensors``)."""
    folder = Path(folder)
    cfg = _json(folder / SAE_LENS_CONFIG)
    meta = cfg.get("metadata") or {}
    hook_name = meta.get("hook_name") or cfg.get("hook_name") or cfg.get("hook_point")
    if meta.get("hook_head_index", cfg.get("hook_head_index")) is not None:
        raise ValueError("The sae-lens SAE reads one attention head (hook_head_index), not a layer's tokens.")
    layer, hook = map_hook(hook_name)
    architecture = cfg.get("architecture") or "standard"
    k = cfg.get("k") or (cfg.get("activation_fn_kwargs") or {}).get("k")
    if architecture == "standard" and (cfg.get("activation_fn") or cfg.get("activation_fn_str")) == "topk":
        architecture = "topk"                              # a config older than sae-lens 6
    kinds = {"standard": "relu", "topk": "topk", "jumprelu": "jumprelu"}
    if architecture not in kinds:
        raise ValueError(f"The sae-lens SAE's architecture is {architecture!r}; the ones read are "
                         f"{', '.join(kinds)}.")
    names = ("W_enc", "W_dec", "b_enc", "b_dec") + (("threshold",) if architecture == "jumprelu" else ())
    t = _weights(folder / SAE_LENS_WEIGHTS, names)
    W_enc, W_dec, b_enc, b_dec = (t[n].float() for n in names[:4])
    if architecture == "topk" and cfg.get("rescale_acts_by_decoder_norm"):
        norms = W_dec.norm(dim=-1).clamp_min(1e-8)         # acts·‖W_dec‖ in, acts / ‖W_dec‖ out: folded
        W_enc, b_enc, W_dec = W_enc * norms, b_enc * norms, W_dec / norms[:, None]
    apply = cfg.get("apply_b_dec_to_input", True)
    info = SaeInfo(layer, hook, meta.get("model_name") or cfg.get("model_name", ""), source="sae-lens",
                   extra={"published": {"hook_name": hook_name, "architecture": architecture,
                                        "sae_lens_version": meta.get("sae_lens_version") or cfg.get("sae_lens_version"),
                                        "folder": str(folder)}})
    return SparseAutoencoder(W_enc, b_enc, W_dec, b_dec, kinds[architecture], k,
                             t.get("threshold"), _normalisation(cfg.get("normalize_activations"), "sae-lens"),
                             b_pre=b_dec if apply else None, info=info)


def from_prisma(folder: Path) -> SparseAutoencoder:
    """A ViT-Prisma SAE (``config.json`` + ``weights.pt``)."""
    folder = Path(folder)
    cfg = _json(folder / PRISMA_CONFIG)
    if cfg.get("is_transcoder"):
        raise ValueError("The ViT-Prisma file is a transcoder (it maps one hook point to another), not an SAE.")
    if cfg.get("cls_token_only"):
        raise ValueError("The ViT-Prisma SAE was trained on the CLS token alone; the Concepts view reads patch "
                         "tokens, which it has never seen.")
    architecture = cfg.get("architecture", "standard")
    if architecture != "standard":
        raise ValueError(f"The ViT-Prisma SAE's architecture is {architecture!r}; the one read is 'standard'.")
    hook_name = cfg.get("hook_point") or f"blocks.{cfg.get('hook_point_layer')}.{cfg.get('layer_subtype')}"
    layer, hook = map_hook(hook_name)
    activation = cfg.get("activation_fn_str", "relu")
    k = (cfg.get("activation_fn_kwargs") or {}).get("k")
    kinds = {"relu": "relu", "topk": "topk"}
    if activation not in kinds:
        raise ValueError(f"The ViT-Prisma SAE's activation is {activation!r}; the ones read are relu and topk.")
    state = _weights(folder / PRISMA_WEIGHTS, ())
    state = state.get("state_dict", state) if isinstance(state.get("state_dict"), dict) else state
    missing = [n for n in ("W_enc", "W_dec", "b_enc", "b_dec") if n not in state]
    if missing:
        raise ValueError(f"{folder / PRISMA_WEIGHTS} lacks {', '.join(missing)}: not a ViT-Prisma SAE's state dict.")
    info = SaeInfo(layer, hook, cfg.get("model_name", ""), source="vit-prisma",
                   extra={"published": {"hook_name": hook_name, "architecture": architecture,
                                        "activation": activation, "folder": str(folder)}})
    b_dec = state["b_dec"].float()
    return SparseAutoencoder(state["W_enc"].float(), state["b_enc"].float(), state["W_dec"].float(), b_dec,
                             kinds[activation], k, None,
                             _normalisation(cfg.get("normalize_activations"), "ViT-Prisma"), b_pre=b_dec, info=info)


def open_sae(path: str | Path) -> SparseAutoencoder:
    """An SAE folder (or a file in it) in our format (sae.json), sae-lens' (cfg.json) or ViT-Prisma's (config.json
    and weights.pt); ValueError naming what was expected."""
    path = Path(path)
    folder = path.parent if path.is_file() else path
    if not folder.is_dir():
        raise ValueError(f"No SAE at {path}: expected a folder with sae.json (trained by python -m viz.concepts "
                         f"train), cfg.json (sae-lens) or config.json and weights.pt (ViT-Prisma).")
    if (folder / CONFIG).exists():
        regular_file(folder / CONFIG)
        regular_file(folder / WEIGHTS)
        return SparseAutoencoder.load(folder)
    if (folder / SAE_LENS_CONFIG).exists():
        return from_sae_lens(folder)
    if (folder / PRISMA_CONFIG).exists() and (folder / PRISMA_WEIGHTS).exists():
        return from_prisma(folder)
    raise ValueError(f"No SAE in {folder}: expected sae.json and sae.safetensors (python -m viz.concepts train), "
                     f"cfg.json and sae_weights.safetensors (sae-lens) or config.json and weights.pt (ViT-Prisma).")


def holds_sae(folder: Path) -> bool:
    """Whether ``folder`` holds an SAE in one of the three formats ``open_sae`` reads, from its files' names alone."""
    return (folder / CONFIG).exists() or (folder / SAE_LENS_CONFIG).exists() or \
        ((folder / PRISMA_CONFIG).exists() and (folder / PRISMA_WEIGHTS).exists())


def sae_folders(path: str | Path) -> list[Path]:
    """The SAEs of ``path``: itself when it holds one (``holds_sae``), else its sub-folders that do, by name; ValueError
    when there is none (what ``python app.py --sae DIR`` lists)."""
    path = Path(path).expanduser()
    if not path.is_dir():
        raise ValueError(f"{path} is not a folder: expected the folder of an SAE (python -m viz.concepts train's "
                         f"--out, sae-lens' or ViT-Prisma's saved SAE) or a folder of such folders.")
    if holds_sae(path):
        return [path]
    found = sorted(sub for sub in path.iterdir() if sub.is_dir() and holds_sae(sub))
    if not found:
        raise ValueError(f"No SAE in {path} nor in its sub-folders: expected sae.json and sae.safetensors (python -m "
                         f"viz.concepts train), cfg.json and sae_weights.safetensors (sae-lens) or config.json and "
                         f"weights.pt (ViT-Prisma).")
    return found
