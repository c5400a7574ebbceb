"""Where the patches are in a token sequence: checks, index arithmetic and reshaping to the patch grid.

Every function in viz/ takes the token layout explicitly (``num_prefix`` tokens — CLS, DIST, registers —
followed by a gh×gw patch grid in row-major order) instead of guessing a square 14×14 grid with one
CLS token, so 384-px inputs, non-square inputs, distilled and register models all work the same way.
"""
from __future__ import annotations

import numpy as np


def check_attention(attn: np.ndarray, num_prefix: int, grid: tuple[int, int]) -> np.ndarray:
    """Validate an attention array (L, H, T, T) against the layout; returns it as a numpy array.

    Raises ValueError saying what was expected and what was got.
    """
    attn = np.asarray(attn)
    gh, gw = grid
    T = num_prefix + gh * gw
    if attn.ndim != 4 or attn.shape[2:] != (T, T):
        raise ValueError(f"Wrong attention shape! Expected (layers, heads, {T}, {T}) for {num_prefix} prefix "
                         f"tokens and a {gh}×{gw} grid but got {attn.shape}!")
    return attn


def to_grid(values: np.ndarray, num_prefix: int, grid: tuple[int, int]) -> np.ndarray:
    """Per-token values (..., T) -> patch values (..., gh, gw), prefix tokens dropped."""
    values = np.asarray(values)
    gh, gw = grid
    if values.shape[-1] != num_prefix + gh * gw:
        raise ValueError(f"Wrong number of tokens! Expected {num_prefix} prefix + {gh}×{gw} patches = "
                         f"{num_prefix + gh * gw} but got {values.shape[-1]}!")
    return values[..., num_prefix:].reshape(values.shape[:-1] + (gh, gw))


def patch_token(row: int, col: int, num_prefix: int, grid: tuple[int, int]) -> int:
    """Token index of the patch at (row, col) of the grid (negative indices count from the end)."""
    gh, gw = grid
    if not (-gh <= row < gh and -gw <= col < gw):
        raise ValueError(f"Patch ({row}, {col}) is outside the {gh}×{gw} grid! Expected 0 <= row < {gh}, 0 <= col < {gw}.")
    return num_prefix + (row % gh) * gw + (col % gw)


def pixel_to_patch(x: float, y: float, image_size: tuple[int, int], grid: tuple[int, int]) -> tuple[int, int]:
    """Pixel (x, y) of an image of size (width, height) showing the grid -> patch (row, col), clamped to the grid.

    Works for any display size, so a click on an enlarged overlay finds the right patch.
    """
    width, height = image_size
    gh, gw = grid
    row = min(max(int(y * gh / height), 0), gh - 1)
    col = min(max(int(x * gw / width), 0), gw - 1)
    return row, col


def layer_index(layer: int, depth: int) -> int:
    """Normalise a 0-based layer index (negative counts from the end) and check it is in range."""
    if not -depth <= layer < depth:
        raise ValueError(f"Layer {layer} does not exist! Expected 0 <= layer < {depth} (or -{depth} <= layer < 0).")
    return layer % depth
