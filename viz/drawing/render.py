"""Heat-map overlays with numpy and Pillow only: colormap lookup tables, bilinear or patch-true (nearest)
upsampling, alpha blending, mask contours, patch markers, patch grid lines and a colour bar.

Matplotlib is used once per colormap to build a 256-entry lookup table; after that an overlay is a few
array operations (about a millisecond at 224×224), which is what keeps slider moves instant. At display size
(640 px) every pass over the pixels counts, and so does every large temporary array (the server maps each one
of 512 KB or more afresh: ``app.return_freed_memory_to_the_os``), so the pixels stay in Pillow: the map's
lookup-table rows are enlarged by small matrix products, coloured through Pillow's palette, and the photo is
mixed under the colours by a masked paste; the colour bar's ramp and rotated label are drawn once per size
and text.
"""
from __future__ import annotations

import math
from functools import lru_cache

import matplotlib
import numpy as np
from PIL import Image, ImageDraw, ImageFont

from .fonts import pil_font

DEFAULT_CMAP = "inferno"
GRID_COLOR = (255, 255, 255)   # patch borders of patch-true maps
CHUNK_BYTES = 256 * 2**10      # float temporaries at display size are made in pieces below the server's mmap threshold
SMALL_PRODUCT = 2**17          # m·n·k of one matrix product, half of OpenBLAS's threshold for using several threads


@lru_cache(maxsize=32)
def colormap_lut(name: str = DEFAULT_CMAP) -> np.ndarray:
    """Matplotlib colormap name -> (256, 3) uint8 lookup table (built once per name)."""
    try:
        cmap = matplotlib.colormaps[name]
    except KeyError:
        raise ValueError(f"Unknown colormap {name!r}! Expected a matplotlib colormap name such as "
                         f"'inferno', 'viridis' or 'jet'.") from None
    lut = (cmap(np.linspace(0.0, 1.0, 256))[:, :3] * 255.0 + 0.5).astype(np.uint8)
    lut.setflags(write=False)
    return lut


def font(size: int = 12, lang: str = "en", text: str = "") -> ImageFont.FreeTypeFont:
    """The font for a language's ``text`` at ``size`` pixels: Pillow's bundled font for English (DejaVu Sans
    for a character it lacks), the CJK font for Chinese (``viz.drawing.fonts``)."""
    return pil_font(size, lang, text)


def as_rgb_array(image: Image.Image | np.ndarray) -> np.ndarray:
    """PIL image or array (H, W[, 3|4]) -> (H, W, 3) uint8."""
    if isinstance(image, Image.Image):
        return np.asarray(image.convert("RGB"))
    a = np.asarray(image)
    if a.dtype != np.uint8:
        raise ValueError(f"Wrong image dtype! Expected uint8 pixels but got {a.dtype}!")
    if a.ndim == 2:
        return np.repeat(a[:, :, None], 3, axis=2)
    if a.ndim != 3 or a.shape[2] not in (3, 4):
        raise ValueError(f"Wrong image shape! Expected (H, W), (H, W, 3) or (H, W, 4) but got {a.shape}!")
    return a[:, :, :3]


def as_rgb_image(image: Image.Image | np.ndarray) -> Image.Image:
    """PIL image or array (H, W[, 3|4]) -> PIL RGB image (the image itself when it already is one)."""
    if isinstance(image, Image.Image):
        return image if image.mode == "RGB" else image.convert("RGB")
    return Image.fromarray(as_rgb_array(image))


def normalize(values: np.ndarray, vmin: float | None = None, vmax: float | None = None) -> np.ndarray:
    """Scale to [0, 1] float32: vmin -> 0, vmax -> 1 (defaults: the array's min and max), clipped."""
    values = np.asarray(values, dtype=np.float32)
    lo = float(values.min()) if vmin is None else float(vmin)
    hi = float(values.max()) if vmax is None else float(vmax)
    if not hi > lo:
        return np.zeros_like(values)
    return np.clip((values - lo) / (hi - lo), 0.0, 1.0)


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
    """(..., h, w) -> (..., H, W) bilinear, all maps at once; size = (H, W).

    Two small matrix products per map (thumbnail-sized maps: each below ``SMALL_PRODUCT``), equal to Pillow's
    bilinear resize (``upsample``) within float32 rounding (1e-6 of the range)."""
    mh = interpolation_matrix(maps.shape[-2], size[0])
    mw = interpolation_matrix(maps.shape[-1], size[1])
    return mh @ maps.astype(np.float32, copy=False) @ mw.T


