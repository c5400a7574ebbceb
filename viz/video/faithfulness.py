"""Deletion and insertion over a clip's tubelets: does removing what a class map ranks first take the class away, and
does revealing it first bring the class back? The photo check (``viz.trust.curves``: Petsiuk et al. 2018, "RISE";
Chefer et al. 2021, Sec. 4.2) with the tubelet as the unit.

A tubelet is one patch token of the first step: time position τ × patch (r, c), i.e. the ``tubelet`` input frames
τ·t … τ·t + t − 1 times the P×P pixels of patch (r, c); a clip has M = T'·gh·gw of them. As for a photo:

- order the tubelets by the map (T', gh, gw), highest first, ties in index order (τ, then row, then column):
  ``viz.trust.curves.patch_order``;
- at each fraction f of ``viz.trust.curves.fractions(points)`` (0, 0.1, …, 1 by default), r = round(f·M):
  **deletion** keeps every tubelet but the first r of the order, **insertion** keeps only those first r
  (``viz.trust.curves.keep_sets``);
- a removed tubelet's pixels show the baseline instead, in pixel space (every video family reads the same clip, a
  TimeSformer's groups included): ``mean_colour`` (the default) the clip's mean colour, the channel means of the model
  input over every frame and pixel, or ``blur`` each frame blurred in space with a Gaussian of σ = P/2 (±2σ kernel,
  reflect padding), not across time; both are the photo protocols' fills (``viz.trust.protocols.fill``) applied to
  the clip's frames;
- the curve is the explained class's softmax probability at each fraction, its area
  ``np.trapezoid(curve, fractions)`` (not normalised; ``viz.trust.curves.auc``): deletion lower is better,
  insertion higher; each area with its error ``auc_error``, and the gains over a random order
  (``viz.explain.baselines.random_values``, seed 0, on the (T', gh, gw) grid) on the same clip.

The perturbed clips run ``batch`` at a time under ``torch.inference_mode`` (memory: ``batch`` forwards of the
plain model, fused attention); a clip that two curves share (f = 0 of deletion and f = 1 of insertion are the
whole clip; the other ends are the baseline alone) runs once. ``ClipCheck`` runs batch by batch (``steps``), so a
caller can report progress or stop between batches.
"""
from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np
import torch
from matplotlib.figure import Figure

from vit.architecture import Architecture, architecture_of

from ..drawing import screens
from ..drawing.fonts import use_language_font
from ..drawing.plots import new_figure
from ..explain.baselines import random_values
from ..i18n import language, t
from ..trust.curves import POINTS, Faithfulness, fractions, keep_sets
from ..trust.figure import curve_axes
from ..trust.protocols import fill
from ..trust.report import MethodTrust, TrustReport

VIDEO_PROTOCOLS = ("mean_colour", "blur")     # how a removed tubelet is removed (the photo protocols' pixel fills)
BATCH = 4                                     # perturbed clips per forward by default


def clip_fill(x: torch.Tensor, protocol: str, patch: int) -> torch.Tensor:
    """What a removed tubelet's pixels show, for clip x (1, F, C, H, W) -> (1, F, C, H, W): the clip's channel means
    over every frame and pixel (``mean_colour``), or each frame blurred in space (``blur``)."""
    if protocol not in VIDEO_PROTOCOLS:
        raise ValueError(f"Unknown protocol {protocol!r} for a video! Expected one of {', '.join(VIDEO_PROTOCOLS)}.")
    if protocol == "mean_colour":
        return x.mean(dim=(1, 3, 4), keepdim=True).expand_as(x)
    return fill(x[0], "blur", patch)[None]                                          # the frames as a batch


def tubelet_mask(keep: np.ndarray, architecture: Architecture) -> torch.Tensor:
    """Kept tubelet indices (over the (T', gh, gw) grid, flat) -> (F, H, W) float mask, 1 on their pixels of their
    frames."""
    block = architecture.blocks[0]
    T, (gh, gw), P = block.frames, block.grid, architecture.patch_size
    mask = np.zeros(T * gh * gw, dtype=np.float32)
    mask[np.asarray(keep, dtype=np.int64)] = 1.0
    mask = mask.reshape(T, gh, gw).repeat(block.tubelet, 0).repeat(P, 1).repeat(P, 2)
    return torch.from_numpy(mask)


