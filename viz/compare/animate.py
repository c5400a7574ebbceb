"""Attention through depth: one frame per block, the CLS attention of that block or the rollout up to it, with the
block written on each frame; saved as a GIF (Pillow, always) or an MP4 (only where imageio and imageio-ffmpeg are
installed: optional, never required).

Every frame is the single-block panel with a caption strip above it: frame l of ``depth_frames(a, "attention")``
is ``attention_panel(a, layer=l)``, frame l of ``depth_frames(a, "rollout")`` is ``rollout_panel_through(a,
l)`` (rollout of blocks 0…l; its last frame is the CLI's rollout panel). Each frame keeps its own colour scale, as
the single panels do, so the GIF shows where each block looks, not how sharply.
"""
from __future__ import annotations

import importlib.util
import io
from pathlib import Path

import numpy as np
from PIL import Image

from .. import panels
from ..drawing import render
from ..i18n import t
from ..maps.layout import layer_index
from ..records import Analysis
from ..attention.view import attention_map_panel, attention_panel
from ..rollout.view import rollout_map_panel, rollout_overlay

ANIMATED_MAPS = ("attention", "rollout")
FRAME_MS = 700          # GIF frame duration: slow enough to read the caption
MP4_BLOCK = 16          # video encoders want sides that are multiples of 16 (H.264 macroblocks)


def rollout_through(a: Analysis, layer: int, fusion: str = "mean", discard_ratio: float = 0.0,
                    mask_artifacts: bool = False, norm_ratio: float = 3.0) -> np.ndarray:
    """CLS rollout of blocks 0…``layer`` only, R = Â_layer · … · Â_0, over the patches -> (gh, gw).

    At the last block this is ``panels.rollout_of`` (start block 0). High-norm tokens, when masked, are the ones
    flagged in any block (as in the full rollout), so the frames of an animation drop the same tokens.
    """
    return panels.rollout_of(a, fusion, discard_ratio, 0, mask_artifacts, norm_ratio, stop_layer=layer_index(layer,
                                                                                                             a.depth))


def rollout_panel_through(a: Analysis, layer: int, fusion: str = "mean", discard_ratio: float = 0.0,
                          mask_artifacts: bool = False, norm_ratio: float = 3.0, cmap: str = render.DEFAULT_CMAP,
                          alpha: float = 0.6, colorbar: bool = True, scale: int = 1) -> Image.Image:
    """The rollout up to ``layer`` on the photo, drawn as the CLI draws the full rollout (``rollout_overlay``)."""
    values = rollout_through(a, layer, fusion, discard_ratio, mask_artifacts, norm_ratio)
    return rollout_overlay(a, values, panels.artifact_drop(a, mask_artifacts, norm_ratio), cmap, alpha,
                                  colorbar, scale)


def depth_panel(a: Analysis, layer: int, what: str = "attention", head: int | None = None, fusion: str = "mean",
                discard_ratio: float = 0.0, mask_artifacts: bool = False, norm_ratio: float = 3.0,
                cmap: str = render.DEFAULT_CMAP, alpha: float = 0.6, colorbar: bool = True,
                scale: int = 1) -> Image.Image:
    """The single-block panel of frame ``layer``: the CLS attention of that block (``head`` or the mean of heads),
    or the rollout up to it."""
    if what == "attention":
        return attention_panel(a, layer, head, None, cmap, alpha, colorbar, scale)
    if what == "rollout":
        return rollout_panel_through(a, layer, fusion, discard_ratio, mask_artifacts, norm_ratio, cmap, alpha,
                                     colorbar, scale)
    raise ValueError(f"Unknown animated map {what!r}! Expected one of {ANIMATED_MAPS}.")


def frame_caption(a: Analysis, layer: int, what: str = "attention", head: int | None = None) -> str:
    """What frame ``layer`` shows, e.g. "block 3 (of 0-11): CLS attention, mean of heads" (ASCII only: Pillow's
    bundled font has no en dash)."""
    l, last = layer_index(layer, a.depth), a.depth - 1
    if what == "rollout":
        return f"block {l} (of 0-{last}): rollout of blocks 0-{l}"
    return f"block {l} (of 0-{last}): CLS attention, {'mean of heads' if head is None else f'head {head}'}"


