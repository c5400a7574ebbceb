"""``python -m viz IMAGE [IMAGE ...] --weights PATH --out DIR``: every panel as PNG, plus the numbers behind them.

Per image, in ``DIR/<image name>/``: one PNG per panel, ``result.json`` (top-k classes, model, input size,
options, timings) and ``attention.npz`` (the attention itself and every map drawn, so a figure can be
reproduced exactly). With several images, ``DIR/summary/`` holds statistics over them (``statistics.json``,
``statistics.md``, plots; the paper's Figure 7, right, is such an average): see ``viz.dataset``. Folders run in
batches (``--batch-size``) decoded by worker processes (``--workers``), on any device (``--device``), in one
process or many (``torchrun --nproc-per-node N -m viz FOLDER ...``), and resume after an interruption (``--resume``).

What else a run can add, one module each: ``--features`` (the patch features' PCA colours and similarity,
``features``), ``--inside`` (logit lens, direct logit attribution, head importance,
``--ablate``, ``--patch-from``: ``inside``), ``--explain`` (class-specific maps, ``explain``; with
``--faithfulness`` / ``--sanity`` their perturbation curves and randomisation check, ``viz.trust.job``), ``--texts`` (CLIP
zero-shot probabilities in result.json, ``write``), ``--animate`` (attention through depth, ``write``) and
``--compare B`` (two checkpoints on the same photos instead of the panels, ``compare``). The options are in
``options``.
"""
from __future__ import annotations

import sys

import numpy as np

from .. import panels
from ..maps.layout import layer_index
from ..concepts.outputs import concepts_outputs, concepts_request
from ..records import Analysis
from .compare import run_comparison
from .explain import explain_request, explanation_outputs
from .features import features_outputs, features_request
from .inside import inside_outputs, inside_request
from .options import build_parser, load_model, options_from
from .write import no_classifier_note, write_image_result, zero_shot_entries
from ..position.view import model_panels

__all__ = ["build_parser", "main", "options_from"]


def check_run(args, loaded) -> None:
    """ValueError, saying what to do, for options that do not fit this model or each other."""
    if args.texts and loaded.text is None:
        raise ValueError(f"--texts needs a CLIP checkpoint with a text tower (OpenAI, open_clip or a Hugging "
                         f"Face CLIPModel folder), but {args.weights} has none.")
    if args.frames is not None:
        raise ValueError(f"--frames sets how many frames of a video a video model reads; {loaded.name or 'this model'}"
                         f" reads photos: leave it out.")
    if args.frame_ms < 10:
        raise ValueError(f"--frame-ms must be at least 10 but got {args.frame_ms}.")
    if args.features and args.compare:
        raise ValueError("--features reads one model's patch features: leave out --compare (or run them apart).")
    if args.mp4 and not args.animate:
        raise ValueError("--mp4 writes the animation as MP4 too: add --animate.")
    if args.batch_size > 1 and loaded.preprocess.varies:
        raise ValueError(varying_batch_note(loaded.preprocess))
    if args.mp4:
        from ..compare.animate import mp4_available
        if not mp4_available():
            raise ValueError("--mp4 needs the optional packages imageio and imageio-ffmpeg (pip install imageio "
                             "imageio-ffmpeg); leave --mp4 out for the GIF alone.")


# What needs one sequence of tokens through every layer (``vit.architecture.Architecture.one_sequence``): (is it asked
# for, what it reads), refused in one sentence for a model whose blocks change grid or attend inside windows.
ONE_SEQUENCE_OPTIONS = (
    (lambda a: a.inside, "--inside (logit lens, direct logit attribution, head importance, patching) reads one "
                         "residual stream of one width through every layer"),
    (lambda a: a.features, "--features reads the patch features of one grid"),
    (lambda a: a.compare, "--compare overlays two models' maps token by token (compare such a model on the page, or "
                          "run each with --explain and compare the explain_<method> maps)"),
    (lambda a: a.animate, "--animate steps through the layers on one grid"),
    (lambda a: a.mask_artifacts, "--mask-artifacts drops high-norm tokens from global attention"),
    (lambda a: a.query_rollout, "--query-rollout follows one patch's own token through every layer (the image-level "
                                "rollout is defined: rollout in attention.npz)"),
    (lambda a: a.distance_renormalise, "--distance-renormalise leaves out prefix tokens"),
    (lambda a: a.protocol, "--protocol chefer2021 drops tokens from one sequence (use --faithfulness with pixel "
                           "--perturbation protocols)"),
)


