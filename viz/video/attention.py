"""The Video tab's attention views, Gradio-free: one attention step (and one head, or the mean of heads) of a clip's
analysis, read from its attention source (``viz.analysis.video.ClipAttention``), nothing recomputed by the model.

- ``readout_frames``: the step's readout row (``ClipAttention.readout_rows``: the CLS token's row, or for a model
  without one the mean of the patch tokens' rows, ``viz.maps.readout.heads_query``) over every time position,
  (T', gh, gw);
- ``heads_at_frame``: each head's readout row at one sampled frame's time position, (H, gh, gw);
- ``patch_at`` / ``patch_token``: a click on the chosen frame's picture -> (row, column) -> the stream token of that
  patch in that frame's time position;
- ``patch_maps``: where that token attends in every frame (its row of the step) and which tokens attend to it (its
  column), each (T', gh, gw);
- ``clip_strip`` / ``heads_picture``: the pictures, each on one colour scale with its colour bar;
  ``step_kind`` / ``attention_note``: which kind of step it is ("joint", "time", "space") and what the views mean.

Token ``prefix + τ·gh·gw + r·gw + c`` is patch (r, c) of time position τ, which covers input frames τ·t … τ·t + t − 1
(t the tubelet); a sampled frame shows its time position's map.
"""
from __future__ import annotations

import numpy as np
from PIL import Image

from ..drawing import render
from ..i18n import t
from ..maps.layout import layer_index, pixel_to_patch
from ..maps.source import check_head
from ..records import Analysis
from .view import _enlarged, captioned, frame_caption, frame_maps, frame_overlays, tiled

STEP_KINDS = {"all": "joint", "time": "time", "space": "space"}   # BlockLayout.attends -> what the page calls it
READOUT_NOTES = {"cls": "video.readout_cls", "mean": "video.readout_mean", "map": "video.readout_map"}
CAPTION_HEIGHT = 20      # the text line ``view.captioned`` puts above the chosen frame


def step_kind(a: Analysis, layer: int) -> str:
    """"joint" (every token with every token), "time" (each patch place through the frames) or "space" (each frame's
    patches, with the CLS token)."""
    return STEP_KINDS[a.architecture.block(layer).attends]


def _head_rows(rows: np.ndarray, head: int | None, heads: int) -> np.ndarray:
    """(H, T) -> (T,): one head's row, or the mean of the heads'."""
    if head is None:
        return rows.mean(axis=0)
    check_head(head, heads)
    return rows[head]


def readout_frames(a: Analysis, layer: int, head: int | None = None) -> np.ndarray:
    """The step's readout row (one head's, or the mean of heads') over every time position's patches -> (T', gh, gw)
    float32 (the prefix tokens' share left out)."""
    arch = a.architecture
    rows = np.asarray(a.maps.readout_rows(layer), np.float32)
    row = _head_rows(rows, head, rows.shape[0])
    return row[arch.num_prefix:].reshape(arch.patch_shape)


def time_position(a: Analysis, frame: int) -> int:
    """The time position (tubelet) sampled frame ``frame`` lies in; ValueError for a frame the clip has not."""
    frames = len(a.clip.frames)
    if not 0 <= frame < frames:
        raise ValueError(f"Frame {frame} does not exist! Expected 0 <= frame < {frames}.")
    return frame // a.architecture.tubelet


def heads_at_frame(a: Analysis, layer: int, frame: int) -> np.ndarray:
    """Each head's readout row at sampled frame ``frame``'s time position -> (H, gh, gw) float32."""
    arch = a.architecture
    rows = np.asarray(a.maps.readout_rows(layer), np.float32)
    return rows[:, arch.num_prefix:].reshape(rows.shape[0], *arch.patch_shape)[:, time_position(a, frame)]


def frame_picture_size(a: Analysis, cell: int) -> tuple[int, int]:
    """(width, height) of a frame drawn with its longer side ``cell`` pixels (``view._enlarged``'s)."""
    return _enlarged(a.clip.frames[0], cell).size


def patch_at(a: Analysis, x: float, y: float, cell: int) -> tuple[int, int]:
    """Pixel (x, y) of the chosen frame's picture (the frame ``cell`` pixels on its longer side under its caption
    line) -> the patch (row, column) under it; ValueError for a point outside the frame."""
    width, height = frame_picture_size(a, cell)
    y = y - CAPTION_HEIGHT
    if not (0 <= x < width and 0 <= y < height):
        raise ValueError(f"Pixel ({x}, {y}) is outside the {width}×{height} frame.")
    return pixel_to_patch(x, y, (width, height), a.architecture.grid)


