"""What ``analyze`` derives from the blocks' attention, in torch, on the model's device, as the blocks run.

Each function takes maps ``(N, H, T, T)`` float32 (rows summing to 1; N = images × blocks reduced together) and
returns a small array per map, so every value is read a few times only and the float32 maps of all blocks need
not exist at once:

- ``fuse_heads``: mean, max and min over heads (B, T, T) — ``viz.maps.rollout.fuse_heads`` (rollout starts here);
- ``mean_distance``: mean attention distance in pixels (B, H) — ``viz.maps.distance.mean_attention_distance``
  (``mean_distance_renormalised`` for its ``renormalise=True``);
- ``entropy``: attention entropy per head (B, H) — tests/oracles.py's ``attention_entropy`` in numpy;
- ``key_mass``: each key token's share of the block's attention (B, T) — tests/oracles.py's ``key_mass``.

The numpy functions named are the definitions; the tests hold these equal to them.
"""
from __future__ import annotations

from functools import lru_cache

import torch

from ..maps.distance import patch_distances


def fuse_heads(maps: torch.Tensor) -> dict[str, torch.Tensor]:
    """(N, H, T, T) -> {"mean", "max", "min": (N, T, T)}.

    ``amax`` and ``amin`` apart: on the CPU ``torch.aminmax`` over the head axis is 6× slower than both together.
    """
    return {"mean": maps.mean(dim=1), "max": maps.amax(dim=1), "min": maps.amin(dim=1)}


@lru_cache(maxsize=8)
def distance_weights(num_prefix: int, grid: tuple[int, int], patch_size: int, device) -> torch.Tensor:
    """(T·T,) float32: pixel distance between the centres of patches i and j at i·T + j, 0 where i or j is a
    prefix token. Made once per layout and device (8 ms for ViT-B/16 on a 2-core CPU, every new photo paid it)
    and shared by every analysis: read it, never write it.

    The mean attention distance (prefix attention counting as distance 0) is the mean over the N query patches
    of Σ_j A_ij·d_ij, i.e. Σ_ij A_ij·d_ij / N over the whole (T, T) map: one dot product per head with these
    weights instead of a (T, T) temporary per head. Summed in float32 over T² terms, it differs from the
    numpy definition by about 1e-6 of its value.
    """
    T = num_prefix + grid[0] * grid[1]
    weights = torch.zeros(T, T, dtype=torch.float32)
    weights[num_prefix:, num_prefix:] = torch.from_numpy(patch_distances(grid, patch_size))
    return weights.reshape(T * T).to(device)


def mean_distance(maps: torch.Tensor, weights: torch.Tensor, num_prefix: int) -> torch.Tensor:
    """(B, H, T, T), ``distance_weights`` (T·T,) -> mean attention distance in pixels (B, H)."""
    B, H, T, _ = maps.shape
    flat = maps.reshape(B * H, T * T) @ weights                   # a matrix-vector product: one pass, no temporary
    return flat.reshape(B, H) / (T - num_prefix)


def mean_distance_renormalised(maps: torch.Tensor, distances: torch.Tensor, num_prefix: int) -> torch.Tensor:
    """(B, H, T, T), patch distances (N, N) -> mean attention distance with every query row renormalised over
    the patches first (``--distance-renormalise``) (B, H). Row by row, so it needs one (B, H, N, N) temporary."""
    patches = maps[:, :, num_prefix:, num_prefix:]                  # (B, H, N, N) view
    weighted = (patches * distances).sum(dim=-1)                    # (B, H, N)
    return (weighted / patches.sum(dim=-1).clamp_min(1e-12)).mean(dim=-1)


def entropy(maps: torch.Tensor) -> torch.Tensor:
    """(B, H, T, T) -> entropy in nats of every query row, averaged over the T queries (B, H); 0·ln 0 = 0."""
    return torch.special.entr(maps).sum(dim=-1).mean(dim=-1)


def key_mass(maps: torch.Tensor) -> torch.Tensor:
    """(B, H, T, T) -> share of the block's attention that each key token receives (B, T), summing to 1."""
    B, H, T, _ = maps.shape
    ones = maps.new_ones(B, 1, H * T)
    return (ones @ maps.reshape(B, H * T, T)).reshape(B, T) / (H * T)   # column sums as a product: 4× a sum()
