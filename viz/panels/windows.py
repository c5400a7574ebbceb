"""A Swin's panels from a ``WindowAnalysis``: the same views as a ViT's where they have a meaning, each on the grid
it is defined on (``viz.maps.hierarchy`` computes the numbers; docs/swin.md defines them).

- rollout through the hierarchy (stage 0's grid), and the average pool's attention in one block (its stage's grid);
- a clicked patch: where its token looks and who looks at it in one block, drawn with that block's windows
  outlined (a shifted block's windows shifted), the token being the one of that stage that covers the patch;
- every head of a stage at once (blocks × heads, per stage), one colour scale per stage;
- the mean attention distance of every head of every block (Figure 7, right, in pixels of the input), and the
  token norms after every block.

``window_image_panels(a, o)`` gives the CLI's PNGs and arrays; the page draws the same functions at display size.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from matplotlib.ticker import LogFormatter
from PIL import Image, ImageDraw

from ..drawing import plots, render, screens
from ..drawing.fonts import use_language_font
from ..drawing.grids import Bands, GridLayout, banded_grid, thumbnail_grid
from ..i18n import t
from ..maps import hierarchy
from ..maps.layout import layer_index
from ..records import WindowAnalysis
from .files import MapOptions, photo

WINDOW_COLOR = (255, 255, 255)     # the windows' outlines


def rollout_values(a: WindowAnalysis, fusion: str = "mean") -> np.ndarray:
    """(gh0, gw0): attention rollout through windows and merges, heads fused by ``fusion`` (sums to 1)."""
    return hierarchy.rollout_map(a.attention, a.layouts, fusion)


def _heads(a: WindowAnalysis, layer: int, head: int | None) -> np.ndarray:
    """(nW, N, N) float32: one head's windows of a block, or their mean (``head`` None)."""
    windows = a.attention[layer]
    if head is None:
        return hierarchy.fuse_windows(windows)
    if not 0 <= head < windows.shape[1]:
        raise ValueError(f"Head {head} does not exist in block {layer}! Expected 0 <= head < {windows.shape[1]}, or "
                         f"the mean of heads.")
    return np.asarray(windows[:, head], dtype=np.float32)


def pool_attention(a: WindowAnalysis, layer: int = -1, head: int | None = None) -> np.ndarray:
    """(gh_s, gw_s): the average pool's view of one block (the mean of its stage's query rows), on its stage's grid."""
    layer = layer_index(layer, a.depth)
    layout = a.layouts[layer]
    row = hierarchy.mean_row(tuple(layout.grid))
    return hierarchy.rows_through(row, _heads(a, layer, head), layout).reshape(tuple(layout.grid))


def stage_token(a: WindowAnalysis, row: int, col: int, layer: int) -> tuple[int, int]:
    """The token of block ``layer``'s stage that covers patch (row, col) of stage 0's grid."""
    gh0, gw0 = a.grid
    if not (0 <= row < gh0 and 0 <= col < gw0):
        raise ValueError(f"Patch ({row}, {col}) is outside the {gh0}×{gw0} patch grid!")
    stage = a.layouts[layer].stage
    return row >> stage, col >> stage