def patch_token(a: Analysis, frame: int, row: int, col: int) -> int:
    """The stream token of patch (row, col) of sampled frame ``frame``'s time position."""
    gh, gw = a.architecture.grid
    if not (0 <= row < gh and 0 <= col < gw):
        raise ValueError(f"Patch ({row}, {col}) does not exist! Expected a row below {gh} and a column below {gw}.")
    return a.architecture.num_prefix + (time_position(a, frame) * gh + row) * gw + col


def patch_maps(a: Analysis, layer: int, head: int | None, token: int) -> tuple[np.ndarray, np.ndarray]:
    """(where ``token`` attends in the step: its row, who attends to it: its column), each over every time position's
    patches (T', gh, gw) float32, one head's or the mean of heads'; the prefix tokens' entries left out."""
    arch = a.architecture
    layer = layer_index(layer, a.depth)
    if head is not None:
        check_head(head, a.maps.heads)
    row = np.asarray(a.maps.rows(layer, head, [token]), np.float32)[0]
    column = np.asarray(a.maps.columns(layer, head, [token]), np.float32)[:, 0]
    return (row[arch.num_prefix:].reshape(arch.patch_shape), column[arch.num_prefix:].reshape(arch.patch_shape))


def clip_strip(a: Analysis, maps: np.ndarray, label: str, lang: str = "en", cell: int = 112, columns: int = 8,
               patch: tuple[int, int, int] | None = None) -> Image.Image:
    """Every sampled frame with its time position's map (T', gh, gw), on one colour scale for the clip (a colour bar
    labelled ``label`` on the right), each captioned with its index and time; ``patch`` (frame, row, col): that patch
    framed in green in every frame of its time position."""
    overlays = frame_overlays(a, maps, cell=cell)
    if patch is not None:
        frame, row, col = patch
        tau = time_position(a, frame)
        for f, picture in enumerate(overlays):
            if f // a.architecture.tubelet == tau:
                render.frame_patch(picture, row, col, a.architecture.grid, picture.size,
                                   width=max(2, round(picture.width / 60)))
    cells = [captioned(picture, frame_caption(a, i, lang), lang) for i, picture in enumerate(overlays)]
    shown = frame_maps(a, maps)
    return render.add_colorbar(tiled(cells, columns), render.DEFAULT_CMAP, float(shown.min()), float(shown.max()),
                               label, lang=lang)


def heads_picture(a: Analysis, layer: int, frame: int, lang: str = "en", cell: int = 112, columns: int = 6
                  ) -> Image.Image:
    """Each head's readout attention at the frame's time position over that frame, one small map per head on one
    colour scale (a colour bar on the right), each captioned with its head."""
    maps = heads_at_frame(a, layer, frame)
    vmin, vmax = float(maps.min()), float(maps.max())
    base = a.clip.frames[frame]
    cells = []
    for h, values in enumerate(maps):
        picture = render.overlay(_enlarged(base, cell), values, render.DEFAULT_CMAP, 0.6, vmin=vmin, vmax=vmax)
        cells.append(captioned(picture, t("name.head", lang, head=h), lang))
    return render.add_colorbar(tiled(cells, columns), render.DEFAULT_CMAP, vmin, vmax,
                               t("video.colorbar_attention", lang), lang=lang)


def head_label(head: int | None, lang: str = "en") -> str:
    return t("video.mean_of_heads", lang) if head is None else t("name.head", lang, head=head)


def attention_note(a: Analysis, layer: int, head: int | None, lang: str = "en",
                   patch: tuple[int, int, int] | None = None) -> str:
    """What the views of this step show, for a student: which kind of step it is and what its rows mean (a time
    step's CLS token attends to itself only), what the readout row is for this model, what uniform attention would
    read (each picture has its own colour scale: a narrow range near it is no preference), and the clicked patch."""
    layer = layer_index(layer, a.depth)
    kind = step_kind(a, layer)
    lines = [t(f"video.step_{kind}", lang, step=layer, last=a.depth - 1, head=head_label(head, lang)),
             t(READOUT_NOTES.get(a.architecture.readout, "video.readout_mean"), lang)]
    n = a.architecture.block(layer).groups().shape[1]
    lines.append(t("video.uniform_note", lang, tokens=n, uniform=1.0 / n))
    if patch is not None:
        frame, row, col = patch
        lines.append(t("video.patch_note", lang, row=row, col=col, index=int(a.clip.indices[frame]),
                       tau=time_position(a, frame)))
    return " ".join(lines)
