"""The All heads tab: every layer's and head's attention of the readout over the photo, one grid per stage, and the
numbers a click on a thumbnail tells (``heads_view``, ``head_at``, ``head_info``; the grid itself:
``viz.heads.grid``); the command line's panel at the model's size (``heads_panel``)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
from PIL import Image

from ..controls import Controls, Session, display
from ..drawing import render
from ..drawing.grids import GridLayout, thumbnail_grid
from ..i18n import t
from ..maps.layout import to_grid
from ..panels.select import artifact_drop, layer_readout_rows
from ..records import Analysis
from .grid import head_stats, heads_grid_panel


HEADS_WIDTH = 1100            # the heads grid's width in pixels, colour bar included
NARROW_HEADS_WIDTH = 560      # the heads grid's width on a narrow screen (bands of a few layers)


def heads_view(s: Session, a: Analysis, c: Controls, lang: str = "en") -> tuple[Session, Image.Image, str | None]:
    """The layers × heads grid over the photo (one per stage for a model of several), each layer on its own colour
    scale (or one for all with the shared scale), the current (layer, head) framed; the session remembers its
    geometry for clicks."""
    selected = None if c.head is None else (c.layer, c.head)
    g = heads_grid_panel(a, NARROW_HEADS_WIDTH if c.narrow else HEADS_WIDTH, c.mask_artifacts,
                        selected=selected, display=display(c, lang), shared_scale=c.shared_scale)
    scale = t("note.heads_scale" if c.shared_scale else "note.heads_layer_scale", lang, tokens=g.tokens)
    stages = t("note.heads_stages", lang) if len(a.architecture.stages) > 1 else ""
    note = " ".join(n for n in (scale, stages, g.note) if n)
    return replace(s, heads_layout=g.placement), g.image, note


def head_at(s: Session, x: float, y: float) -> tuple[int, int] | None:
    """(layer, head) of the heads-grid thumbnail under pixel (x, y), or None (labels, gaps, no grid yet)."""
    return s.heads_layout.cell_at(x, y) if s.heads_layout is not None else None


def head_info(a: Analysis, layer: int, head: int, mask_artifacts: bool = False, lang: str = "en") -> str:
    """One line on a head: its layer, head, mean attention distance and entropy."""
    stats = head_stats(a, mask_artifacts)
    return t("note.head_info", lang, layer=layer, head=head, distance=float(stats.mean_distance[layer, head]),
             entropy=float(stats.entropy_bits[layer, head]), share=float(stats.entropy_share[layer, head]),
             maximum=float(stats.max_bits[layer]))


def heads_panel(a: Analysis, cell: int = 56, cmap: str = render.DEFAULT_CMAP, with_photo: bool = False,
                selected: tuple[int, int] | None = None, lang: str = "en", mask_artifacts: bool = False,
                norm_ratio: float = 3.0, stage: int | None = None) -> tuple[Image.Image, GridLayout]:
    """The "model view": the query's attention in every layer (rows) and head (columns), each map scaled on
    its own (the CLS row, or for models without one the mean of the patch rows: ``heads_caption``). Returns
    the image and its layout; ``layout.cell_at(x, y)`` gives the (layer, head) clicked (rows: the layers shown).
    ``stage``: that stage's layers only, on its grid (a model of several stages has one such panel per stage)."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    layers = a.architecture.stages[stage] if stage is not None else tuple(range(a.depth))
    block = a.architecture.blocks[layers[0]]
    maps = to_grid(np.stack([layer_readout_rows(a, l, drop) for l in layers]), block.prefix, block.grid)
    return thumbnail_grid(maps, cell=cell, cmap=cmap, row_labels=[t("name.layer", lang, layer=l) for l in layers],
                          col_labels=[t("name.head", lang, head=h) for h in range(block.heads)],
                          background=a.image if with_photo else None, selected=selected, lang=lang)
