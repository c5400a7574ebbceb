"""Heat-map overlays with numpy and Pillow only: colormap lookup tables, bilinear upsampling, alpha
blending, mask contours, patch markers and a colour bar.

Matplotlib is used once per colormap to build a 256-entry lookup table; after that an overlay is a few
array operations (about a millisecond at 224×224), which is what keeps slider moves instant.
"""
from __future__ import annotations

from functools import lru_cache

import matplotlib
import numpy as np
from PIL import Image, ImageDraw, ImageFont

DEFAULT_CMAP = "inferno"


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


@lru_cache(maxsize=8)
def font(size: int = 12) -> ImageFont.ImageFont:
    """Pillow's bundled font at ``size`` pixels (no system fonts needed)."""
    return ImageFont.load_default(size=size)


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


def normalize(values: np.ndarray, vmin: float | None = None, vmax: float | None = None) -> np.ndarray:
    """Scale to [0, 1] float32: vmin -> 0, vmax -> 1 (defaults: the array's min and max), clipped."""
    values = np.asarray(values, dtype=np.float32)
    lo = float(values.min()) if vmin is None else float(vmin)
    hi = float(values.max()) if vmax is None else float(vmax)
    if not hi > lo:
        return np.zeros_like(values)
    return np.clip((values - lo) / (hi - lo), 0.0, 1.0)


def upsample(values: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """(gh, gw) map -> (H, W) float32 by bilinear interpolation between patch centres; size = (H, W)."""
    values = np.ascontiguousarray(values, dtype=np.float32)
    H, W = size
    if values.shape == (H, W):
        return values
    return np.asarray(Image.fromarray(values).resize((W, H), Image.Resampling.BILINEAR))


def colorize(values01: np.ndarray, cmap: str = DEFAULT_CMAP) -> np.ndarray:
    """Values in [0, 1] (..., H, W) -> RGB (..., H, W, 3) uint8 through the colormap's lookup table."""
    index = (np.asarray(values01, dtype=np.float32) * 255.0 + 0.5).astype(np.uint8)
    return colormap_lut(cmap)[index]


def blend(photo: np.ndarray, colors: np.ndarray, alpha: float) -> np.ndarray:
    """(1 - alpha)·photo + alpha·colors, both (H, W, 3) uint8 -> uint8."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1] but got {alpha}!")
    out = photo.astype(np.float32) * (1.0 - alpha) + colors.astype(np.float32) * alpha
    return (out + 0.5).astype(np.uint8)


def heatmap(values: np.ndarray, size: tuple[int, int], cmap: str = DEFAULT_CMAP, vmin: float | None = None,
            vmax: float | None = None, smooth: bool = True) -> np.ndarray:
    """(gh, gw) map -> coloured (H, W, 3) uint8 at ``size`` = (H, W); bilinear, or nearest (blocky) if not smooth."""
    v = normalize(values, vmin, vmax)
    if smooth:
        v = upsample(v, size)
    else:
        v = np.asarray(Image.fromarray(v).resize((size[1], size[0]), Image.Resampling.NEAREST))
    return colorize(v, cmap)


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
            label: str | None = None) -> Image.Image:
    """Heat map (gh, gw) blended onto the photo at the photo's own resolution -> PIL RGB image.

    The map is scaled to [0, 1] between vmin and vmax (default: its own min and max), upsampled
    bilinearly, coloured and blended with weight ``alpha``. ``mask`` (gh, gw) bool draws the outline of a
    region (e.g. ``attention.threshold_mask``); ``colorbar`` appends a labelled colour bar on the right.
    """
    photo = as_rgb_array(image)
    H, W = photo.shape[:2]
    out = blend(photo, heatmap(values, (H, W), cmap, vmin, vmax), alpha)
    if mask is not None:
        out[mask_outline(mask, (H, W), width=max(1, round(min(H, W) / 150)))] = mask_color
    result = Image.fromarray(out)
    if colorbar:
        values = np.asarray(values, dtype=np.float32)
        lo = float(values.min()) if vmin is None else vmin
        hi = float(values.max()) if vmax is None else vmax
        result = add_colorbar(result, cmap, lo, hi, label)
    return result


def mark_patch(image: Image.Image, row: int, col: int, grid: tuple[int, int],
               color: tuple[int, int, int] = (0, 255, 0), width: int = 2) -> Image.Image:
    """Copy of the image with a rectangle around patch (row, col) of the grid shown on it."""
    out = image.copy()
    W, H = out.size
    gh, gw = grid
    box = (col * W / gw, row * H / gh, (col + 1) * W / gw - 1, (row + 1) * H / gh - 1)
    ImageDraw.Draw(out).rectangle(box, outline=color, width=width)
    return out


def add_colorbar(image: Image.Image, cmap: str, vmin: float, vmax: float, label: str | None = None,
                 bar_width: int = 14) -> Image.Image:
    """Image with a vertical colour bar on its right: vmax at the top, vmin at the bottom, 3 tick labels."""
    W, H = image.size
    f = font(max(12, min(14, H // 18)))     # below 12 px the font's spaces shrink to 2 px
    ticks = [vmax, (vmin + vmax) / 2, vmin]
    texts = [f"{t:.3g}" for t in ticks]
    text_w = max(int(f.getlength(t)) for t in texts)
    label_w = int(f.size * 1.3) if label else 0
    pad = 6
    canvas = Image.new("RGB", (W + pad + bar_width + 4 + text_w + label_w + pad, H), "white")
    canvas.paste(image, (0, 0))
    margin = f.size // 2 + 1
    ramp = np.linspace(1.0, 0.0, H - 2 * margin, dtype=np.float32)[:, None].repeat(bar_width, axis=1)
    canvas.paste(Image.fromarray(colorize(ramp, cmap)), (W + pad, margin))
    draw = ImageDraw.Draw(canvas)
    x_text = W + pad + bar_width + 4
    for text, y in zip(texts, (margin, H // 2, H - margin)):
        draw.text((x_text, y), text, fill="black", font=f, anchor="lm")
    if label:
        strip = Image.new("RGB", (H, label_w), "white")
        ImageDraw.Draw(strip).text((H // 2, label_w // 2), label, fill="black", font=f, anchor="mm")
        canvas.paste(strip.rotate(90, expand=True), (x_text + text_w + 2, 0))
    return canvas


def wrap_text(text: str, f: ImageFont.ImageFont, width: int) -> list[str]:
    """Greedy word wrap of ``text`` into lines no wider than ``width`` pixels in font ``f``."""
    lines, line = [], ""
    for word in text.split():
        trial = f"{line} {word}".strip()
        if line and f.getlength(trial) > width:
            lines.append(line)
            line = word
        else:
            line = trial
    return lines + ([line] if line else [])


def message_image(text: str, size: tuple[int, int] = (420, 160), font_size: int = 14) -> Image.Image:
    """A white (width, height) = ``size`` panel with ``text`` wrapped and centred: what a panel shows when there
    is nothing to draw (e.g. a model without position embedding)."""
    W, H = size
    f = font(font_size)
    lines = wrap_text(text, f, W - 24)
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


def with_caption(image: Image.Image, text: str, font_size: int = 14) -> Image.Image:
    """``image`` with a white strip of ``caption_strip_height(font_size)`` pixels above it holding ``text`` (left
    aligned); the image's own pixels are pasted unchanged below the strip."""
    strip = caption_strip_height(font_size)
    out = Image.new("RGB", (image.width, image.height + strip), "white")
    out.paste(image.convert("RGB"), (0, strip))
    ImageDraw.Draw(out).text((6, strip / 2), text, fill="black", font=font(font_size), anchor="lm")
    return out
