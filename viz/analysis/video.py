"""Run a video model on clips and keep what every video view reads: the sibling of ``capture`` for a model whose
description says it reads clips (``vit.architecture.Architecture.video``); ``viz.analysis.analyze`` sends a clip here.

One forward pass runs the fused attention kernel (``VideoTransformer.blocks_with_queries_and_keys``: the plain
forward's speed) and keeps each step's queries and keys. From them each step's attention is recomputed a chunk of
query rows at a time, inside the step's groups (``BlockLayout.groups``), and reduced as it comes, so no step's
(H, T, T) float32 ever exists whole (VideoMAE-B/16 with 16 frames: 118 MB a step, 1.4 GB for twelve):

- each head's temporal distance (frames) and spatial distance (pixels) (``viz.maps.video``'s definitions);
- each head's readout row over the stream (the CLS row, or the mean of the patch rows: ``viz.maps.readout``'s heads
  query), for the readout's attention per frame and the heads grid;
- each row's log-sum-exp (a column of the attention then costs T·Dh: who attends to a clicked patch);
- the head-fused (mean) attention inside the groups, in the kept dtype while it fits ``FUSED_BYTES`` (the rollout
  reads it; beyond that it is recomputed from q and k when asked);
- with ``statistics``: each head's entropy, averaged over its query rows.

What stays per clip (``ClipAttention``, the analysis' attention source): the queries and keys (float16 on the page:
5 MB a step at 1,568 tokens), the log-sum-exps, the fused maps, the readout rows; any row or column of any step is
recomputed from them in milliseconds.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from PIL import Image

from vit.architecture import Architecture, BlockLayout, architecture_of
from vit.device import forward_precision
from vit.model import attention_rows
from vit.video import in_turns
from vit.video_file import Clip, VideoInfo

from ..maps.layout import layer_index
from ..maps.readout import heads_query
from ..maps.rollout import FUSIONS
from ..maps.source import check_head, dense_carry
from ..maps.video import dense_step
from ..records import Analysis
from .capture import _synchronize, class_labels, to_host

_TORCH_DTYPES = {np.dtype(np.float32): torch.float32, np.dtype(np.float16): torch.float16}
CHUNK_BYTES = 16 * 2**20     # float32 probabilities of one step reduced together (few chunks, each read a few times)
FUSED_BYTES = 128 * 2**20    # the head-fused maps of every step are kept below this, per batch


@dataclass
class ClipsCaptured:
    """What one batch of B clips left on the host (numpy, clip along axis 0); L attention steps, H heads, T tokens."""
    probabilities: np.ndarray            # (B, K) softmax over the classes; (B, 0) without a classifier
    architecture: Architecture           # the steps for this input
    temporal: np.ndarray                 # (B, L, H) temporal attention distance in input frames
    spatial: np.ndarray                  # (B, L, H) spatial attention distance in pixels
    readout_rows: np.ndarray             # (B, L, H, T) float32: each head's readout row over the stream
    token_norms: np.ndarray              # (B, L, T) L2 norm of every token after each step
    scale: float                         # 1/√Dh of every step's q·kᵀ
    probe_attention: np.ndarray | None = None   # (B, H, T) the attentive probe's attention ("map" readout)
    q: list | None = None                # per step (B, G, H, n, Dh) queries, positions applied, in the kept dtype
    k: list | None = None                # per step (B, G, H, n, Dh) keys
    logsumexp: list | None = None        # per step (B, G, H, n) float32: log Σ_j exp(q_i·k_j·scale) of every row
    fused: list | None = None            # per step (B, G, n, n) mean of heads inside each group, in the kept dtype
    entropy: np.ndarray | None = None    # (B, L, H) nats, averaged over each step's query rows; with statistics
    timings: dict | None = None          # seconds for the whole batch: "forward", "to_numpy"


def _distance_tables(block: BlockLayout, device) -> tuple[torch.Tensor, torch.Tensor]:
    """(G, 2, n, n): |τ_i − τ_j|·tubelet and ‖p_i − p_j‖·token size between the patch tokens of each group (0 where
    either is a prefix token), and (G, n) whether each slot is a patch: the weights of ``viz.maps.video``'s distances,
    side by side so that one chunk of probabilities is read once for both."""
    index = block.groups()
    tau, row, col = block.places()
    is_patch = index >= block.prefix
    at = np.where(is_patch, index - block.prefix, 0)
    both = is_patch[:, :, None] & is_patch[:, None, :]
    t, r, c = tau[at], row[at], col[at]
    dt = np.abs(t[:, :, None] - t[:, None, :]) * both * block.tubelet
    ds = np.hypot(r[:, :, None] - r[:, None, :], c[:, :, None] - c[:, None, :]) * both * block.token_size
    table = np.ascontiguousarray(np.stack([dt, ds], axis=1), dtype=np.float32)
    return torch.from_numpy(table).to(device), torch.from_numpy(is_patch).to(device)


def _readout_weights(block: BlockLayout, query: str, device) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(G, n) weights of each query slot in the heads query's row (``viz.maps.readout.heads_query``: the CLS row, the
    mean of its rows where it is in several groups; else the mean of the patch rows), and the (T,) row of the tokens
    in no group (the CLS token in a time step keeps itself), or None."""
    index = block.groups()
    count = np.bincount(index.ravel(), minlength=block.num_tokens)
    weights = np.zeros(index.shape, np.float32)
    alone = None
    if query == "cls":
        if count[0]:
            weights[index == 0] = 1.0 / count[0]
        else:
            alone = np.zeros(block.num_tokens, np.float32)
            alone[0] = 1.0
    else:
        weights[index >= block.prefix] = 1.0 / block.num_patches
    return (torch.from_numpy(weights).to(device),
            None if alone is None else torch.from_numpy(alone).to(device))


