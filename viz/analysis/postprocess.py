"""What ``analyze`` derives from the blocks' attention, in torch, on the model's device, as the blocks run.

Each block's probabilities come a chunk of query rows at a time: ``p`` (B, H, c, T) float32 for the rows
``start … start + c - 1`` (rows summing to 1), so that the float32 (B, H, T, T) of a block need not exist at once
(``viz.analysis.capture``). Each function returns a small array per chunk, a sum over its rows where the value is a
sum over rows, which the caller adds up over the chunks:

- ``fuse_heads``: mean, max and min over heads (B, c, T) — ``viz.maps.rollout.fuse_heads`` (rollout starts here);
- ``distance_sum``: Σ over the rows of Σ_j p_ij·d_ij, the mean attention distance times the N patch queries (B, H)
  — ``viz.maps.distance.mean_attention_distance`` (``renormalised_distance_sum`` for its ``renormalise=True``);
- ``entropy_sum``: Σ over the rows of each row's entropy, T times the mean entropy (B, H) — tests/oracles.py's
  ``attention_entropy`` in numpy;
- ``key_mass_sum``: Σ over heads and rows of the attention each key receives (B, T), H·T times tests/oracles.py's
  ``key_mass``.

The numpy functions named are the definitions; the tests hold these equal to them.
"""
from __future__ import annotations

from functools import lru_cache

import torch

CACHED_DISTANCES = 2**20          # distance tables of at most this many entries (T²) are made once per layout


def fuse_heads(p: torch.Tensor) -> dict[str, torch.Tensor]:
    """(B, H, c, T) -> {"mean", "max", "min": (B, c, T)}.

    ``amax`` and ``amin`` apart: on the CPU ``torch.aminmax`` over the head axis is 6× slower than both together.
    """
    return {"mean": p.mean(dim=1), "max": p.amax(dim=1), "min": p.amin(dim=1)}


def distance_rows(num_prefix: int, grid: tuple[int, int], patch_size: int, start: int, stop: int,
                  device) -> torch.Tensor:
    """(c·T,) float32: the pixel distance between the centres of patches i and j at (i - start)·T + j for the rows
    i = start … stop - 1, 0 where i or j is a prefix token (``viz.maps.distance.patch_distances``' values). Read it,
    never write it: small layouts' rows are made once and shared by every analysis (8 ms for ViT-B/16 on a 2-core
    CPU, which every new photo paid); larger ones each time they are asked for (by one gather from the table of
    distances per offset), so that no T×T table is ever kept."""
    T = num_prefix + grid[0] * grid[1]
    if T * T <= CACHED_DISTANCES:
        return _cached_rows(num_prefix, tuple(grid), patch_size, start, stop, str(device))
    return _rows(num_prefix, tuple(grid), patch_size, start, stop, device)


@lru_cache(maxsize=16)
def _cached_rows(num_prefix: int, grid: tuple[int, int], patch_size: int, start: int, stop: int,
                 device: str) -> torch.Tensor:
    return _rows(num_prefix, grid, patch_size, start, stop, device)


@lru_cache(maxsize=8)
def _by_offset(grid: tuple[int, int], patch_size: int, device: str) -> torch.Tensor:
    """(2·gh - 1, 2·gw - 1) float32: the distance in pixels of every row and column offset, at [Δr + gh - 1, Δc + gw - 1]
    (computed as ``patch_distances`` computes it: in float64, then rounded)."""
    gh, gw = grid
    dr = torch.arange(-(gh - 1), gh, dtype=torch.float64)[:, None]
    dc = torch.arange(-(gw - 1), gw, dtype=torch.float64)[None, :]
    return (patch_size * torch.sqrt(dr * dr + dc * dc)).float().to(device)


def _rows(num_prefix: int, grid: tuple[int, int], patch_size: int, start: int, stop: int, device) -> torch.Tensor:
    T = num_prefix + grid[0] * grid[1]
    gh, gw = grid
    rows = torch.zeros(stop - start, T, dtype=torch.float32, device=device)
    queries = torch.arange(max(start, num_prefix), stop, device=device) - num_prefix     # the patches among the rows
    if queries.numel():
        # query (r, c) reads table[r - r' + gh - 1, c - c' + gw - 1] for every patch (r', c'): the gh×gw window of the
        # flipped table at (gh - 1 - r, gw - 1 - c); every window is a view of it, so one index_select copies them
        flipped = _by_offset(grid, patch_size, str(device)).flip(0, 1).contiguous()     # (2gh - 1, 2gw - 1)
        width = 2 * gw - 1
        windows = flipped.flatten().as_strided((flipped.numel() - (gh - 1) * width - (gw - 1), gh, gw), (1, width, 1))
        r, c = torch.div(queries, gw, rounding_mode="floor"), queries % gw
        starts = (gh - 1 - r) * width + (gw - 1 - c)
        rows[queries + num_prefix - start, num_prefix:] = windows.index_select(0, starts).reshape(len(queries), -1)
    return rows.reshape(-1)


def distance_sum(p: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """(B, H, c, T), ``distance_rows`` of its rows (c·T,) -> Σ_i Σ_j p_ij·d_ij over the rows (B, H): one
    matrix-vector product, no temporary. The mean attention distance (prefix attention counting as distance 0) is
    its sum over every row divided by the N patches; summed in float32 it differs from the numpy definition by
    about 1e-6 of its value."""
    B, H, c, T = p.shape
    return (p.reshape(B * H, c * T) @ rows).reshape(B, H)


def renormalised_distance_sum(p: torch.Tensor, rows: torch.Tensor, num_prefix: int, start: int) -> torch.Tensor:
    """(B, H, c, T) -> Σ over its patch rows of the row's mean distance with the row renormalised over the patches
    first (``--distance-renormalise``) (B, H); divided by N over every row it is that mean."""
    B, H, c, T = p.shape
    first = max(num_prefix - start, 0)                               # the chunk's first patch row
    patches = p[:, :, first:, num_prefix:]                           # (B, H, c', N) view
    d = rows.reshape(c, T)[first:, num_prefix:]                      # (c', N)
    weighted = (patches * d).sum(dim=-1)                             # (B, H, c')
    return (weighted / patches.sum(dim=-1).clamp_min(1e-12)).sum(dim=-1)


def entropy_sum(p: torch.Tensor) -> torch.Tensor:
    """(B, H, c, T) -> Σ over the rows of each row's entropy in nats (B, H); 0·ln 0 = 0."""
    return torch.special.entr(p).sum(dim=-1).sum(dim=-1)


def key_mass_sum(p: torch.Tensor) -> torch.Tensor:
    """(B, H, c, T) -> the attention each key token receives, summed over the heads and rows (B, T)."""
    B, H, c, T = p.shape
    ones = p.new_ones(B, 1, H * c)
    return (ones @ p.reshape(B, H * c, T)).reshape(B, T)   # column sums as a product: 4× a sum()
