"""The Patch query tab: a clicked patch's view, where it attends and who attends to it, in one layer (the layer's token
covering the patch, on its grid, its windows outlined) or rolled out through every layer of one sequence: the page's
pictures with their note and the photo to click on (``query_views``, ``query_photo``, ``select_patch``,
``query_map_panels``) and the command line's (``query_panels``). The numbers are
``viz.panels.select.query_maps``'."""
from __future__ import annotations

from dataclasses import replace

from PIL import Image

from ..controls import DISPLAY_SIZE, Controls, Session, display
from ..drawing import render
from ..i18n import t
from ..maps.layout import layer_index, pixel_to_patch
from ..panels.display import Display, MapPanel, artifact_note, display_photo, draw_map, kept_range, uniform_tokens, \
    value_range
from ..panels.files import photo
from ..panels.select import artifact_drop, default_query, query_maps, where_name, window_note
from ..records import Analysis


QUERY_PHOTO_SCALE = 2         # the photo to click on in the Patch query tab is shown at twice the model's size,
QUERY_PHOTO_MAX = 1024        # but no larger than this (or the model's size, when that is larger)


def query_photo_side(a: Analysis) -> int:
    """The longer side of the photo to click on: ``QUERY_PHOTO_SCALE``× the model's input, at most
    ``QUERY_PHOTO_MAX`` (a large input is shown at its own size)."""
    side = max(a.image.size)
    return min(QUERY_PHOTO_SCALE * side, max(QUERY_PHOTO_MAX, side))


def query_photo(s: Session, a: Analysis) -> Image.Image:
    """The photo to click on, enlarged so patches are easy to hit (``query_photo_side``), the queried one framed."""
    row, col = s.query or default_query(a)
    enlarged = display_photo(a, query_photo_side(a), Image.Resampling.LANCZOS)  # = photo()'s at 2×
    return render.mark_patch(enlarged, row, col, a.grid)


def select_patch(s: Session, a: Analysis, x: float, y: float) -> Session:
    """Pixel (x, y) clicked on ``query_photo`` -> session whose query is the patch under it."""
    w, h = a.image.size
    scale = query_photo_side(a) / max(w, h)
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    return replace(s, query=pixel_to_patch(x, y, size, a.grid))