def depth_frames(a: Analysis, what: str = "attention", head: int | None = None, fusion: str = "mean",
                 discard_ratio: float = 0.0, mask_artifacts: bool = False, norm_ratio: float = 3.0,
                 cmap: str = render.DEFAULT_CMAP, alpha: float = 0.6, colorbar: bool = True,
                 scale: int = 1) -> list[Image.Image]:
    """One frame per block (L frames): ``depth_panel`` with its caption in a strip above
    (``render.caption_strip_height()`` pixels; the panel's pixels below it are unchanged)."""
    return [render.with_caption(depth_panel(a, l, what, head, fusion, discard_ratio, mask_artifacts, norm_ratio,
                                            cmap, alpha, colorbar, scale), frame_caption(a, l, what, head))
            for l in range(a.depth)]


def display_frames(a: Analysis, what: str = "attention", head: int | None = None, fusion: str = "mean",
                   discard_ratio: float = 0.0, mask_artifacts: bool = False,
                   display: panels.Display = panels.Display(size=448)) -> list[Image.Image]:
    """The page's animation: one frame per layer, each the page's own map (``attention_map_panel``, or the
    rollout up to that layer) at ``display``'s size, in multiples of uniform attention on its own scale, with its
    caption in ``display``'s language in a strip above (the picture's label on the page covers none of it)."""
    if what not in ANIMATED_MAPS:
        raise ValueError(f"Unknown animated map {what!r}! Expected one of {ANIMATED_MAPS}.")
    lang, last = display.lang, a.depth - 1
    query = panels.query_label(a.readout, lang)
    heads = t("name.mean_heads", lang) if head is None else t("name.head", lang, head=head)
    frames = []
    for layer in range(a.depth):
        if what == "attention":
            p = attention_map_panel(a, layer, head, mask_artifacts, display=display)
            caption = t("frame.attention", lang, layer=layer, last=last, query=query, heads=heads)
        else:
            p = rollout_map_panel(a, fusion, discard_ratio, 0, mask_artifacts, display=display,
                                         stop_layer=layer)
            caption = t("frame.rollout", lang, layer=layer, last=last)
        frames.append(render.with_caption(p.image, caption, display.font_size, lang))
    return frames


def padded(frames: list[Image.Image], multiple: int = 1) -> list[Image.Image]:
    """Frames on white canvases of one size (the largest, rounded up to ``multiple``), each at the top left: an
    animation needs one size, and a colour bar's width can differ from frame to frame."""
    W = max(f.width for f in frames)
    H = max(f.height for f in frames)
    W, H = -(-W // multiple) * multiple, -(-H // multiple) * multiple
    out = []
    for f in frames:
        canvas = Image.new("RGB", (W, H), "white")
        canvas.paste(f.convert("RGB"), (0, 0))
        out.append(canvas)
    return out


def save_gif(frames: list[Image.Image], path: str | Path, frame_ms: int = FRAME_MS) -> Path:
    """Write an endlessly looping GIF with one frame per image (each quantised to its own 256-colour palette).

    Returns the path. ValueError for no frames."""
    path = Path(path)
    path.write_bytes(gif_bytes(frames, frame_ms))
    return path


def gif_bytes(frames: list[Image.Image], frame_ms: int = FRAME_MS) -> bytes:
    """The bytes of ``save_gif``'s GIF. ValueError for no frames."""
    if not frames:
        raise ValueError("No frames to animate! Expected at least one image.")
    first, *rest = padded(frames)
    buffer = io.BytesIO()
    first.save(buffer, format="GIF", save_all=True, append_images=rest, duration=int(frame_ms), loop=0,
               disposal=1, optimize=False)
    return buffer.getvalue()


def mp4_available() -> bool:
    """Whether an MP4 can be written here: imageio with its ffmpeg plugin (pip install imageio imageio-ffmpeg)."""
    return all(importlib.util.find_spec(name) is not None for name in ("imageio", "imageio_ffmpeg"))


def save_mp4(frames: list[Image.Image], path: str | Path, frame_ms: int = FRAME_MS) -> Path:
    """Write an H.264 MP4 through imageio + imageio-ffmpeg (optional packages); frames padded to multiples of 16.

    RuntimeError saying what to install when they are missing; ValueError for no frames."""
    if not frames:
        raise ValueError("No frames to animate! Expected at least one image.")
    if not mp4_available():
        raise RuntimeError("Writing MP4 needs the optional packages imageio and imageio-ffmpeg (pip install imageio "
                           "imageio-ffmpeg); the GIF needs nothing more.")
    import imageio.v2 as imageio

    path = Path(path)
    with imageio.get_writer(path, format="FFMPEG", fps=1000.0 / frame_ms, codec="libx264", quality=8,
                            macro_block_size=MP4_BLOCK) as writer:
        for frame in padded(frames, MP4_BLOCK):
            writer.append_data(np.asarray(frame))
    return path
