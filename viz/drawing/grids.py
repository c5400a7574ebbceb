"""Many small maps in one image, with numpy: the layers × heads "model view", per-block token norms,
patch-embedding filter tiles, and the position-similarity mosaic.

A 12×12 grid of heads is one vectorised resize (two small matrix products), one copy into the picture's
layout, one palette pass and one composite with the photos (Pillow), so it renders in milliseconds instead of
the seconds 144 matplotlib axes take.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw

from .render import DEFAULT_CMAP, as_rgb_image, font, index_image, nearest_index, opacity_level, resize_maps


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

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) of the grid picture: margins, thumbnails and the gaps between them."""
        ch, cw = self.cell
        return self.left + self.cols * (cw + self.gap) - self.gap, self.top + self.rows * (ch + self.gap) - self.gap

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
                   smooth: bool = True, font_size: int = 11, title: str | None = None,
                   right: int = 0) -> tuple[Image.Image, GridLayout]:
    """Maps (R, C, gh, gw) -> (one image with R×C thumbnails, its GridLayout).

    Each thumbnail is the map upsampled bilinearly (or patch-true, nearest, when not ``smooth``) to ``cell``
    pixels high (width in the grid's aspect), scaled by ``scale`` ("each" map, "row", or "all" alike) or,
    with ``value_range`` = (vmin, vmax), all with that one range (so one colour bar reads every thumbnail),
    coloured, optionally blended over a ``background`` photo with weight ``alpha`` (rounded as
    ``render.mix_photo_under``). ``marks`` (R, C, gh, gw) bool outlines marked patches (e.g. high-norm tokens);
    ``selected`` (row, col) frames one thumbnail. The labels, and a ``title`` centred over the column labels, are
    drawn in the font of ``lang`` at ``font_size`` pixels. ``right``: white pixels left free on the right (for a
    colour bar drawn in place).

    The thumbnails' lookup-table rows are laid out as one picture, a row of thumbnails at a time (small
    temporaries), and coloured in one pass (Pillow's palette); that picture is the canvas: the photo is mixed
    under each thumbnail in place, gaps and margins are painted white, and the labels, which depend only on the
    layout, are drawn once and pasted.
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
    rows = scaled * np.float32(255.0) + np.float32(0.5)            # lookup rows before truncation, per patch
    left, top = label_margins(tuple(row_labels or ()), tuple(col_labels or ()), title, lang, font_size)
    layout = GridLayout(R, C, (ch, cw), gap, left, top)
    width, height = layout.size
    index = np.zeros((height, width + right), dtype=np.uint8)
    for r in range(R):
        _row_cells(index, layout, r)[:] = _enlarged_row(rows[r], (ch, cw), smooth)   # truncated on assignment
    image = index_image(index, cmap)
    if background is not None:
        photos = Image.new("RGB", (width, ch), "white")              # a row of thumbnail-sized photos
        tile = as_rgb_image(background).resize((cw, ch), Image.Resampling.BILINEAR)
        for c in range(C):
            photos.paste(tile, (layout.box(0, c)[0], 0))
        under = _row_mask(layout, 255 - opacity_level(alpha))
        for r in range(R):                                            # mixed under each row of thumbnails in place
            image.paste(photos, (0, layout.box(r, 0)[1]), under)
    _paint_gaps_white(image, layout)
    rows_strip, columns_strip = _labels(tuple(row_labels or ()), tuple(col_labels or ()), title, lang, font_size,
                                        layout)
    image.paste(rows_strip, (0, top))
    image.paste(columns_strip, (0, 0))
    draw = ImageDraw.Draw(image)
    if marks is not None:
        _outline_marked(draw, layout, np.asarray(marks, dtype=bool), gh, gw)
    if selected is not None:
        x0, y0, x1, y1 = layout.box(*selected)
        draw.rectangle((x0 - 1, y0 - 1, x1 + 1, y1 + 1), outline=(0, 200, 0), width=2)
    return image, layout


@dataclass(frozen=True)
class Bands:
    """A grid drawn as bands of a few columns each, one under the other (``banded_grid``): where each band starts
    and which column it starts with, and the geometry every band shares."""
    layout: GridLayout                          # one band's grid (its rows and at most ``per_band`` columns)
    starts: tuple[tuple[int, int], ...]         # per band: (pixel row where it starts, its first column)
    columns: int                                # the whole grid's columns

    def cell_at(self, x: float, y: float) -> tuple[int, int] | None:
        """Pixel (x, y) of the picture -> (row, column) of the whole grid, or None (labels, gaps, outside)."""
        for top, first in reversed(self.starts):
            if y >= top:
                cell = self.layout.cell_at(x, y - top)
                return None if cell is None or first + cell[1] >= self.columns else (cell[0], first + cell[1])
        return None

    def box(self, row: int, col: int) -> tuple[int, int, int, int]:
        """Pixel box (x0, y0, x1, y1) of cell (row, col) of the whole grid, inclusive."""
        top, first = next((top, first) for top, first in reversed(self.starts) if col >= first)
        x0, y0, x1, y1 = self.layout.box(row, col - first)
        return x0, y0 + top, x1, y1 + top


def banded_grid(maps: np.ndarray, per_band: int, col_labels: list[str], right: int = 0,
                marks: np.ndarray | None = None, **options) -> tuple[Image.Image, Bands]:
    """``thumbnail_grid`` of maps (R, C, gh, gw) for a narrow screen: the columns in bands of ``per_band``, each band
    with its own column labels (and the title, the rows' labels), the bands one under the other, a gap of one line
    between them; ``right`` white pixels on the right of the whole picture (a colour bar beside every band)."""
    R, C = maps.shape[:2]
    pictures, layout, starts, y = [], None, [], 0
    gap = options.get("font_size", 11)
    for first in range(0, C, per_band):
        columns = slice(first, min(first + per_band, C))
        image, band = thumbnail_grid(maps[:, columns], col_labels=col_labels[columns],
                                     marks=None if marks is None else marks[:, columns], **options)
        layout = layout or band
        pictures.append(image)
        starts.append((y, first))
        y += image.height + gap
    canvas = Image.new("RGB", (layout.size[0] + right, y - gap), "white")
    for picture, (top, _) in zip(pictures, starts):
        canvas.paste(picture, (0, top))
    return canvas, Bands(layout, tuple(starts), C)


def _enlarged_row(rows: np.ndarray, cell: tuple[int, int], smooth: bool) -> np.ndarray:
    """One row of maps (C, gh, gw) -> (ch, C, cw) (a view), each map enlarged to ``cell`` = (ch, cw): bilinear
    (``resize_maps``: small products, one map at a time), or nearest."""
    C, gh, gw = rows.shape
    ch, cw = cell
    if smooth:
        return resize_maps(rows, cell).transpose(1, 0, 2)
    return rows[:, nearest_index(gh, ch)][:, :, nearest_index(gw, cw)].transpose(1, 0, 2)


def _row_cells(pixels: np.ndarray, layout: GridLayout, r: int) -> np.ndarray:
    """The thumbnails of grid row ``r`` of a picture (height, ≥ width) as one writable view (ch, C, cw)."""
    (ch, cw), gap = layout.cell, layout.gap
    _, y, _, _ = layout.box(r, 0)
    band = pixels[y:y + ch, layout.left:]
    return np.lib.stride_tricks.as_strided(band, shape=(ch, layout.cols, cw),
                                           strides=(band.strides[0], (cw + gap) * band.strides[1], band.strides[1]),
                                           writeable=True)        # in bounds: the last cell ends at the grid's width


@lru_cache(maxsize=8)
def _row_mask(layout: GridLayout, level: int) -> Image.Image:
    """"L" mask of one row of the grid (width × cell height): ``level`` under each thumbnail, 0 in the gaps and the
    left margin (read-only). Pasting the photos through ``255 - alpha·255`` is ``render.mix_photo_under``."""
    width, _ = layout.size
    mask = Image.new("L", (width, layout.cell[0]), 0)
    for c in range(layout.cols):
        x0, _, x1, _ = layout.box(0, c)
        mask.paste(level, (x0, 0, x1 + 1, layout.cell[0]))
    return mask


def _paint_gaps_white(image: Image.Image, layout: GridLayout) -> None:
    """Everything of the grid picture but its thumbnails white: the gaps, the margins and the room on the right
    (the label strips are pasted over the margins)."""
    width, height = layout.size
    (ch, cw), gap = layout.cell, layout.gap
    white = (255, 255, 255)
    image.paste(white, (0, 0, image.width, layout.top))
    image.paste(white, (0, layout.top, layout.left, height))
    image.paste(white, (width, 0, image.width, height))
    for r in range(1, layout.rows):
        y = layout.top + r * (ch + gap) - gap
        image.paste(white, (layout.left, y, width, y + gap))
    for c in range(1, layout.cols):
        x = layout.left + c * (cw + gap) - gap
        image.paste(white, (x, layout.top, x + gap, height))


@lru_cache(maxsize=16)
def label_margins(row_labels: tuple[str, ...], col_labels: tuple[str, ...], title: str | None = None, lang: str = "en",
                  font_size: int = 11) -> tuple[int, int]:
    """(left, top): the pixels the row labels, and the title and column labels (one or more lines each), need beside
    and above the grid."""
    f = font(font_size, lang, "".join(row_labels + col_labels))
    left = int(max(f.getlength(t) for t in row_labels)) + 6 if row_labels else 0
    lines = max((label.count("\n") + 1 for label in col_labels), default=0)
    top = lines * _line_height(font_size) + 6 - (_line_height(font_size) - f.size) if col_labels else 0
    return left, top + (font_size + 6 if title else 0)


def _line_height(font_size: int) -> int:
    """Pixels from one line of a column label to the next."""
    return round(font_size * 1.2)


@lru_cache(maxsize=16)
def _labels(row_labels: tuple[str, ...], col_labels: tuple[str, ...], title: str | None, lang: str, font_size: int,
            layout: GridLayout) -> tuple[Image.Image, Image.Image]:
    """The white margins with the texts drawn: (the rows' strip (left × grid height), the strip above the grid
    (whole width × top) with the title and the column labels). The same for every photo and option, so drawn
    once (two dozen texts were a third of a heads grid's time); only read afterwards."""
    f = font(font_size, lang, "".join(row_labels + col_labels))
    width, height = layout.size
    left, top = layout.left, layout.top
    rows = Image.new("RGB", (left, height - top), "white")
    draw = ImageDraw.Draw(rows)
    for r, text in enumerate(row_labels):
        _, y0, _, y1 = layout.box(r, 0)
        draw.text((left - 4, (y0 + y1) / 2 - top), text, fill="black", font=f, anchor="rm")
    above = Image.new("RGB", (width, top), "white")
    draw = ImageDraw.Draw(above)
    if title:
        draw.text((left + (width - left) // 2, font_size // 2 + 3), title, fill="black",
                  font=font(font_size, lang, title), anchor="mm")
    for c, text in enumerate(col_labels):
        x0, _, x1, _ = layout.box(0, c)
        lines = text.split("\n")
        for k, line in enumerate(lines):              # the last line just above the thumbnails
            y = top - 3 - (len(lines) - 1 - k) * _line_height(font_size)
            draw.text(((x0 + x1) / 2, y), line, fill="black", font=f, anchor="md")
    return rows, above


def _outline_marked(draw: ImageDraw.ImageDraw, layout: GridLayout, marks: np.ndarray, gh: int, gw: int,
                    color=(0, 255, 255)) -> None:
    """Draw a 1-pixel box around every marked patch (marks (R, C, gh, gw)) of every thumbnail."""
    ch, cw = layout.cell
    for r, c, i, j in zip(*np.nonzero(marks)):
        x, y = layout.box(r, c)[:2]
        y0, y1 = int(i * ch / gh), max(int((i + 1) * ch / gh) - 1, int(i * ch / gh))
        x0, x1 = int(j * cw / gw), max(int((j + 1) * cw / gw) - 1, int(j * cw / gw))
        draw.rectangle((x + x0, y + y0, x + x1, y + y1), outline=color)


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
