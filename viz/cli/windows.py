"""``python -m viz IMAGE… --weights SWIN``: a Swin's files. The same contract as a ViT's where the view exists
(``result.json`` with ``top_k``, ``input.png``, ``attention.npz`` with ``rollout`` and ``explain_<method>``, the PNGs),
each map on the grid it is defined on (``viz.panels.windows``); options that read a ViT's single token sequence are
refused in one sentence each, before any image runs.

attention.npz of a Swin: ``rollout`` (gh0, gw0) and ``explain_<method>`` on stage 0's patch grid; ``attention``,
``query_row``, ``query_column`` on the stage grid of the ``--layer`` block; ``query_patch``; ``mean_distance``
(L, max heads; NaN where a block has fewer heads); per block ``attention_<l>`` (nW, H, N, N) with ``layout_<l>``
(stage, block, gh, gw, wh, ww, sh, sw, token size); ``token_norms_<l>`` (gh, gw); ``grid``, ``patch_size``,
``probabilities``.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

from .. import panels
from ..i18n import t
from ..panels.windows import check_window_options, window_image_panels, where_label
from ..records import WindowAnalysis
from .write import no_classifier_note

# ViT-only options: (is it asked for, why a Swin cannot have it)
_REFUSED = (
    (lambda a: a.inside, "--inside (logit lens, direct logit attribution, head importance, patching) reads a ViT's "
                         "CLS residual stream; a Swin has stages of different widths and no CLS token."),
    (lambda a: a.features, "--features reads the patch features of a ViT's single grid; a Swin's tokens change grid "
                           "and width at every stage."),
    (lambda a: a.texts, "--texts needs a CLIP text tower; a Swin is a classifier."),
    (lambda a: a.compare, "--compare overlays two ViTs' maps token by token; compare a Swin with a ViT on the page "
                          "(Compare tab), or run each with --explain and compare the explain_<method> maps."),
    (lambda a: a.animate, "--animate steps through a ViT's layers on one grid; a Swin's grid halves at every stage."),
    (lambda a: a.mask_artifacts, "--mask-artifacts drops a ViT's high-norm tokens from its global attention; a "
                                 "Swin's tokens attend only inside their windows."),
    (lambda a: a.query_rollout, "--query-rollout needs one token sequence through every layer; a Swin's merges join "
                                "2×2 tokens, so a patch has no own row after stage 0 (the image-level rollout is "
                                "defined: rollout in attention.npz)."),
    (lambda a: a.discard_ratio or a.start_layer, "--discard-ratio and --start-layer are options of a ViT's rollout; "
                                                 "a Swin's rollout runs through every block and merge."),
    (lambda a: a.distance_renormalise, "--distance-renormalise drops a ViT's prefix tokens; a Swin has none."),
    (lambda a: a.resume, "--resume is not offered for a Swin's folders yet: run the folder again."),
    (lambda a: a.protocol, "--protocol chefer2021 is offered for ViTs only; use --faithfulness with pixel "
                           "--perturbation protocols on a Swin."),
)


def check_swin_run(args: argparse.Namespace, loaded, o: panels.MapOptions) -> None:
    """ValueError, in one sentence saying why and what to do, for an option a Swin does not have."""
    for asked, why in _REFUSED:
        if asked(args):
            raise ValueError(why)
    heads = tuple(loaded.model.cfg.num_heads[layout.stage]
                  for layout in loaded.model.window_layouts(*loaded.preprocess.crop))
    check_window_options(o, len(heads), heads)
    if o.query is not None:
        gh, gw = loaded.model.token_layout(*loaded.preprocess.crop).grid
        if not (0 <= o.query[0] < gh and 0 <= o.query[1] < gw):
            raise ValueError(f"--query {o.query[0]} {o.query[1]} is outside the {gh}×{gw} patch grid of stage 0.")
    if (args.faithfulness or args.sanity) and "tokens" in args.perturbation:
        raise ValueError("A Swin's faithfulness curves remove pixels, not tokens (its windows tile the whole grid): "
                         "add --perturbation mean_colour (or blur, road, all but tokens).")


def window_arrays(a: WindowAnalysis) -> dict[str, np.ndarray]:
    """Every block's window attention, layout and token norms, for attention.npz."""
    out = {}
    for i, (attention, layout, norms) in enumerate(zip(a.attention, a.layouts, a.token_norms)):
        out[f"attention_{i}"] = attention
        out[f"layout_{i}"] = np.array([layout.stage, layout.block, *layout.grid, *layout.window, *layout.shift,
                                       layout.token_size], dtype=np.int64)
        out[f"token_norms_{i}"] = norms
    return out


