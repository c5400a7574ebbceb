"""``python -m viz VIDEO --weights W --out D [--frames N]``: a video model's files, one folder per video.

Per video, in ``D/<stem>/`` (a folder of videos as a folder of photos: its video files, or, when it has none, those of
its sub-folders, each named ``<sub-folder>/<stem>``):

- ``result.json``: "video", "model", "weights", "input_size", "preprocess" (as for photos), "architecture",
  "readout", "frames" ({"indices": the sampled frames' indices in the video, "seconds": their times}), "tubelet",
  "top_k", "options", "timings_s", "files";
- ``input_frames.npy``: (T, H, W, 3) uint8, the frames as the model saw them before normalisation;
- ``frames.png``: the sampled frames with the readout's rollout (``viz.video.view``), ``rollout.gif`` the same
  animated (``--frame-ms``);
- ``temporal_distance.png``: each head's temporal attention distance (frames) beside its spatial one (pixels);
- ``attention.npz``: ``rollout`` (T', gh, gw), ``frame_indices`` (T,), ``frame_seconds`` (T,),
  ``temporal_distance`` (L, H) in frames, ``spatial_distance`` (L, H) in pixels, ``probabilities`` (K,).

With ``--explain M1,M2 [--target CLASS]`` (the video methods, ``viz.video.classmap.VIDEO_METHODS``: gradcam, gae):
``<method>.png``, the sampled frames with the method's map per frame for the class, ``<method>`` (T', gh, gw) in
attention.npz (``gradcam``: pytorch-grad-cam's map for video, min-max scaled over the clip; ``gae``: GAE through
space and time, R's values, ``viz.video.gae``) and "explain": {"target": {"index", "name"}, "methods": [...]} in
result.json, every method from one gradient pass. ``--faithfulness [--perturbation mean_colour|blur]
[--steps N]`` adds ``trust.png`` (the deletion and insertion curves over the clip's tubelets, ``viz.video.faithfulness``)
and, in "explain", "faithfulness" {method: {"deletion_auc", "insertion_auc", "deletion", "insertion", "auc_error"}}
(with "random", the reference order), "perturbation" and "gains" {method: {"deletion_gain", "insertion_gain"}}, as
the photo command names them.

A bad video (``vit.video_file``'s guards) is reported in its sentence and the run goes on; the exit status is 1
when any video failed, 2 for options this model cannot run.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from vit.explain import class_target
from vit.video_file import VIDEO_SUFFIXES, VideoFileError, read_clip

from ..analysis import analyze
from ..compare.animate import save_gif
from ..drawing.plots import figure_to_image
from ..folders import files
from ..explain.methods import method_names
from ..video.classmap import ClipMaps, classmap_strip, clip_maps, video_method_names
from ..video.faithfulness import VIDEO_PROTOCOLS, ClipCheck, curves_figure, trust_json
from ..video.view import clip_rollout, distance_picture, frame_overlays, frames_strip

# Options of ``python -m viz`` a video model does not run yet: (is it asked for, the flag)
PHOTO_ONLY = ((lambda a: a.texts, "--texts"), (lambda a: a.compare, "--compare"), (lambda a: a.features, "--features"),
              (lambda a: a.concepts, "--concepts"), (lambda a: a.contrast, "--contrast"),
              (lambda a: a.sanity, "--sanity"),
              (lambda a: a.protocol, "--protocol"), (lambda a: a.inside, "--inside"),
              (lambda a: a.animate, "--animate"), (lambda a: a.stats_only, "--stats-only"),
              (lambda a: a.resume, "--resume"), (lambda a: a.input_size, "--input-size"),
              (lambda a: a.batch_size > 1, "--batch-size"), (lambda a: a.workers, "--workers"),
              (lambda a: a.query, "--query"), (lambda a: a.query_rollout, "--query-rollout"),
              (lambda a: a.mask_artifacts, "--mask-artifacts"))


def check_video_run(args: argparse.Namespace, loaded) -> None:
    """ValueError, one sentence saying what to do, for options a video model does not run, and a --frames the model
    cannot read (its tubelets, or its fixed frame count)."""
    asked = [flag for wanted, flag in PHOTO_ONLY if wanted(args)]
    if asked:
        raise ValueError(f"{asked[0]} is not drawn for video models yet; leave it out (a video run writes the frames' "
                         f"rollout and the heads' temporal and spatial attention distance).")
    if args.explain:
        video_method_names(method_names(args.explain))
    video_protocol(args)
    if args.explain and not loaded.model.cfg.num_classes:
        raise ValueError("--explain explains a class, and this video model has no classifier head; leave it "
                         "out.")
    if args.target is not None and not args.explain:
        raise ValueError("--target chooses the class of --explain; give --explain gradcam (or gae) too.")
    if args.frame_ms < 10:
        raise ValueError(f"--frame-ms must be at least 10 but got {args.frame_ms}.")
    if args.frames is not None:
        loaded.model.architecture(*loaded.preprocess.crop, frames=args.frames)


def video_protocol(args: argparse.Namespace) -> str:
    """How --faithfulness removes a video's tubelets: --perturbation mean_colour or blur, the default (tokens, the
    photo's) read as mean_colour; ValueError for another, or several."""
    asked = list(args.perturbation)
    if args.faithfulness and not args.explain:
        raise ValueError("--faithfulness scores the maps of --explain; give --explain METHODS too, e.g. "
                         "--explain gradcam,gae.")
    if asked == ["tokens"]:
        return VIDEO_PROTOCOLS[0]
    if len(asked) != 1 or asked[0] not in VIDEO_PROTOCOLS:
        raise ValueError(f"--perturbation {','.join(asked)} is not run for video models; a video's tubelets are "
                         f"removed in pixel space, one way per run: {' or '.join(VIDEO_PROTOCOLS)}.")
    return asked[0]


