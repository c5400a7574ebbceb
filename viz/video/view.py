"""The Video tab: where a video model's readout looks in each sampled frame and how far each head attends in time and
in space, Gradio-free, for the page and the command line alike.

- ``clip_rollout``: the readout's attention rollout (Abnar & Zuidema 2020) down through every attention step of the
  model's description (a TimeSformer's time and space steps each one step), (T', gh, gw) over the time positions;
  the numbers are ``viz.maps.source.rollout_rows``' over the analysis' attention source;
- ``frame_overlays`` / ``frames_strip``: each sampled frame with the rollout of its time position (one colour scale
  for the whole clip, so frames compare), captioned with its index and time in the video;
- ``distance_picture``: each head's temporal attention distance (frames) beside its spatial one (pixels), step by
  step (``viz.maps.video``'s definitions).
"""
from __future__ import annotations

import math

import matplotlib
import numpy as np
from matplotlib.lines import Line2D
from PIL import Image, ImageDraw

from ..drawing import plots, render, screens
from ..drawing.fonts import use_language_font
from ..i18n import language, t
from ..maps.source import rollout_rows
from ..maps.video import readout_row
from ..records import Analysis

CELL = 160          # pixels of a frame's longer side in the strip (the toy's 32-pixel frames enlarged)
COLUMNS = 8         # frames per row of the strip


def clip_rollout(a: Analysis, fusion: str = "mean", discard_ratio: float = 0.0) -> np.ndarray:
    """The readout's rollout over every time position's patches -> (T', gh, gw) float32 (a distribution over the
    patch tokens and the prefix tokens; the prefix tokens' share is left out)."""
    arch = a.architecture
    row = readout_row(arch, a.probe_attention)
    protect = np.flatnonzero(row) if discard_ratio else ()
    rolled = rollout_rows(a.maps, row, fusion, discard_ratio, protect=protect)
    return np.asarray(rolled[arch.num_prefix:], np.float32).reshape(arch.patch_shape)