def check_architecture(args, loaded, o: panels.MapOptions) -> None:
    """ValueError, saying why and what to do, for options the model's architecture (``vit.architecture``) does not
    have, before any image runs: a layer, head or patch outside it, and what needs one sequence of tokens."""
    arch = loaded.model.architecture(*loaded.preprocess.crop)
    check_architecture_options(o, arch, None if loaded.preprocess.varies else arch.grid)
    if arch.one_sequence:
        return
    asked = [why for wanted, why in ONE_SEQUENCE_OPTIONS if wanted(args)]
    if asked:
        raise ValueError(f"{asked[0]}; {loaded.name or 'this model'}'s blocks change grid or attend inside windows, so "
                         f"there is no such sequence.")
    if (args.faithfulness or args.sanity) and "tokens" in args.perturbation:
        raise ValueError("This model's faithfulness curves remove pixels, not tokens (its windows tile the whole "
                         "grid): add --perturbation mean_colour (or blur, road, all but tokens).")
    if args.discard_ratio and not any(b.window is None for b in arch.blocks):
        raise ValueError("--discard-ratio acts on layers of global attention; every layer of this model attends inside "
                         "windows, so it would change nothing.")


def check_architecture_options(o: panels.MapOptions, arch, grid: tuple[int, int] | None) -> None:
    """``panels.check_options`` on the architecture: the layer, start layer, head (of the chosen layer) and patch."""
    panels.check_options(o, arch.depth, arch.block(layer_index(o.layer, arch.depth)).heads, grid)


def varying_batch_note(preprocess) -> str:
    """Why photos of a NaFlex model cannot share a batch, and what to do (one sentence)."""
    return (f"--batch-size above 1 needs one input shape, but this model sizes each photo's input by its aspect ratio "
            f"(at most {preprocess.resize} patches of {preprocess.patch} pixels), so photos of different shapes cannot "
            f"share a batch: leave --batch-size at 1, or give --preprocess crop or squash for one "
            f"{preprocess.crop[0]}×{preprocess.crop[1]} input.")


def trust_options(request, data_set: bool) -> dict:
    """The RunOptions fields of --faithfulness / --sanity: a data-set run scores every image once, for the summary
    and for the image's files (a single image is scored by its writer alone)."""
    if not (data_set and request):
        return {}
    out = {}
    if request.chefer:
        out.update(chefer=request.chefer, chefer_methods=tuple(request.methods))
    if request.faithfulness or request.sanity:
        out.update(faithfulness=tuple(request.methods), faithfulness_target=request.target,
                   perturbation=tuple(request.perturbation), steps=request.steps, sanity=request.sanity)
    return out


