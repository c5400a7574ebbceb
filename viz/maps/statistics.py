"""How much of a block's attention lands on given key tokens (the prefix tokens, the high-norm artifact tokens):
with the entropy per head and the mean attention distance (``distance``), what ``python -m viz FOLDER`` averages
over images (``viz.dataset``).

``viz.analysis.postprocess`` computes each key token's share of a block's attention (its key mass, (L, T)) in
torch on the model's device; these functions turn it into the share of a set of tokens. (The numpy definitions of
the entropy and the key mass, which the tests hold postprocess to, are in tests/oracles.py.)
"""
from __future__ import annotations

import numpy as np


def key_share(mass: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Key mass (L, T) (``viz.analysis.postprocess.key_mass``) and a bool mask of tokens (T,) -> their share of each block's attention (L,)."""
    mass = np.asarray(mass)
    keys = np.asarray(keys, dtype=bool)
    if keys.shape != mass.shape[-1:]:
        raise ValueError(f"Wrong token mask! Expected {mass.shape[-1]} tokens but got shape {keys.shape}!")
    return mass[..., keys].sum(axis=-1)


def prefix_keys(num_prefix: int, grid: tuple[int, int]) -> np.ndarray:
    """Bool mask (T,) of the prefix tokens (CLS, DIST, registers)."""
    keys = np.zeros(num_prefix + grid[0] * grid[1], dtype=bool)
    keys[:num_prefix] = True
    return keys


def patch_keys(num_prefix: int, patches: np.ndarray) -> np.ndarray:
    """Bool mask (T,) of the patches flagged in ``patches`` (gh, gw) (e.g. ``viz.maps.norms.artifact_mask``)."""
    patches = np.asarray(patches, dtype=bool)
    return np.concatenate([np.zeros(num_prefix, dtype=bool), patches.ravel()])
