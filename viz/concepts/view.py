"""What the Concepts tab shows, and what ``python -m viz IMAGE --concepts DIR`` writes: Gradio-free, one photo and
one SAE at a time.

    source = open_concepts("out/sae", loaded)            # the SAE, checked against the model; its top patches, labels
    pc = photo_concepts(loaded, source, a.image)         # the photo up to the SAE's layer: every patch's codes
    strongest(pc, source)                                # [Concept(latent, mean, max, label)], the 8 strongest
    strongest_view(source, pc)                           # each one's map over the photo, its top patches beside it
    strongest_rows(source, pc).at(y)                     # the same picture, and the latent of the row under a click
    concept_view(source, pc, latent)                     # one of them (one row of the picture above)
    top_patches_view(source, latent)                     # a latent's 64 strongest patches of the training folder
    photo_view(pc, (row, col)); patch_at(pc, x, y)       # the photo to click on, and the patch under a click
    latents_at(pc, source, row, col)                     # [Concept] active at that patch, strongest first
    e = edit(loaded, source, pc, {latent: 0.0})          # switched off (or scaled by any factor): the new top-5
    edit_view(source, pc, e)                             # (the rollout before | after | what was removed, one line)

Every picture takes ``narrow``: drawn for a phone (``viz.concepts.pictures``). A photo's codes are computed once
(``photo_concepts``: the blocks up to the SAE's layer); every view after that reads them, and only ``edit`` runs the
model again (the blocks from the SAE's layer on, with the latents' decoder directions times their activations
removed from, or added to, the layer's patch tokens). Latents, rows and columns
are 0-based; a latent's "mean" is its activation averaged over the photo's patches (the ranking), "max" its largest.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse
import torch
from PIL import Image

from vit.architecture import require_one_sequence
from vit.checkpoints.files import regular_file
from vit.image_file import open_image
from vit.inside.hooks import hook_tokens, run_edited_at
from vit.preprocess import Preprocess

from ..cache import Cache
from ..drawing import render, screens
from ..drawing.fonts import picture_language
from ..folders.identity import weights_digest
from ..i18n import t
from ..maps.layout import pixel_to_patch
from ..maps.readout import readout_rollout_map
from ..maps.rollout import fuse_heads
from . import pictures
from .metrics import kl_divergence, patch_edit
from .published import open_sae
from .sae import SparseAutoencoder
from .top_patches import TopPatches

STRONGEST = 8          # latents in the strongest-concepts picture, concepts.png and result.json
THUMBS = 8             # top patches beside each of them
TOP = 64               # a latent's top patches
PHOTO_SIZE = 448       # longer side of the photo to click on
LABELS = "labels.json"
THUMBNAILS = Cache(None, 24 * 2**20)    # training photos cropped as the model saw them, at the largest thumbnail size


@dataclass
class Concept:
    """One latent on one photo (or one patch)."""
    latent: int
    mean: float            # over the photo's patches (at one patch: its activation there)
    max: float
    label: str = ""

    def to_dict(self) -> dict:
        return {"latent": self.latent, "mean": self.mean, "max": self.max, "label": self.label}


@dataclass
class ConceptsSource:
    """An SAE opened for one model, with what browsing it needs."""
    sae: SparseAutoencoder
    path: Path
    top: TopPatches | None = None          # top_patches.npz, when the SAE was trained here
    folder: Path | None = None             # the photos top_patches.npz names (None: no thumbnails)
    labels: dict[int, str] = field(default_factory=dict)
    preprocess: Preprocess | None = None   # how the training photos became the model's input (for thumbnails)
    grid: tuple[int, int] | None = None    # the training inputs' patch grid

    def label(self, latent: int) -> str:
        return self.labels.get(int(latent), "")

    @property
    def nbytes(self) -> int:
        """Memory it holds: the SAE's weights and the top patches' arrays."""
        arrays = [] if self.top is None else [self.top.image_index, self.top.row, self.top.col, self.top.activation]
        return sum(b.numel() * b.element_size() for b in self.sae.buffers()) + sum(a.nbytes for a in arrays)

    def describe(self, lang: str = "en") -> str:
        sae, info = self.sae, self.sae.info
        k = f", k = {sae.k}" if sae.k else ""
        return t("concepts.line.sae", lang, layer=info.layer, hook=t(f"concepts.hook.{info.hook_point}", lang),
                 latents=sae.latents, kind=sae.kind, k=k, source=t(f"concepts.source.{info.source}", lang))


def read_labels(path: str | Path) -> dict[int, str]:
    """A labels file -> {latent: label}: a JSON object {"12": "grass", …}, or text lines "12<TAB>grass" (or
    "12: grass"); blank lines and lines starting with # are skipped. ValueError naming the line that is neither."""
    path = regular_file(path)
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path} is not readable JSON ({error}).") from None
        if not isinstance(data, dict):
            raise ValueError(f"{path} must hold an object of latent numbers and labels, e.g. {{\"12\": \"grass\"}}.")
        pairs = list(data.items())
    else:
        pairs = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            key, sep, label = line.partition("\t") if "\t" in line else line.partition(":")
            if not sep:
                raise ValueError(f"{path}, line {number}: expected 'LATENT<TAB>LABEL' or 'LATENT: LABEL' but got "
                                 f"{line.strip()[:40]!r}.")
            pairs.append((key, label))
    labels = {}
    for key, label in pairs:
        try:
            labels[int(str(key).strip())] = str(label).strip()
        except ValueError:
            raise ValueError(f"{path}: {str(key)[:20]!r} is not a latent number.") from None
    return labels