def skipped_note(skipped: list) -> str:
    """The line that names the sub-folders a folder run did not read, and how to read them too."""
    listed = ", ".join(str(p) for p in skipped)
    return (f"note: skipped {len(skipped)} sub-folder{'s' if len(skipped) > 1 else ''} with images: {listed} (a folder "
            f"with images of its own is read without its sub-folders); name {'them' if len(skipped) > 1 else 'it'} "
            f"on the command line to read {'them' if len(skipped) > 1 else 'it'} too.")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import torch   # imported once there is work (``--help`` stays quick)

    from vit.device import pick_device, pick_dtype
    from vit.architecture import require_readout

    from ..analysis import model_arrays
    from ..dataset import run
    from ..folders import distributed, files

    try:
        device = pick_device(args.device, distributed.local_rank())
        dtype = pick_dtype(args.dtype)
        loaded = load_model(args)
        require_readout(loaded.model)          # a model that reads no token (SAM's encoder) has no maps to draw
        loaded.model.to(device)
        if loaded.model.architecture(*loaded.preprocess.crop).video:     # a video model reads clips
            from .video import run_videos
            return run_videos(args, loaded, dtype)
        o = options_from(args)
        check_architecture(args, loaded, o)   # a NaFlex model's grid follows each photo: its patch checked per photo
        request = explain_request(args, loaded)
        inside = inside_request(args, loaded)
        features = features_request(args, loaded)
        concepts = concepts_request(args, loaded)
        entries = files.list_images(args.images, loaded.labels)
        if not entries:
            raise ValueError("no images found in " + ", ".join(args.images))
        skipped = files.skipped_folders(args.images)
        if skipped and not args.quiet:
            print(skipped_note(skipped), file=sys.stderr)
        check_run(args, loaded)
        if request and request.chefer and (len(entries) < 2 or any(e.label is None for e in entries)):
            raise ValueError("--protocol chefer2021 measures top-1 accuracy over a labelled folder: every image in a "
                             "sub-folder named for its class (index, WordNet ID or name), at least two images.")
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.compare:
        return run_comparison(args, loaded, o, entries, request)
    if loaded.config.num_classes == 0:
        print(f"note: {no_classifier_note(loaded.name)}", file=sys.stderr)
    if device.type == "cpu" and dtype != torch.float32 and not args.quiet:
        print(f"note: --dtype {args.dtype} on the CPU runs, but is usually slower than float32 (it is meant for "
              f"GPUs; see docs/datasets.md)", file=sys.stderr)
    data_set = len(entries) > 1 or args.stats_only
    options = run.RunOptions(out=args.out, batch_size=args.batch_size, workers=args.workers, summary=data_set,
                             resume=args.resume, attention_dtype=np.float16 if args.float16 else np.float32,
                             dtype=dtype, norm_ratio=args.norm_ratio, distance_renormalise=args.distance_renormalise,
                             progress=not args.quiet and len(entries) > 1, weights=args.weights,
                             inside=inside if data_set else None, keep_stream=features is not None,
                             features_layer=features.layer if features is not None and data_set else None,
                             **trust_options(request, data_set))
    writer = None
    if not args.stats_only:
        model = model_panels(model_arrays(loaded.model, loaded.name), args.lang)   # the same for every image
        preprocess = loaded.preprocess_record()

        def writer(entry: "files.ImageEntry", a: Analysis, decode_s: float, trust=None, head_importance=None) -> None:
            explained = explanation_outputs(loaded, a, request, o, trust) if request else None
            texts = zero_shot_entries(loaded, a, args.texts) if args.texts else None
            inside_files = inside_outputs(loaded, a, inside, args.lang, head_importance) if inside else None
            features_files = features_outputs(a, features, o) if features else None
            concepts_files = concepts_outputs(loaded, concepts, a, o) if concepts else None
            write_image_result(entry.path, args.out / entry.name, a, model, o, args, decode_s, explained, texts,
                               inside_files, preprocess, loaded.assumptions, features_files, concepts_files,
                               loaded.verified.to_dict())

    processes = distributed.start(device)
    try:
        result = run.run(loaded, entries, options, processes, writer)
    except ValueError as error:   # --resume found another run's progress
        print(f"error: {error}", file=sys.stderr)
        return 2
    finally:
        distributed.finish(processes)
    if not args.quiet and processes.main:
        print(f"{'analysed' if args.stats_only else 'wrote'} {result.done} of {len(entries)} images "
              f"{'for' if args.stats_only else 'to'} {args.out}", file=sys.stderr)
    return 1 if result.failed else 0
