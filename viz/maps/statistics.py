"""Per-image numbers that summarise attention over a data set: how spread out each head's attention is
(entropy), and how much of a block's attention lands on given key tokens (the prefix tokens, the high-norm
artifact tokens). With the mean attention distance of ``figure7`` these are what ``python -m viz FOLDER``
averages over images (``viz.dataset``).

Attention arrays are (L, H, T, T) for one image, rows summing to 1, as everywhere in ``viz.maps``. These numpy
functions are the definitions; ``viz.analysis.postprocess`` computes the same numbers in torch on the model's
device, block by block, and the tests hold the two equal.
"""
from __future__ import annotations

import numpy as np

from .layout import check_attention


def attention_entropy(attn: np.ndarray) -> np.ndarray:
    """Entropy in nats of every query row, averaged over all T query tokens -> (L, H).

    ``-Σ_j A_ij · ln A_ij`` with 0 · ln 0 = 0: 0 when a query attends to one token only, ln T when it attends
    to all T tokens alike. Low entropy means a focused head, high entropy a head that averages.
    """
    attn = np.asarray(attn, dtype=np.float64)
    if attn.ndim != 4 or attn.shape[2] != attn.shape[3]:
        raise ValueError(f"Wrong attention shape! Expected (layers, heads, T, T) but got {attn.shape}!")
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(attn > 0, -attn * np.log(attn), 0.0)
    return terms.sum(axis=-1).mean(axis=-1)


def key_mass(attn: np.ndarray) -> np.ndarray:
    """Share of each block's attention that each key token receives -> (L, T), every row summing to 1.

    Summed over heads and over all T query tokens, divided by H·T (every query row holds mass 1). The share
    that a set of tokens receives is the sum of its entries (``key_share``).
    """
    attn = np.asarray(attn, dtype=np.float64)
    if attn.ndim != 4 or attn.shape[2] != attn.shape[3]:
        raise ValueError(f"Wrong attention shape! Expected (layers, heads, T, T) but got {attn.shape}!")
    L, H, T, _ = attn.shape
    return attn.sum(axis=(1, 2)) / (H * T)


def key_share(mass: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Key mass (L, T) (``key_mass``) and a bool mask of tokens (T,) -> their share of each block's attention (L,)."""
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


def attention_shares(attn: np.ndarray, num_prefix: int, grid: tuple[int, int],
                     high_norm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(share of each block's attention on the prefix tokens (L,), on the ``high_norm`` patches (gh, gw) (L,))."""
    attn = check_attention(attn, num_prefix, grid)
    mass = key_mass(attn)
    return key_share(mass, prefix_keys(num_prefix, grid)), key_share(mass, patch_keys(num_prefix, high_norm))
