"""How a removed patch is removed: the four perturbation protocols the faithfulness curves can be run under.

- ``tokens``: the patch is dropped from the token sequence (``vit.explain.perturb.forward_packed``): the model
  never sees an out-of-distribution pixel; ViT-native, and the default.
- ``mean_colour``: pixel space, the patch painted with the photo's mean colour (the channel means of the model
  input), as in most perturbation benchmarks.
- ``blur``: pixel space, the patch replaced by the photo blurred with a Gaussian of σ = patch size / 2 (±2σ
  kernel, reflect padding).
- ``road``: pixel space, the patch imputed from its neighbours by ROAD's noisy linear imputation
  (``viz.trust.road``), which does not leave the mask's shape for the model to read.

The three pixel protocols build whole images (``perturbed``) that the model runs as they are; tokens run as
packed sequences. A method's verdict is only trusted where all the protocols run agree (``viz.trust.verdicts``).
"""
from __future__ import annotations

import zlib
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from .road import noisy_linear_imputation

PROTOCOLS = {  # how removed patches are removed (result.json and the page name the protocol)
    "tokens": "dropped from the token sequence (the default: no out-of-distribution pixels)",
    "mean_colour": "pixel space: replaced by the photo's mean colour (channel means of the model input)",
    "blur": "pixel space: replaced by the photo blurred with a Gaussian of σ = patch size / 2",
    "road": "pixel space: imputed from the neighbouring pixels plus small noise (ROAD, Rong et al. 2022)",
}
PIXEL = ("mean_colour", "blur", "road")


def protocol_list(text: str | Sequence[str]) -> list[str]:
    """"tokens,blur" or "all" (or a list) -> the protocols, in the order given, each once; ValueError names the
    known ones."""
    names = [p.strip() for p in text.split(",")] if isinstance(text, str) else [str(p) for p in text]
    if names == ["all"]:
        return list(PROTOCOLS)
    unknown = [p for p in names if p not in PROTOCOLS]
    if unknown or not names:
        raise ValueError(f"Unknown protocol {', '.join(map(repr, unknown)) or 'none'}! Expected a comma-separated "
                         f"list of {', '.join(PROTOCOLS)}, or all.")
    return list(dict.fromkeys(names))


def fill(x: torch.Tensor, protocol: str, patch: int) -> torch.Tensor:
    """The pixels a removed patch shows under ``mean_colour`` or ``blur``: (1, C, H, W), the same for every mask."""
    if protocol == "mean_colour":
        return x.mean(dim=(2, 3), keepdim=True).expand_as(x)
    if protocol != "blur":
        raise ValueError(f"Only mean_colour and blur have one fill for every mask, not {protocol!r}.")
    sigma = patch / 2
    size = 2 * patch + 1                                     # ±2σ
    r = torch.arange(size, dtype=x.dtype, device=x.device) - patch
    g = torch.exp(-r ** 2 / (2 * sigma ** 2))
    g = g / g.sum()
    C = x.shape[1]
    padded = F.pad(x, (patch, patch, patch, patch), mode="reflect")
    h = F.conv2d(padded, g.view(1, 1, 1, size).expand(C, 1, 1, size).contiguous(), groups=C)
    return F.conv2d(h, g.view(1, 1, size, 1).expand(C, 1, size, 1).contiguous(), groups=C)


def pixel_mask(keep: np.ndarray, grid: tuple[int, int], patch: int) -> torch.Tensor:
    """Kept patch indices (row-major) -> (H, W) float mask, 1 on the kept patches' pixels."""
    gh, gw = grid
    mask = np.zeros(gh * gw, dtype=np.float32)
    mask[np.asarray(keep, dtype=np.int64)] = 1.0
    return torch.from_numpy(np.repeat(np.repeat(mask.reshape(gh, gw), patch, 0), patch, 1))   # numpy: ~200× faster


def noise_generator(seed: int, keep: np.ndarray) -> torch.Generator:
    """ROAD's noise generator for one kept set: seeded by (seed, the kept patches), so the same image gets the
    same noise whatever the order the curves run in or what the cache already held."""
    key = zlib.crc32(np.sort(np.asarray(keep, dtype=np.int64)).tobytes())
    return torch.Generator().manual_seed(int(seed) * 1_000_003 + key)


def perturbed(x: torch.Tensor, keeps: Sequence[np.ndarray], protocol: str, grid: tuple[int, int], patch: int,
              seed: int = 0, filled: torch.Tensor | None = None) -> torch.Tensor:
    """One pixel-space image per kept set: x (1, C, H, W), keeps[b] the kept patch indices -> (B, C, H, W), the
    removed patches filled as ``protocol`` says. ``filled``: ``fill(x, protocol, patch)`` when already computed."""
    if protocol == "road":
        images = [noisy_linear_imputation(x[0], pixel_mask(k, grid, patch), generator=noise_generator(seed, k))
                  for k in keeps]
        return torch.stack(images).to(x.device)
    filled = fill(x, protocol, patch) if filled is None else filled
    mask = torch.stack([pixel_mask(k, grid, patch) for k in keeps])[:, None].to(x.device, x.dtype)   # (B, 1, H, W)
    return x * mask + filled * (1 - mask)
