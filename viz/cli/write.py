"""One analysed image's files: every panel as PNG, ``attention.npz`` with the arrays behind them, ``result.json``."""
from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np

from vit.architecture import stage_records

from .. import panels
from ..records import Analysis
from .pictures import captions, image_panels


def write_image_result(path: Path, folder: Path, a: Analysis, model: tuple[dict, dict], o: panels.MapOptions,
                       args: argparse.Namespace, decode_s: float, explained: tuple[dict, dict, dict] | None = None,
                       zero_shot: list[dict] | None = None, inside: tuple[dict, dict, dict] | None = None,
                       preprocess: dict | None = None, assumptions: list[str] | None = None,
                       features: tuple[dict, dict, dict] | None = None,
                       concepts: tuple[dict, dict, list] | None = None, verified: dict | None = None) -> np.ndarray:
    """Render and write one analysed image's panels (with the model's own, ``model``: the result of
    ``model_panels``, and the explanations, ``explained``: ``explanation_outputs``), result.json and
    attention.npz; returns its mean distance (L, H).

    ``zero_shot``: [{"text", "probability"}, …] most probable first, written as result.json's "zero_shot";
    ``inside``: ``viz.cli.inside.inside_outputs``, written as result.json's "inside"; ``features``:
    ``viz.cli.features.features_outputs``, written as result.json's "features"; ``concepts``:
    ``viz.concepts.outputs.concepts_outputs``, written as result.json's "concepts".
    ``preprocess``: how the photo became the model's input (``vit.LoadedModel.preprocess_record``: "mode",
    "resize", "crop", "interpolation", "mean", "std", …), written as result.json's "preprocess"; ``assumptions``:
    what the loader assumed rather than read (``vit.LoadedModel.assumptions``), result.json's "assumptions";
    ``verified``: the load's check against its own library (``vit.LoadedModel.verified.to_dict()``), result.json's
    "verified"."""
    t2 = time.perf_counter()
    images, arrays = image_panels(a, o)
    t3 = time.perf_counter()
    images, arrays = {**images, **model[0]}, {**arrays, **model[1]}
    for extra in (explained, inside, features, concepts):
        if extra is not None:
            images, arrays = {**images, **extra[0]}, {**arrays, **extra[1]}
    folder.mkdir(parents=True, exist_ok=True)
    for name, picture in images.items():
        picture.save(folder / f"{name}.png")
    animations = write_animation(folder, "animation", a, o, args) if args.animate else []
    save = np.savez_compressed if args.compress else np.savez
    probe = {"probe_attention": a.probe_attention} if a.probe_attention is not None else {}
    save(folder / "attention.npz", num_prefix_tokens=np.int64(a.num_prefix), grid=np.array(a.grid),
         patch_size=np.int64(a.patch_size), probabilities=a.probabilities, **attention_arrays(a), **probe, **arrays)
    t4 = time.perf_counter()
    result = {
        "image": str(path),
        "model": a.model_name,
        "weights": args.weights,
        "input_size": list(a.input_size),
        **({"preprocess": preprocess} if preprocess is not None else {}),
        **({"assumptions": list(assumptions)} if assumptions is not None else {}),
        **({"verified": verified} if verified is not None else {}),
        "grid": list(a.grid),
        "architecture": a.architecture.family,
        "stages": stage_records(a.architecture),
        "num_prefix_tokens": a.num_prefix,
        **({"top_k": [{"label": label, "probability": p} for label, p in a.top_k(args.top_k)]}
           if a.probabilities.size else {"notes": [no_classifier_note(a.model_name)]}),
        **({"zero_shot": zero_shot} if zero_shot is not None else {}),
        "readout": a.readout,
        "captions": captions(a, o),
        "options": {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(o).items()},
        "timings_s": {"decode": decode_s, **a.timings, "panels": t3 - t2, "write": t4 - t3},
        "files": sorted([f"{name}.png" for name in images] + ["attention.npz", "result.json"] + animations),
    }
    if explained is not None:
        result["explain"] = explained[2]
    if inside is not None:
        result["inside"] = inside[2]
    if features is not None:
        result["features"] = features[2]
    if concepts is not None:
        result["concepts"] = concepts[2]
    (folder / "result.json").write_text(json.dumps(result, indent=2) + "\n")
    return arrays["mean_distance"]


def attention_arrays(a: Analysis) -> dict[str, np.ndarray]:
    """The attention as the model kept it, for attention.npz: ``attention`` (L, H, T, T) and ``token_norms`` (L, T)
    when every block attends over the same tokens; else per block ``attention_<l>`` (nW, H, N, N), its layout
    ``layout_<l>`` (stage, block, gh, gw, wh, ww, sh, sw, token size) and ``token_norms_<l>`` (gh, gw)."""
    if a.architecture.one_sequence:
        return {"attention": a.attention, "token_norms": a.token_norms}
    out = {}
    for block, norms in zip(a.architecture.blocks, a.token_norms):
        i = block.index
        out[f"attention_{i}"] = a.maps.attention[i]
        out[f"layout_{i}"] = np.array([block.stage, block.block, *block.grid, *(block.window or block.grid),
                                       *block.shift, block.token_size], dtype=np.int64)
        out[f"token_norms_{i}"] = np.asarray(norms).reshape(block.grid)
    return out


def no_classifier_note(name: str) -> str:
    return (f"{name or 'this model'} has no classifier head (an image tower or a backbone): there are no classes, "
            f"so no top-k. With a CLIP checkpoint, --texts gives zero-shot probabilities of typed texts.")


def zero_shot_entries(loaded, a: Analysis, texts: list[str]) -> list[dict]:
    """[{"text", "probability"}, …] for the analysed pixels, most probable first (ties keep the typed order)."""
    from vit.clip import zero_shot

    probabilities = zero_shot(loaded, loaded.preprocess.to_tensor(a.image), texts)[0].tolist()
    order = sorted(range(len(texts)), key=lambda i: -probabilities[i])
    return [{"text": texts[i], "probability": probabilities[i]} for i in order]


def write_animation(folder: Path, stem: str, a: Analysis, o: panels.MapOptions, args: argparse.Namespace) -> list[str]:
    """``stem``.gif (and ``stem``.mp4 with --mp4): one frame per block of ``--animate-map``; returns the file names."""
    from ..compare.animate import depth_frames, save_gif, save_mp4

    frames = depth_frames(a, args.animate_map, o.head, o.fusion, o.discard_ratio, o.mask_artifacts, o.norm_ratio,
                          o.cmap, o.alpha, o.colorbar, o.scale)
    save_gif(frames, folder / f"{stem}.gif", args.frame_ms)
    if not args.mp4:
        return [f"{stem}.gif"]
    save_mp4(frames, folder / f"{stem}.mp4", args.frame_ms)
    return [f"{stem}.gif", f"{stem}.mp4"]

