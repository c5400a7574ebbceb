"""A model learning to see: the snapshots of one training run (``python -m vit.train ... --snapshot-every N``) on one
photo, one frame per snapshot — the rollout on the photo, the position-embedding similarity (the paper's Figure 7,
centre), the mean attention distance of every head, and the run's validation accuracy and
``pos_neighbour_similarity`` up to that epoch.

    python -m viz.dynamics weights/NAME.snapshots photo.png --out DIR   ->  DIR/dynamics.gif, DIR/dynamics.npz
    (the command's options and files: ``viz.cli.dynamics``)

From Python (a page with a slider): ``series = viz.compare.snapshots.load_series(folder, photo)`` runs every
snapshot once; ``view = DynamicsView(series)`` then draws ``view.frame(i)`` from arrays in milliseconds.
``pos_neighbour_similarity`` (see ``viz.maps.embeddings.neighbour_similarity``) is the number that says the 2-D grid
has been learnt: about -1/N at initialisation, clearly positive once neighbouring patches share embeddings.
"""
from __future__ import annotations

import numpy as np
from PIL import Image

from ..drawing import plots, render, screens
from ..drawing.fonts import use_language_font
from ..drawing.grids import similarity_mosaic
from ..i18n import language, t
from ..maps.distance import patch_distances
from ..records import SnapshotSeries

FRAME_MS = 400                 # a 41-snapshot run plays in about 16 s
PANEL = 260                    # side in pixels of the photo and the similarity mosaic
PLOT_SIZE = (3.9, 2.6)         # inches at 100 dpi: the two plots of a frame
GAP = 10


def _hstack(images: list[Image.Image], gap: int = GAP) -> Image.Image:
    """Images side by side on white, tops aligned."""
    W = sum(im.width for im in images) + gap * (len(images) - 1)
    H = max(im.height for im in images)
    out = Image.new("RGB", (W, H), "white")
    x = 0
    for im in images:
        out.paste(im.convert("RGB"), (x, 0))
        x += im.width + gap
    return out