def frame_maps(a: Analysis, rollout: np.ndarray) -> np.ndarray:
    """(T', gh, gw) over time positions -> (T, gh, gw) over the sampled frames (each frame its tubelet's map)."""
    tubelet = a.architecture.tubelet
    return np.asarray(rollout)[np.arange(len(a.clip.frames)) // tubelet]


def frame_overlays(a: Analysis, rollout: np.ndarray, cmap: str = render.DEFAULT_CMAP, alpha: float = 0.6,
                   cell: int = CELL) -> list[Image.Image]:
    """Every sampled frame, its longer side ``cell`` pixels, with its time position's rollout on one colour scale."""
    maps = frame_maps(a, rollout)
    vmin, vmax = float(maps.min()), float(maps.max())
    out = []
    for frame, values in zip(a.clip.frames, maps):
        out.append(render.overlay(_enlarged(frame, cell), values, cmap, alpha, vmin=vmin, vmax=vmax))
    return out


def frame_overlay(a: Analysis, rollout: np.ndarray, frame: int, cmap: str = render.DEFAULT_CMAP, alpha: float = 0.6,
                  cell: int = 448) -> Image.Image:
    """One sampled frame (0-based, clamped to the clip) with its rollout, on the clip's colour scale."""
    maps = frame_maps(a, rollout)
    frame = min(max(int(frame), 0), len(maps) - 1)
    return render.overlay(_enlarged(a.clip.frames[frame], cell), maps[frame], cmap, alpha, vmin=float(maps.min()),
                          vmax=float(maps.max()))


def frame_caption(a: Analysis, frame: int, lang: str = "en") -> str:
    """"frame 12, 0.48 s": the sampled frame's index and time in the video."""
    return t("video.frame_caption", lang, index=int(a.clip.indices[frame]), seconds=float(a.clip.times[frame]))


def frames_strip(a: Analysis, overlays: list[Image.Image], lang: str = "en", columns: int = COLUMNS) -> Image.Image:
    """The frames in rows of ``columns``, each captioned with its index and time in the video."""
    return tiled([captioned(picture, frame_caption(a, i, lang), lang) for i, picture in enumerate(overlays)], columns)


def tiled(cells: list[Image.Image], columns: int, gap: int = 4) -> Image.Image:
    """Pictures of one size in rows of ``columns`` on white."""
    w, h = cells[0].size
    cols = max(1, min(columns, len(cells)))
    rows = math.ceil(len(cells) / cols)
    out = Image.new("RGB", (cols * (w + gap) - gap, rows * (h + gap) - gap), "white")
    for i, cell in enumerate(cells):
        out.paste(cell, ((i % cols) * (w + gap), (i // cols) * (h + gap)))
    return out


def captioned(picture: Image.Image, caption: str, lang: str = "en") -> Image.Image:
    """The picture with a line of text above it."""
    lang = language(lang)
    font = render.font(13, lang, caption)
    out = Image.new("RGB", (picture.width, picture.height + 20), "white")
    ImageDraw.Draw(out).text((2, 3), caption, fill=(0, 0, 0), font=font)
    out.paste(picture, (0, 20))
    return out


def distance_picture(temporal: np.ndarray, spatial: np.ndarray, lang: str = "en", narrow: bool = False
                     ) -> Image.Image:
    """Each head's mean attention distance in time (L, H) frames beside in space (L, H) pixels, against the
    attention step, one colour per head (a TimeSformer's time steps read 0 in space, its space steps 0 in time); NaN:
    no such head. ``narrow``: the two plots one above the other, for a phone."""
    lang = language(lang)
    if narrow:
        fig = plots.new_figure(plots.NARROW_PLOT[0], 2 * plots.NARROW_PLOT[1], screens.NARROW_DPI)
        axes = fig.subplots(2, 1)
    else:
        fig = plots.new_figure(2 * plots.PLOT_SIZE[0], plots.PLOT_SIZE[1])
        axes = fig.subplots(1, 2)
    L, H = np.shape(temporal)
    name, norm = plots.head_colors(H)
    colours = matplotlib.colormaps[name](norm(np.tile(np.arange(H), L)))
    steps = np.repeat(np.arange(L), H)
    for ax, values, title, label in ((axes[0], temporal, "picture.temporal_distance", "axis.temporal_distance"),
                                     (axes[1], spatial, "picture.spatial_distance", "axis.spatial_distance")):
        values = np.asarray(values, np.float32)
        ax.scatter(steps, values.ravel(), c=colours, s=14, edgecolors="none")
        ax.set_xlim(-0.7, L - 0.3)
        ax.set_ylim(0, plots.nice_top(max(float(np.nanmax(values)) if np.isfinite(values).any() else 0.0, 1.0)))
        ax.set_xticks(range(0, L, max(1, L // 12)))
        ax.set_xlabel(t("axis.step", lang))
        ax.set_ylabel(t(label, lang))
        ax.set_title(t(title, lang), fontsize=10)
        ax.grid(alpha=0.3)
    handles = [Line2D([], [], linestyle="none", marker="o", markersize=4, markeredgewidth=0,
                      color=matplotlib.colormaps[name](norm(h)), label=t("name.head", lang, head=h)) for h in range(H)]
    axes[1].legend(handles=handles, fontsize=6, loc="upper right", ncol=1 if H <= 4 else 2 if H <= 8 else 3,
                   framealpha=0.85)
    use_language_font(fig, lang)
    fig.tight_layout()
    return plots.figure_to_image(fig)


def _enlarged(frame: np.ndarray, cell: int) -> Image.Image:
    """A uint8 frame (h, w, 3) with its longer side ``cell`` pixels (never smaller than it is)."""
    image = Image.fromarray(np.asarray(frame))
    scale = max(1.0, cell / max(image.size))
    size = (round(image.width * scale), round(image.height * scale))
    return image if size == image.size else image.resize(size, Image.BILINEAR)