def check_fit(sae: SparseAutoencoder, loaded, lang: str = "en") -> None:
    """ValueError, in ``lang``, when the SAE was not made for this model: another width, a layer it lacks, or (an SAE
    trained here) another model's weights."""
    require_one_sequence(loaded.model, "Concepts (sparse autoencoders on one layer's patch tokens)")
    width, depth = loaded.model.cfg.embed_dim, len(loaded.model.blocks)
    if sae.d_model != width:
        raise ValueError(t("concepts.error.width", lang, sae=sae.d_model, model=width))
    if not 0 <= sae.info.layer < depth:
        raise ValueError(t("concepts.error.layer", lang, layer=sae.info.layer, last=depth - 1))
    if sae.info.weights_sha256 and sae.info.weights_sha256 != weights_hash(loaded):
        raise ValueError(t("concepts.error.weights", lang, trained=sae.info.model or sae.info.weights))


def weights_hash(loaded) -> str:
    """The hash of the model's first and last tensors (``viz.folders.identity``; what sae.json records)."""
    return weights_digest(loaded.model)


def open_concepts(path: str | Path, loaded, folder: str | Path | None = None, labels: str | Path | None = None,
                  lang: str = "en") -> ConceptsSource:
    """The SAE in ``path`` (ours, sae-lens' or ViT-Prisma's: ``open_sae``) checked against ``loaded``, with its
    top_patches.npz, the photo folder they come from (``folder``, else the one sae.json records) and its labels
    (``labels``, else DIR/labels.json when there is one)."""
    path = Path(path)
    sae = open_sae(path)
    check_fit(sae, loaded, lang)
    directory = path if path.is_dir() else path.parent
    extra = sae.info.extra
    top = TopPatches.load(directory / "top_patches.npz") if (directory / "top_patches.npz").is_file() else None
    folder = Path(folder) if folder is not None else (Path(extra["folder"]) if extra.get("folder") else None)
    if labels is None and (directory / LABELS).is_file():
        labels = directory / LABELS
    preprocess = None
    if extra.get("preprocess"):
        preprocess = Preprocess.from_dict({k: v for k, v in extra["preprocess"].items() if k != "mode"})
    return ConceptsSource(sae, path, top, folder if folder is not None and folder.is_dir() else None,
                          read_labels(labels) if labels is not None else {}, preprocess,
                          tuple(extra["grid"]) if extra.get("grid") else None)


