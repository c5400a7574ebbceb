"""Run the model on images and keep everything the panels and the data-set statistics need as numpy arrays.

This is the only module of viz/ that touches a model (and torch); every map and panel downstream works
on the returned ``Analysis``, so an app can cache it per session and re-render without the model.

The forward pass goes block by block (``VisionTransformer.blocks_with_attention``, the loop of
``forward_with_attention``), so that the maps are reduced on the model's device as the blocks run (``postprocess``): head fusion, mean attention distance,
the cache's float16 copy and, for data sets, entropy and key shares. Small maps are gathered over a few blocks and
reduced together (fewer, larger operations); large ones block by block, so that the float32 (B, L, H, T, T) tensor
exists only when it is small (``REDUCE_BYTES``). The results go to the host once, at the end.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch
from PIL import Image

from vit.device import forward_precision

from ..maps.distance import patch_distances
from ..records import Analysis, FinalNorm, ModelArrays
from . import postprocess

_TORCH_DTYPES = {np.dtype(np.float32): torch.float32, np.dtype(np.float16): torch.float16}
READOUT_OF_POOL = {"token": "cls", "map": "map", "avg": "mean"}  # ViTConfig.global_pool -> Analysis.readout
REDUCE_BYTES = 64 * 2**20   # float32 maps of consecutive blocks reduced together (see ``capture``)


@dataclass
class Captured:
    """What one batch of B images left on the host after the forward pass, image along axis 0 (numpy arrays)."""
    probabilities: np.ndarray             # (B, K) softmax over the classes, float32; (B, 0) without a classifier
    token_norms: np.ndarray               # (B, L, T) L2 norm of every token after each block
    mean_distance: np.ndarray             # (B, L, H) mean attention distance in pixels (prefix attention = 0)
    num_prefix: int
    grid: tuple[int, int]                 # (gh, gw)
    attention: np.ndarray | None = None   # (B, L, H, T, T) in the cache dtype; None when not kept
    fused: dict = field(default_factory=dict)  # "mean"/"max"/"min" -> (B, L, T, T) in the cache dtype
    entropy: np.ndarray | None = None     # (B, L, H) nats; with statistics=True
    key_mass: np.ndarray | None = None    # (B, L, T) share of each block's attention per key token; statistics=True
    mean_distance_renormalised: np.ndarray | None = None  # (B, L, H) rows renormalised over patches; when asked
    readout: str = "cls"                  # the maps' query: "cls", "map" (SigLIP's probe) or "mean" (of the patches)
    probe_attention: np.ndarray | None = None  # (B, H, T) float32, the MAP probe's attention; "map" readout only
    stream: np.ndarray | None = None      # (B, L + 1, T, D) the residual stream in the cache dtype; keep_stream only
    final_norm: FinalNorm | None = None   # the model's last LayerNorm (None when it has none); keep_stream only
    timings: dict = field(default_factory=dict)  # seconds for the whole batch: preprocess, forward, to_numpy


def model_input(pixels: torch.Tensor, preprocess, device) -> torch.Tensor:
    """Cropped RGB pixels (B, H, W, 3) uint8 -> normalised model input (B, 3, H, W) float32 on ``device``.

    ``vit.Preprocess.normalise`` (× rescale, minus mean, over std, in float32), the arithmetic of ``to_tensor``,
    done on the device, so that a batch of uint8 crops crosses to a GPU in a quarter of the bytes.
    """
    return preprocess.normalise(pixels.to(device, non_blocking=True).permute(0, 3, 1, 2))   # (B, 3, H, W)


def _synchronize(device: torch.device) -> None:
    """Wait for the device's queued work, so that a timestamp means the work is done (no-op on the CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def to_host(tensors: dict[str, torch.Tensor], device: torch.device) -> dict[str, np.ndarray]:
    """Device tensors -> numpy arrays on the host, all copies queued at once and waited for once.

    From a CUDA GPU the copies go into page-locked (pinned) host memory, which they reach at the bus's full speed
    and without blocking one another (torch caches pinned blocks, so a run of batches reuses them); the arrays
    keep their memory alive. On the CPU the tensors already are host memory: no copy at all.
    """
    if device.type != "cuda":
        return {name: tensor.cpu().numpy() for name, tensor in tensors.items()}
    host = {name: torch.empty(t.shape, dtype=t.dtype, pin_memory=True) for name, t in tensors.items()}
    for name, tensor in tensors.items():
        host[name].copy_(tensor, non_blocking=True)
    torch.cuda.current_stream(device).synchronize()
    return {name: tensor.numpy() for name, tensor in host.items()}


