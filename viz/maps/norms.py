"""Token norms after every block, and the high-norm "artifact" tokens among them.

Large ViTs repurpose a few low-information patch tokens (often in corners and borders) as global
scratch space; their norms grow many times larger than the others and they attract much of the
attention, which spoils attention maps (Darcet et al. 2023, "Vision Transformers Need Registers").
The AugReg ViT-Ti in ../shared/weights shows them in its four corners from block 7 on, with norms
10–46× the median patch; ordinary patches stay below 2.5× the median in it and in DeiT-Ti (measured on
the scikit-image photos), so a patch is flagged when its norm exceeds ``ratio`` (default 3) times the
median patch norm of the same block — a robust rule that needs no absolute scale.
"""
from __future__ import annotations

import numpy as np

from .layout import to_grid


def token_norm_maps(norms: np.ndarray, num_prefix: int, grid: tuple[int, int]) -> np.ndarray:
    """Token L2 norms per block (L, T) -> patch norms (L, gh, gw)."""
    norms = np.asarray(norms, dtype=np.float32)
    if norms.ndim != 2:
        raise ValueError(f"Wrong token-norm shape! Expected (layers, tokens) but got {norms.shape}!")
    return to_grid(norms, num_prefix, grid)


def flag_high_norm(norms: np.ndarray, num_prefix: int, grid: tuple[int, int], ratio: float = 3.0) -> np.ndarray:
    """Token norms (L, T) -> bool (L, gh, gw): patches whose norm exceeds ``ratio`` × that block's median patch norm."""
    if ratio <= 1.0:
        raise ValueError(f"ratio must be greater than 1 (a multiple of the median) but got {ratio}!")
    maps = token_norm_maps(norms, num_prefix, grid)
    median = np.median(maps.reshape(maps.shape[0], -1), axis=1)[:, None, None]
    return maps > ratio * median


def artifact_mask(flags: np.ndarray, from_layer: int = 0) -> np.ndarray:
    """Per-block flags (L, gh, gw) -> (gh, gw): patches flagged in any block from ``from_layer`` on.

    This is the mask to pass as ``drop_patches`` to ``viz.maps.rollout.rollout_map``.
    """
    flags = np.asarray(flags, dtype=bool)
    return flags[from_layer:].any(axis=0)