class _Reducer:
    """One step layout's reductions (module docstring): ``attend`` computes attn @ v a chunk of query rows at a time,
    from the explicit softmax, and reduces each chunk's probabilities as it comes, each reduction one read of the
    chunk: both distances (a product with the chunk's rows of the distance tables), the readout row (the rows'
    weights times the chunk), the head mean (1/H times the chunk's heads); the log-sum-exps from each row's own entry
    (no pass); the softmax is written over its logits (one chunk of memory, not two)."""

    def __init__(self, block: BlockLayout, query: str, scale: float, statistics: bool, keep_fused, device):
        self.block, self.scale, self.statistics, self.keep_fused = block, scale, statistics, keep_fused
        self.index = torch.from_numpy(block.groups()).to(device)
        self.table, self.is_patch = _distance_tables(block, device)
        self.weights, self.alone = _readout_weights(block, query, device)

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, dict]:
        """q, k, v (B·G, H, n, Dh) -> (attn @ v (B·G, H, n, Dh), {"temporal", "spatial", "entropy" (B, H), "readout"
        (B, H, T), "lse" (B, G, H, n), "fused" (B, G, n, n) or None})."""
        G, n = self.index.shape
        BG, H, _, Dh = q.shape
        B = BG // G
        rows = max(1, min(n, CHUNK_BYTES // (BG * H * n * 4)))
        qs, kt = q.float() * self.scale, k.float().transpose(-2, -1)
        heads = torch.empty_like(v)
        lse = qs.new_empty(BG, H, n)
        distance = qs.new_zeros(B, G, H, 2)                      # Σ p·|Δτ|, Σ p·‖Δp‖ of each head in each group
        entropy = qs.new_zeros(B, H)
        readout = qs.new_zeros(B, G, H, n)
        fused = qs.new_empty(B, G, n, n, dtype=self.keep_fused) if self.keep_fused is not None else None
        mean_of_heads = qs.new_full((BG, 1, H), 1.0 / H)
        chunk = None
        for start in range(0, n, rows):
            stop = min(start + rows, n)
            c = stop - start
            if chunk is None or chunk.shape[2] != c:
                chunk = qs.new_empty(BG, H, c, n)
            p = torch.matmul(qs[:, :, start:stop], kt, out=chunk)                       # logits (B·G, H, c, n)
            own = p.diagonal(start, -2, -1).clone()                                      # each row's own logit
            torch.softmax(p, dim=-1, out=p)                                              # probabilities, in place
            lse[:, :, start:stop] = _logsumexp(own, p, qs[:, :, start:stop], kt, start)
            heads[:, :, start:stop] = torch.matmul(p.to(v.dtype), v)
            flat = p.view(BG, H, c * n)
            table = self.table[:, :, start:stop].reshape(G, 2, c * n)
            if G == 1:        # one group: two matrix-vector products (a product with two columns reads slower)
                distance[:, 0] += torch.stack([flat @ table[0, 0], flat @ table[0, 1]], dim=-1)
            else:
                distance += torch.einsum("bghx,gkx->bghk", flat.view(B, G, H, c * n), table)
            readout += torch.matmul(self.weights[None, :, None, None, start:stop], p.view(B, G, H, c, n)).squeeze(-2)
            if fused is not None:
                fused[:, :, start:stop] = torch.bmm(mean_of_heads, flat).view(B, G, c, n)
            if self.statistics:   # H(p_i) = −Σ_j p_ij·log p_ij
                entropy -= torch.special.xlogy(p, p).view(B, G, H, c * n).sum(dim=(1, 3))
        queries = self.is_patch.sum()
        stream = qs.new_zeros(B, H, self.block.num_tokens)
        stream.index_add_(2, self.index.flatten(), readout.permute(0, 2, 1, 3).reshape(B, H, G * n))
        if self.alone is not None:
            stream += self.alone
        distance = distance.sum(dim=1) / queries
        return heads, {"temporal": distance[..., 0], "spatial": distance[..., 1], "entropy": entropy / (G * n),
                       "readout": stream, "lse": lse.view(B, G, H, n), "fused": fused}


def _logsumexp(own: torch.Tensor, p: torch.Tensor, qs: torch.Tensor, kt: torch.Tensor, start: int) -> torch.Tensor:
    """Each row's log Σ_j exp(logit_ij) from its softmax: the logit of its own token (``own`` (…, c)) minus that
    entry's log (every slot's own token is in its group); where that entry underflows below 1e-30, from the row's
    logits computed again (``qs @ kt``: the softmax was written over them) -> (…, c)."""
    mine = p.diagonal(start, -2, -1)
    lse = own - mine.clamp_min(1e-30).log()
    weak = mine < 1e-30
    if weak.any():
        lse = torch.where(weak, (qs @ kt).logsumexp(dim=-1), lse)
    return lse


@torch.inference_mode()
def capture_clips(model, x: torch.Tensor, keep=np.float32, statistics: bool = False,
                  dtype: torch.dtype = torch.float32, turn=None) -> ClipsCaptured:
    """Clips (B, F, C, H, W) on the model's device -> ``ClipsCaptured`` on the host.

    ``keep``: np.float32 or np.float16 for the kept queries, keys and fused maps (what recomputes any row), or None to
    keep none (a data set's statistics). ``statistics``: also each head's entropy. ``dtype``: the forward pass's
    format (``vit.device``). ``turn``: a context manager taken for each attention step (a server's model turn: a job
    whose visitor has gone stops before its next step)."""
    architecture = architecture_of(model, x)
    device, B = x.device, x.shape[0]
    query = heads_query(architecture.readout)
    kept = None if keep is None else _TORCH_DTYPES[np.dtype(keep)]
    fused_entries = sum(b.groups().shape[0] * b.groups().shape[1] ** 2 for b in architecture.blocks) * B
    keep_fused = kept if kept is not None and fused_entries * np.dtype(keep).itemsize <= FUSED_BYTES else None
    scale = model.attention_scale
    reducers: dict[tuple, _Reducer] = {}
    reduced: list[dict] = []

    def attend(q, k, v, block: BlockLayout) -> torch.Tensor:
        key = (block.attends, block.prefix, block.frames, block.grid)
        if key not in reducers:
            reducers[key] = _Reducer(block, query, scale, statistics, keep_fused, device)
        heads, values = reducers[key].attend(q, k, v)
        reduced.append(values)
        return heads

    norms, qs, ks = [], [], []
    _synchronize(device)
    t0 = time.perf_counter()
    with forward_precision(device, dtype):
        for step in in_turns(model.steps(x, keep="qk", attend=attend), turn):
            norms.append(step.tokens.float().norm(dim=-1))
            if kept is not None:
                qs.append(step.q.to(kept))
                ks.append(step.k.to(kept))
        output, probe = model.forward_head(step.tokens, return_probe=True)
    out = {name: torch.stack([r[name] for r in reduced], dim=1) for name in ("temporal", "spatial", "readout")}
    out.update(token_norms=torch.stack(norms, dim=1),
               probabilities=output.float().softmax(dim=-1) if model.cfg.num_classes else output.new_zeros(B, 0))
    if statistics:
        out["entropy"] = torch.stack([r["entropy"] for r in reduced], dim=1)
    if probe is not None:
        out["probe_attention"] = probe.float()
    _synchronize(device)
    t1 = time.perf_counter()
    host = to_host(out, device)
    steps = {}
    if kept is not None:
        listed = lambda tensors: list(to_host(dict(enumerate(tensors)), device).values())   # noqa: E731
        steps = {"q": listed(qs), "k": listed(ks), "logsumexp": listed([r["lse"] for r in reduced]),
                 "fused": listed([r["fused"] for r in reduced]) if keep_fused is not None else None}
    t2 = time.perf_counter()
    return ClipsCaptured(probabilities=host["probabilities"], architecture=architecture, temporal=host["temporal"],
                         spatial=host["spatial"], readout_rows=host["readout"], token_norms=host["token_norms"],
                         scale=scale, probe_attention=host.get("probe_attention"), entropy=host.get("entropy"),
                         timings={"forward": t1 - t0, "to_numpy": t2 - t1}, **steps)


class ClipAttention:
    """An ``AttentionSource`` (``viz.maps.source``) over one clip's attention steps, recomputed from the kept queries
    and keys: rows and columns of any step and head over the stream's T tokens (a grouped step's as the model mixes
    its tokens, ``viz.maps.video.dense_step``, from the few groups the asked tokens are in), its heads fused, the
    readout's rows. Layers are the steps of the description; ``layout`` gives (prefix, the grid of one frame)."""

    def __init__(self, architecture: Architecture, q: Sequence[np.ndarray], k: Sequence[np.ndarray],
                 logsumexp: Sequence[np.ndarray], readout_rows: np.ndarray, scale: float,
                 fused: Sequence[np.ndarray | None] | None = None):
        self.architecture, self.q, self.k, self.lse = architecture, tuple(q), tuple(k), tuple(logsumexp)
        self._readout, self.scale = readout_rows, scale
        self.fused_copies = tuple(fused) if fused is not None else (None,) * architecture.depth
        self.depth, self.heads = architecture.depth, architecture.max_heads

    @property
    def nbytes(self) -> int:
        return (sum(a.nbytes for a in (*self.q, *self.k, *self.lse)) + self._readout.nbytes
                + sum(f.nbytes for f in self.fused_copies if f is not None))

    def layout(self, layer: int) -> tuple[int, tuple[int, int]]:
        return self.architecture.block(layer).tokens()

    def readout_rows(self, layer: int) -> np.ndarray:
        return self._readout[layer_index(layer, self.depth)]

    def carry(self, layer: int, rows: np.ndarray, fusion: str = "mean", discard_ratio: float = 0.0,
              keep: np.ndarray | None = None, protect: Sequence[int] = (0,)) -> np.ndarray:
        kept = self.fused_copies[layer_index(layer, self.depth)]
        if fusion != "mean" or discard_ratio or keep is not None or kept is None or kept.shape[0] != 1:
            return dense_carry(self, layer, rows, fusion, discard_ratio, keep, protect)
        # one group of every token, its heads' mean A kept: rows @ Â for Â = (A + I) / (A·1 + 1) (``with_residual``)
        # is r @ A + r with r = rows / (A·1 + 1): A read twice, Â never formed
        a = torch.from_numpy(np.asarray(kept[0])).float()
        r = torch.from_numpy(np.asarray(rows, dtype=np.float32)) / (a.sum(dim=-1) + 1)
        return (r @ a + r).numpy()

    def _qk(self, layer: int, head: int | None) -> tuple[torch.Tensor, torch.Tensor, np.ndarray, BlockLayout]:
        """(q, k (G, h, n, Dh) in the kept dtype, the log-sum-exps (G, h, n), the step's block) of one head (h = 1) or
        all; a caller converts only the rows it reads (``attention_rows`` converts the queries it is asked for)."""
        layer = layer_index(layer, self.depth)
        heads = slice(None)
        if head is not None:
            check_head(head, self.heads)
            heads = slice(head % self.heads, head % self.heads + 1)
        q = torch.from_numpy(np.asarray(self.q[layer][:, heads]))
        k = torch.from_numpy(np.asarray(self.k[layer][:, heads]))
        return q, k, self.lse[layer][:, heads], self.architecture.blocks[layer]

    def rows(self, layer: int, head: int | None, queries: Sequence[int]) -> np.ndarray:
        q, k, _, block = self._qk(layer, head)
        queries = np.asarray(queries)
        if block.groups().shape[0] == 1:
            index = torch.as_tensor(queries, dtype=torch.long)
            return attention_rows(q[0][None], k[0][None], self.scale, None, index)[0].mean(dim=0).numpy()
        # a grouped step: each query's rows in the groups it is in, at their tokens' places, as ``dense_step`` puts
        # them (the mean of its rows where it is in several; a token in no group attends to itself)
        index = block.groups()
        count = np.bincount(index.ravel(), minlength=block.num_tokens)             # each token's groups
        asked, g, i = np.nonzero(index[None] == queries[:, None, None])
        p = torch.softmax((q[g, :, i].float() * self.scale)[:, :, None] @ k[g].float().transpose(-2, -1), dim=-1)
        out = np.zeros((len(queries), block.num_tokens), np.float32)
        np.add.at(out, (asked[:, None], index[g]), p.mean(dim=1)[:, 0].numpy() / count[queries[asked]][:, None])
        alone = count[queries] == 0
        out[alone, queries[alone]] = 1.0
        return out

    def columns(self, layer: int, head: int | None, keys: Sequence[int]) -> np.ndarray:
        q, k, lse, block = self._qk(layer, head)
        keys = np.asarray(keys)
        if block.groups().shape[0] == 1:
            index = torch.as_tensor(keys, dtype=torch.long)
            logits = (q[0].float() * self.scale) @ k[0][:, index].float().transpose(-2, -1)    # (h, T, Tk)
            return torch.exp(logits - torch.from_numpy(lse[0])[..., None]).mean(dim=0).numpy()
        # a grouped step: each key's column in the groups it is in (p_ij = exp(q_i·k_j·scale − lse_i)), at the
        # queries' places, each query's share 1/(its groups)
        index = block.groups()
        count = np.bincount(index.ravel(), minlength=block.num_tokens)             # each token's groups
        asked, g, j = np.nonzero(index[None] == keys[:, None, None])
        logits = (q[g].float() * self.scale) @ k[g, :, j].float()[:, :, :, None]                # (P, h, n, 1)
        p = torch.exp(logits[..., 0] - torch.from_numpy(lse[g])).mean(dim=1).numpy()           # (P, n)
        out = np.zeros((block.num_tokens, len(keys)), np.float32)
        np.add.at(out, (index[g], asked[:, None]), p / count[index[g]])
        alone = count[keys] == 0
        out[keys[alone], np.flatnonzero(alone)] = 1.0
        return out

    def fused(self, layer: int, fusion: str = "mean") -> np.ndarray:
        if fusion not in FUSIONS:
            raise ValueError(f"Unknown head fusion {fusion!r}! Expected one of {FUSIONS}.")
        layer = layer_index(layer, self.depth)
        block = self.architecture.blocks[layer]
        kept = self.fused_copies[layer]
        if fusion == "mean" and kept is not None:
            groups = np.asarray(kept, dtype=np.float32)[:, None]                            # (G, 1, n, n)
        else:
            q, k, _, _ = self._qk(layer, None)
            p = torch.cat([attention_rows(q[g][None], k[g][None], self.scale) for g in range(q.shape[0])])
            groups = {"mean": p.mean, "max": p.amax, "min": p.amin}[fusion](dim=1, keepdim=True).numpy()
        return dense_step(groups, block)[0]


def clip_analyses(loaded, captured: ClipsCaptured, clips: Sequence, timings: dict | None = None) -> list[Analysis]:
    """One ``Analysis`` per clip of a captured batch: its attention a ``ClipAttention`` (when the capture kept
    queries and keys), its spatial distance as ``mean_distance``, its temporal one, the frames the model saw
    (``clips``: ``vit.video_file.Clip``s), its first frame as ``image``."""
    labels = class_labels(loaded, captured.probabilities.shape[-1])
    out = []
    for b, clip in enumerate(clips):
        source = None
        if captured.q is not None:
            source = ClipAttention(captured.architecture, [q[b] for q in captured.q], [k[b] for k in captured.k],
                                   [s[b] for s in captured.logsumexp], captured.readout_rows[b], captured.scale,
                                   None if captured.fused is None else [f[b] for f in captured.fused])
        out.append(Analysis(image=Image.fromarray(np.asarray(clip.frames[0])), probabilities=captured.probabilities[b],
                            labels=labels, architecture=captured.architecture, token_norms=captured.token_norms[b],
                            model_name=getattr(loaded, "name", ""), timings=dict(timings or {}),
                            mean_distance={False: captured.spatial[b]},
                            probe_attention=None if captured.probe_attention is None else captured.probe_attention[b],
                            source=source, clip=clip, temporal_distance=captured.temporal[b]))
    return out


def blank_clip(preprocess) -> Clip:
    """A black clip of the model's own frame count and size (``VideoPreprocess``): a served model's warm-up."""
    n, (h, w) = preprocess.num_frames, preprocess.crop
    return Clip(np.zeros((n, h, w, 3), np.uint8), np.arange(n), np.zeros(n), VideoInfo(n, 0.0, 0.0, w, h, ""))


def analyze_clip(loaded, clip, keep=np.float32, dtype: torch.dtype = torch.float32, turn=None) -> Analysis:
    """A clip (``vit.video_file.Clip``: the frames the model sees, resized and cropped) through a video model ->
    ``Analysis`` (``keep``: the dtype of the kept queries and keys; the page keeps float16). A photo is refused in one
    sentence (ValueError). ``turn``: taken for each attention step (``capture_clips``)."""
    if not isinstance(clip, Clip):
        raise ValueError(f"{getattr(loaded, 'name', '') or 'This model'} is a video model: it reads clips, not photos "
                         f"(the page's Video tab, or python -m viz VIDEO).")
    t0 = time.perf_counter()
    device = next(loaded.model.parameters()).device
    x = loaded.preprocess.clip_tensor(clip.frames).to(device)
    t1 = time.perf_counter()
    captured = capture_clips(loaded.model, x, keep, dtype=dtype, turn=turn)
    return clip_analyses(loaded, captured, [clip], {"preprocess": t1 - t0, **captured.timings})[0]