def _similarity_tiles(sim: np.ndarray, grid: tuple[int, int], side: int = PANEL) -> Image.Image:
    """Figure 7 centre without matplotlib: tile (r, c) is patch (r, c)'s cosine similarity with every patch,
    viridis from -1 to 1, gaps white, enlarged with whole pixels to about ``side`` pixels."""
    mosaic = similarity_mosaic(sim, grid, gap=1)
    colours = render.colorize(np.nan_to_num((mosaic + 1.0) / 2.0, nan=0.0).clip(0, 1), "viridis")
    colours[np.isnan(mosaic)] = 255
    zoom = max(1, side // max(mosaic.shape))
    image = Image.fromarray(colours)
    return image.resize((image.width * zoom, image.height * zoom), Image.Resampling.NEAREST)


class DynamicsView:
    """Draws the frames of one ``SnapshotSeries``, in English or Chinese, for a wide screen (the four panels side by
    side) or a narrow one (one under the other, each as wide as a phone shows it: ``viz.drawing.screens``). The two
    plots' axes, and the run's whole curves, are drawn once per language and screen (``plots.Backdrop``); a frame
    adds only its epoch's points, so ``frame(i)`` takes a few milliseconds."""

    def __init__(self, series: SnapshotSeries, cmap: str = render.DEFAULT_CMAP, alpha: float = 0.6):
        if len(series) == 0:
            raise ValueError("The series has no snapshots! Expected at least one.")
        self.series, self.cmap, self.alpha = series, cmap, alpha
        s = series
        self.uniform = float(patch_distances(s.grid, s.patch_size).mean())
        self.distance_top = plots.nice_top(max(float(s.mean_distance.max()), self.uniform))
        self._backdrops: dict[tuple[str, bool], tuple[plots.Backdrop, plots.Backdrop]] = {}
        self.photo_scale = max(1, PANEL // max(s.image.size))

    def _plots(self, lang: str, narrow: bool) -> tuple[plots.Backdrop, plots.Backdrop]:
        key = (lang, narrow)
        if key not in self._backdrops:
            self._backdrops[key] = (plots.Backdrop(self._distance_figure(lang, narrow)),
                                    plots.Backdrop(self._progress_figure(lang, narrow)))
        return self._backdrops[key]

    @staticmethod
    def _figure(narrow: bool):
        return plots.new_figure(screens.NARROW_INCHES, 2.6) if narrow else plots.new_figure(*PLOT_SIZE)

    def _distance_figure(self, lang: str = "en", narrow: bool = False):
        s = self.series
        fig = self._figure(narrow)
        ax = fig.add_axes((0.17, 0.2, 0.79, 0.68))
        L = s.mean_distance.shape[1]
        ax.set_xlim(-0.7, L - 0.3)
        ax.set_ylim(0, self.distance_top)
        ax.set_xticks(range(L))
        ax.set_xlabel(t("dynamics.layer", lang), fontsize=8)
        ax.set_ylabel(t("dynamics.pixels", lang), fontsize=8)
        ax.tick_params(labelsize=8 if narrow else 7)
        ax.set_title(t("dynamics.distance", lang), fontsize=9)
        ax.axhline(self.uniform, color="gray", linestyle="--", linewidth=0.8)
        ax.text(L - 0.4, self.uniform, t("legend.uniform", lang), color="gray", fontsize=8 if narrow else 7,
                ha="right", va="bottom")
        ax.grid(alpha=0.3)
        return use_language_font(fig, lang)

    def _progress_figure(self, lang: str = "en", narrow: bool = False):
        s = self.series
        fig = self._figure(narrow)
        ax = fig.add_axes((0.14, 0.2, 0.82, 0.68))
        last = max(int(s.epochs[-1]), 1)
        ax.set_xlim(-0.02 * last, 1.02 * last)
        neighbours = s.pos_neighbour_similarity
        low = min(-0.1, float(np.nanmin(neighbours)) - 0.05) if np.isfinite(neighbours).any() else -0.1
        ax.set_ylim(low, 1.02)
        ax.axhline(0, color="gray", linewidth=0.6)
        ax.plot(s.epochs, s.val_accuracy, color="tab:green", linewidth=1.2, label=t("dynamics.accuracy", lang))
        if np.isfinite(neighbours).any():
            ax.plot(s.epochs, neighbours, color="tab:purple", linewidth=1.2, label="pos_neighbour_similarity")
        else:
            ax.plot([], [], color="tab:purple", label=t("dynamics.no_position", lang))
        ax.set_xlabel(t("dynamics.epoch", lang), fontsize=8)
        ax.tick_params(labelsize=8 if narrow else 7)
        ax.set_title(t("dynamics.run", lang), fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8 if narrow else 7, loc="upper left")
        return use_language_font(fig, lang)

    def _distance_artists(self, ax, i: int) -> list:
        d = self.series.mean_distance[i]
        L, H = d.shape
        return [ax.scatter(np.repeat(np.arange(L), H), d.ravel(), c=np.tile(np.arange(H), L), s=14,
                           cmap="tab20" if H > 10 else "tab10", vmin=0, vmax=max(H - 1, 1), edgecolors="none")]

    def _progress_artists(self, ax, i: int) -> list:
        s = self.series
        e = s.epochs[i]
        artists = [ax.axvline(e, color="black", linestyle=":", linewidth=1)]
        artists += ax.plot([e], [s.val_accuracy[i]], "o", color="tab:green", markersize=5)
        if np.isfinite(s.pos_neighbour_similarity[i]):
            artists += ax.plot([e], [s.pos_neighbour_similarity[i]], "o", color="tab:purple", markersize=5)
        return artists

    def caption(self, i: int, lang: str = "en") -> str:
        """The frame's title line, in ``lang``."""
        s = self.series
        label, p = s.top1[i]
        neighbours = s.pos_neighbour_similarity[i]
        position = t("dynamics.no_position", lang) if not np.isfinite(neighbours) else \
            f"pos_neighbour_similarity {neighbours:+.3f}"
        return t("dynamics.caption", lang, name=s.name, epoch=int(s.epochs[i]), accuracy=float(s.val_accuracy[i]),
                 position=position, label=label, probability=p)

    def frame(self, i: int, lang: str = "en", narrow: bool = False) -> Image.Image:
        """Frame of snapshot ``i`` (0-based; negative counts from the end) as a PIL RGB image, its texts in
        ``lang``; ``narrow``: the panels one under the other, ``screens.PHONE_WIDTH`` pixels wide."""
        s = self.series
        if not -len(s) <= i < len(s):
            raise ValueError(f"Snapshot {i} does not exist! Expected 0 <= i < {len(s)}.")
        i %= len(s)
        lang = language(lang)
        side = screens.PHONE_WIDTH - 110 if narrow else PANEL          # room for the rollout's colour bar
        size = screens.MIN_TEXT + 3 if narrow else 14
        photo = s.image.resize((side, round(side * s.image.height / s.image.width)), Image.Resampling.NEAREST) \
            if narrow else s.image
        if not narrow and self.photo_scale > 1:
            photo = photo.resize((photo.width * self.photo_scale, photo.height * self.photo_scale),
                                 Image.Resampling.NEAREST)
        values = s.rollout[i] / max(float(s.rollout[i].mean()), 1e-12)   # 1 = an even share of the patches' mass
        rollout = render.with_caption(render.overlay(photo, values, self.cmap, self.alpha, colorbar=True,
                                                     label=t("dynamics.rollout_bar", lang), lang=lang,
                                                     font_size=size if narrow else 12),
                                      t("dynamics.rollout", lang), size, lang)
        if s.pos_similarity.shape[-1]:
            position = _similarity_tiles(s.pos_similarity[i], s.native_grid, side)
        else:
            position = render.message_image(t("dynamics.no_position_text", lang), (side, side), size, lang)
        position = render.with_caption(position, t("dynamics.position", lang), size, lang)
        distance_plot, progress_plot = self._plots(lang, narrow)
        distance = distance_plot.render(lambda ax: self._distance_artists(ax, i))
        progress = progress_plot.render(lambda ax: self._progress_artists(ax, i))
        panels = [rollout, position, distance, progress]
        caption = self.caption(i, lang)
        if narrow:
            f = render.font(size, lang, caption)
            return _vstack([render.caption(Image.new("RGB", (screens.PHONE_WIDTH, 1), "white"), caption, lang, size),
                            *panels], f.size // 2)
        return render.with_caption(_hstack(panels), caption, font_size=15, lang=lang)

    def frames(self, lang: str = "en") -> list[Image.Image]:
        return [self.frame(i, lang) for i in range(len(self.series))]


def _vstack(images: list[Image.Image], gap: int = GAP) -> Image.Image:
    """Images one under the other on white, left edges aligned."""
    W = max(im.width for im in images)
    H = sum(im.height for im in images) + gap * (len(images) - 1)
    out = Image.new("RGB", (W, H), "white")
    y = 0
    for im in images:
        out.paste(im.convert("RGB"), (0, y))
        y += im.height + gap
    return out


def dynamics_arrays(series: SnapshotSeries) -> dict[str, np.ndarray]:
    """What dynamics.npz holds: epochs (S,), val_accuracy (S,), mean_distance (S, L, H), pos_neighbour_similarity
    (S,), and the maps drawn: rollout (S, gh, gw), pos_similarity (S, N, N), top1_label (S,), top1_probability (S,),
    grid, native_grid, patch_size."""
    s = series
    return {"epochs": s.epochs, "val_accuracy": s.val_accuracy, "mean_distance": s.mean_distance,
            "pos_neighbour_similarity": s.pos_neighbour_similarity, "rollout": s.rollout,
            "pos_similarity": s.pos_similarity, "top1_label": np.array([label for label, _ in s.top1]),
            "top1_probability": np.array([p for _, p in s.top1]), "grid": np.array(s.grid),
            "native_grid": np.array(s.native_grid), "patch_size": np.int64(s.patch_size),
            "pos_embed_kind": np.array(s.pos_embed_kind)}