def perturbed_clips(x: torch.Tensor, keeps: Sequence[np.ndarray], architecture: Architecture,
                    filled: torch.Tensor) -> torch.Tensor:
    """Clip x (1, F, C, H, W) and one kept set per output -> (B, F, C, H, W): the kept tubelets' pixels, the
    ``filled`` pixels (``clip_fill``) elsewhere."""
    mask = torch.stack([tubelet_mask(k, architecture) for k in keeps])[:, :, None].to(x.device, x.dtype)
    return x * mask + filled * (1 - mask)


class ClipCheck:
    """Deletion and insertion curves of a clip's class maps (module docstring), run batch by batch.

        check = ClipCheck(model, x, index, {"gradcam": cam, "gae": gae})
        for done, total in check.steps(): ...       # each step: one forward of ``batch`` perturbed clips
        report = check.result()                     # a viz.trust.TrustReport, maps (T', gh, gw)

    model: a video model in eval mode; x: one clip (1, F, C, H, W) as the model reads it; index: the explained class;
    maps: {method: (T', gh, gw)}; the random order is always run (the report's ``random``)."""

    def __init__(self, model, x: torch.Tensor, index: int, maps: dict[str, np.ndarray], *,
                 protocol: str = "mean_colour", points: int = POINTS, batch: int = BATCH, name: str = ""):
        if x.ndim != 5 or x.shape[0] != 1:
            raise ValueError(f"Wrong input shape! Expected one clip (1, frames, channels, H, W) but got "
                             f"{tuple(x.shape)}.")
        if batch < 1:
            raise ValueError(f"batch must be at least 1 but got {batch}!")
        self.model, self.index, self.protocol, self.batch, self.name = model, int(index), protocol, batch, name
        self.x = x.to(next(model.parameters()).device)
        self.architecture = architecture_of(model, x)
        shape = (self.architecture.frames, *self.architecture.grid)                  # (T', gh, gw)
        self.maps = {n: np.asarray(m, dtype=np.float32).reshape(shape) for n, m in maps.items()}
        self.maps["random"] = random_values(shape)
        self.fractions = fractions(points)
        self.filled = clip_fill(self.x, protocol, self.architecture.patch_size)
        self.sets = {n: keep_sets(m, self.fractions) for n, m in self.maps.items()}
        self.clips: dict[bytes, np.ndarray] = {}                 # one run per distinct kept set
        for kinds in self.sets.values():
            for keeps in kinds.values():
                for keep in keeps:
                    self.clips.setdefault(keep.tobytes(), keep)
        self.keys = list(self.clips)
        self.probability: dict[bytes, float] = {}

    @property
    def total(self) -> int:
        """Forwards in all: the distinct perturbed clips, ``batch`` to a forward."""
        return -(-len(self.keys) // self.batch)

    def steps(self) -> Iterator[tuple[int, int]]:
        """Runs the perturbed clips ``batch`` at a time, yielding (forwards done, forwards in all) after each."""
        for step in range(len(self.probability) // self.batch, self.total):
            keys = self.keys[step * self.batch:(step + 1) * self.batch]
            clips = perturbed_clips(self.x, [self.clips[k] for k in keys], self.architecture, self.filled)
            with torch.inference_mode():
                p = torch.softmax(self.model(clips).float(), dim=-1)[:, self.index].cpu().numpy()
            self.probability.update(zip(keys, (float(v) for v in p)))
            yield step + 1, self.total

    def curve(self, method: str, kind: str) -> np.ndarray:
        """(points,) the class's probability at each fraction of ``kind`` ("deletion", "insertion") for ``method``."""
        return np.array([self.probability[k.tobytes()] for k in self.sets[method][kind]], dtype=np.float64)

    def result(self, target: dict | None = None) -> TrustReport:
        """Every curve, run first if not yet: a ``TrustReport`` (maps (T', gh, gw), protocol, fractions; ``random``
        the random order) whose ``as_json`` and ``gains`` are the photo check's."""
        for _ in self.steps():
            pass
        done = {n: Faithfulness.from_curves(self.curve(n, "deletion"), self.curve(n, "insertion"), self.fractions)
                for n in self.maps}
        whole = self.probability[self.sets["random"]["deletion"][0].tobytes()]
        methods = {n: MethodTrust(n, self.maps[n], done[n]) for n in self.maps if n != "random"}
        return TrustReport(target or {"index": self.index, "name": self.name}, whole, methods, done["random"],
                           self.protocol, tuple(float(f) for f in self.fractions))


def trust_json(report: TrustReport) -> dict:
    """The entries result.json's "explain" gains, named as the photo CLI names them: "faithfulness" {method:
    {deletion_auc, insertion_auc, deletion, insertion, auc_error}} with "random" (the reference order) among them,
    "perturbation" and "gains" {method: {deletion_gain, insertion_gain}}."""
    info = report.as_json()
    info["faithfulness"]["random"] = report.random.as_json()
    return {**info, "perturbation": report.protocol, "gains": {n: report.gains(n) for n in report.methods}}


def curves_figure(report: TrustReport, lang: str = "en", narrow: bool = False) -> Figure:
    """The deletion and insertion curves of every method over the clip's tubelets, the random order dashed, each
    method labelled with its name on the Video tab (``video.method.*``) and its two areas: side by side, or for a
    narrow screen (``narrow``) one under the other, ``screens.NARROW_INCHES`` wide with the title wrapped
    (``viz.drawing.screens``)."""
    lang = language(lang)
    title = t("picture.video_trust", lang, name=report.target.get("name", ""), probability=report.probability,
              variant=t(f"video.trust.{report.protocol}", lang))
    if narrow:
        title = screens.wrap(title, screens.MIN_POINTS + 1, screens.NARROW_INCHES - 0.2)
        lines = len(report.methods) + 1                                                  # the legend's, one each
        top, panel, legend = 0.25 + 0.17 * (title.count("\n") + 1), 2.5, 0.2 * lines + 0.15   # inches
        height = top + 2 * panel + legend
        fig = new_figure(screens.NARROW_INCHES, height, screens.NARROW_DPI)
        fig.suptitle(title, fontsize=screens.MIN_POINTS + 1, y=1 - 0.08 / height, va="top")
        boxes = [(0.2, 1 - (top + (k + 1) * panel - 0.55) / height, 0.76, (panel - 0.9) / height) for k in range(2)]
        where = dict(loc="lower center", bbox_to_anchor=(0.5, 0.0), ncol=1)
    else:
        fig = new_figure(10.0, 4.2)
        fig.suptitle(title, fontsize=screens.MIN_POINTS + 2)
        boxes = [(0.07 + 0.48 * k, 0.3, 0.4, 0.56) for k in range(2)]
        where = dict(loc="lower center", ncol=2)
    x = np.asarray(report.fractions)
    for box, kind in zip(boxes, ("deletion", "insertion")):
        ax = fig.add_axes(box)
        for name, m in report.methods.items():
            f = m.faithfulness
            ax.plot(x, getattr(f, kind), linewidth=1.4, label=f"{t(f'video.method.{name}', lang)}: " +
                    t("trust.aucs", lang, deletion=f.deletion_auc, insertion=f.insertion_auc))
        r = report.random
        ax.plot(x, getattr(r, kind), color="gray", linestyle="--", linewidth=1.0, label=f"{t('method.random', lang)}: " +
                t("trust.aucs", lang, deletion=r.deletion_auc, insertion=r.insertion_auc))
        curve_axes(ax, kind, lang, "video.trust.axis.removed", "video.trust.axis.kept")
    fig.legend(handles=fig.axes[-1].get_lines(), fontsize=screens.MIN_POINTS, frameon=False, **where)
    return use_language_font(fig, lang)
