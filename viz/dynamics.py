"""A model learning to see: the snapshots of one training run (``python -m vit.train ... --snapshot-every N``) on one
photo, one frame per snapshot — the rollout on the photo, the position-embedding similarity (the paper's Figure 7,
centre), the mean attention distance of every head, and the run's validation accuracy and
``pos_neighbour_similarity`` up to that epoch.

    python -m viz.dynamics weights/NAME.snapshots photo.png --out DIR   ->  DIR/dynamics.gif, DIR/dynamics.npz
    (the command's options and files: ``viz.cli.dynamics``)

From Python (a page with a slider): ``series = viz.analysis.snapshots.load_series(folder, photo)`` runs every
snapshot once; ``view = DynamicsView(series)`` then draws ``view.frame(i)`` from arrays in milliseconds.
``pos_neighbour_similarity`` (see ``viz.maps.embeddings.neighbour_similarity``) is the number that says the 2-D grid
has been learnt: about -1/N at initialisation, clearly positive once neighbouring patches share embeddings.
"""
from __future__ import annotations

import sys

import numpy as np
from PIL import Image

from .drawing import plots, render
from .drawing.grids import similarity_mosaic
from .maps.distance import patch_distances
from .records import SnapshotSeries

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
    """Draws the frames of one ``SnapshotSeries``. The two plots' axes, and the run's whole curves, are drawn once
    (``plots.Backdrop``); a frame adds only its epoch's points, so ``frame(i)`` takes a few milliseconds."""

    def __init__(self, series: SnapshotSeries, cmap: str = render.DEFAULT_CMAP, alpha: float = 0.6):
        if len(series) == 0:
            raise ValueError("The series has no snapshots! Expected at least one.")
        self.series, self.cmap, self.alpha = series, cmap, alpha
        s = series
        self.uniform = float(patch_distances(s.grid, s.patch_size).mean())
        self.distance_top = plots.nice_top(max(float(s.mean_distance.max()), self.uniform))
        self._distance = plots.Backdrop(self._distance_figure())
        self._progress = plots.Backdrop(self._progress_figure())
        self.photo_scale = max(1, PANEL // max(s.image.size))

    def _distance_figure(self):
        s = self.series
        fig = plots.new_figure(*PLOT_SIZE)
        ax = fig.add_axes((0.16, 0.18, 0.8, 0.72))
        L = s.mean_distance.shape[1]
        ax.set_xlim(-0.7, L - 0.3)
        ax.set_ylim(0, self.distance_top)
        ax.set_xticks(range(L))
        ax.set_xlabel("block", fontsize=8)
        ax.set_ylabel("pixels", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.set_title("mean attention distance (dot: head)", fontsize=9)
        ax.axhline(self.uniform, color="gray", linestyle="--", linewidth=0.8)
        ax.text(L - 0.4, self.uniform, "uniform", color="gray", fontsize=7, ha="right", va="bottom")
        ax.grid(alpha=0.3)
        return fig

    def _progress_figure(self):
        s = self.series
        fig = plots.new_figure(*PLOT_SIZE)
        ax = fig.add_axes((0.14, 0.18, 0.82, 0.72))
        last = max(int(s.epochs[-1]), 1)
        ax.set_xlim(-0.02 * last, 1.02 * last)
        neighbours = s.pos_neighbour_similarity
        low = min(-0.1, float(np.nanmin(neighbours)) - 0.05) if np.isfinite(neighbours).any() else -0.1
        ax.set_ylim(low, 1.02)
        ax.axhline(0, color="gray", linewidth=0.6)
        ax.plot(s.epochs, s.val_accuracy, color="tab:green", linewidth=1.2, label="validation accuracy")
        if np.isfinite(neighbours).any():
            ax.plot(s.epochs, neighbours, color="tab:purple", linewidth=1.2, label="pos_neighbour_similarity")
        else:
            ax.plot([], [], color="tab:purple", label="no position embedding")
        ax.set_xlabel("epoch", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.set_title("the run", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
        return fig

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

    def caption(self, i: int) -> str:
        """The frame's title line (ASCII: Pillow's bundled font)."""
        s = self.series
        label, p = s.top1[i]
        neighbours = s.pos_neighbour_similarity[i]
        position = "no position embedding" if not np.isfinite(neighbours) else \
            f"pos_neighbour_similarity {neighbours:+.3f}"
        return (f"{s.name}: epoch {int(s.epochs[i])} | validation accuracy {s.val_accuracy[i]:.3f} | {position} | "
                f"this photo: {label} ({p:.2f})")

    def frame(self, i: int) -> Image.Image:
        """Frame of snapshot ``i`` (0-based; negative counts from the end) as a PIL RGB image."""
        s = self.series
        if not -len(s) <= i < len(s):
            raise ValueError(f"Snapshot {i} does not exist! Expected 0 <= i < {len(s)}.")
        i %= len(s)
        photo = s.image
        if self.photo_scale > 1:
            photo = photo.resize((photo.width * self.photo_scale, photo.height * self.photo_scale),
                                 Image.Resampling.NEAREST)
        rollout = render.with_caption(render.overlay(photo, s.rollout[i], self.cmap, self.alpha), "rollout (CLS)")
        if s.pos_similarity.shape[-1]:
            position = _similarity_tiles(s.pos_similarity[i], s.native_grid)
        else:
            position = render.message_image("No position embedding (pos_embed_kind 'none'): nothing to show.",
                                            (PANEL, PANEL))
        position = render.with_caption(position, "position embedding similarity")
        distance = self._distance.render(lambda ax: self._distance_artists(ax, i))
        progress = self._progress.render(lambda ax: self._progress_artists(ax, i))
        return render.with_caption(_hstack([rollout, position, distance, progress]), self.caption(i), font_size=15)

    def frames(self) -> list[Image.Image]:
        return [self.frame(i) for i in range(len(self.series))]


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


if __name__ == "__main__":   # python -m viz.dynamics: the command is viz.cli.dynamics
    from .cli.dynamics import main
    sys.exit(main())