def write_swin_result(path: Path, folder: Path, a: WindowAnalysis, o: panels.MapOptions, args: argparse.Namespace,
                      decode_s: float, explained: tuple[dict, dict, dict] | None = None,
                      preprocess: dict | None = None, assumptions: list | None = None,
                      verified: dict | None = None) -> None:
    """Render and write one Swin analysis: the PNGs, attention.npz and result.json (module docstring)."""
    t0 = time.perf_counter()
    images, arrays = window_image_panels(a, o)
    t1 = time.perf_counter()
    if explained is not None:
        images, arrays = {**images, **explained[0]}, {**arrays, **explained[1]}
    folder.mkdir(parents=True, exist_ok=True)
    for name, picture in images.items():
        picture.save(folder / f"{name}.png")
    save = np.savez_compressed if args.compress else np.savez
    save(folder / "attention.npz", grid=np.array(a.grid), patch_size=np.int64(a.patch_size),
         probabilities=a.probabilities, **window_arrays(a), **arrays)
    layer = o.layer % a.depth
    result = {
        "image": str(path),
        "model": a.model_name,
        "weights": args.weights,
        "architecture": "swin",
        "input_size": list(a.input_size),
        **({"preprocess": preprocess} if preprocess is not None else {}),
        **({"assumptions": [str(x) for x in assumptions]} if assumptions is not None else {}),
        **({"verified": verified} if verified is not None else {}),
        "grid": list(a.grid),
        "stages": [{"grid": list(a.layouts[blocks[0]].grid), "window": list(a.layouts[blocks[0]].window),
                    "heads": a.heads[blocks[0]], "blocks": list(blocks),
                    "shifts": [list(a.layouts[b].shift) for b in blocks],
                    "token_size": a.layouts[blocks[0]].token_size} for blocks in a.stages],
        "num_prefix_tokens": 0,
        **({"top_k": [{"label": label, "probability": p} for label, p in a.top_k(args.top_k)]}
           if a.probabilities.size else {"notes": [no_classifier_note(a.model_name)]}),
        "readout": a.readout,
        "captions": {"rollout": t("swin.rollout_caption", o.lang),
                     "attention": t("swin.pool_caption", o.lang, where=where_label(a, layer, o.head, o.lang))},
        "options": {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(o).items()},
        "timings_s": {"decode": decode_s, **a.timings, "panels": t1 - t0, "write": time.perf_counter() - t1},
        "files": sorted([f"{name}.png" for name in images] + ["attention.npz", "result.json"]),
    }
    if explained is not None:
        result["explain"] = explained[2]
    (folder / "result.json").write_text(json.dumps(result, indent=2) + "\n")


def run_swin(args: argparse.Namespace, loaded, o: panels.MapOptions, entries, request, device, dtype) -> int:
    """The CLI's run on a Swin: every image's files (``write_swin_result``) and, for a folder, summary/."""
    from ..dataset import distributed
    from ..dataset.windows import run_windows
    from .explain import explanation_outputs

    data_set = len(entries) > 1 or args.stats_only
    writer = None
    if not args.stats_only:
        preprocess = loaded.preprocess_record()

        def writer(entry, a: WindowAnalysis, decode_s: float) -> None:
            explained = explanation_outputs(loaded, a, request, o) if request else None
            write_swin_result(entry.path, args.out / entry.name, a, o, args, decode_s, explained, preprocess,
                              loaded.assumptions, loaded.verified.to_dict())

    processes = distributed.start(device)
    try:
        result = run_windows(loaded, entries, args.out, processes, writer, batch_size=args.batch_size,
                             workers=args.workers, summary=data_set, dtype=dtype,
                             progress=not args.quiet and len(entries) > 1, weights=args.weights)
    finally:
        distributed.finish(processes)
    if not args.quiet and processes.main:
        print(f"{'analysed' if args.stats_only else 'wrote'} {result.done} of {len(entries)} images "
              f"{'for' if args.stats_only else 'to'} {args.out}", file=sys.stderr)
    return 1 if result.failed else 0