@dataclass
class PhotoConcepts:
    """One photo through the model up to the SAE's layer, and its patches' codes."""
    image: Image.Image                     # the model's input (the crop it saw)
    grid: tuple[int, int]
    num_prefix: int
    codes: scipy.sparse.csc_matrix         # (N, M) the patches' activations, row-major patches; a latent a column
    x: torch.Tensor                        # (1, 3, H, W) the model's input
    unedited: tuple | None = None          # (output (1, K), head-fused attention (L, T, T) or None) of the pass
                                           # edits compare with

    @property
    def nbytes(self) -> int:
        c = self.codes
        kept = 0 if self.unedited is None or self.unedited[1] is None else self.unedited[1].nbytes
        return c.data.nbytes + c.indices.nbytes + c.indptr.nbytes + self.x.numel() * 4 + kept

    def latent_map(self, latent: int) -> np.ndarray:
        """(gh, gw) float32: the latent's activation at every patch."""
        return self.codes[:, int(latent)].toarray().reshape(self.grid).astype(np.float32)


def photo_concepts(loaded, source: ConceptsSource, crop: Image.Image) -> PhotoConcepts:
    """The photo as the model saw it (an ``Analysis.image``, or ``loaded.preprocess.crop_image(photo)``) -> its
    patches' codes at the SAE's hook point (the blocks after the SAE's layer never run: ``edit`` runs them, with
    and without the change, when a latent is switched off)."""
    model, sae = loaded.model, source.sae
    device = next(model.parameters()).device
    x = loaded.preprocess.to_tensor(crop).to(device)
    read = hook_tokens(model, x, sae.info.layer, sae.info.hook_point)
    prefix = read.layout.num_prefix
    codes = sae.to(device).encode(read.tokens[0, prefix:]).cpu().numpy()
    return PhotoConcepts(crop, read.layout.grid, prefix, scipy.sparse.csc_matrix(codes), x.cpu())


def strongest(pc: PhotoConcepts, source: ConceptsSource, count: int = STRONGEST) -> list[Concept]:
    """The ``count`` latents with the largest mean activation over the photo (ties: the larger maximum, then the
    lower number), strongest first."""
    mean = np.asarray(pc.codes.mean(axis=0)).ravel()
    top = pc.codes.max(axis=0).toarray().ravel()
    order = np.lexsort((np.arange(len(mean)), -top, -mean))[:count]
    return [Concept(int(i), float(mean[i]), float(top[i]), source.label(int(i))) for i in order]


def concept_maps(pc: PhotoConcepts, latents: list[int]) -> np.ndarray:
    """(len(latents), gh, gw) float32: each latent's activation at every patch."""
    return np.stack([pc.latent_map(i) for i in latents]) if latents else np.zeros((0, *pc.grid), np.float32)


def _training_crop(source: ConceptsSource, index: int, size: int) -> Image.Image | None:
    """Training photo ``index`` as the model saw it, at ``size`` pixels (None when it cannot be read any more): read
    once at the largest thumbnail size (``pictures.THUMB``), whatever size is asked for."""
    path = source.folder / str(source.top.images[index])

    def crop() -> Image.Image | None:
        try:
            return pictures.fit(source.preprocess.crop_image(open_image(path)), max(size, pictures.THUMB))
        except (ValueError, OSError):
            return None

    found = THUMBNAILS.get((str(path), repr(source.preprocess)), crop)
    return found if found is None or max(found.size) <= size else pictures.fit(found, size)


def thumbnails(source: ConceptsSource, latent: int, count: int, size: int = pictures.THUMB
               ) -> tuple[list[Image.Image], list[float]] | None:
    """The latent's ``count`` strongest patches of the training folder as thumbnails (the patch framed) and their
    activations; None when there is nothing to show them from (no top_patches.npz, folder or preprocessing)."""
    if source.top is None or source.folder is None or source.preprocess is None or source.grid is None:
        return None
    thumbs, values = [], []
    for index, row, col, value in source.top.of(latent)[:count]:
        crop = _training_crop(source, index, size)
        if crop is not None:
            thumbs.append(pictures.thumbnail(crop, row, col, source.grid, size))
            values.append(value)
    return thumbs, values


