"""One analysed image's attention recomputed on demand, a layer at a time, from what ``capture(on_demand=True)`` kept:
the residual stream (the tokens entering every block), each row's log-sum-exp and each head's readout row
(``viz.maps.source.AttentionSource``; the page's analyses).

A layer's queries and keys are the model's own (``Block.attention_input``, ``Attention.queries_and_keys``, with
``Attention.logit_bias``): T·D² work, the last layer's kept by the source while they are small (``KEPT_KEYS``), so
that clicks in one layer recompute nothing; counted in what the source holds. From them:

- rows: ``vit.model.attention_rows`` (Tq·T·D);
- a column j: exp(q_i·k_j·scale + bias_ij − lse_i) for every query i, with the row's log-sum-exp kept from the
  forward pass: T·D, not the T²·D of recomputing every row;
- a head-fused matrix: every head's rows, a chunk of queries at a time (T²·D), kept while small (``FUSED``), the
  layer's mean attention distances summed from them on the way (so the first pictures' rollout also makes the
  distance plot's numbers).

The numbers are those of the full capture up to the rounding of the kept stream (float32: 1e-6 of a row's largest
value; float16, the page's: about 1e-3 of it for real weights, whose logits are large): ``tests/maps/test_sources.py``.
"""
from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from typing import Sequence

import numpy as np
import torch

from vit.model import attention_rows

from . import postprocess
from ..maps.layout import layer_index
from ..maps.rollout import FUSIONS
from ..maps.source import check_head, dense_carry

KEPT_KEYS = 4 * 2**20         # a layer's float32 queries and keys up to this size are kept for the next call
ROWS_BYTES = 16 * 2**20        # float32 rows of all heads recomputed together (fusing, distances)


