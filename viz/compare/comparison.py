"""Two checkpoints on the same photo, as arrays: ``compare`` puts both sides' maps on the same photo pixels and
``comparison_record`` says what changed (compare.json). The pictures are in ``figure``.

The two models may differ in size, patch grid and preprocessing: every map is resampled from its own grid onto the
same photo pixels, the overlap of the two centre crops (``align``), at model A's resolution, and divided by its mean
there (1 = a uniform map's share of a pixel), so A, B and B − A are comparable distributions over the same pixels.

Extension point: ``compare(..., extra_maps={"Grad-CAM, class 285": (map_a, map_b)})`` adds any pair of maps
computed by each model for the same target (an explanation method's class map): each map is (h, w) over its model's
input crop — a patch-grid map or a per-pixel one, signed or not — and becomes one more row of the figure and one
more entry of the record's differences.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image

from vit.preprocess import upright_rgb

from .. import panels
from ..i18n import t
from ..maps import readout
from ..maps.layout import layer_index
from ..records import Analysis
from .align import Box, common_box, output_size, relative_to_uniform, resample_onto, same_box


@dataclass(frozen=True)
class Side:
    """One checkpoint's analysis of the photo and what is needed to name it and to place its maps on the photo."""
    analysis: Analysis
    name: str                # the checkpoint's file name
    sha256: str              # the first 8 hex digits of the file's sha256
    crop_box: Box            # the part of the upright photo the model saw (left, top, right, bottom), photo pixels
    preprocess: dict | None = None  # how the photo became its input (``vit.LoadedModel.preprocess_record``)
    assumptions: tuple[str, ...] = ()  # what its loader assumed rather than read (``vit.LoadedModel.assumptions``)

    @property
    def label(self) -> str:
        return f"{self.name} ({self.sha256})"


@dataclass(frozen=True)
class ClassChange:
    """One class in both models: its probability in A and in B (None when that model has no class of this name)."""
    label: str
    a: float | None
    b: float | None

    @property
    def change(self) -> float | None:
        """B − A, or None when one of the models lacks the class."""
        return None if self.a is None or self.b is None else self.b - self.a


@dataclass(frozen=True)
class MapPair:
    """One map of A and of B on the common area (H, W), each divided by its mean absolute value there (1 = the share
    of a pixel under a uniform map)."""
    title: str
    a: np.ndarray
    b: np.ndarray

    @property
    def difference(self) -> np.ndarray:
        """B − A (H, W): positive where B puts more of its mass than A."""
        return self.b - self.a

    def stats(self) -> dict:
        """total_variation: ½·Σ|p_B − p_A| of the two maps as distributions over the pixels (0: the same map,
        1: no overlap; = half the mean of |B − A|); max_abs_difference of B − A; correlation: Pearson's r over the
        pixels (None when a map is constant)."""
        d = self.difference.astype(np.float64)
        a, b = self.a.ravel().astype(np.float64), self.b.ravel().astype(np.float64)
        r = None if a.std() == 0 or b.std() == 0 else float(np.corrcoef(a, b)[0, 1])
        return {"total_variation": float(0.5 * np.abs(d).mean()), "max_abs_difference": float(np.abs(d).max()),
                "correlation": r}


@dataclass(frozen=True)
class Comparison:
    a: Side
    b: Side
    photo: Image.Image                  # the common area of the photo, as large as the maps (W, H)
    box: Box                            # the common area in photo pixels
    alignment: str                      # how the crops were aligned, in words (printed on the figure)
    maps: dict[str, MapPair]            # "rollout", "attention", then the extra maps, in order
    top_a: tuple[ClassChange, ...]      # A's top-k, with B's probability of the same classes
    top_b: tuple[ClassChange, ...]      # B's top-k, with A's probability
    layers: tuple[int, int]             # the block of the attention maps in A and in B (0-based)
    head: int | None                    # the head of the attention maps, None for the mean of heads
    distance_a: np.ndarray              # (L_a, H_a) mean attention distance, pixels of A's input
    distance_b: np.ndarray              # (L_b, H_b) the same for B, converted to pixels of A's input
    distance_unit: str
    probability_tv: float | None        # ½·Σ|p_B − p_A| over all classes when both have the same classes, else None
    photo_size: tuple[int, int] = (0, 0)   # (W, H) of the upright photo (the alignment says where the crops lie in it)
    fusion: str = "mean"                # the rollout's head fusion and discard ratio (its title says them)
    discard_ratio: float = 0.0
    query: str = "CLS"                  # the attention maps' query, as the captions name it

    def alignment_in(self, lang: str = "en") -> str:
        """``alignment`` in ``lang``."""
        return alignment_text(self.a, self.b, self.box, self.photo_size, self.photo.size[::-1], lang)

    def title_in(self, name: str, lang: str = "en") -> str:
        """The title of map ``name`` in ``lang``: the rollout's and the attention's from their options, an extra
        map's as given."""
        if name == "rollout":
            discard = t("compare.discard", lang, ratio=self.discard_ratio) if self.discard_ratio else ""
            return t("compare.rollout", lang, fusion=t(f"fusion.{self.fusion}", lang), discard=discard)
        if name == "attention":
            heads = t("name.mean_heads", lang) if self.head is None else t("name.head", lang, head=self.head)
            return t("compare.attention", lang, query=self.query, la=self.layers[0], lb=self.layers[1], heads=heads)
        return self.maps[name].title

    def unit_in(self, lang: str = "en") -> str:
        """``distance_unit`` in ``lang``."""
        h, w = self.a.analysis.input_size
        return t("compare.unit", lang, height=h, width=w)