def query_views(s: Session, a: Analysis, c: Controls, lang: str = "en") -> tuple[Image.Image, Image.Image, str | None]:
    """(where the queried patch attends, who attends to it, a note) in the control's layer and head, or rolled
    out. A masked artifact patch is shown unmasked, and the note says why; in a layer of windows or on a coarser grid
    the note names the token that covers the patch (and a rolled-out row, which such a model has not, falls back on
    the layer's)."""
    row, col = s.query or default_query(a)
    rolled = c.rolled and a.architecture.one_sequence
    options = dict(layer=c.layer, head=c.head, rolled=rolled, fusion=c.fusion, discard_ratio=c.discard_ratio,
                   start_layer=c.start_layer, shared_scale=c.shared_scale, display=display(c, lang, DISPLAY_SIZE // 2))
    try:
        out, into = query_map_panels(a, row, col, mask_artifacts=c.mask_artifacts, **options)
        note = out.note
    except ValueError:               # the queried patch is one of the masked artifact tokens
        out, into = query_map_panels(a, row, col, mask_artifacts=False, **options)
        note = t("note.query_masked", lang, row=row, col=col)
    if not rolled and window_note(a, c.layer, lang):
        block = a.architecture.block(c.layer)
        r, k = a.architecture.token_of(row, col, layer_index(c.layer, a.depth))
        note = t("note.query_token", lang, row=row, col=col, stage=block.stage, token_row=r, token_col=k,
                 grid=f"{block.grid[0]}×{block.grid[1]}")
    if c.rolled and not rolled:
        note = f"{note} {t('note.no_rolled', lang)}"
    return out.image, into.image, note


def query_map_panels(a: Analysis, row: int, col: int, layer: int = -1, head: int | None = None,
                     rolled: bool = False, fusion: str = "mean", discard_ratio: float = 0.0, start_layer: int = 0,
                     mask_artifacts: bool = False, shared_scale: bool = False, norm_ratio: float = 3.0,
                     display: Display = Display()) -> tuple[MapPanel, MapPanel]:
    """(where patch (row, col) attends, which patches attend to it) at display size, in multiples of uniform
    attention, the patch (or the layer's token covering it) framed, the layer's windows outlined when it has them.
    ``shared_scale`` (one layer only): each map's range over all layers.
    Querying a masked artifact patch raises ValueError (its text is ``t("note.query_masked", ...)``)."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    if drop is not None and drop[row % a.grid[0], col % a.grid[1]]:
        raise ValueError(t("note.query_masked", "en", row=row % a.grid[0], col=col % a.grid[1]))
    query = dict(rolled=rolled, fusion=fusion, discard_ratio=discard_ratio, start_layer=start_layer, drop=drop)
    out_map, in_map = query_maps(a, row, col, layer, head, **query)
    layer = 0 if rolled else layer_index(layer, a.depth)
    tokens = uniform_tokens(a, drop, layer)
    ranges = [value_range(out_map * tokens, drop), value_range(in_map * tokens, drop)]
    if shared_scale and not rolled:
        every = [query_maps(a, row, col, l, head, **query) for l in range(a.depth)]
        for i in range(2):
            ranges[i] = kept_range([maps[i] * uniform_tokens(a, drop, l) for l, maps in enumerate(every)], drop)
    block = a.architecture.blocks[layer]
    where = t("name.rollout", display.lang) if rolled else where_name(a, layer, head, display.lang)
    base = display_photo(a, display.size)
    token = (row % a.grid[0], col % a.grid[1]) if rolled else a.architecture.token_of(row % a.grid[0],
                                                                                      col % a.grid[1], layer)
    grid = a.grid if rolled else block.grid
    panels = []
    for values, (vmin, vmax), kind in ((out_map * tokens, ranges[0], "colorbar.attends_to"),
                                       (in_map * tokens, ranges[1], "colorbar.attended_by")):
        image = draw_map(base, values, vmin, vmax, t(kind, display.lang, where=where), tokens, display)
        if not rolled:
            image = render.outline_windows(image, block, base.size)
        render.frame_patch(image, *token, grid, base.size, width=max(2, round(base.width / 150)))
        panels.append(MapPanel(image, values, vmin, vmax, tokens,
                               artifact_note(a, values, mask_artifacts, norm_ratio, display.lang)))
    return panels[0], panels[1]


def query_panels(a: Analysis, row: int, col: int, layer: int = -1, head: int | None = None, rolled: bool = False,
                 fusion: str = "mean", discard_ratio: float = 0.0, start_layer: int = 0,
                 cmap: str = render.DEFAULT_CMAP, alpha: float = 0.6, colorbar: bool = True,
                 scale: int = 1, lang: str = "en", mask_artifacts: bool = False,
                 norm_ratio: float = 3.0) -> tuple[Image.Image, Image.Image]:
    """Overlays of where the patch attends and of who attends to it, the patch (or the layer's token covering it)
    framed in green, the layer's windows outlined when it has them."""
    drop = artifact_drop(a, mask_artifacts, norm_ratio)
    out_map, in_map = query_maps(a, row, col, layer, head, rolled, fusion, discard_ratio, start_layer, drop)
    base = photo(a, scale)
    where = t("name.rollout", lang) if rolled else where_name(a, layer, head, lang)
    block = a.architecture.block(0 if rolled else layer)
    token = a.architecture.token_of(row % a.grid[0], col % a.grid[1], block.index)
    images = []
    for values, kind in ((out_map, "colorbar.attends_to"), (in_map, "colorbar.attended_by")):
        image = render.outline_windows(render.overlay(base, values, cmap, alpha), block, base.size)
        image = render.mark_patch(image, *token, block.grid)
        if colorbar:
            image = render.add_colorbar(image, cmap, float(values.min()), float(values.max()),
                                        t(kind, lang, where=where), lang=lang)
        images.append(image)
    return images[0], images[1]