class RecomputedAttention:
    """An ``AttentionSource`` over the model that made the analysis.

    ``stream`` (L + 1, T, D): the tokens entering each block (the last: after the last block), any float dtype;
    ``readout_rows`` (L, H, T) and ``logsumexp`` (L, H, T) float32 from the forward pass; ``fused``: head-fused copies
    kept by the capture ({"mean", "max", "min": (L, T, T)}, or empty); ``turn``: the context every run of the model's
    modules takes (a server's model turn; ``contextlib.nullcontext()`` in a script).
    """

    def __init__(self, model, stream: np.ndarray, num_prefix: int, grid: tuple[int, int], readout_rows: np.ndarray,
                 logsumexp: np.ndarray, fused: dict, turn: AbstractContextManager):
        self.model, self.stream, self.turn = model, stream, turn
        self._layout = (num_prefix, tuple(grid))
        self._readout, self._lse, self.fused_copies = readout_rows, logsumexp, fused
        self.depth, self.heads = readout_rows.shape[:2]
        self._last: tuple[int, tuple] | None = None        # (layer, its queries and keys) when small (KEPT_KEYS)
        self._distance: dict[int, np.ndarray] = {}          # layer -> (H,) mean distance, summed while fusing it
        self._lock = threading.Lock()

    @property
    def keys_bytes(self) -> int:
        """A layer's float32 queries and keys: 2·T·D·4 bytes."""
        return 2 * self.stream.shape[1] * self.stream.shape[2] * 4

    @property
    def nbytes(self) -> int:
        """What the source holds for its image, the one layer's queries and keys it may keep included (the model is
        the server's, counted there)."""
        kept = self.keys_bytes if self.keys_bytes <= KEPT_KEYS else 0
        return (self.stream.nbytes + self._readout.nbytes + self._lse.nbytes
                + sum(f.nbytes for f in self.fused_copies.values()) + kept)

    def layout(self, layer: int) -> tuple[int, tuple[int, int]]:
        return self._layout

    def readout_rows(self, layer: int) -> np.ndarray:
        return self._readout[layer_index(layer, self.depth)]

    def carry(self, layer: int, rows: np.ndarray, fusion: str = "mean", discard_ratio: float = 0.0,
              keep: np.ndarray | None = None, protect: Sequence[int] = (0,)) -> np.ndarray:
        return dense_carry(self, layer, rows, fusion, discard_ratio, keep, protect)

    def queries_and_keys(self, layer: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, float]:
        """(q, k (1, H, T, Dh) float32, the logit bias or None, the scale) of a layer, on the model's device."""
        layer = layer_index(layer, self.depth)
        with self._lock:
            if self._last is not None and self._last[0] == layer:
                return self._last[1]
        block = self.model.blocks[layer]
        parameter = next(self.model.parameters())
        num_prefix, (gh, gw) = self._layout
        size = self.model.cfg.patch_size
        with self.turn, torch.inference_mode():
            x = torch.from_numpy(np.ascontiguousarray(self.stream[layer]))[None]
            x = x.to(device=parameter.device, dtype=parameter.dtype)                    # (1, T, D)
            positions = self.model.token_positions(gh * size, gw * size, parameter.device)
            q, k = block.attn.queries_and_keys(block.attention_input(x), positions)
            bias = block.attn.logit_bias(positions, torch.float32)
        computed = (q.float(), k.float(), bias, block.attn.scale)
        if self.keys_bytes <= KEPT_KEYS:
            with self._lock:
                self._last = (layer, computed)
        return computed

    def rows(self, layer: int, head: int | None, queries: Sequence[int]) -> np.ndarray:
        q, k, bias, scale = self._heads(layer, head)
        index = torch.as_tensor(np.asarray(queries), dtype=torch.long, device=q.device)
        rows = attention_rows(q, k, scale, bias, index)[0]                                 # (h, Tq, T)
        return rows.mean(dim=0).cpu().numpy()

    def columns(self, layer: int, head: int | None, keys: Sequence[int]) -> np.ndarray:
        q, k, bias, scale = self._heads(layer, head)
        index = torch.as_tensor(np.asarray(keys), dtype=torch.long, device=q.device)
        logits = (q * scale) @ k[:, :, index].transpose(-2, -1)         # (1, h, T, Tk): q·kᵀ·scale as attend forms it
        if bias is not None:
            logits = logits + bias[..., index].float()
        heads = slice(None) if head is None else slice(head % self.heads, head % self.heads + 1)
        lse = torch.from_numpy(self._lse[layer_index(layer, self.depth), heads]).to(q.device)   # (h, T)
        return torch.exp(logits - lse[None, :, :, None])[0].mean(dim=0).cpu().numpy()

    def fused(self, layer: int, fusion: str = "mean") -> np.ndarray:
        if fusion not in FUSIONS:
            raise ValueError(f"Unknown head fusion {fusion!r}! Expected one of {FUSIONS}.")
        layer = layer_index(layer, self.depth)
        if fusion in self.fused_copies:
            return np.array(self.fused_copies[fusion][layer], dtype=np.float32)
        return self._fuse(layer, fusion)

    def mean_distance(self, patch_size: int, renormalise: bool = False) -> np.ndarray:
        """The mean attention distance in pixels of every layer and head (L, H) (``viz.maps.distance``), from every
        head's rows recomputed a chunk of queries at a time: what the capture leaves to the first view that asks when
        it ran the fused kernel. The layers a head-fused matrix was made for (a rollout) cost nothing more: their
        distances were summed from the same rows."""
        num_prefix, grid = self._layout
        out = np.empty((self.depth, self.heads), dtype=np.float32)
        for layer in range(self.depth):
            if not renormalise and patch_size == self.model.cfg.patch_size and layer in self._distance:
                out[layer] = self._distance[layer]
                continue
            q, k, bias, scale = self.queries_and_keys(layer)
            total = torch.zeros(1, self.heads, device=q.device)
            for start, stop, p in self._row_chunks(q, k, bias, scale):
                rows = postprocess.distance_rows(num_prefix, grid, patch_size, start, stop, q.device)
                total += (postprocess.renormalised_distance_sum(p, rows, num_prefix, start) if renormalise else
                          postprocess.distance_sum(p, rows))
            out[layer] = (total[0] / (q.shape[2] - num_prefix)).cpu().numpy()
        return out

    def _fuse(self, layer: int, fusion: str) -> np.ndarray:
        """Every head's rows, a chunk of queries at a time, combined by ``fusion`` -> (T, T) float32; the layer's mean
        distances summed from the same rows on the way (``mean_distance``)."""
        q, k, bias, scale = self.queries_and_keys(layer)
        num_prefix, grid = self._layout
        T = q.shape[2]
        out = np.empty((T, T), dtype=np.float32)
        total = torch.zeros(1, self.heads, device=q.device)
        reduce = {"mean": torch.mean, "max": torch.amax, "min": torch.amin}[fusion]
        for start, stop, p in self._row_chunks(q, k, bias, scale):
            if q.device.type == "cpu":                     # straight into the matrix
                reduce(p[0], dim=0, out=torch.from_numpy(out[start:stop]))
            else:
                out[start:stop] = reduce(p[0], dim=0).cpu()
            total += postprocess.distance_sum(p, postprocess.distance_rows(num_prefix, grid, self.model.cfg.patch_size,
                                                                           start, stop, q.device))
        self._distance[layer] = (total[0] / (T - num_prefix)).cpu().numpy()
        return out

    @staticmethod
    def _row_chunks(q: torch.Tensor, k: torch.Tensor, bias: torch.Tensor | None, scale: float):
        """(start, stop, every head's rows start … stop - 1 (1, H, c, T) float32), ``ROWS_BYTES`` of rows at a time,
        each chunk written over the last one (read it before asking for the next)."""
        H, T = q.shape[1], q.shape[2]
        step = max(1, ROWS_BYTES // (H * T * 4))
        rows, logits = (q.new_empty(H * min(step, T) * T, dtype=torch.float32) for _ in range(2))
        for start in range(0, T, step):
            stop = min(start + step, T)
            p = rows[:H * (stop - start) * T].view(1, H, stop - start, T)
            yield start, stop, attention_rows(q, k, scale, bias, torch.arange(start, stop, device=q.device), chunk=step,
                                              out=p, workspace=logits)

    def _heads(self, layer: int, head: int | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, float]:
        """``queries_and_keys`` of one head (h = 1) or all (head None)."""
        q, k, bias, scale = self.queries_and_keys(layer)
        if head is None:
            return q, k, bias, scale
        check_head(head, self.heads)
        h = slice(head % self.heads, head % self.heads + 1)
        return q[:, h], k[:, h], None if bias is None else bias[..., h, :, :], scale