def upsample(values: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """(gh, gw) map -> (H, W) float32 by bilinear interpolation between patch centres; size = (H, W)."""
    values = np.ascontiguousarray(values, dtype=np.float32)
    H, W = size
    if values.shape == (H, W):
        return values
    return np.asarray(Image.fromarray(values).resize((W, H), Image.Resampling.BILINEAR))


def nearest_index(n_in: int, n_out: int) -> np.ndarray:
    """(n_out,) source index of every output pixel when n_in cells are stretched over n_out pixels (nearest:
    pixel centre (x + 0.5) · n_in / n_out, floored), so each cell covers one run of whole pixels."""
    return np.minimum(((np.arange(n_out) + 0.5) * n_in / n_out).astype(np.int64), n_in - 1)


def upsample_nearest(values: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """(gh, gw) map -> (H, W) with every patch one block of constant value (no smoothing); size = (H, W)."""
    values = np.asarray(values, dtype=np.float32)
    rows = np.bincount(nearest_index(values.shape[0], size[0]), minlength=values.shape[0])   # pixels per patch row
    cols = np.bincount(nearest_index(values.shape[1], size[1]), minlength=values.shape[1])
    return np.repeat(np.repeat(values, rows, axis=0), cols, axis=1)


def patch_borders(grid: tuple[int, int], size: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Pixel rows and columns where a new patch starts in a (H, W) picture of a (gh, gw) grid (first patch
    excluded), consistent with ``upsample_nearest``."""
    rows = np.flatnonzero(np.diff(nearest_index(grid[0], size[0]))) + 1
    cols = np.flatnonzero(np.diff(nearest_index(grid[1], size[1]))) + 1
    return rows, cols


def draw_patch_grid(pixels: np.ndarray, grid: tuple[int, int], color: tuple[int, int, int] = GRID_COLOR,
                    alpha: float = 0.35) -> np.ndarray:
    """Thin (1-pixel) lines at the patch borders of an (H, W, 3) uint8 picture, blended with weight ``alpha``."""
    out = pixels.copy()
    rows, cols = patch_borders(grid, out.shape[:2])
    tint = np.asarray(color, dtype=np.float32) * alpha

    def tinted(part: np.ndarray) -> np.ndarray:
        return (part.astype(np.float32) * (1 - alpha) + tint + 0.5).astype(np.uint8)

    out[rows, :] = tinted(out[rows, :])
    keep = np.ones(out.shape[0], dtype=bool)
    keep[rows] = False                                   # crossings are tinted once, by the rows
    out[np.ix_(keep, cols)] = tinted(out[np.ix_(keep, cols)])
    return out


def colorize(values01: np.ndarray, cmap: str = DEFAULT_CMAP) -> np.ndarray:
    """Values in [0, 1] (..., H, W) -> RGB (..., H, W, 3) uint8 through the colormap's lookup table.

    A single (H, W) map goes through Pillow's palette lookup (``index_image``: C, three times faster than numpy's
    fancy indexing at display size, same pixels). The result is always a fresh, writable array."""
    index = (np.asarray(values01, dtype=np.float32) * 255.0 + 0.5).astype(np.uint8)     # round(value · 255)
    if index.ndim != 2:
        return colormap_lut(cmap)[index]
    return np.array(index_image(index, cmap))


def index_image(index: np.ndarray, cmap: str = DEFAULT_CMAP) -> Image.Image:
    """Lookup-table rows (H, W) uint8 -> the RGB picture of their colours, through Pillow's palette (one C pass)."""
    indexed = Image.fromarray(np.ascontiguousarray(index, dtype=np.uint8), "L")
    indexed.putpalette(colormap_lut(cmap).tobytes())
    return indexed.convert("RGB")


@lru_cache(maxsize=16)
def constant_mask(size: tuple[int, int], level: int) -> Image.Image:
    """A (width, height) = ``size`` "L" picture of one grey ``level`` (built once per size; only read afterwards)."""
    return Image.new("L", size, level)


def opacity_level(alpha: float) -> int:
    """Opacity in [0, 1] -> the grey level (0–255) Pillow mixes with (``mix_photo_under``)."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1] but got {alpha}!")
    return round(alpha * 255)


def mix_photo_under(picture: Image.Image, photo: Image.Image, alpha: float, at: tuple[int, int] = (0, 0)) -> None:
    """In place: the colours of ``picture`` in the photo's box at ``at`` become (1 - alpha)·photo + alpha·colours,
    each byte rounded.

    One C pass (Pillow's masked paste, through a mask of one grey level) instead of six passes over float32
    arrays, and no new picture. Pillow applies the opacity in steps of 1/255: for a whole step (0, 0.2, 0.4, 0.6,
    0.8, 1 …) the bytes are exactly those of the float arithmetic round((1 - alpha)·p + alpha·c); for any other
    opacity they differ from them by at most one level (about one pair of bytes in ten)."""
    picture.paste(photo, at, constant_mask(photo.size, 255 - opacity_level(alpha)))


def map_index(values: np.ndarray, size: tuple[int, int], vmin: float | None = None, vmax: float | None = None,
              smooth: bool = True, width: int | None = None) -> np.ndarray:
    """(gh, gw) map -> the lookup-table row of every pixel of a picture of ``size`` = (H, W), uint8 (H, ``width``
    ≥ W; the columns beyond W stay 0, for the caller to paint over).

    The map is scaled to [0, 1] between vmin and vmax, and its lookup rows (value · 255 + 0.5, truncated) are
    enlarged bilinearly (``resize_maps``'s matrices) or patch-true (nearest). Taking the rows on the grid saves two
    float passes at display size (interpolation commutes with them: an index changes by one in a handful of
    pixels). The enlargement goes in bands of rows, each product below ``SMALL_PRODUCT``: OpenBLAS would run a
    larger one on several threads, which only wait for each other (ten times slower when the machine is busy)."""
    rows = normalize(values, vmin, vmax) * np.float32(255.0) + np.float32(0.5)
    H, W = size
    index = np.zeros((H, width or W), dtype=np.uint8)
    if not smooth:
        index[:, :W] = upsample_nearest(rows.astype(np.uint8), size)        # nearest copies: truncate first
        return index
    gh, gw = rows.shape
    across = interpolation_matrix(gw, W) @ rows.T                           # (W, gh): W·gh·gw, small
    down = interpolation_matrix(gh, H)
    band = max(1, min(CHUNK_BYTES // (4 * W), SMALL_PRODUCT // (W * gh)))
    for y in range(0, H, band):
        index[y:y + band, :W] = down[y:y + band] @ across.T                 # truncated on assignment
    return index


def mask_outline(mask: np.ndarray, size: tuple[int, int], width: int = 2) -> np.ndarray:
    """Bool patch mask (gh, gw) -> bool (H, W) outline of its smoothed region, ``width`` pixels wide.

    The mask is upsampled bilinearly and cut at 0.5, so the outline follows a rounded shape rather
    than patch edges.
    """
    region = upsample(np.asarray(mask, dtype=np.float32), size) >= 0.5
    inner = region.copy()
    for _ in range(max(width, 1)):                         # erode by one pixel per step (4-neighbourhood)
        shrunk = inner.copy()
        shrunk[1:, :] &= inner[:-1, :]
        shrunk[:-1, :] &= inner[1:, :]
        shrunk[:, 1:] &= inner[:, :-1]
        shrunk[:, :-1] &= inner[:, 1:]
        shrunk[[0, -1], :] = False                         # the image border counts as outside
        shrunk[:, [0, -1]] = False
        inner = shrunk
    return region & ~inner


def overlay(image: Image.Image | np.ndarray, values: np.ndarray, cmap: str = DEFAULT_CMAP, alpha: float = 0.6,
            vmin: float | None = None, vmax: float | None = None, mask: np.ndarray | None = None,
            mask_color: tuple[int, int, int] = (0, 255, 255), colorbar: bool = False,
            label: str | None = None, lang: str = "en", smooth: bool = True, ticks: list[float] | None = None,
            font_size: int | None = None) -> Image.Image:
    """Heat map (gh, gw) blended onto the photo at the photo's own resolution -> PIL RGB image.

    The map is scaled to [0, 1] between vmin and vmax (default: its own min and max), upsampled
    bilinearly (``smooth``) or patch-true (nearest, with thin lines at the patch borders), coloured and
    blended with weight ``alpha``. ``mask`` (gh, gw) bool draws the outline of a region (e.g.
    ``attention.threshold_mask``); ``colorbar`` appends a colour bar on the right, labelled ``label`` in the
    font of ``lang``, with ``ticks`` (default: max, middle, min) and ``font_size`` (default: by height).
    """
    photo = as_rgb_image(image)
    W, H = photo.size
    bar = None
    if colorbar:
        values = np.asarray(values, dtype=np.float32)
        lo = float(values.min()) if vmin is None else vmin
        hi = float(values.max()) if vmax is None else vmax
        bar = _Colorbar(lo, hi, label, 14, lang, ticks, font_size or max(12, min(14, H // 18)))
    # the map's colours on a canvas as wide as the picture will be, the photo mixed under them in place
    picture = index_image(map_index(values, (H, W), vmin, vmax, smooth, W + (bar.width if bar else 0)), cmap)
    mix_photo_under(picture, photo, alpha)
    if not smooth or mask is not None:
        out = np.asarray(picture.crop((0, 0, W, H)))
        if not smooth:
            out = draw_patch_grid(out, np.shape(values))
        if mask is not None:
            out = out.copy()
            out[mask_outline(mask, (H, W), width=max(1, round(min(H, W) / 150)))] = mask_color
        picture.paste(Image.fromarray(out), (0, 0))
    if bar is not None:
        picture.paste((255, 255, 255), (W, 0, picture.width, H))
        bar.draw(picture, W, H, cmap)
    return picture


def mark_patch(image: Image.Image, row: int, col: int, grid: tuple[int, int],
               color: tuple[int, int, int] = (0, 255, 0), width: int = 2) -> Image.Image:
    """Copy of the image with a rectangle around patch (row, col) of the grid shown on it."""
    out = image.copy()
    frame_patch(out, row, col, grid, out.size, color, width)
    return out


def frame_patch(image: Image.Image, row: int, col: int, grid: tuple[int, int], size: tuple[int, int],
                color: tuple[int, int, int] = (0, 255, 0), width: int = 2) -> None:
    """In place: a rectangle around patch (row, col) of the grid shown on the (W, H) = ``size`` photo at the
    picture's top left (e.g. a map with its colour bar beside it)."""
    W, H = size
    gh, gw = grid
    box = (col * W / gw, row * H / gh, (col + 1) * W / gw - 1, (row + 1) * H / gh - 1)
    ImageDraw.Draw(image).rectangle(box, outline=color, width=width)


WINDOW_COLOR = (255, 255, 255)     # the outlines of a windowed block's windows


def window_lines(block, size: tuple[int, int]) -> tuple[list[float], list[float]]:
    """(x positions, y positions) in pixels of a picture of ``size`` (W, H) of the borders between a windowed block's
    windows (``vit.architecture.BlockLayout``): on the grid the tiles are displaced by the shift, so the borders lie
    at shift + k·window (mod the grid)."""
    (gh, gw), (wh, ww), (sh, sw) = block.grid, block.window, block.shift
    W, H = size
    ys = sorted({(sh + k * wh) % gh for k in range(gh // wh)} - {0})
    xs = sorted({(sw + k * ww) % gw for k in range(gw // ww)} - {0})
    return [x * W / gw for x in xs], [y * H / gh for y in ys]


def outline_windows(image: Image.Image, block, size: tuple[int, int] | None = None,
                    color: tuple[int, int, int] = WINDOW_COLOR) -> Image.Image:
    """``image`` with the borders of a block's windows drawn over the photo's part (``size``: the photo's (W, H) at
    the top left, e.g. beside a colour bar; default the whole image); unchanged for a block of global attention."""
    if block.window is None:
        return image
    out = image.copy()
    W, H = size or out.size
    draw = ImageDraw.Draw(out)
    width = max(1, round(min(W, H) / 200))
    xs, ys = window_lines(block, (W, H))
    for x in xs:
        draw.line([(x, 0), (x, H - 1)], fill=color, width=width)
    for y in ys:
        draw.line([(0, y), (W - 1, y)], fill=color, width=width)
    return out


def tick_text(value: float) -> str:
    """A colour-bar tick as printed: 3 significant digits."""
    return f"{value:.3g}"


def tick_position(value: float, vmin: float, vmax: float, top: int, bottom: int) -> int:
    """Pixel row of a tick value on a bar running from ``top`` (vmax) to ``bottom`` (vmin)."""
    if not vmax > vmin:
        return (top + bottom) // 2
    share = min(max((value - vmin) / (vmax - vmin), 0.0), 1.0)
    return math.floor(bottom - share * (bottom - top))


def add_colorbar(image: Image.Image, cmap: str, vmin: float, vmax: float, label: str | None = None,
                 bar_width: int = 14, lang: str = "en", ticks: list[float] | None = None,
                 font_size: int | None = None) -> Image.Image:
    """Image with a vertical colour bar on its right: vmax at the top, vmin at the bottom, tick labels at
    ``ticks`` (default: vmax, the middle, vmin; a constant map gets one tick), ``label`` along its side in the
    font of ``lang``, its lines broken further where they are longer than the picture is high. ``font_size`` default:
    12–14 px by height."""
    W, H = image.size
    size = font_size or max(12, min(14, H // 18))     # below 12 px the font's spaces shrink to 2 px
    bar = _Colorbar(vmin, vmax, label, bar_width, lang, ticks, size, H)
    canvas = Image.new("RGB", (W + bar.width, H), "white")
    canvas.paste(image, (0, 0))
    bar.draw(canvas, W, H, cmap)
    return canvas


def colorbar_width(vmin: float, vmax: float, label: str | None = None, bar_width: int = 14, lang: str = "en",
                   ticks: list[float] | None = None, font_size: int = 12, height: int | None = None) -> int:
    """Pixels ``add_colorbar`` adds on the right of a picture (same arguments, the font size given; ``height``: the
    picture's, where the label's lines may be longer than it is high)."""
    return _Colorbar(vmin, vmax, label, bar_width, lang, ticks, font_size, height).width


def draw_colorbar(canvas: Image.Image, x: int, height: int, cmap: str, vmin: float, vmax: float,
                  label: str | None = None, bar_width: int = 14, lang: str = "en", ticks: list[float] | None = None,
                  font_size: int = 12) -> None:
    """Draw ``add_colorbar``'s bar into ``canvas`` beside a picture ``height`` pixels high at its left, from column
    ``x`` on (white there, ``colorbar_width`` pixels wide for that height): no new canvas, no copy of the picture."""
    _Colorbar(vmin, vmax, label, bar_width, lang, ticks, font_size, height).draw(canvas, x, height, cmap)


class _Colorbar:
    """The ticks and widths of a colour bar: its ramp, tick texts and rotated label side by side (the label's lines
    broken further where they are longer than the bar's ``height``, when it is known)."""
    pad = 6

    def __init__(self, vmin: float, vmax: float, label: str | None, bar_width: int, lang: str,
                 ticks: list[float] | None, size: int, height: int | None = None):
        if label and height:
            label_font = font(size, lang, label.replace("\n", ""))
            label = "\n".join(part for line in label.split("\n") for part in wrap_lines(line, label_font, height - 4))
        self.vmin, self.vmax, self.label, self.bar_width, self.lang, self.size = vmin, vmax, label, bar_width, lang, size
        self.font = font(size, lang)
        if ticks is None:
            ticks = [vmax, (vmin + vmax) / 2, vmin] if vmax > vmin else [vmax]
        self.ticks, self.texts = ticks, [tick_text(t) for t in ticks]
        self.text_w = max(int(self.font.getlength(t)) for t in self.texts)
        label_w = int(self.font.size * 1.3) * len(label.split("\n")) if label else 0   # as ``_label_strip`` draws it
        self.width = self.pad + bar_width + 4 + self.text_w + label_w + self.pad

    def draw(self, canvas: Image.Image, x: int, height: int, cmap: str) -> None:
        f, H = self.font, height
        margin = f.size // 2 + 1
        canvas.paste(_ramp(cmap, H - 2 * margin, self.bar_width), (x + self.pad, margin))
        draw = ImageDraw.Draw(canvas)
        x_text = x + self.pad + self.bar_width + 4
        ticks, placed = self.ticks, []
        for i in sorted(range(len(ticks)), key=lambda i: i not in (0, len(ticks) - 1)):   # the two ends first
            y = tick_position(ticks[i], self.vmin, self.vmax, margin, H - margin)
            if all(abs(y - other) >= f.size for other in placed):                        # never overlapping
                draw.text((x_text, y), self.texts[i], fill="black", font=f, anchor="lm")
                placed.append(y)
        strip = _label_strip(self.label, self.size, self.lang, H)
        if strip is not None:
            canvas.paste(strip, (x_text + self.text_w + 2, 0))


@lru_cache(maxsize=32)
def _ramp(cmap: str, height: int, width: int) -> Image.Image:
    """The colour bar's ramp, vmax colour at the top (drawn once per colormap and size; only read afterwards)."""
    ramp = np.linspace(1.0, 0.0, height, dtype=np.float32)[:, None].repeat(width, axis=1)
    return Image.fromarray(colorize(ramp, cmap))


@lru_cache(maxsize=64)
def _label_strip(label: str | None, size: int, lang: str, height: int) -> Image.Image | None:
    """The colour bar's label, one line per line of ``label``, turned to run upwards along a bar ``height`` pixels
    high (drawn once per text, size and height: the same on every photo; only read afterwards)."""
    lines = label.split("\n") if label else []
    if not lines:
        return None
    label_font = font(size, lang, "".join(lines))
    label_w = int(label_font.size * 1.3) * len(lines)
    strip = Image.new("RGB", (height, label_w), "white")
    line_h = label_w // len(lines)
    strip_draw = ImageDraw.Draw(strip)
    for k, line in enumerate(lines):
        strip_draw.text((height // 2, line_h * k + line_h // 2), line, fill="black", font=label_font, anchor="mm")
    return strip.rotate(90, expand=True)


def wrap_lines(text: str, f: ImageFont.FreeTypeFont, width: int) -> list[str]:
    """Break ``text`` into lines no wider than ``width`` pixels in font ``f``: at spaces, and inside a word
    that is wider than a line (Chinese runs have no spaces)."""
    lines, line = [], ""
    for word in text.split(" "):
        candidate = f"{line} {word}" if line else word
        if f.getlength(candidate) <= width:
            line = candidate
            continue
        if line:
            lines.append(line)
        line = ""
        for ch in word:                                   # a word (or a Chinese run) longer than a line
            if f.getlength(line + ch) > width and line:
                lines.append(line)
                line = ""
            line += ch
    return lines + [line] if line else lines


def caption(image: Image.Image, text: str, lang: str = "en", font_size: int | None = None) -> Image.Image:
    """Image with ``text`` centred on a white strip underneath (wrapped to the image's width), in the font of
    ``lang`` (size by default about 1/32 of the image's width, at least 12 pixels)."""
    size = font_size or max(12, image.width // 32)
    f = font(size, lang, text)
    lines = wrap_lines(text, f, max(image.width - 8, size * 4))
    line_h = int(size * 1.4)
    strip_h = line_h * len(lines) + size // 2
    canvas = Image.new("RGB", (image.width, image.height + strip_h), "white")
    canvas.paste(image, (0, 0))
    draw = ImageDraw.Draw(canvas)
    for k, line in enumerate(lines):
        draw.text((image.width // 2, image.height + size // 4 + line_h * k + line_h // 2), line, fill="black",
                  font=f, anchor="mm")
    return canvas


def message_image(text: str, size: tuple[int, int] = (420, 160), font_size: int = 14, lang: str = "en") -> Image.Image:
    """A white (width, height) = ``size`` panel with ``text`` wrapped and centred: what a panel shows when there
    is nothing to draw (e.g. a model without position embedding)."""
    W, H = size
    f = font(font_size, lang, text)
    lines = wrap_lines(text, f, W - 24)
    image = Image.new("RGB", (W, H), "white")
    draw = ImageDraw.Draw(image)
    step = round(f.size * 1.35)
    y = H / 2 - step * (len(lines) - 1) / 2
    for i, line in enumerate(lines):
        draw.text((W / 2, y + i * step), line, fill=(60, 60, 60), font=f, anchor="mm")
    return image


def caption_strip_height(font_size: int = 14) -> int:
    """Height in pixels of the strip ``with_caption`` puts above an image."""
    return round(font_size * 1.9)


def with_caption(image: Image.Image, text: str, font_size: int = 14, lang: str = "en") -> Image.Image:
    """``image`` with a white strip of ``caption_strip_height(font_size)`` pixels above it holding ``text`` (left
    aligned); the image's own pixels are pasted unchanged below the strip."""
    strip = caption_strip_height(font_size)
    out = Image.new("RGB", (image.width, image.height + strip), "white")
    out.paste(image.convert("RGB"), (0, strip))
    ImageDraw.Draw(out).text((6, strip / 2), text, fill="black", font=font(font_size, lang, text), anchor="lm")
    return out