def _check_latent(source: ConceptsSource, latent: int, lang: str) -> int:
    if not 0 <= int(latent) < source.sae.latents:
        raise ValueError(t("concepts.error.latent", lang, latent=latent, last=source.sae.latents - 1))
    return int(latent)


def concept_view(source: ConceptsSource, pc: PhotoConcepts, latent: int, concept: Concept | None = None,
                 thumbs: int = THUMBS, cmap: str = render.DEFAULT_CMAP, alpha: float = 0.6,
                 lang: str = "en", narrow: bool = False) -> Image.Image:
    """One latent: its map over the photo (captioned with its name, mean and max) and its strongest patches of the
    training folder beside it (``narrow``: a smaller map and four smaller thumbnails)."""
    latent = _check_latent(source, latent, lang)
    values = pc.latent_map(latent)
    concept = concept or Concept(latent, float(values.mean()), float(values.max()), source.label(latent))
    name = pictures.latent_name(latent, concept.label, lang)
    caption = t("concepts.picture.map_caption", picture_language(lang), name=name, mean=concept.mean, max=concept.max)
    drawn = pictures.map_picture(pc.image, values, caption, cmap, alpha,
                                 pictures.NARROW_MAP if narrow else pictures.MAP_SIZE, lang)
    per_row, cell = (thumbs // 2, pictures.THUMB)
    if narrow:        # two thumbnails a row in what the map leaves of a phone's width
        per_row, cell = 2, min(pictures.NARROW_THUMB, (screens.PHONE_WIDTH - drawn.width - 3 * pictures.GAP) // 2)
    found = thumbnails(source, latent, 2 * per_row, cell)
    return pictures.concept_row(drawn, None if found is None else found[0], per_row, lang, cell)


@dataclass
class Rows:
    """A picture of one row per latent, and where each row lies: to find the latent under a click."""
    image: Image.Image
    spans: tuple[tuple[int, int, int], ...]      # (first pixel row, last pixel row + 1, latent), top to bottom

    def at(self, y: float) -> int | None:
        """The latent whose row holds pixel row ``y`` (None: the title, a gap, or outside the picture)."""
        return next((latent for top, bottom, latent in self.spans if top <= y < bottom), None)


def strongest_rows(source: ConceptsSource, pc: PhotoConcepts, count: int = STRONGEST, thumbs: int = THUMBS,
                   cmap: str = render.DEFAULT_CMAP, alpha: float = 0.6, lang: str = "en",
                   narrow: bool = False) -> Rows:
    """The photo's ``count`` strongest latents, one row each (``concept_view``), under a title naming the layer,
    with where each row lies."""
    found = strongest(pc, source, count)
    rows = [concept_view(source, pc, c.latent, c, thumbs, cmap, alpha, lang, narrow) for c in found]
    info = source.sae.info
    title = t("concepts.picture.strongest_title", picture_language(lang), count=len(rows), layer=info.layer,
              hook=t(f"concepts.hook.{info.hook_point}", picture_language(lang)))
    image, tops = pictures.stack(rows, title, lang)
    return Rows(image, tuple((top, top + row.height, c.latent) for top, row, c in zip(tops, rows, found)))


def strongest_view(source: ConceptsSource, pc: PhotoConcepts, count: int = STRONGEST, thumbs: int = THUMBS,
                   cmap: str = render.DEFAULT_CMAP, alpha: float = 0.6, lang: str = "en",
                   narrow: bool = False) -> Image.Image:
    """The photo's ``count`` strongest latents, one row each (``concept_view``), under a title naming the layer."""
    return strongest_rows(source, pc, count, thumbs, cmap, alpha, lang, narrow).image


def top_patches_view(source: ConceptsSource, latent: int, count: int = TOP, lang: str = "en",
                     narrow: bool = False) -> Image.Image:
    """A latent's ``count`` strongest patches of the training folder, eight a row (``narrow``: seven, smaller, so that
    the 64 fit a phone's screen without being shrunk), each with its activation."""
    latent = _check_latent(source, latent, lang)
    cols, cell = (pictures.NARROW_COLS, pictures.NARROW_CELL) if narrow else (8, 96)
    found = thumbnails(source, latent, count, cell)
    lang_p = picture_language(lang)
    if found is None:
        return pictures.message_block(t("concepts.picture.no_top", lang_p), (cols * (cell + pictures.GAP), cell), lang)
    name = pictures.latent_name(latent, source.label(latent), lang)
    return pictures.patches_picture(found[0], found[1], t("concepts.picture.top_title", lang_p, name=name,
                                                          count=len(found[0])), cols, cell, lang)


def photo_view(pc: PhotoConcepts, query: tuple[int, int] | None = None) -> Image.Image:
    """The photo to click a patch on (``PHOTO_SIZE`` pixels, its longer side), the queried patch framed."""
    photo = pictures.fit(pc.image.convert("RGB"), PHOTO_SIZE)
    return photo if query is None else render.mark_patch(photo, query[0], query[1], pc.grid)


def patch_at(pc: PhotoConcepts, x: float, y: float) -> tuple[int, int]:
    """Pixel (x, y) of ``photo_view`` -> the patch (row, col) under it."""
    return pixel_to_patch(x, y, pictures.fit(pc.image, PHOTO_SIZE).size, pc.grid)


def latents_at(pc: PhotoConcepts, source: ConceptsSource, row: int, col: int, count: int = 10) -> list[Concept]:
    """The latents active at patch (row, col), strongest first (at most ``count``): ``mean`` is the activation
    there, ``max`` the latent's largest over the photo."""
    row, col = row % pc.grid[0], col % pc.grid[1]
    codes = pc.codes.tocsr()[row * pc.grid[1] + col].toarray().ravel()
    active = np.flatnonzero(codes > 0)
    active = active[np.lexsort((active, -codes[active]))][:count]
    top = pc.codes.max(axis=0).toarray().ravel()
    return [Concept(int(i), float(codes[i]), float(top[i]), source.label(int(i))) for i in active]


def patch_lines(concepts: list[Concept], row: int, col: int, lang: str = "en") -> str:
    """The latents at a patch as lines of text: '#latent  activation  label'."""
    if not concepts:
        return t("concepts.line.patch_none", lang, row=row, col=col)
    lines = [t("concepts.line.patch", lang, row=row, col=col)]
    lines += [f"#{c.latent}  {c.mean:.3g}" + (f"  {c.label}" if c.label else "") for c in concepts]
    return "\n".join(lines)


@dataclass
class Edited:
    """The model's answer with some latents switched off or scaled at the SAE's layer."""
    changes: dict[int, float]                   # latent -> factor (0: off)
    top_before: list[tuple[str, float]]         # (class, probability), the model as it is
    top_after: list[tuple[str, float]]          # with the change
    kl: float | None                            # KL of the new probabilities from the old (nats); None: no classes
    rollout_before: np.ndarray | None           # (gh, gw) the readout's rollout; None for a MAP probe's readout
    rollout_after: np.ndarray | None
    removed: np.ndarray                         # (gh, gw) the norm of what the change took from (or added to) each patch
    probabilities: np.ndarray                   # (K,) with the change


def edit(loaded, source: ConceptsSource, pc: PhotoConcepts, changes: dict[int, float], k: int = 5,
         lang: str = "en", drop: np.ndarray | None = None) -> Edited:
    """Scale latents at the SAE's layer: each ``{latent: factor}`` adds (factor − 1) × its activation × its decoder
    direction to every patch token (0 switches it off); the model's new top-``k`` and rollout beside its own, both
    rolled out without the patches ``drop`` (gh, gw) marks (the high-norm artifact tokens the page masks), if given."""
    sae, model = source.sae, loaded.model
    for latent, factor in changes.items():
        _check_latent(source, latent, lang)
        if not math.isfinite(float(factor)):
            raise ValueError(t("concepts.error.factor", lang, factor=factor))
    changes = {int(latent): float(factor) for latent, factor in changes.items()}
    device = next(model.parameters()).device
    x = pc.x.to(device)
    sae = sae.to(device)
    removed = {}

    def change(patches: torch.Tensor) -> torch.Tensor:
        edited = sae.edit(patches, changes)
        removed["norm"] = (edited - patches).norm(dim=-1)
        return edited

    editor = patch_edit(pc.num_prefix, change)
    layer, hook = sae.info.layer, sae.info.hook_point
    readout = model.architecture(*x.shape[-2:]).readout

    def fused(maps) -> np.ndarray | None:
        if readout in ("map", "map_all"):     # the probe's attention is not kept by these passes
            return None
        return fuse_heads(torch.cat(maps).float().cpu().numpy())

    def rollout(fused_maps: np.ndarray | None) -> np.ndarray | None:
        return None if fused_maps is None else readout_rollout_map(fused_maps, pc.num_prefix, pc.grid, readout,
                                                                   drop_patches=drop)

    if pc.unedited is None:                   # the same arithmetic as the edited pass (explicit attention), once
        output, maps = run_edited_at(model, x, layer, hook, lambda tokens: tokens, attention=True)
        pc.unedited = (output.cpu(), fused(maps))
    before = pc.unedited[0].to(device)
    after, maps_after = run_edited_at(model, x, layer, hook, editor, attention=True)
    rollouts = [rollout(pc.unedited[1]), rollout(fused(maps_after))]
    removed_map = removed["norm"].reshape(pc.grid).float().cpu().numpy()
    if not loaded.labels:
        return Edited(changes, [], [], None, *rollouts, removed_map, np.zeros(0))
    p_before = torch.softmax(before[0].double(), -1).cpu().numpy()
    p_after = torch.softmax(after[0].double(), -1).cpu().numpy()
    top = lambda p: [(loaded.labels[i], float(p[i])) for i in np.argsort(-p, kind="stable")[:k]]   # noqa: E731
    return Edited(changes, top(p_before), top(p_after), float(kl_divergence(before, after)[0]), *rollouts,
                  removed_map, p_after.astype(np.float32))


def change_name(source: ConceptsSource, changes: dict[int, float], lang: str = "en") -> str:
    """'latent 12 switched off', 'latent 12 × 2', joined."""
    parts = []
    for latent, factor in changes.items():
        name = pictures.latent_name(latent, source.label(latent), lang)
        parts.append(t("concepts.change.off", lang, name=name) if factor == 0 else
                     t("concepts.change.scaled", lang, name=name, factor=factor))
    return ", ".join(parts)


def edit_view(source: ConceptsSource, pc: PhotoConcepts, e: Edited, cmap: str = render.DEFAULT_CMAP,
              alpha: float = 0.6, lang: str = "en", narrow: bool = False) -> tuple[Image.Image, str]:
    """(the rollout before and after the change on one scale, and what the change took from each patch, side by
    side (``narrow``: one under the other); the line with the new top-5 beside the old and the KL between them)."""
    lang_p = picture_language(lang)
    name = change_name(source, e.changes, lang_p)
    removed_caption = t("concepts.picture.removed", lang_p, name=name)
    size = pictures.NARROW_PANEL if narrow else pictures.MAP_SIZE
    if e.rollout_before is None:
        picture = pictures.map_picture(pc.image, e.removed, removed_caption, cmap, alpha, size, lang)
    else:
        captions = (t("concepts.picture.rollout_before", lang_p), t("concepts.picture.rollout_after", lang_p,
                                                                     change=name), removed_caption)
        picture = pictures.comparison_picture(pc.image, e.rollout_before, e.rollout_after, e.removed, captions, cmap,
                                              alpha, size, lang, narrow)
    if e.kl is None:
        return picture, change_name(source, e.changes, lang)
    listed = lambda top: ", ".join(f"{label} {p:.1%}" for label, p in top)      # noqa: E731
    line = t("concepts.line.top5_change", lang, change=change_name(source, e.changes, lang), after=listed(e.top_after),
             before=listed(e.top_before))
    return picture, line + " " + t("concepts.line.kl", lang, kl=e.kl)