def _top_changes(first: Analysis, second: Analysis, k: int, first_is_a: bool) -> tuple[ClassChange, ...]:
    """``first``'s top-k with ``second``'s probability of the class of the same name."""
    index = {label: i for i, label in reversed(list(enumerate(second.labels)))}  # first occurrence wins
    out = []
    for label, p in first.top_k(k):
        j = index.get(label)
        q = None if j is None else float(second.probabilities[j])
        out.append(ClassChange(label, p, q) if first_is_a else ClassChange(label, q, p))
    return tuple(out)


def _describe_box(box: Box, lang: str = "en") -> str:
    return t("compare.box", lang, x0=box[0], x1=box[2], y0=box[1], y1=box[3])


def alignment_text(a: Side, b: Side, box: Box, photo_size: tuple[int, int], size: tuple[int, int],
                   lang: str = "en") -> str:
    """The sentence the figure prints about how the two crops were put on the same pixels (in ``lang``)."""
    W, H = photo_size
    if same_box(a.crop_box, b.crop_box):
        where = t("compare.same_crop", lang, width=W, height=H, box=_describe_box(box, lang))
    else:
        where = t("compare.other_crops", lang, a=_describe_box(a.crop_box, lang), b=_describe_box(b.crop_box, lang),
                  width=W, height=H, box=_describe_box(box, lang))
    ga, gb = a.analysis.grid, b.analysis.grid
    return t("compare.resampled", lang, where=where, ga=f"{ga[0]}×{ga[1]}", gb=f"{gb[0]}×{gb[1]}", width=size[1],
             height=size[0])


def compare(photo: Image.Image, a: Side, b: Side, layer: int = -1, head: int | None = None, fusion: str = "mean",
            discard_ratio: float = 0.0, top_k: int = 5,
            extra_maps: dict[str, tuple[np.ndarray, np.ndarray]] | None = None) -> Comparison:
    """Compare A and B on ``photo`` (the original upload; both analyses must come from it).

    ``layer``: the block of the CLS-attention maps, in both models (negative counts from each model's end, so -1
    is the last block of each); ``head``: a head both models have, or None for the mean of heads. ``fusion`` and
    ``discard_ratio`` are the rollout's. ``extra_maps``: {title: (map of A, map of B)}, see the module docstring.
    """
    depth = min(a.analysis.depth, b.analysis.depth)
    if not -depth <= layer < depth:
        raise ValueError(f"Block {layer} does not exist in both models! A has {a.analysis.depth} blocks and B "
                         f"{b.analysis.depth}: expected -{depth} <= layer < {depth}.")
    la, lb = layer_index(layer, a.analysis.depth), layer_index(layer, b.analysis.depth)
    heads = min(_heads(a.analysis, la), _heads(b.analysis, lb))
    if head is not None and not -heads <= head < heads:
        raise ValueError(f"Head {head} does not exist in both models (A has {a.analysis.heads} heads, B "
                         f"{b.analysis.heads})! Expected 0 <= head < {heads}, or the mean of heads.")
    upright = upright_rgb(photo)
    box = common_box(common_box(a.crop_box, b.crop_box), (0, 0, *upright.size))   # padding (fit) is no photo
    size = output_size(box, a.crop_box, a.analysis.input_size)          # (H, W) at A's resolution
    if same_box(box, a.crop_box) and size == a.analysis.input_size:
        common_photo = a.analysis.image                                  # exactly the pixels A saw
    else:
        common_photo = upright.resize((size[1], size[0]), Image.Resampling.BICUBIC, box=box)

    def on_common(values: np.ndarray, side: Side) -> np.ndarray:
        return relative_to_uniform(resample_onto(values, side.crop_box, box, size))

    def pair(title: str, map_a: np.ndarray, map_b: np.ndarray) -> MapPair:
        return MapPair(title, on_common(map_a, a), on_common(map_b, b))

    def rollout(s: Side) -> np.ndarray:
        """Through every block (and, in a model of stages, every merge: docs/swin.md)."""
        return panels.rollout_of(s.analysis, fusion, discard_ratio)

    def cls_attention(s: Side, block: int) -> np.ndarray:
        """The query's attention (the CLS row; SigLIP's probe, mean-pooled models' mean of patch rows: never
        token 0 of a model without a CLS token, which is a patch), on the block's own grid."""
        return panels.attention_of(s.analysis, block, head)

    head_name = "mean of heads" if head is None else f"head {head}"
    queries = {readout.query_name(s.analysis.readout) for s in (a, b)}
    query = " / ".join(sorted(queries)) if len(queries) > 1 else queries.pop()
    maps = {"rollout": pair(f"rollout ({fusion} fusion" + (f", discard {discard_ratio:g})" if discard_ratio else ")"),
                            rollout(a), rollout(b)),
            "attention": pair(f"{query} attention, block {la} of A / {lb} of B, {head_name}",
                              cls_attention(a, la), cls_attention(b, lb))}
    for title, (map_a, map_b) in (extra_maps or {}).items():
        if title in maps:
            raise ValueError(f"Extra map name {title!r} is taken! Expected a name other than {sorted(maps)}.")
        maps[title] = pair(title, map_a, map_b)

    # mean attention distance: B's pixels converted to A's (both measure distances on the photo)
    pixel_a = (a.crop_box[2] - a.crop_box[0]) / a.analysis.input_size[1]   # photo pixels per input pixel
    pixel_b = (b.crop_box[2] - b.crop_box[0]) / b.analysis.input_size[1]
    same_labels = tuple(a.analysis.labels) == tuple(b.analysis.labels)
    tv = float(0.5 * np.abs(b.analysis.probabilities.astype(np.float64) - a.analysis.probabilities).sum()) \
        if same_labels else None
    unit = t("compare.unit", "en", height=a.analysis.input_size[0], width=a.analysis.input_size[1])
    return Comparison(
        a=a, b=b, photo=common_photo, box=box, alignment=alignment_text(a, b, box, upright.size, size), maps=maps,
        top_a=_top_changes(a.analysis, b.analysis, top_k, True), top_b=_top_changes(b.analysis, a.analysis, top_k, False),
        layers=(la, lb), head=head, distance_a=_distances(a.analysis),
        distance_b=_distances(b.analysis) * (pixel_b / pixel_a), distance_unit=unit, probability_tv=tv,
        photo_size=upright.size, fusion=fusion, discard_ratio=discard_ratio, query=query)