def query_values(a: WindowAnalysis, row: int, col: int, layer: int = -1, head: int | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(where the token covering patch (row, col) looks, who looks at it) in one block -> two (gh_s, gw_s) maps on
    that block's stage grid: its row and its column of the expanded window attention (zero outside its window)."""
    layer = layer_index(layer, a.depth)
    layout = a.layouts[layer]
    gh, gw = layout.grid
    r, c = stage_token(a, row, col, layer)
    token = r * gw + c
    windows = _heads(a, layer, head)                                   # (nW, N, N)
    index = hierarchy.window_index(tuple(layout.grid), tuple(layout.window), tuple(layout.shift))   # (nW, N)
    w, slot = np.argwhere(index == token)[0]
    out, into = np.zeros(gh * gw, np.float32), np.zeros(gh * gw, np.float32)
    out[index[w]] = windows[w, slot, :]
    into[index[w]] = windows[w, :, slot]
    return out.reshape(gh, gw), into.reshape(gh, gw)


def window_lines(layout, size: tuple[int, int]) -> tuple[list[float], list[float]]:
    """(x positions, y positions) in pixels of a picture of ``size`` (W, H) of the borders between a block's windows:
    on the grid the tiles are displaced by the shift, so the borders lie at shift + k·window (mod the grid)."""
    (gh, gw), (wh, ww), (sh, sw) = layout.grid, layout.window, layout.shift
    W, H = size
    ys = sorted({(sh + k * wh) % gh for k in range(gh // wh)} - {0})
    xs = sorted({(sw + k * ww) % gw for k in range(gw // ww)} - {0})
    return [x * W / gw for x in xs], [y * H / gh for y in ys]


def outline_windows(image: Image.Image, layout, size: tuple[int, int] | None = None,
                    color: tuple[int, int, int] = WINDOW_COLOR) -> Image.Image:
    """A copy of ``image`` with the borders of a block's windows drawn over the photo's part (``size``: the photo's
    (W, H) at the top left, e.g. beside a colour bar; default the whole image)."""
    out = image.copy()
    W, H = size or out.size
    draw = ImageDraw.Draw(out)
    width = max(1, round(min(W, H) / 200))
    xs, ys = window_lines(layout, (W, H))
    for x in xs:
        draw.line([(x, 0), (x, H - 1)], fill=color, width=width)
    for y in ys:
        draw.line([(0, y), (W - 1, y)], fill=color, width=width)
    return out


def where_label(a: WindowAnalysis, layer: int, head: int | None, lang: str = "en") -> str:
    """"stage s, block b, head h" (or "mean of heads") of block ``layer``, in ``lang``."""
    layout = a.layouts[layer_index(layer, a.depth)]
    who = t("swin.mean_heads", lang) if head is None else t("name.head", lang, head=head)
    return t("swin.where", lang, stage=layout.stage, block=layout.block, layer=layer_index(layer, a.depth), who=who)


def query_panels(a: WindowAnalysis, row: int, col: int, layer: int = -1, head: int | None = None,
                 cmap: str = render.DEFAULT_CMAP, alpha: float = 0.6, colorbar: bool = True, scale: int = 1,
                 lang: str = "en", base: Image.Image | None = None, font_size: int | None = None
                 ) -> tuple[Image.Image, Image.Image]:
    """Overlays of where the clicked patch's token looks and who looks at it in one block, with the block's windows
    outlined and the token framed in green (``base``: the photo to draw on, default the crop ``scale``×;
    ``font_size``: the colour bars' text, default by height)."""
    layer = layer_index(layer, a.depth)
    layout = a.layouts[layer]
    out_map, in_map = query_values(a, row, col, layer, head)
    base = base if base is not None else photo(a, scale)
    r, c = stage_token(a, row, col, layer)
    where = where_label(a, layer, head, lang)
    images = []
    for values, kind in ((out_map, "colorbar.attends_to"), (in_map, "colorbar.attended_by")):
        image = outline_windows(render.overlay(base, values, cmap, alpha, smooth=False), layout)
        image = render.mark_patch(image, r, c, tuple(layout.grid))
        if colorbar:
            image = render.add_colorbar(image, cmap, float(values.min()), float(values.max()),
                                        t(kind, lang, where=where), lang=lang, font_size=font_size)
        images.append(image)
    return images[0], images[1]


def stage_heads_maps(a: WindowAnalysis, stage: int) -> np.ndarray:
    """(blocks of the stage, H_s, gh_s, gw_s): the average pool's view of every head of every block of a stage."""
    blocks = a.stages[stage]
    return np.stack([np.stack([pool_attention(a, l, h) for h in range(a.heads[l])]) for l in blocks])


def stage_heads_grid(a: WindowAnalysis, stage: int, cell: int = 56, cmap: str = render.DEFAULT_CMAP,
                     lang: str = "en", font_size: int = 13, per_band: int | None = None
                     ) -> tuple[Image.Image, GridLayout | Bands]:
    """Every head of a stage at once (rows: its blocks, columns: its heads) over the photo, on one colour scale for
    the whole stage, its range in the title above (the canvas as wide as the title needs); and where its thumbnails
    are in that picture (rows: the stage's blocks in order). ``per_band``: at most that many heads side by side, the
    rest in bands below (a narrow screen); the labels' text is ``font_size`` - 2 pixels, at least 11."""
    maps = stage_heads_maps(a, stage)
    vmin, vmax = float(maps.min()), float(maps.max())
    blocks = a.stages[stage]
    heads = [t("name.head", lang, head=h) for h in range(a.heads[blocks[0]])]
    options = dict(cell=cell, cmap=cmap, value_range=(vmin, vmax), background=a.image, lang=lang,
                   row_labels=[t("swin.layer", lang, layer=l) for l in blocks], font_size=max(11, font_size - 2))
    if per_band is not None and per_band < len(heads):
        grid, placement = banded_grid(maps, per_band, heads, **options)
    else:
        grid, placement = thumbnail_grid(maps, col_labels=heads, **options)
    title = t("swin.stage_title", lang, stage=stage, low=render.tick_text(vmin), high=render.tick_text(vmax))
    f = render.font(font_size, lang, title)
    strip = render.caption_strip_height(font_size)
    out = Image.new("RGB", (max(grid.width, round(f.getlength(title)) + 12), grid.height + strip), "white")
    out.paste(grid, (0, strip))
    ImageDraw.Draw(out).text((6, strip / 2), title, fill="black", font=f, anchor="lm")
    if isinstance(placement, Bands):
        return out, replace(placement, starts=tuple((top + strip, first) for top, first in placement.starts))
    return out, replace(placement, top=placement.top + strip)


def stage_heads_panel(a: WindowAnalysis, stage: int, cell: int = 56, cmap: str = render.DEFAULT_CMAP,
                      lang: str = "en", font_size: int = 13) -> Image.Image:
    """``stage_heads_grid``'s picture."""
    return stage_heads_grid(a, stage, cell, cmap, lang, font_size)[0]


@dataclass(frozen=True)
class StagesLayout:
    """Where each (block, head) thumbnail is in the stages' heads grids stacked one under the other, to map a click
    back to the block (the page's layer) and head: the same questions as a ViT's ``HeadsLayout``."""
    grids: tuple[tuple[int, int, GridLayout | Bands, tuple[int, ...]], ...]   # per stage: (its top and height in
    #                                                                           pixels, its thumbnails, its blocks)

    def cell_at(self, x: float, y: float) -> tuple[int, int] | None:
        """Pixel (x, y) of the stacked picture -> (layer, head) of the thumbnail under it, or None (titles, labels,
        gaps between the stages)."""
        for top, height, placement, blocks in self.grids:
            if top <= y < top + height:
                cell = placement.cell_at(x, y - top)
                return None if cell is None else (blocks[cell[0]], cell[1])
        return None

    def box(self, layer: int, head: int) -> tuple[int, int, int, int]:
        """Pixel box (x0, y0, x1, y1) of the thumbnail of (layer, head) in the stacked picture."""
        for top, _, placement, blocks in self.grids:
            if layer in blocks:
                heads = placement.columns if isinstance(placement, Bands) else placement.cols
                if not 0 <= head < heads:
                    raise ValueError(f"Head {head} does not exist in layer {layer}! Expected 0 <= head < {heads}.")
                x0, y0, x1, y1 = placement.box(blocks.index(layer), head)
                return x0, y0 + top, x1, y1 + top
        raise ValueError(f"Layer {layer} is in no stage of this Swin! Expected 0 <= layer < "
                         f"{sum(len(grid[3]) for grid in self.grids)}.")


def mean_distances(a: WindowAnalysis) -> list[np.ndarray]:
    """Per block: (H_s,) mean attention distance of each head in pixels of the input (Figure 7, right)."""
    return [hierarchy.attention_distance(windows, layout, layout.token_size)
            for windows, layout in zip(a.attention, a.layouts)]


def distance_table(a: WindowAnalysis) -> np.ndarray:
    """(L, most heads) float32: every head's mean attention distance, NaN where a block has fewer heads."""
    distances = mean_distances(a)
    table = np.full((a.depth, max(a.heads)), np.nan, np.float32)
    for i, d in enumerate(distances):
        table[i, :len(d)] = d
    return table


TITLE_POINTS = 10       # the plots' titles, in points


def _figure(title: str, narrow: bool):
    """A plot's figure and axes with ``title`` drawn (broken into lines that fit a phone's figure when ``narrow``)."""
    fig = plots.plot_figure(narrow)
    if narrow:
        title = screens.wrap(title, TITLE_POINTS, screens.NARROW_INCHES * 0.9)
    ax = plots.plot_axes(fig, title, narrow)
    ax.set_title(title, fontsize=TITLE_POINTS)
    return fig, ax


def distance_figure(distances: list[np.ndarray], layouts, lang: str = "en", narrow: bool = False) -> Image.Image:
    """Every head's mean attention distance against the block (one colour per stage); ``narrow``: for a phone."""
    fig, ax = _figure(t("swin.distance_title", lang), narrow)
    colors = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown"]
    for stage in sorted({layout.stage for layout in layouts}):
        blocks = [i for i, layout in enumerate(layouts) if layout.stage == stage]
        xs = np.concatenate([np.full(len(distances[i]), i) for i in blocks])
        ys = np.concatenate([distances[i] for i in blocks])
        ax.scatter(xs, ys, s=18, color=colors[stage % len(colors)], label=t("swin.stage", lang, stage=stage))
    ax.set_xlabel(t("swin.axis_layer", lang))
    ax.set_ylabel(t("axis.mean_distance", lang))
    ax.set_xticks(range(len(layouts)))
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=screens.MIN_POINTS)
    use_language_font(fig, lang)
    return plots.figure_to_image(fig)


def token_norms_figure(a: WindowAnalysis, lang: str = "en", narrow: bool = False) -> Image.Image:
    """The median, lowest and highest token norm after every block, log scale; ``narrow``: for a phone."""
    fig, ax = _figure(t("swin.norms_title", lang), narrow)
    norms = [np.asarray(n, dtype=np.float32).ravel() for n in a.token_norms]
    x = np.arange(a.depth)
    ax.fill_between(x, [n.min() for n in norms], [n.max() for n in norms], alpha=0.25, label=t("swin.norm_range", lang))
    ax.plot(x, [np.median(n) for n in norms], marker="o", label=t("swin.norm_median", lang))
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(LogFormatter())          # plain numbers (2, 10, 20), as narrow as the tick labels go
    ax.yaxis.set_minor_formatter(LogFormatter())
    ax.set_xlabel(t("swin.axis_layer", lang))
    ax.set_ylabel(t("name.norm", lang))
    ax.set_xticks(range(a.depth))
    ax.legend(fontsize=screens.MIN_POINTS)
    use_language_font(fig, lang)
    return plots.figure_to_image(fig)


def check_window_options(o: MapOptions, a_depth: int, heads: tuple[int, ...]) -> None:
    """ValueError for map options that do not fit a Swin of ``a_depth`` blocks with ``heads`` heads per block."""
    layer = layer_index(o.layer, a_depth)
    if o.head is not None and not 0 <= o.head < heads[layer]:
        raise ValueError(f"Head {o.head} does not exist in block {layer} of this Swin! Expected 0 <= head < "
                         f"{heads[layer]}, or the mean of heads.")


def window_image_panels(a: WindowAnalysis, o: MapOptions = MapOptions()
                        ) -> tuple[dict[str, Image.Image], dict[str, np.ndarray]]:
    """Every panel of one Swin analysis -> ({name: image}, {name: array}); names as a ViT's where the view is the
    same ("input", "rollout", "attention", "query_row", "query_column", "mean_distance", "token_norm_curves"), and
    "heads_stage<s>" for every stage's heads. Arrays: "rollout" (gh0, gw0), "attention" and the query maps on the
    block's stage grid, "query_patch", "mean_distance" (L, max heads; NaN where a block has fewer heads)."""
    layer = layer_index(o.layer, a.depth)
    check_window_options(o, a.depth, a.heads)
    row, col = o.query if o.query is not None else (a.grid[0] // 2, a.grid[1] // 2)
    style = dict(cmap=o.cmap, alpha=o.alpha, colorbar=o.colorbar, scale=o.scale, lang=o.lang)
    rollout = rollout_values(a, o.fusion)
    attention = pool_attention(a, layer, o.head)
    base = photo(a, o.scale)
    distances = mean_distances(a)
    table = distance_table(a)
    images = {
        "input": base,
        "rollout": render.overlay(base, rollout, o.cmap, o.alpha, colorbar=o.colorbar,
                                  label=t("swin.rollout_caption", o.lang), lang=o.lang),
        "attention": outline_windows(render.overlay(base, attention, o.cmap, o.alpha, colorbar=o.colorbar,
                                                    label=t("swin.pool_caption", o.lang,
                                                            where=where_label(a, layer, o.head, o.lang)),
                                                    lang=o.lang), a.layouts[layer], base.size),
        "mean_distance": distance_figure(distances, a.layouts, o.lang),
        "token_norm_curves": token_norms_figure(a, o.lang),
    }
    images["query_row"], images["query_column"] = query_panels(a, row, col, layer, o.head, base=base, **style)
    for stage in range(len(a.stages)):
        images[f"heads_stage{stage}"] = stage_heads_panel(a, stage, cmap=o.cmap, lang=o.lang)
    query_out, query_in = query_values(a, row, col, layer, o.head)
    arrays = {"rollout": rollout, "attention": attention, "query_row": query_out, "query_column": query_in,
              "query_patch": np.array([row, col]), "mean_distance": table}
    return images, arrays
