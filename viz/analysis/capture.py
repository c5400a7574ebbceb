"""Run the model on images and keep everything the panels and the data-set statistics need as numpy arrays.

This is the only module of viz/ that touches a model (and torch); every map and panel downstream works
on the returned ``Analysis``, so an app can cache it per session and re-render without running the model again.

The forward pass goes block by block through the model's own pieces (``Block.attention_input``, ``Attention.project``,
``positioned``, ``logit_bias``, ``attend``, then ``Block.step`` with the heads computed here), and each block's
attention comes a chunk of query rows at a time (``CHUNK_BYTES``), reduced on the model's device as it comes
(``postprocess``): the float32 (B, H, T, T) of a block never exists at once when it is large. What is kept:

- the whole attention (B, L, H, T, T) and its head-fused copies, in the cache dtype (``capture``'s default, the
  library's full capture and the CLI's attention.npz); or, ``on_demand``, instead of it: the residual stream
  (the tokens entering each block, from which any layer's rows are recomputed through the model:
  ``viz.analysis.recompute``), each head's readout row, each row's log-sum-exp (so that a column costs T·D), and the
  head-fused copies only while they fit ``FUSED_BYTES``: memory that grows with the tokens, not their square;
- always: the token norms, the mean attention distance per head, the probe's attention (SigLIP) and, for data sets,
  entropy and key shares.

On demand, when the head-fused copies are too large to keep and the readout is the CLS token, nothing needs the
probabilities during the pass: each block runs the fused kernel (``Attention.attend_with_logsumexp``: the plain
forward's output and its rows' log-sum-exp), the CLS rows are recomputed (one row per head), and the mean
distances are left to the first view that asks (``RecomputedAttention.mean_distance``): the analysis costs about
what the plain forward does.

The results go to the host once, at the end.
"""
from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass, field

import numpy as np
import torch
from PIL import Image

from vit.architecture import Architecture
from vit.device import forward_precision
from vit.model import attention_rows
from vit.readout import token_weights

from ..maps.readout import heads_query
from ..maps.windows import WindowedAttention
from ..records import Analysis, FinalNorm, ModelArrays
from . import postprocess
from .recompute import RecomputedAttention

_TORCH_DTYPES = {np.dtype(np.float32): torch.float32, np.dtype(np.float16): torch.float16}
CHUNK_BYTES = 64 * 2**20    # float32 probabilities of one block reduced together: B·H·rows·T·4 bytes at most
FUSED_BYTES = 16 * 2**20    # on demand: the head-fused copies (3·L·T² in the kept dtype) are kept below this
DISTANCE_BYTES = 32 * 2**20  # a layout's T×T pixel distances are kept for every block of a capture below this


@dataclass
class Captured:
    """What one batch of B images left on the host after the forward pass, image along axis 0 (numpy arrays)."""
    probabilities: np.ndarray             # (B, K) softmax over the classes, float32; (B, 0) without a classifier
    token_norms: np.ndarray               # (B, L, T) L2 norm of every token after each block
    mean_distance: np.ndarray | None      # (B, L, H) mean attention distance in pixels (prefix attention = 0); None:
                                          # left to the first view (on demand with the fused kernel)
    architecture: Architecture            # the blocks for this input (one sequence of T tokens through all of them)
    attention: np.ndarray | None = None   # (B, L, H, T, T) in the cache dtype; None when not kept
    fused: dict = field(default_factory=dict)  # "mean"/"max"/"min" -> (B, L, T, T) in the cache dtype
    entropy: np.ndarray | None = None     # (B, L, H) nats; with statistics=True
    key_mass: np.ndarray | None = None    # (B, L, T) share of each block's attention per key token; statistics=True
    mean_distance_renormalised: np.ndarray | None = None  # (B, L, H) rows renormalised over patches; when asked
    probe_attention: np.ndarray | None = None  # (B, H, T) float32, the MAP probe's attention; "map" readout only
    stream: np.ndarray | None = None      # (B, L + 1, T, D) the residual stream in the cache dtype; kept when asked
    final_norm: FinalNorm | None = None   # the model's last LayerNorm (None when it has none); with the stream
    readout_rows: np.ndarray | None = None  # (B, L, H, T) float32 each head's readout row; on_demand
    logsumexp: np.ndarray | None = None   # (B, L, H, T) float32 log Σ_j exp(logit_ij) of every row; on_demand
    timings: dict = field(default_factory=dict)  # seconds for the whole batch: preprocess, forward, to_numpy

    @property
    def num_prefix(self) -> int:
        return self.architecture.num_prefix

    @property
    def grid(self) -> tuple[int, int]:
        return self.architecture.grid

    @property
    def readout(self) -> str:
        """The maps' query: "cls", "map" (SigLIP's probe) or "mean" (of the patches)."""
        return self.architecture.readout


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