def run_videos(args: argparse.Namespace, loaded, dtype) -> int:
    """Every video of ``args.images`` through the video model ``loaded``: its files (module docstring); the exit
    status."""
    check_video_run(args, loaded)
    entries = files.list_images(args.images, loaded.labels, VIDEO_SUFFIXES)
    if not entries:
        raise ValueError("no videos found in " + ", ".join(args.images))
    keep = np.float16 if args.float16 else np.float32
    target = class_target(loaded.labels, args.target) if args.target is not None else None
    failed = 0
    for entry in entries:
        t0 = time.perf_counter()
        try:
            clip = read_clip(entry.path, loaded.preprocess, args.frames)
        except (VideoFileError, OSError) as error:
            failed += 1
            print(f"error: {entry.path}: {error}", file=sys.stderr)
            continue
        decode_s = time.perf_counter() - t0
        a = analyze(loaded, clip, keep, dtype)
        cam = explained(loaded, a, target, args) if args.explain else None
        write_video_result(entry.path, args.out / entry.name, a, args, loaded.preprocess_record(), decode_s, cam,
                           loaded.verified.to_dict())
    if not args.quiet:
        print(f"wrote {len(entries) - failed} of {len(entries)} videos to {args.out}", file=sys.stderr)
    return 1 if failed else 0


def explained(loaded, a, target, args: argparse.Namespace) -> tuple[ClipMaps, object]:
    """The --explain methods' maps of the analysed clip for ``target`` (None: its top-1 class), in float32, and with
    --faithfulness their deletion / insertion report over the tubelets (else None)."""
    x = loaded.preprocess.clip_tensor(a.clip.frames).to(next(loaded.model.parameters()).device)   # (1, T, 3, h, w)
    maps = clip_maps(loaded.model, x, video_method_names(method_names(args.explain)), target)
    report = None
    if args.faithfulness:
        name = a.labels[maps.index] if maps.index < len(a.labels) else str(maps.index)
        report = ClipCheck(loaded.model, x, maps.index, maps.maps, protocol=video_protocol(args), points=args.steps,
                           name=name).result()
    return maps, report


def write_video_result(path: Path, folder: Path, a, args: argparse.Namespace, preprocess: dict,
                       decode_s: float, cam: tuple[ClipMaps, object] | None = None,
                       verified: dict | None = None) -> None:
    """One analysed clip's files (module docstring); ``cam``: its class maps and their check (``explained``) with
    --explain; ``verified``: the load's check against its own library (``vit.LoadedModel.verified.to_dict()``),
    result.json's "verified"."""
    t0 = time.perf_counter()
    rollout = clip_rollout(a, args.fusion, args.discard_ratio)
    overlays = frame_overlays(a, rollout, args.cmap, args.alpha)
    spatial = a.mean_distance[False]
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / "input_frames.npy", np.ascontiguousarray(a.clip.frames, dtype=np.uint8))
    frames_strip(a, overlays, args.lang).save(folder / "frames.png")
    save_gif(overlays, folder / "rollout.gif", args.frame_ms)
    distance_picture(a.temporal_distance, spatial, args.lang).save(folder / "temporal_distance.png")
    extra, pictures, explain = {}, [], {}
    if cam is not None:
        maps, report = cam
        name = a.labels[maps.index] if maps.index < len(a.labels) else str(maps.index)
        for method, values in maps.maps.items():
            classmap_strip(a, values, method, name, args.cmap, args.alpha, args.lang).save(folder / f"{method}.png")
            extra[method] = values
            pictures.append(f"{method}.png")
        explain = {"target": {"index": maps.index, "name": name}, "methods": list(maps.maps)}
        if report is not None:
            figure_to_image(curves_figure(report, args.lang)).save(folder / "trust.png")
            pictures.append("trust.png")
            explain.update(trust_json(report))
    save = np.savez_compressed if args.compress else np.savez
    save(folder / "attention.npz", rollout=rollout, frame_indices=np.asarray(a.clip.indices, np.int64),
         frame_seconds=np.asarray(a.clip.times, np.float64), temporal_distance=a.temporal_distance,
         spatial_distance=spatial, probabilities=a.probabilities, **extra)
    t1 = time.perf_counter()
    written = sorted(["attention.npz", "frames.png", "input_frames.npy", "result.json", "rollout.gif",
                      "temporal_distance.png"] + pictures)
    result = {
        "video": str(path),
        "model": a.model_name,
        "weights": args.weights,
        "input_size": list(a.input_size),
        "preprocess": preprocess,
        **({"verified": verified} if verified is not None else {}),
        "architecture": a.architecture.family,
        "readout": a.readout,
        "frames": {"indices": [int(i) for i in a.clip.indices], "seconds": [float(s) for s in a.clip.times]},
        "tubelet": a.architecture.tubelet,
        "top_k": [{"label": label, "probability": p} for label, p in a.top_k(args.top_k)],
        "options": {"fusion": args.fusion, "discard_ratio": args.discard_ratio, "cmap": args.cmap,
                    "alpha": args.alpha, "frame_ms": args.frame_ms},
        "timings_s": {"decode": decode_s, **a.timings, "write": t1 - t0},
        "files": written,
    }
    if explain:
        result["explain"] = explain
    (folder / "result.json").write_text(json.dumps(result, indent=2) + "\n")
