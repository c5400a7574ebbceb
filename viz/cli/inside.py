"""``--inside VIEWS [--target] [--contrast] [--ablate L.H,…] [--patch-from IMAGE2] [--reference FOLDER]``: what each
layer predicts, what each head writes into the answer and what breaks without it (``viz.inside.job``), per
image: inside_lens.png, inside_dla.png, inside_heads.png, inside_patch.png, arrays in attention.npz and result.json's
"inside" entry (``viz.inside.report``). ``--target``/``--contrast`` are the ones ``--explain`` reads.
"""
from __future__ import annotations

import argparse
import dataclasses

import numpy as np
import torch

from ..records import Analysis


@dataclasses.dataclass(frozen=True)
class InsideRequest:
    """What --inside, --ablate, --patch-from and --reference ask for, checked against the model before any image."""
    views: list[str]                        # of viz.inside.VIEWS
    target: object = None                   # vit.explain.ClassTarget / TextTarget, or None for each image's top-1
    contrast: object = None
    ablate: list = dataclasses.field(default_factory=list)   # [(layer, head)]
    other: torch.Tensor | None = None       # --patch-from, preprocessed (1, C, H, W)
    other_name: str = ""
    means: torch.Tensor | None = None       # --reference: every head's mean output (L, H, T, Dh)

    @property
    def ablation(self) -> str:
        return "zero" if self.means is None else "mean"


def asked(args: argparse.Namespace) -> bool:
    """Whether any inside option was given."""
    return bool(args.inside or args.ablate or args.patch_from or args.reference)


def inside_request(args: argparse.Namespace, loaded) -> InsideRequest | None:
    """The inside options -> InsideRequest (None when none was given); ValueError says what is wrong and what is
    valid (views, heads, a view undefined for this family, the second photo, the reference folder)."""
    from vit.image_file import open_image
    from vit.inside import parse_heads

    from ..explain.explainer import resolve_target
    from ..inside.job import check_views, reference_means, view_names
    from ..folders.files import list_images

    if not asked(args):
        return None
    model = loaded.model
    views = view_names(args.inside) if args.inside else []
    check_views(model, views)
    heads = parse_heads(args.ablate, model.cfg.depth, model.cfg.num_heads) if args.ablate else []
    if args.reference and not (heads or "heads" in views):
        raise ValueError("--reference gives the heads' mean outputs for mean ablation: use it with --ablate or "
                         "--inside heads.")
    texts = getattr(args, "texts", None) or ()
    target = resolve_target(loaded, args.target, texts)
    contrast = None if args.contrast is None else resolve_target(loaded, args.contrast, texts)
    other = None
    if args.patch_from:
        try:
            photo = open_image(args.patch_from)
        except ValueError as error:
            raise ValueError(f"--patch-from {args.patch_from}: {error}") from None
        other = loaded.preprocess.to_tensor(loaded.preprocess.crop_image(photo))
    means = None
    if args.reference:
        if not args.reference.is_dir():
            raise ValueError(f"--reference {args.reference} is not a folder of images.")
        paths = [e.path for e in list_images([args.reference], loaded.labels)]
        if not paths:
            raise ValueError(f"--reference {args.reference} holds no images.")
        means = reference_means(loaded, paths, max(1, args.batch_size))
    return InsideRequest(views, target, contrast, heads, other, args.patch_from.stem if args.patch_from else "", means)


def inside_outputs(loaded, a: Analysis, request: InsideRequest, lang: str = "en",
                   head_importance: np.ndarray | None = None) -> tuple[dict, dict, dict]:
    """One analysed image -> (PNG panels, npz arrays, result.json's "inside" entry) for ``write_image_result``. The
    model sees exactly the analysed pixels (``a.image``); ``head_importance``: the exact (L, H) table a data-set run
    already computed for this image."""
    from ..inside.job import InsideJob
    from ..drawing.plots import figure_to_image
    from ..inside import dla_figure, heads_figure, lens_figure, patch_figure

    device = next(loaded.model.parameters()).device
    x = loaded.preprocess.to_tensor(a.image).to(device)
    report = InsideJob(loaded.model, x, request.target, request.contrast, request.views, loaded.labels,
                       request.ablate or None, request.means, request.other, request.other_name,
                       patch_target=request.target, head_importance=head_importance).result()
    photo = np.asarray(a.image.convert("RGB"))
    figures = {"inside_lens": lambda: lens_figure(report, photo, lang), "inside_dla": lambda: dla_figure(report, photo,
                                                                                                            lang=lang),
               "inside_heads": lambda: heads_figure(report, lang), "inside_patch": lambda: patch_figure(report, lang)}
    shown = {"inside_lens": report.lens, "inside_dla": report.dla, "inside_heads": report.heads,
             "inside_patch": report.patched}
    images = {name: figure_to_image(draw()) for name, draw in figures.items() if shown[name] is not None}
    return images, report.arrays(), report.as_json()