def row_chunks(B: int, H: int, T: int) -> list[tuple[int, int]]:
    """The (start, stop) query rows of a block reduced together: as many as fit ``CHUNK_BYTES`` in float32."""
    rows = max(1, min(T, CHUNK_BYTES // (B * H * T * 4)))
    return [(start, min(start + rows, T)) for start in range(0, T, rows)]


def logsumexp_of(attn, q: torch.Tensor, k: torch.Tensor, bias: torch.Tensor | None, p: torch.Tensor,
                 start: int) -> torch.Tensor:
    """Each row's log Σ_j exp(logit_ij) from its probabilities ``p`` (B, H, c, T) (rows ``start``…): the logit of one of
    its entries, q_i·k_j·scale (+ the bias) as ``Attention.attend`` forms it, minus that entry's log. The entry: the
    larger of the row's first column and its own token (no pass over the row on the CPU); where both underflow below
    1e-30, the row's largest (at least 1/T, so its log is exact to float32) -> (B, H, c)."""
    B, H, c, T = p.shape
    rows = torch.arange(start, start + c, device=p.device)
    own = p[:, :, torch.arange(c, device=p.device), rows]                            # (B, H, c) p_ii
    first = p[..., 0]                                                                # (B, H, c) p_i0
    where = torch.where(own > first, rows, torch.zeros_like(rows))                   # (B, H, c) the column j
    value = torch.maximum(own, first)
    weak = value < 1e-30
    # both underflow: the row's largest. Asking whether any row does is a host sync, which on a GPU costs more than
    # the pass over the rows (it stalls every kernel queued behind it); on the CPU the pass is the cost.
    if p.device.type != "cpu" or weak.any():
        largest, at = p.max(dim=-1)
        where, value = torch.where(weak, at, where), torch.where(weak, largest, value)
    keys = k.gather(2, where.unsqueeze(-1).expand(-1, -1, -1, k.shape[-1]))          # (B, H, c, Dh)
    logits = (q[:, :, start:start + c].float() * attn.scale * keys.float()).sum(dim=-1)
    if bias is not None:
        band = bias[..., start:start + c, :].float().expand(B, H, -1, -1)             # (B, H, c, T)
        logits = logits + band.gather(-1, where.unsqueeze(-1))[..., 0]
    return logits - value.log()


@torch.inference_mode()
def capture(model, x: torch.Tensor, attention_dtype=np.float32, statistics: bool = False,
            dtype: torch.dtype = torch.float32, distance_renormalise: bool = False,
            keep_stream: bool = False, on_demand: bool = False) -> Captured:
    """One forward pass of the batch ``x`` (B, C, H, W) on the model's device -> ``Captured`` on the host.

    ``attention_dtype``: np.float32 or np.float16 for the kept maps (and the stream), or None to keep none (data-set
    statistics only: then no (L, H, T, T) array per image is ever made). ``statistics``: also the entropy and key
    mass per block. ``distance_renormalise``: also the mean distance with rows renormalised over the patches.
    ``keep_stream``: also the residual stream and the final LayerNorm (``viz.features`` reads any layer's patch
    features from them). ``on_demand``: the stream, the readout rows and the rows' log-sum-exp instead of the whole
    attention (module docstring). Everything stays on the device until one move to the host at the end.
    """
    architecture = model.architecture(x.shape[-2], x.shape[-1])
    if not architecture.one_sequence:
        raise ValueError("This capture (one (L, H, T, T) array) reads one sequence of tokens through every layer; this "
                         "model's blocks change grid or attend inside windows, so it is captured block by block "
                         "(capture_blocks).")
    device = x.device
    B = x.shape[0]
    first = architecture.blocks[0]
    L, H, T, P = architecture.depth, first.heads, first.num_tokens, first.prefix
    N = T - P
    kept = _TORCH_DTYPES[np.dtype(attention_dtype or np.float32)]
    f32 = dict(device=device, dtype=torch.float32)
    out = {"token_norms": torch.empty(B, L, T, **f32), "mean_distance": torch.zeros(B, L, H, **f32)}
    keep_all = attention_dtype is not None and not on_demand
    keep_fused = keep_all or (on_demand and 3 * L * T * T * np.dtype(attention_dtype or np.float32).itemsize
                              <= FUSED_BYTES)
    if keep_all:
        out["attention"] = torch.empty(B, L, H, T, T, device=device, dtype=kept)
    if keep_fused:
        out.update({f"fused_{f}": torch.empty(B, L, T, T, device=device, dtype=kept) for f in ("mean", "max", "min")})
    if keep_stream or on_demand:
        out["stream"] = torch.empty(B, L + 1, T, model.cfg.embed_dim, device=device, dtype=kept)
    if on_demand:
        out.update(readout_rows=torch.zeros(B, L, H, T, **f32), logsumexp=torch.empty(B, L, H, T, **f32))
    query = heads_query(architecture.readout)
    weights = None if query in ("cls", "mean") else torch.from_numpy(token_weights(query, T, P)).to(device)
    fused_kernel = on_demand and not keep_fused and query == "cls" and not statistics and not distance_renormalise
    if fused_kernel:
        del out["mean_distance"]                  # left to the first view that asks (module docstring)
    if statistics:
        out.update(entropy=torch.zeros(B, L, H, **f32), key_mass=torch.zeros(B, L, T, **f32))
    if distance_renormalise:
        out["mean_distance_renormalised"] = torch.zeros(B, L, H, **f32)
    chunks = row_chunks(B, H, T)
    distances: dict[int, torch.Tensor] = {}     # each chunk's distance rows, made for the first block, read by all
    keep_distances = T * T * 4 <= DISTANCE_BYTES  # (a T×T table: kept only while small, else made again per block)

    def reduce(i: int, start: int, p: torch.Tensor, rows: torch.Tensor, attn, q, k, bias) -> None:
        """Block i's probabilities for the query rows start … start + c - 1, p (B, H, c, T) float32 -> ``out``."""
        stop = start + p.shape[2]
        out["mean_distance"][:, i] += postprocess.distance_sum(p, rows)
        if keep_all:
            out["attention"][:, i, :, start:stop] = p                # the cache's copy, converted on the way
        if keep_fused:
            for fusion, fused in postprocess.fuse_heads(p).items():
                out[f"fused_{fusion}"][:, i, start:stop] = fused
        if on_demand:
            out["logsumexp"][:, i, :, start:stop] = logsumexp_of(attn, q, k, bias, p, start)
            if query == "cls" and start == 0:
                out["readout_rows"][:, i] = p[:, :, 0]
            elif query == "mean" and stop > P:
                out["readout_rows"][:, i] += p[:, :, max(P - start, 0):].sum(dim=2)
            elif weights is not None:                                  # the readout's weighted rows
                out["readout_rows"][:, i] += torch.einsum("c,bhck->bhk", weights[start:stop], p)
        if statistics:
            out["entropy"][:, i] += postprocess.entropy_sum(p)
            out["key_mass"][:, i] += postprocess.key_mass_sum(p)
        if distance_renormalise:
            out["mean_distance_renormalised"][:, i] += postprocess.renormalised_distance_sum(p, rows, P, start)

    precision = lambda: forward_precision(device, dtype)  # noqa: E731 -- a fresh context per use
    _synchronize(device)
    t0 = time.perf_counter()
    positions = model.token_positions(x.shape[-2], x.shape[-1], device)
    with precision():
        tokens = model.embed(x)
    if "stream" in out:
        out["stream"][:, 0] = tokens
    for i, block in enumerate(model.blocks):
        with precision():
            q, k, v = block.attn.project(block.attention_input(tokens))
            q, k = block.attn.positioned(q, k, positions)
            bias = block.attn.logit_bias(positions, q.dtype)
        if fused_kernel:
            with precision():
                heads, out["logsumexp"][:, i] = block.attn.attend_with_logsumexp(q, k, v, bias)
                tokens = block.step(tokens, positions, heads=heads).out
            cls = torch.zeros(1, dtype=torch.long, device=device)
            out["readout_rows"][:, i] = attention_rows(q, k, block.attn.scale, bias, cls)[:, :, 0]
            out["token_norms"][:, i] = tokens.float().norm(dim=-1)
            out["stream"][:, i + 1] = tokens
            continue
        whole = len(chunks) == 1                                      # small maps: the block's attention at once
        heads = None
        for start, stop in chunks:
            rows = distances.get(start)
            if rows is None:
                rows = postprocess.distance_rows(P, first.grid, first.token_size, start, stop, device)
                if keep_distances:
                    distances[start] = rows
            with precision():
                part, p = block.attn.attend(q, k, v, bias, True,
                                            None if whole else torch.arange(start, stop, device=device))
            if whole:
                heads = part
            else:
                heads = part.new_empty(*part.shape[:2], T, part.shape[-1]) if heads is None else heads
                heads[:, :, start:stop] = part                             # (B, H, T, Dh)
            reduce(i, start, p.float(), rows, block.attn, q, k, bias)
        with precision():
            tokens = block.step(tokens, positions, heads=heads).out
        out["token_norms"][:, i] = tokens.float().norm(dim=-1)
        if "stream" in out:
            out["stream"][:, i + 1] = tokens
    with precision():
        output, probe = model.forward_head(tokens, return_probe=True)
    if "mean_distance" in out:
        out["mean_distance"] /= N
    if statistics:
        out["entropy"] /= T
        out["key_mass"] /= H * T
    if distance_renormalise:
        out["mean_distance_renormalised"] /= N
    if on_demand and query == "mean":
        out["readout_rows"] /= N
    has_classes = model.cfg.num_classes > 0     # a CLIP/SigLIP image tower or a DINO backbone has none
    out["probabilities"] = output.float().softmax(dim=-1) if has_classes else output.new_zeros(B, 0)
    if probe is not None:
        out["probe_attention"] = probe.float()
    _synchronize(device)
    t1 = time.perf_counter()
    host = to_host(out, device)                                           # the one move to the host
    t2 = time.perf_counter()
    return Captured(probabilities=host["probabilities"], token_norms=host["token_norms"],
                    mean_distance=host.get("mean_distance"), architecture=architecture,
                    attention=host.get("attention"),
                    fused={f: host[f"fused_{f}"] for f in ("mean", "max", "min") if f"fused_{f}" in host},
                    entropy=host.get("entropy"), key_mass=host.get("key_mass"),
                    mean_distance_renormalised=host.get("mean_distance_renormalised"),
                    probe_attention=host.get("probe_attention"),
                    stream=host.get("stream"), final_norm=final_norm(model) if "stream" in host else None,
                    readout_rows=host.get("readout_rows"), logsumexp=host.get("logsumexp"),
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


def analyses(loaded, captured: Captured, images: list[Image.Image], timings: dict | None = None,
             turn=None) -> list[Analysis]:
    """One ``Analysis`` per image of a captured batch (its arrays are views into the batch's arrays); a capture made
    ``on_demand`` gives each its ``RecomputedAttention`` over ``loaded.model`` (``turn``: the context every
    recomputation runs in, e.g. a server's model turn)."""
    labels = class_labels(loaded, captured.probabilities.shape[-1])
    distances = {False: captured.mean_distance, True: captured.mean_distance_renormalised}

    def source(b: int) -> RecomputedAttention | None:
        if captured.logsumexp is None:
            return None
        return RecomputedAttention(loaded.model, captured.stream[b], captured.architecture.num_prefix,
                                   captured.architecture.grid, captured.readout_rows[b], captured.logsumexp[b],
                                   {f: maps[b] for f, maps in captured.fused.items()}, turn or nullcontext())

    return [Analysis(image=image, probabilities=captured.probabilities[b], labels=labels,
                     architecture=captured.architecture, token_norms=captured.token_norms[b],
                     attention=None if captured.attention is None else captured.attention[b],
                     model_name=getattr(loaded, "name", ""), timings=dict(timings or {}),
                     fused={f: maps[b] for f, maps in captured.fused.items()},
                     mean_distance={k: d[b] for k, d in distances.items() if d is not None},
                     probe_attention=None if captured.probe_attention is None else captured.probe_attention[b],
                     stream=None if captured.stream is None else captured.stream[b], final_norm=captured.final_norm,
                     source=source(b))
            for b, image in enumerate(images)]


def analyze(loaded, image: Image.Image, attention_dtype=np.float32, dtype: torch.dtype = torch.float32,
            keep_stream: bool = False, on_demand: bool = False, turn=None) -> Analysis:
    """One forward pass with attention capture -> Analysis, for any architecture.

    ``loaded``: a ``vit.LoadedModel`` (anything with ``.model``, ``.preprocess``, ``.labels``, ``.name``), on any
    device. ``image``: any PIL image; ``loaded.preprocess.crop_image`` gives the exact pixels the model sees. A video
    model (its description's ``video``) takes a clip instead (``vit.video_file.Clip``, as ``read_clip`` gives it):
    ``viz.analysis.video.analyze_clip``, its queries and keys kept in ``attention_dtype``.
    How the attention is kept follows the model's description (``vit.architecture``): a model whose blocks all
    attend over one sequence of tokens through ``capture`` (the whole array, or with ``on_demand`` what recomputes
    any row; ``turn``: the context a recomputation runs in, and a clip's every attention step); a model with windows or stages block by block
    (``capture_blocks``: every block's window maps, small enough to keep).
    ``keep_stream``: also the residual stream, for the patch features of any layer (``viz.features``).
    ``attention_dtype``: np.float16 halves the cache (ViT-B/16 at 224: 11 MB instead of 22 MB). Measured on
    the AugReg ViT-Ti and the cat photo: rollout changes by 1e-4 of its maximum; with a 0.9 discard by
    2e-3, since rounding reorders near-equal entries. ``dtype``: the forward pass's format (``vit.device``).

    The maps' query follows how the model reads its answer (``Architecture.readout``): its CLS token, SigLIP's probe
    (whose attention is kept, float32, (H, T)), or the mean of the patches. A model without a classifier head
    (num_classes 0: a CLIP or SigLIP image tower, a DINO backbone) gets no class probabilities.
    """
    model = loaded.model
    if model.architecture(*loaded.preprocess.crop).video:        # a clip (vit.video_file.Clip): the video sibling
        from .video import analyze_clip
        return analyze_clip(loaded, image, attention_dtype, dtype, turn)
    t0 = time.perf_counter()
    cropped = loaded.preprocess.crop_image(image)
    pixels = torch.from_numpy(np.array(cropped)).unsqueeze(0)               # (1, H, W, 3) uint8
    x = model_input(pixels, loaded.preprocess, next(model.parameters()).device)
    t1 = time.perf_counter()
    if not model.architecture(x.shape[-2], x.shape[-1]).one_sequence:
        captured = capture_blocks(model, x, dtype)
        return block_analyses(loaded, captured, [cropped], {"preprocess": t1 - t0})[0]
    captured = capture(model, x, attention_dtype, dtype=dtype, keep_stream=keep_stream, on_demand=on_demand)
    return analyses(loaded, captured, [cropped], {"preprocess": t1 - t0, **captured.timings}, turn)[0]


@torch.inference_mode()
def capture_blocks(model, x: torch.Tensor, dtype: torch.dtype = torch.float32) -> dict:
    """Images (B, C, H, W) on the model's device, through a model with windows or stages -> {"probabilities" (B, K),
    "attention": per block (B, nW, H, N, N), "token_norms": per block (B, T_l), "architecture", "timings"} on the host
    (float32): one forward pass (``model.forward_with_attention``), every block's maps moved to the host once."""
    device = x.device
    architecture = model.architecture(x.shape[-2], x.shape[-1])
    _synchronize(device)
    t0 = time.perf_counter()
    with forward_precision(device, dtype):
        captured = model.forward_with_attention(x, return_token_norms=True)
    tensors = {"logits": captured.output.float()}
    tensors.update({f"attention{i}": a.float() for i, a in enumerate(captured.attention)})
    tensors.update({f"norms{i}": n.float().flatten(1) for i, n in enumerate(captured.token_norms)})
    _synchronize(device)
    t1 = time.perf_counter()
    host = to_host(tensors, device)
    logits = host["logits"]
    probabilities = (torch.from_numpy(logits).softmax(-1).numpy() if model.cfg.num_classes
                     else np.zeros((logits.shape[0], 0), np.float32))
    depth = architecture.depth
    return {"probabilities": probabilities, "attention": [host[f"attention{i}"] for i in range(depth)],
            "token_norms": [host[f"norms{i}"] for i in range(depth)], "architecture": architecture,
            "timings": {"forward": t1 - t0, "to_host": time.perf_counter() - t1}}


def block_analyses(loaded, captured: dict, images: list[Image.Image], timings: dict | None = None) -> list[Analysis]:
    """One ``Analysis`` per image of a ``capture_blocks`` batch (its arrays views into the batch's), its attention a
    ``viz.maps.windows.WindowedAttention``."""
    labels = class_labels(loaded, captured["probabilities"].shape[-1])
    architecture = captured["architecture"]
    return [Analysis(image=image, probabilities=captured["probabilities"][b], labels=labels,
                     architecture=architecture, token_norms=tuple(n[b] for n in captured["token_norms"]),
                     model_name=getattr(loaded, "name", ""), timings={**captured["timings"], **(timings or {})},
                     source=WindowedAttention([a[b] for a in captured["attention"]], architecture.blocks))
            for b, image in enumerate(images)]


@torch.inference_mode()
def model_arrays(model, name: str = "") -> ModelArrays:
    """Copy the patch-embedding filters and the position table out of a model (``model.position_table()``: None for
    a model without absolute position embeddings, such as BEiT or a Swin; a rotary model without a table gets the
    similarity its rotation implies instead, ``rotary_kernel``), with its depth and most heads at its own size."""
    table, kind, native_grid = model.position_table()
    kernel = model.rotary_kernel() if table is None else None
    architecture = model.architecture(*model.cfg.img_size)
    return ModelArrays(name=name,
                       patch_weight=model.patch_embed.proj.weight.detach().float().cpu().numpy(),
                       pos_embed=None if table is None else table.detach().float().cpu().numpy(),
                       native_grid=tuple(native_grid), patch_size=architecture.patch_size,
                       num_prefix=architecture.num_prefix, depth=architecture.depth, heads=architecture.max_heads,
                       pos_embed_kind=kind, rotary_kernel=None if kernel is None else kernel.cpu().numpy())
