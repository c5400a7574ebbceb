"""Many small maps in one image, with numpy: the layers × heads "model view", per-block token norms,
patch-embedding filter tiles, and the position-similarity mosaic.

A 12×12 grid of heads is one vectorised resize (two small matrix products), one lookup-table pass and
one array copy, so it renders in milliseconds instead of the seconds 144 matplotlib axes take.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw

from .render import DEFAULT_CMAP, as_rgb_array, colorize, font, nearest_index


@lru_cache(maxsize=64)
def interpolation_matrix(n_in: int, n_out: int) -> np.ndarray:
    """(n_out, n_in) weights of 1-D linear interpolation between sample centres (half-pixel aligned, edges clamped).

    ``M_h @ X @ M_w.T`` resizes a (h, w) array bilinearly like Pillow/OpenCV do when enlarging.
    """
    centre = (np.arange(n_out) + 0.5) * n_in / n_out - 0.5
    centre = np.clip(centre, 0, n_in - 1)
    lo = np.floor(centre).astype(int)
    hi = np.minimum(lo + 1, n_in - 1)
    frac = (centre - lo).astype(np.float32)
    m = np.zeros((n_out, n_in), dtype=np.float32)
    m[np.arange(n_out), lo] += 1.0 - frac
    m[np.arange(n_out), hi] += frac
    m.setflags(write=False)
    return m


def resize_maps(maps: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """(..., h, w) -> (..., H, W) bilinear, all maps at once; size = (H, W)."""
    mh = interpolation_matrix(maps.shape[-2], size[0])
    mw = interpolation_matrix(maps.shape[-1], size[1])
    return mh @ maps.astype(np.float32, copy=False) @ mw.T


def normalize_maps(maps: np.ndarray, scale: str = "each") -> np.ndarray:
    """(R, C, h, w) -> [0, 1] with one min-max per map ("each"), per row ("row") or for all ("all")."""
    axes = {"each": (2, 3), "row": (1, 2, 3), "all": (0, 1, 2, 3)}
    if scale not in axes:
        raise ValueError(f"Unknown scale {scale!r}! Expected one of {sorted(axes)}.")
    lo = maps.min(axis=axes[scale], keepdims=True)
    hi = maps.max(axis=axes[scale], keepdims=True)
    return ((maps - lo) / np.where(hi > lo, hi - lo, 1.0)).astype(np.float32)


@dataclass(frozen=True)
class GridLayout:
    """Geometry of a thumbnail grid image, to map a click back to its cell (0-based row, col)."""
    rows: int
    cols: int
    cell: tuple[int, int]  # (height, width) of one thumbnail in pixels
    gap: int
    left: int              # margin for row labels
    top: int               # margin for column labels

    def box(self, row: int, col: int) -> tuple[int, int, int, int]:
        """Pixel box (x0, y0, x1, y1) of a cell, inclusive."""
        ch, cw = self.cell
        x0 = self.left + col * (cw + self.gap)
        y0 = self.top + row * (ch + self.gap)
        return x0, y0, x0 + cw - 1, y0 + ch - 1

    def cell_at(self, x: float, y: float) -> tuple[int, int] | None:
        """Pixel (x, y) of the grid image -> (row, col) of the cell under it (gaps go to the cell before),
        or None in the label margins or outside."""
        ch, cw = self.cell
        if x < self.left or y < self.top:
            return None
        row, col = int((y - self.top) // (ch + self.gap)), int((x - self.left) // (cw + self.gap))
        if row >= self.rows or col >= self.cols:
            return None
        return row, col


def thumbnail_grid(maps: np.ndarray, cell: int = 56, cmap: str = DEFAULT_CMAP, scale: str = "each",
                   row_labels: list[str] | None = None, col_labels: list[str] | None = None,
                   background: Image.Image | np.ndarray | None = None, alpha: float = 0.75,
                   marks: np.ndarray | None = None, selected: tuple[int, int] | None = None,
                   gap: int = 2, lang: str = "en", value_range: tuple[float, float] | None = None,
                   smooth: bool = True, font_size: int = 11) -> tuple[Image.Image, GridLayout]:
    """Maps (R, C, gh, gw) -> (one image with R×C thumbnails, its GridLayout).

    Each thumbnail is the map upsampled bilinearly (or patch-true, nearest, when not ``smooth``) to ``cell``
    pixels high (width in the grid's aspect), scaled by ``scale`` ("each" map, "row", or "all" alike) or,
    with ``value_range`` = (vmin, vmax), all with that one range (so one colour bar reads every thumbnail),
    coloured, optionally blended over a ``background`` photo with weight ``alpha``. ``marks`` (R, C, gh, gw)
    bool outlines marked patches (e.g. high-norm tokens); ``selected`` (row, col) frames one thumbnail. The
    labels are drawn in the font of ``lang`` at ``font_size`` pixels.
    """
    maps = np.asarray(maps, dtype=np.float32)
    if maps.ndim != 4:
        raise ValueError(f"Wrong maps shape! Expected (rows, cols, gh, gw) but got {maps.shape}!")
    R, C, gh, gw = maps.shape
    ch, cw = cell, max(1, round(cell * gw / gh))
    if value_range is not None:
        lo, hi = value_range
        scaled = np.clip((maps - lo) / (hi - lo), 0.0, 1.0) if hi > lo else np.zeros_like(maps)
    else:
        scaled = normalize_maps(maps, scale)
    if smooth:
        tiles = colorize(resize_maps(scaled, (ch, cw)), cmap)                         # (R, C, ch, cw, 3)
    else:
        rows, cols = nearest_index(gh, ch), nearest_index(gw, cw)
        tiles = colorize(scaled[:, :, rows[:, None], cols[None, :]], cmap)
    if background is not None:
        photo = as_rgb_array(Image.fromarray(as_rgb_array(background)).resize((cw, ch), Image.Resampling.BILINEAR))
        tiles = (photo.astype(np.float32) * (1 - alpha) + tiles.astype(np.float32) * alpha + 0.5).astype(np.uint8)
    if marks is not None:
        tiles = _outline_marked(tiles, np.asarray(marks, dtype=bool))
    f = font(font_size, lang, "".join((row_labels or []) + (col_labels or [])))
    left = int(max((f.getlength(t) for t in row_labels or []), default=0)) + 6 if row_labels else 0
    top = f.size + 6 if col_labels else 0
    block = np.full((R, ch + gap, C, cw + gap, 3), 255, dtype=np.uint8)
    block[:, :ch, :, :cw] = tiles.transpose(0, 2, 1, 3, 4)
    body = block.reshape(R * (ch + gap), C * (cw + gap), 3)[:-gap or None, :-gap or None]
    canvas = np.full((top + body.shape[0], left + body.shape[1], 3), 255, dtype=np.uint8)
    canvas[top:, left:] = body
    image = Image.fromarray(canvas)
    layout = GridLayout(R, C, (ch, cw), gap, left, top)
    draw = ImageDraw.Draw(image)
    for r, text in enumerate(row_labels or []):
        x0, y0, _, y1 = layout.box(r, 0)
        draw.text((left - 4, (y0 + y1) / 2), text, fill="black", font=f, anchor="rm")
    for c, text in enumerate(col_labels or []):
        x0, _, x1, _ = layout.box(0, c)
        draw.text(((x0 + x1) / 2, top - 3), text, fill="black", font=f, anchor="md")
    if selected is not None:
        x0, y0, x1, y1 = layout.box(*selected)
        draw.rectangle((x0 - 1, y0 - 1, x1 + 1, y1 + 1), outline=(0, 200, 0), width=2)
    return image, layout


def _outline_marked(tiles: np.ndarray, marks: np.ndarray, color=(0, 255, 255)) -> np.ndarray:
    """Draw a 1-pixel box around every marked patch of every thumbnail (tiles (R, C, ch, cw, 3))."""
    tiles = tiles.copy()
    ch, cw = tiles.shape[2:4]
    gh, gw = marks.shape[2:]
    for r, c, i, j in zip(*np.nonzero(marks)):
        y0, y1 = int(i * ch / gh), max(int((i + 1) * ch / gh) - 1, int(i * ch / gh))
        x0, x1 = int(j * cw / gw), max(int((j + 1) * cw / gw) - 1, int(j * cw / gw))
        t = tiles[r, c]
        t[y0, x0:x1 + 1] = t[y1, x0:x1 + 1] = color
        t[y0:y1 + 1, x0] = t[y0:y1 + 1, x1] = color
    return tiles


def tile_images(tiles: np.ndarray, cols: int, scale: int = 4, gap: int = 2) -> Image.Image:
    """Small images (n, h, w, 3) with values in [0, 1] -> one image, ``cols`` per row, each enlarged
    ``scale``× with nearest neighbour (filters are shown as their pixels)."""
    tiles = np.asarray(tiles, dtype=np.float32)
    n, h, w, _ = tiles.shape
    rows = -(-n // cols)
    big = np.repeat(np.repeat(tiles, scale, axis=1), scale, axis=2)
    th, tw = h * scale, w * scale
    block = np.ones((rows * cols, th + gap, tw + gap, 3), dtype=np.float32)
    block[:n, :th, :tw] = big
    block = block.reshape(rows, cols, th + gap, tw + gap, 3).transpose(0, 2, 1, 3, 4)
    body = block.reshape(rows * (th + gap), cols * (tw + gap), 3)[:-gap or None, :-gap or None]
    return Image.fromarray((np.clip(body, 0, 1) * 255 + 0.5).astype(np.uint8))


def similarity_mosaic(sim: np.ndarray, grid: tuple[int, int], gap: int = 1) -> np.ndarray:
    """Similarity (gh·gw, gh·gw) -> mosaic (gh·(gh+gap) - gap, gw·(gw+gap) - gap) float32 with NaN gaps.

    Tile (i, j) of the mosaic is the gh×gw map of similarities between patch (i, j) and every patch,
    the layout of the centre panel of the paper's Figure 7.
    """
    gh, gw = grid
    sim = np.asarray(sim, dtype=np.float32)
    if sim.shape != (gh * gw, gh * gw):
        raise ValueError(f"Wrong similarity shape! Expected ({gh * gw}, {gh * gw}) for a {gh}×{gw} grid but got {sim.shape}!")
    block = np.full((gh, gh + gap, gw, gw + gap), np.nan, dtype=np.float32)
    block[:, :gh, :, :gw] = sim.reshape(gh, gw, gh, gw).transpose(0, 2, 1, 3)
    mosaic = block.reshape(gh * (gh + gap), gw * (gw + gap))
    return mosaic[:mosaic.shape[0] - gap, :mosaic.shape[1] - gap] if gap else mosaic