def _heads(a, layer: int) -> int:
    """Heads of block ``layer`` (a model of stages: the stage's)."""
    return a.architecture.block(layer).heads


def _distances(a) -> np.ndarray:
    """(L, H) mean attention distance in pixels of the input (NaN past a block's heads, in a model of stages)."""
    return panels.mean_distance_of(a)


# --- what compare.json holds -------------------------------------------------------------------------------------

def _class_rows(rows: tuple[ClassChange, ...], own: str) -> list[dict]:
    other = "b" if own == "a" else "a"
    return [{"label": r.label, "probability": getattr(r, own), "probability_in_other": getattr(r, other),
             "change_b_minus_a": r.change} for r in rows]


def comparison_record(c: Comparison) -> dict:
    """Plain data for compare.json: ``models`` [A, B], each with its role, file name, sha256 prefix (8 hex digits),
    shapes, crop box, preprocessing, what its loader assumed and top-k (each class with the other model's probability
    and the change B − A); the
    ``alignment`` of the crops; the ``attention`` block and head; and the ``differences``."""
    def model(side: Side, rows, own: str) -> dict:
        s = side.analysis
        return {"role": own.upper(), "name": side.name, "sha256": side.sha256, "input_size": list(s.input_size),
                "grid": list(s.grid),
                "patch_size": s.patch_size, "depth": s.depth, "heads": s.heads,
                "crop_box": [round(v, 3) for v in side.crop_box],
                **({"preprocess": side.preprocess} if side.preprocess is not None else {}),
                "assumptions": list(side.assumptions), "top_k": _class_rows(rows, own)}

    da, db = c.distance_a.mean(axis=1), c.distance_b.mean(axis=1)
    return {
        "models": [model(c.a, c.top_a, "a"), model(c.b, c.top_b, "b")],
        "alignment": {"common_box": [round(v, 3) for v in c.box], "size": [c.photo.height, c.photo.width],
                      "text": c.alignment},
        "attention": {"layer_a": c.layers[0], "layer_b": c.layers[1], "head": c.head},
        "differences": {
            "top1_same": c.top_a[0].label == c.top_b[0].label if c.top_a and c.top_b else None,  # None: a backbone
            "probability_total_variation": c.probability_tv,
            "maps": {name: {"title": p.title, **p.stats()} for name, p in c.maps.items()},
            "mean_distance": {"unit": c.distance_unit, "a_by_block": da.tolist(), "b_by_block": db.tolist(),
                              "change_by_block": (db - da).tolist() if da.shape == db.shape else None},
        },
    }
