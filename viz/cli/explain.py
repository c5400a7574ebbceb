"""``--explain METHODS [--target CLASS] [--contrast CLASS]``: class-specific maps of every image (viz.explain).

With a CLIP checkpoint (a text tower, no classes) ``--target`` and ``--contrast`` are texts: the explained
score is that text's image–text score, its probability the zero-shot probability among ``--texts``.
"""
from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np

from .. import panels
from ..explain import contrast, method_names
from ..explain.panels import contrast_panel, explanation_panel, methods_row
from ..records import Analysis
from .inside import asked as inside_asked


@dataclasses.dataclass(frozen=True)
class ExplainRequest:
    """What --explain, --target and --contrast ask for, checked against the model before any image runs."""
    methods: list[str]
    target: object = None        # vit.explain.ClassTarget or TextTarget, or None for each image's top-1 class
    contrast: object = None      # vit.explain.ClassTarget or TextTarget, or None
    faithfulness: bool = False   # --faithfulness: deletion / insertion curves of every method (viz.trust.job)
    sanity: bool = False         # --sanity: the cascading model-randomisation check of every method
    perturbation: tuple[str, ...] = ("tokens",)  # --perturbation: how a removed patch is removed, one or several ways
    steps: int = 11              # --steps: points per curve
    chefer: str | None = None    # --protocol chefer2021: "predicted" or "target" (--target label), else None


def explain_request(args: argparse.Namespace, loaded) -> ExplainRequest | None:
    """--explain/--target/--contrast -> ExplainRequest (None without --explain); ValueError lists what exists.

    Classes for a classifier; for a CLIP image tower with a text tower, texts (``resolve_target``): --target
    "a photo of a cat" explains that text, no --target the best of --texts."""
    from ..explain.explainer import resolve_target

    if not args.explain:
        if args.protocol:
            raise ValueError("--protocol chefer2021 scores the maps of --explain; give --explain METHODS too.")
        if (args.target is not None or args.contrast is not None) and not inside_asked(args):
            raise ValueError("--target and --contrast choose the class for --explain or --inside; give --explain "
                             "METHODS too (or --inside VIEWS).")
        if args.faithfulness or args.sanity:
            raise ValueError("--faithfulness and --sanity score the maps of --explain; give --explain METHODS too, "
                             "e.g. --explain gae,attention,random.")
        return None
    texts = getattr(args, "texts", None) or ()
    methods = method_names(args.explain, loaded.model.architecture(*loaded.model.cfg.img_size))
    chefer = None
    if args.protocol == "chefer2021":
        if loaded.text is not None or not loaded.labels:
            raise ValueError("--protocol chefer2021 measures top-1 accuracy: it needs a classifier with classes.")
        chefer = "target" if args.target == "label" else "predicted"
    elif args.target == "label":
        raise ValueError("--target label (each image's own label) is for --protocol chefer2021.")
    target = None if args.target == "label" else resolve_target(loaded, args.target, texts)
    return ExplainRequest(methods, target, None if args.contrast is None else resolve_target(loaded, args.contrast, texts),
                          args.faithfulness, args.sanity, tuple(args.perturbation), args.steps, chefer)


def trust_of(loaded, x, request: ExplainRequest):
    """``viz.trust.job.trust_check`` of one model input (1, C, H, W) as --faithfulness / --sanity / --perturbation /
    --steps ask: a ``viz.trust.TrustReport`` for one protocol, a ``viz.trust.ProtocolsReport`` for several."""
    from ..trust.job import trust_check

    return trust_check(loaded.model, x, request.target, request.methods, protocols=request.perturbation,
                       sanity=request.sanity, points=request.steps, labels=loaded.labels)


def trust_entries(report, lang: str = "en", photo=None) -> tuple[dict, dict]:
    """A ``TrustReport`` or ``ProtocolsReport`` -> (PNG panels {"trust": comparison figure of the first protocol},
    the keys it adds to result.json's "explain": one protocol keeps the single-protocol shape, several add
    "faithfulness_by_protocol", "fractions", "verdicts" and "protocol_agreement")."""
    from ..drawing.plots import figure_to_image
    from ..trust.figure import trust_figure
    from ..trust import ProtocolsReport

    first = report.first if isinstance(report, ProtocolsReport) else report
    info = {**first.as_json(), "perturbation": first.protocol,
            "gains": {n: first.gains(n) for n in first.methods}}
    if "sanity" in info:
        info["sanity_flagged"] = {n: bool(m.flagged) for n, m in first.methods.items() if m.sanity is not None}
    if isinstance(report, ProtocolsReport):
        info.update(report.as_json())
    return {"trust": figure_to_image(trust_figure(first, photo, lang=lang))}, info


def explanation_outputs(loaded, a: Analysis, request: ExplainRequest,
                        o: panels.MapOptions, trust=None) -> tuple[dict, dict, dict]:
    """Explain one analysed image -> (PNG panels, npz arrays, the result.json "explain" entry) for
    ``write_image_result``. The model sees exactly the analysed pixels (``a.image``, the crop). ``trust``: the
    image's ``TrustReport`` when the data-set run already computed it (else computed here if asked for)."""
    from ..explain.explainer import explain_tensor

    t0 = time.perf_counter()
    x = loaded.preprocess.to_tensor(a.image).to(next(loaded.model.parameters()).device)
    e = explain_tensor(loaded.model, x, request.target, request.methods, loaded.labels)
    name = e.target["name"]
    images, arrays = {}, {}
    for m in request.methods:
        arrays[f"explain_{m}"] = e.map(m)
        images[f"explain_{m}"] = explanation_panel(panels.photo(a, o.scale), e.map(m), m, o.cmap, o.alpha,
                                                   o.colorbar, label=f"{m}: {name}")
    images["explanations"] = methods_row(a.image, {m: e.map(m) for m in request.methods}, cmap=o.cmap, alpha=o.alpha,
                                         title=name)
    info = {"target": dict(e.target), "methods": list(request.methods),
            "readout": e.readout, "probability": e.probability}
    if request.contrast is not None:
        b = explain_tensor(loaded.model, x, request.contrast, request.methods, loaded.labels)
        for m in request.methods:
            arrays[f"contrast_{m}"] = contrast(e, b, m)
            images[f"contrast_{m}"] = contrast_panel(panels.photo(a, o.scale), arrays[f"contrast_{m}"], o.alpha,
                                                     o.colorbar, label=f"{m}: {name} - {b.target['name']}")
        info["contrast"] = dict(b.target)
    if request.faithfulness or request.sanity:
        report = trust if trust is not None else trust_of(loaded, x, request)
        trust_images, trust_info = trust_entries(report, o.lang, np.asarray(a.image.convert("RGB")))
        images.update(trust_images)
        info.update(trust_info)
    info["seconds"] = time.perf_counter() - t0
    return images, arrays, info