def run_blocks(model, x: torch.Tensor, on_block, dtype: torch.dtype = torch.float32):
    """The forward pass of ``forward_with_attention``, handing each block's output to ``on_block`` at once.

    ``on_block(i, maps (B, H, T, T) float32, tokens (B, T, D) float32)`` runs after block i, outside autocast;
    returns ``(output (B, K), probe (B, H, T) or None)`` as ``forward_head(..., return_probe=True)``. ``dtype``: the
    forward's format (``vit.device``).
    """
    precision = lambda: forward_precision(x.device, dtype)  # noqa: E731 -- a fresh context per use
    blocks = model.blocks_with_attention(x)
    for i in range(len(model.blocks)):
        with precision():
            tokens, maps = next(blocks)
        on_block(i, maps.float(), tokens.float())
    with precision():
        return model.forward_head(tokens, return_probe=True)


@torch.inference_mode()
def capture(model, x: torch.Tensor, attention_dtype=np.float32, statistics: bool = False,
            dtype: torch.dtype = torch.float32, distance_renormalise: bool = False,
            keep_stream: bool = False) -> Captured:
    """One forward pass of the batch ``x`` (B, C, H, W) on the model's device -> ``Captured`` on the host.

    ``attention_dtype``: np.float32 or np.float16 for the kept maps and their head-fused copies, or None to keep
    neither (data-set statistics only: then no (L, H, T, T) array per image is ever made). ``statistics``: also
    the entropy and key mass per block. ``distance_renormalise``: also the mean distance with rows renormalised
    over the patches. ``keep_stream``: also the residual stream (the tokens entering block 0 and after every block,
    in ``attention_dtype``, float32 without one) and the final LayerNorm, from which ``viz.features`` reads any
    layer's patch features. Everything stays on the device until one move to the host at the end.
    """
    device = x.device
    B = x.shape[0]
    layout = model.token_layout(x.shape[-2], x.shape[-1])
    L, H, T = len(model.blocks), model.cfg.num_heads, layout.num_tokens
    weights = postprocess.distance_weights(layout.num_prefix, layout.grid, model.cfg.patch_size, device)
    f32 = dict(device=device, dtype=torch.float32)
    out = {"token_norms": torch.empty(B, L, T, **f32), "mean_distance": torch.empty(B, L, H, **f32)}
    if attention_dtype is not None:
        kept = dict(device=device, dtype=_TORCH_DTYPES[np.dtype(attention_dtype)])
        out["attention"] = torch.empty(B, L, H, T, T, **kept)
        out.update({f"fused_{f}": torch.empty(B, L, T, T, **kept) for f in ("mean", "max", "min")})
    if statistics:
        out.update(entropy=torch.empty(B, L, H, **f32), key_mass=torch.empty(B, L, T, **f32))
    if keep_stream:
        stream_dtype = _TORCH_DTYPES[np.dtype(attention_dtype or np.float32)]
        out["stream"] = torch.empty(B, L + 1, T, model.cfg.embed_dim, device=device, dtype=stream_dtype)
        with forward_precision(device, dtype):
            out["stream"][:, 0] = model.embed(x)                   # what the first block reads
    if distance_renormalise:
        out["mean_distance_renormalised"] = torch.empty(B, L, H, **f32)
        distances = torch.from_numpy(patch_distances(layout.grid, model.cfg.patch_size)).to(device)

    def reduce(first: int, maps: torch.Tensor) -> None:
        """Blocks first … first + C - 1 of the batch, maps (B, C, H, T, T) float32 -> their rows of ``out``."""
        C = maps.shape[1]
        blocks = slice(first, first + C)
        flat = maps.reshape(B * C, H, T, T)                         # the functions take (images, H, T, T)
        out["mean_distance"][:, blocks] = postprocess.mean_distance(flat, weights, layout.num_prefix).view(B, C, H)
        if attention_dtype is not None:
            out["attention"][:, blocks] = maps                     # the cache's copy, converted on the way
            for fusion, fused in postprocess.fuse_heads(flat).items():
                out[f"fused_{fusion}"][:, blocks] = fused.view(B, C, T, T)
        if statistics:
            out["entropy"][:, blocks] = postprocess.entropy(flat).view(B, C, H)
            out["key_mass"][:, blocks] = postprocess.key_mass(flat).view(B, C, T)
        if distance_renormalise:
            out["mean_distance_renormalised"][:, blocks] = postprocess.mean_distance_renormalised(
                flat, distances, layout.num_prefix).view(B, C, H)

    # Blocks whose float32 maps fit in REDUCE_BYTES together are reduced together: a few large operations instead
    # of many small ones (at 224 px all 12 blocks of a ViT-B at once); larger maps block by block, never staged.
    span = max(1, min(L, REDUCE_BYTES // (B * H * T * T * 4)))
    stage = torch.empty(B, span, H, T, T, **f32) if span > 1 else None

    def on_block(i: int, maps: torch.Tensor, tokens: torch.Tensor) -> None:
        out["token_norms"][:, i] = tokens.norm(dim=-1)
        if keep_stream:
            out["stream"][:, i + 1] = tokens
        if stage is None:
            reduce(i, maps.unsqueeze(1))
            return
        j = i % span
        stage[:, j] = maps
        if j == span - 1 or i == L - 1:
            reduce(i - j, stage[:, :j + 1])

    _synchronize(device)
    t0 = time.perf_counter()
    output, probe = run_blocks(model, x, on_block, dtype)
    has_classes = model.cfg.num_classes > 0     # a CLIP/SigLIP image tower or a DINO backbone has none
    out["probabilities"] = output.float().softmax(dim=-1) if has_classes else output.new_zeros(B, 0)
    if probe is not None:
        out["probe_attention"] = probe.float()
    _synchronize(device)
    t1 = time.perf_counter()
    host = to_host(out, device)                                           # the one move to the host
    t2 = time.perf_counter()
    return Captured(probabilities=host["probabilities"], token_norms=host["token_norms"],
                    mean_distance=host["mean_distance"], num_prefix=layout.num_prefix, grid=tuple(layout.grid),
                    attention=host.get("attention"),
                    fused={f: host[f"fused_{f}"] for f in ("mean", "max", "min") if f"fused_{f}" in host},
                    entropy=host.get("entropy"), key_mass=host.get("key_mass"),
                    mean_distance_renormalised=host.get("mean_distance_renormalised"),
                    readout=READOUT_OF_POOL[model.cfg.global_pool], probe_attention=host.get("probe_attention"),
                    stream=host.get("stream"), final_norm=final_norm(model) if keep_stream else None,
                    timings={"forward": t1 - t0, "to_numpy": t2 - t1})


def final_norm(model) -> FinalNorm | None:
    """The model's LayerNorm before pooling as arrays (None where it has none: ``fc_norm`` models normalise after
    pooling, so their patch tokens are read as they leave the last block)."""
    norm = model.norm
    if not isinstance(norm, torch.nn.LayerNorm):
        return None
    return FinalNorm(norm.weight.detach().float().cpu().numpy().copy(), norm.bias.detach().float().cpu().numpy().copy(),
                     float(norm.eps))


def class_labels(loaded, num_classes: int) -> tuple[str, ...]:
    """The checkpoint's class names, or "class i" when they do not match the head."""
    labels = tuple(loaded.labels)
    return labels if len(labels) == num_classes else tuple(f"class {i}" for i in range(num_classes))


def analyses(loaded, captured: Captured, images: list[Image.Image], timings: dict | None = None) -> list[Analysis]:
    """One ``Analysis`` per image of a captured batch (its arrays are views into the batch's arrays)."""
    labels = class_labels(loaded, captured.probabilities.shape[-1])
    distances = {False: captured.mean_distance, True: captured.mean_distance_renormalised}
    return [Analysis(image=image, probabilities=captured.probabilities[b], labels=labels,
                     attention=captured.attention[b], token_norms=captured.token_norms[b],
                     num_prefix=captured.num_prefix, grid=captured.grid, patch_size=loaded.model.cfg.patch_size,
                     model_name=getattr(loaded, "name", ""), timings=dict(timings or {}),
                     fused={f: maps[b] for f, maps in captured.fused.items()},
                     mean_distance={k: d[b] for k, d in distances.items() if d is not None},
                     readout=captured.readout,
                     probe_attention=None if captured.probe_attention is None else captured.probe_attention[b],
                     stream=None if captured.stream is None else captured.stream[b], final_norm=captured.final_norm)
            for b, image in enumerate(images)]


def analyze(loaded, image: Image.Image, attention_dtype=np.float32, dtype: torch.dtype = torch.float32,
            keep_stream: bool = False) -> Analysis:
    """One forward pass with attention capture -> Analysis.

    ``loaded``: a ``vit.LoadedModel`` (anything with ``.model``, ``.preprocess``, ``.labels``, ``.name``), on any
    device. ``image``: any PIL image; ``loaded.preprocess.crop_image`` gives the exact pixels the model sees.
    ``keep_stream``: also the residual stream, for the patch features of any layer (``viz.features``).
    ``attention_dtype``: np.float16 halves the cache (ViT-B/16 at 224: 11 MB instead of 22 MB). Measured on
    the AugReg ViT-Ti and the cat photo: rollout changes by 1e-4 of its maximum; with a 0.9 discard by
    2e-3, since rounding reorders near-equal entries. ``dtype``: the forward pass's format (``vit.device``).

    The maps' query follows how the model pools (``readout``): its CLS token, SigLIP's probe (whose attention
    is kept, float32, (H, T)), or the mean of the patches. A model without a classifier head (num_classes 0:
    a CLIP or SigLIP image tower, a DINO backbone) gets no class probabilities.
    """
    t0 = time.perf_counter()
    cropped = loaded.preprocess.crop_image(image)
    model = loaded.model
    pixels = torch.from_numpy(np.array(cropped)).unsqueeze(0)               # (1, H, W, 3) uint8
    x = model_input(pixels, loaded.preprocess, next(model.parameters()).device)
    t1 = time.perf_counter()
    captured = capture(model, x, attention_dtype, dtype=dtype, keep_stream=keep_stream)
    return analyses(loaded, captured, [cropped], {"preprocess": t1 - t0, **captured.timings})[0]


@torch.inference_mode()
def model_arrays(model, name: str = "") -> ModelArrays:
    """Copy the patch-embedding filters and position embeddings out of a VisionTransformer (``pos_embed`` None for
    a model without absolute position embeddings, such as BEiT)."""
    cfg = model.cfg
    kind = getattr(cfg, "pos_embed_kind", "learned")
    pos_embed = model.pos_embed.detach().float().cpu().numpy()[0] if model.pos_embed is not None else None
    return ModelArrays(name=name,
                       patch_weight=model.patch_embed.proj.weight.detach().float().cpu().numpy(),
                       pos_embed=pos_embed,
                       native_grid=tuple(cfg.grid), patch_size=cfg.patch_size, num_prefix=cfg.num_prefix_tokens,
                       depth=cfg.depth, heads=cfg.num_heads, pos_embed_kind=kind)
