"""``python -m viz IMAGE [IMAGE ...] --weights PATH --out DIR``: every panel as PNG, plus the numbers behind them.

Per image, in ``DIR/<image name>/``: one PNG per panel, ``result.json`` (top-k classes, model, input size,
options, timings) and ``attention.npz`` (the attention itself and every map drawn, so a figure can be
reproduced exactly). With several images, ``DIR/summary/`` holds the mean attention distance averaged over
them (the paper's Figure 7, right, is such an average).

With a CLIP checkpoint that holds a text tower, ``--texts "a photo of a cat,a photo of a dog"`` adds the
zero-shot probabilities of those texts to result.json (``"zero_shot"``, most probable first).

``--animate`` adds ``animation.gif`` (one frame per layer); ``--compare B`` writes ``compare.png`` and
``compare.json`` (the --weights model A against B) instead of the panels.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from . import panels
from .animate import ANIMATED_MAPS, FRAME_MS
from .explain import METHODS, contrast, method_names
from .explain.panels import contrast_panel, explanation_panel, methods_row
from .i18n import LANGUAGES, t
from .result import Analysis
from .maps.rollout import FUSIONS

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".gif", ".webp", ".bmp", ".tif", ".tiff", ".avif"}
PANEL_HELP = """panels written per image (PNG):
  input              the cropped image the model saw
  rollout            attention rollout of the CLS token (Abnar & Zuidema 2020)
  attention          CLS attention of --layer / --head
  threshold          DINO mask: smallest patch set holding --share of the attention mass
  heads              CLS attention of every layer (rows) and head (columns)
  (models without a CLS token: the query is SigLIP's MAP probe, or the mean of the patches for mean-pooled
  models such as BEiT; result.json's "readout" and "captions" name it)
  query_row          where the --query patch attends (its attention row)
  query_column       who attends to the --query patch (its attention column)
  filters            Figure 7 left: top 28 principal components of the patch-embedding filters
  pos_similarity     Figure 7 centre: cosine similarity of the position embeddings
  mean_distance      Figure 7 right: mean attention distance of every head against depth
  token_norms        L2 norm of every patch token after each block, high-norm tokens outlined
  token_norm_curves  token norms against depth, flagged tokens in red

attention.npz holds: attention (L, H, T, T), rollout (gh, gw), num_prefix_tokens, grid (gh, gw),
patch_size, pos_similarity (N, N) on the checkpoint's native grid, mean_distance (L, H) in pixels,
token_norms (L, T), probabilities (K,), cls_attention (the query's attention), query_row, query_column
(gh, gw), query_patch, high_norm_flags (L, gh, gw), probe_attention (H, T) for MAP models. Layers and heads
are 0-based; negative indices count from the end.

--animate adds animation.gif (one frame per layer; animation.mp4 too with --mp4). --compare B writes, instead
of the panels, compare.png and compare.json: models [A, B] with name, sha256 (first 8 hex digits) and top_k
(probability, probability_in_other, change_b_minus_a), alignment, attention, differences, files.

With --explain M1,M2,…: explain_<method>.png per method (the map for --target, default each image's
top-1 class) and explanations.png (all of them side by side), explain_<method> (gh, gw) in attention.npz,
and "explain": {"target": {"index", "name"}, "methods": […]} in result.json. With --contrast B also
contrast_<method>.png and contrast_<method>: the --target map minus B's, diverging colours centred on 0,
and "contrast": {"index", "name"}. Methods: """ + ", ".join(METHODS) + ".\n"


def head_arg(text: str) -> int | None:
    """--head: an integer, or "mean" for the mean of heads."""
    if text.lower() == "mean":
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a head number or 'mean' but got {text!r}") from None


def fraction(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1 but got {text}")
    return value


def text_list(text: str) -> list[str]:
    """--texts: comma-separated texts, each stripped; empty entries are an error."""
    texts = [t.strip() for t in text.split(",")]
    if not all(texts):
        raise argparse.ArgumentTypeError(f"expected comma-separated non-empty texts but got {text!r}")
    return texts


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m viz", description="Write every attention panel of a Vision Transformer as PNG, plus the "
                                            "numbers behind them (result.json, attention.npz).",
                                epilog=PANEL_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("images", nargs="+", metavar="IMAGE", help="image files, or folders of images (not recursive)")
    p.add_argument("--weights", default="default", metavar="PATH",
                   help="checkpoint: a file, a Hugging Face folder, a known name or a file in weights/ "
                        "(default: torchvision's ViT-B/16)")
    p.add_argument("--out", default="out", type=Path, metavar="DIR", help="output folder (default: out)")
    p.add_argument("--input-size", nargs=2, type=int, metavar=("H", "W"),
                   help="run the model at this input size instead of the checkpoint's (multiples of the patch "
                        "size; position embeddings are resampled, Figure 7 keeps the native grid)")
    g = p.add_argument_group("CLIP zero-shot")
    g.add_argument("--texts", type=text_list, metavar="TEXTS",
                   help='comma-separated class names or prompts, e.g. "a photo of a cat,a photo of a dog": their '
                        "zero-shot probabilities softmax(logit_scale · cosine(image, text)) go into result.json "
                        "(checkpoints with a CLIP text tower: OpenAI, open_clip, Hugging Face CLIPModel)")
    g = p.add_argument_group("rollout")
    g.add_argument("--fusion", choices=FUSIONS, default="mean", help="head fusion (default: mean)")
    g.add_argument("--discard-ratio", type=float, default=0.0, metavar="R",
                   help="set the lowest fraction R (0 <= R < 1) of each fused matrix to 0, never entries in the "
                        "row or column of the read-out token (default: 0, as in the paper)")
    g.add_argument("--start-layer", type=int, default=0, metavar="L", help="first block of the product (default: 0)")
    g.add_argument("--mask-artifacts", action="store_true",
                   help="drop high-norm artifact tokens (see --norm-ratio) from every map of the CLS attention: "
                        "rollout, attention, threshold mask, heads and patch query")
    g = p.add_argument_group("attention, patch query and mask")
    g.add_argument("--layer", type=int, default=-1, help="block for the attention, query and mask panels (default: -1, the last)")
    g.add_argument("--head", type=head_arg, default=None, help="head number, or 'mean' (default: mean of heads)")
    g.add_argument("--query", nargs=2, type=int, metavar=("ROW", "COL"),
                   help="patch for the query panels (default: the centre of the grid)")
    g.add_argument("--query-rollout", action="store_true",
                   help="query panels from the rollout matrix (all blocks) instead of --layer")
    g.add_argument("--share", type=fraction, default=0.6,
                   help="threshold mask: share of the attention mass kept (default: 0.6, as in DINO)")
    g.add_argument("--mask-source", choices=("attention", "rollout"), default="attention",
                   help="threshold mask of the CLS attention of --layer or of the rollout (default: attention)")
    g = p.add_argument_group("token norms and attention distance")
    g.add_argument("--norm-ratio", type=float, default=3.0, metavar="Q",
                   help="flag a patch whose norm exceeds Q times its block's median patch norm (default: 3)")
    g.add_argument("--distance-renormalise", action="store_true",
                   help="mean attention distance over patch tokens only, rows renormalised (default: attention "
                        "to prefix tokens counts as distance 0, as in the common reproduction)")
    g = p.add_argument_group("rendering and files")
    g.add_argument("--cmap", default="inferno", help="matplotlib colormap for the maps (default: inferno)")
    g.add_argument("--alpha", type=fraction, default=0.6, help="opacity of the heat map over the photo (default: 0.6)")
    g.add_argument("--no-colorbar", action="store_true", help="overlays without a colour bar")
    g.add_argument("--scale", type=int, default=1, help="enlarge the overlays this many times (default: 1)")
    g.add_argument("--lang", choices=LANGUAGES, default="en",
                   help="language of the texts in the pictures: en or zh-CN (Simplified Chinese) (default: en)")
    g.add_argument("--top-k", type=int, default=5, help="classes listed in result.json (default: 5)")
    g.add_argument("--float16", action="store_true", help="store attention as float16 (half the file size)")
    g.add_argument("--compress", action="store_true", help="compress attention.npz (smaller, slower)")
    g.add_argument("--quiet", action="store_true", help="no progress bar")
    g = p.add_argument_group("class-specific explanations")
    g.add_argument("--explain", metavar="METHODS",
                   help=f"comma-separated explanation methods, from: {', '.join(METHODS)}")
    g.add_argument("--target", metavar="NAME_OR_INDEX",
                   help="class to explain, by name ('tabby') or index (default: each image's top-1 class)")
    g.add_argument("--contrast", metavar="NAME_OR_INDEX",
                   help="also 'why --target rather than this class': the --target map minus this class's map")
    g = p.add_argument_group("compare and animate")
    g.add_argument("--compare", metavar="B",
                   help="compare the --weights model (A) with this checkpoint (B) on each image: writes compare.png "
                        "and compare.json (names, sha256 prefixes, top-k with the change, differences of the rollout, "
                        "of the --layer/--head CLS attention and of the mean attention distance) instead of the panels")
    g.add_argument("--animate", action="store_true",
                   help="also write animation.gif: one frame per block, the block written on each (with --compare: "
                        "animation.gif of A and animation_b.gif of B)")
    g.add_argument("--animate-map", choices=ANIMATED_MAPS, default="attention",
                   help="what the animation shows: the CLS attention of each block (--head or the mean of heads), or "
                        "the rollout up to each block (--fusion, --discard-ratio, --mask-artifacts) (default: attention)")
    g.add_argument("--frame-ms", type=int, default=FRAME_MS, help=f"animation: milliseconds per frame (default: "
                                                                 f"{FRAME_MS})")
    g.add_argument("--mp4", action="store_true",
                   help="animation: also write animation.mp4 (needs the optional packages imageio and imageio-ffmpeg)")
    return p


@dataclasses.dataclass(frozen=True)
class ExplainRequest:
    """What --explain, --target and --contrast ask for, checked against the model before any image runs."""
    methods: list[str]
    target: object = None        # vit.explain.ClassTarget, or None for each image's top-1 class
    contrast: object = None      # vit.explain.ClassTarget or None


def explain_request(args: argparse.Namespace, labels: list[str]) -> ExplainRequest | None:
    """--explain/--target/--contrast -> ExplainRequest (None without --explain); ValueError lists what exists."""
    from vit.explain import class_target

    if not args.explain:
        if args.target is not None or args.contrast is not None:
            raise ValueError("--target and --contrast choose the class for --explain; give --explain METHODS too.")
        return None
    return ExplainRequest(method_names(args.explain),
                          None if args.target is None else class_target(labels, args.target),
                          None if args.contrast is None else class_target(labels, args.contrast))


def explanation_outputs(loaded, image, a: Analysis, request: ExplainRequest,
                        o: panels.MapOptions) -> tuple[dict, dict, dict]:
    """Explain one image -> (PNG panels, npz arrays, the result.json "explain" entry) for ``write_image_result``."""
    from .analysis import explain

    t0 = time.perf_counter()
    e = explain(loaded, image, request.target, request.methods)
    name = e.target["name"]
    images, arrays = {}, {}
    for m in request.methods:
        arrays[f"explain_{m}"] = e.map(m)
        images[f"explain_{m}"] = explanation_panel(panels.photo(a, o.scale), e.map(m), m, o.cmap, o.alpha,
                                                   o.colorbar, label=f"{m}: {name}")
    images["explanations"] = methods_row(a.image, {m: e.map(m) for m in request.methods}, cmap=o.cmap, alpha=o.alpha,
                                         title=name)
    info = {"target": {"index": e.target["index"], "name": name}, "methods": list(request.methods),
            "readout": e.readout, "probability": e.probability}
    if request.contrast is not None:
        b = explain(loaded, image, request.contrast, request.methods)
        for m in request.methods:
            arrays[f"contrast_{m}"] = contrast(e, b, m)
            images[f"contrast_{m}"] = contrast_panel(panels.photo(a, o.scale), arrays[f"contrast_{m}"], o.alpha,
                                                     o.colorbar, label=f"{m}: {name} - {b.target['name']}")
        info["contrast"] = {"index": b.target["index"], "name": b.target["name"]}
    info["seconds"] = time.perf_counter() - t0
    return images, arrays, info


def expand_images(paths: list[str]) -> list[Path]:
    """Files as given; folders replaced by the image files inside them, sorted. Missing paths are kept
    (they are reported when opened)."""
    found = []
    for text in paths:
        path = Path(text)
        if path.is_dir():
            found.extend(sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES))
        else:
            found.append(path)
    return found


def output_dirs(images: list[Path], out: Path) -> list[Path]:
    """One folder per image, named after it; a repeated name gets a numbered suffix."""
    dirs, seen = [], {}
    for image in images:
        n = seen.get(image.stem, 0)
        seen[image.stem] = n + 1
        dirs.append(out / (image.stem if n == 0 else f"{image.stem}-{n + 1}"))
    return dirs


def options_from(args: argparse.Namespace) -> panels.MapOptions:
    return panels.MapOptions(layer=args.layer, head=args.head, fusion=args.fusion, discard_ratio=args.discard_ratio,
                             start_layer=args.start_layer, mask_artifacts=args.mask_artifacts,
                             norm_ratio=args.norm_ratio, query=tuple(args.query) if args.query else None,
                             query_rollout=args.query_rollout, share=args.share, mask_source=args.mask_source,
                             distance_renormalise=args.distance_renormalise, cmap=args.cmap, alpha=args.alpha,
                             colorbar=not args.no_colorbar, scale=args.scale, lang=args.lang)


def write_image_result(path: Path, folder: Path, a: Analysis, model: tuple[dict, dict], o: panels.MapOptions,
                       args: argparse.Namespace, decode_s: float, explained: tuple[dict, dict, dict] | None = None,
                       zero_shot: list[dict] | None = None) -> np.ndarray:
    """Render and write one analysed image's panels (with the model's own, ``model``: the result of
    ``panels.model_panels``, and the explanations, ``explained``: ``explanation_outputs``), result.json and
    attention.npz; returns its mean distance (L, H).

    ``zero_shot``: [{"text", "probability"}, …] most probable first, written as result.json's "zero_shot"."""
    t2 = time.perf_counter()
    images, arrays = panels.image_panels(a, o)
    t3 = time.perf_counter()
    images, arrays = {**images, **model[0]}, {**arrays, **model[1]}
    if explained is not None:
        images, arrays = {**images, **explained[0]}, {**arrays, **explained[1]}
    folder.mkdir(parents=True, exist_ok=True)
    for name, picture in images.items():
        picture.save(folder / f"{name}.png")
    animations = write_animation(folder, "animation", a, o, args) if args.animate else []
    save = np.savez_compressed if args.compress else np.savez
    probe = {"probe_attention": a.probe_attention} if a.probe_attention is not None else {}
    save(folder / "attention.npz", attention=a.attention, num_prefix_tokens=np.int64(a.num_prefix),
         grid=np.array(a.grid), patch_size=np.int64(a.patch_size), token_norms=a.token_norms,
         probabilities=a.probabilities, **probe, **arrays)
    t4 = time.perf_counter()
    result = {
        "image": str(path),
        "model": a.model_name,
        "weights": args.weights,
        "input_size": list(a.input_size),
        "grid": list(a.grid),
        "num_prefix_tokens": a.num_prefix,
        **({"top_k": [{"label": label, "probability": p} for label, p in a.top_k(args.top_k)]}
           if a.probabilities.size else {"notes": [no_classifier_note(a.model_name)]}),
        **({"zero_shot": zero_shot} if zero_shot is not None else {}),
        "readout": a.readout,
        "captions": panels.captions(a, o),
        "options": {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(o).items()},
        "timings_s": {"decode": decode_s, **a.timings, "panels": t3 - t2, "write": t4 - t3},
        "files": sorted([f"{name}.png" for name in images] + ["attention.npz", "result.json"] + animations),
    }
    if explained is not None:
        result["explain"] = explained[2]
    (folder / "result.json").write_text(json.dumps(result, indent=2) + "\n")
    return arrays["mean_distance"]


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
    from .animate import depth_frames, save_gif, save_mp4

    frames = depth_frames(a, args.animate_map, o.head, o.fusion, o.discard_ratio, o.mask_artifacts, o.norm_ratio,
                          o.cmap, o.alpha, o.colorbar, o.scale)
    save_gif(frames, folder / f"{stem}.gif", args.frame_ms)
    if not args.mp4:
        return [f"{stem}.gif"]
    save_mp4(frames, folder / f"{stem}.mp4", args.frame_ms)
    return [f"{stem}.gif", f"{stem}.mp4"]


def write_comparison(path: Path, folder: Path, image, sides: tuple, o: panels.MapOptions,
                     args: argparse.Namespace) -> dict:
    """compare.png and compare.json for one image (and the two animations with --animate); returns the record."""
    from .compare import compare, comparison_image, comparison_record

    side_a, side_b = sides
    c = compare(image, side_a, side_b, o.layer, o.head, o.fusion, o.discard_ratio, args.top_k)
    folder.mkdir(parents=True, exist_ok=True)
    comparison_image(c, o.cmap, o.alpha).save(folder / "compare.png")
    files = ["compare.png", "compare.json"]
    if args.animate:
        files += write_animation(folder, "animation", side_a.analysis, o, args)
        files += write_animation(folder, "animation_b", side_b.analysis, o, args)
    record = {"image": str(path), **comparison_record(c), "files": sorted(files)}
    (folder / "compare.json").write_text(json.dumps(record, indent=2) + "\n")
    return record


def run_comparison(args: argparse.Namespace, loaded_a, o: panels.MapOptions, images: list[Path]) -> int:
    """``--compare B``: per image, A (--weights) against B on the same photo. Exit code 2 for a model that cannot
    be loaded or options that do not fit both models, 1 when an image failed."""
    import vit
    from vit.image_file import open_image

    from .analysis import compare_side

    try:
        loaded_b = vit.load(args.compare)
    except (ValueError, FileNotFoundError) as error:
        print(f"error: cannot load the --compare weights: {error}", file=sys.stderr)
        return 2
    try:
        for loaded in (loaded_a, loaded_b):
            panels.check_options(o, loaded.model.cfg.depth, loaded.model.cfg.num_heads)
    except ValueError as error:
        print(f"error: {error} (the options must fit both models)", file=sys.stderr)
        return 2
    done, failed = 0, []
    for path, folder in tqdm(list(zip(images, output_dirs(images, args.out))), desc="images", unit="image",
                             disable=args.quiet or len(images) == 1):
        try:
            image = open_image(path)
            sides = compare_side(loaded_a, image), compare_side(loaded_b, image)
            write_comparison(path, folder, image, sides, o, args)
            done += 1
        except ValueError as error:
            failed.append(path)
            tqdm.write(f"error: {path}: {error}", file=sys.stderr)
    if not args.quiet:
        print(f"wrote {done} of {len(images)} comparisons to {args.out}", file=sys.stderr)
    return 1 if failed else 0


def write_summary(folder: Path, distances: list[np.ndarray], names: list[str], grid, patch_size: int,
                  lang: str = "en") -> None:
    """Mean attention distance averaged over the images (PNG + npz with the per-image values)."""
    folder.mkdir(parents=True, exist_ok=True)
    mean = np.mean(distances, axis=0)
    panels.distance_panel(mean, grid, patch_size, title=t("title.mean_over_images", lang, count=len(distances)),
                          lang=lang).save(folder / "mean_distance.png")
    np.savez(folder / "mean_distance.npz", mean_distance=mean, per_image=np.stack(distances), images=np.array(names))


def load_model(args: argparse.Namespace):
    """``vit.load(--weights)``, set up to run at ``--input-size`` if given; ValueError says what is wrong."""
    import vit

    try:
        loaded = vit.load(args.weights)
    except (ValueError, FileNotFoundError) as error:
        raise ValueError(f"cannot load the weights: {error}") from None
    if args.input_size:
        P = loaded.model.cfg.patch_size
        H, W = args.input_size
        if H % P or W % P or H < P or W < P:
            raise ValueError(f"--input-size {H} {W} must be positive multiples of the patch size {P}.")
        ratio = loaded.preprocess.resize / min(loaded.preprocess.crop)  # keep the checkpoint's crop ratio
        loaded.preprocess = dataclasses.replace(loaded.preprocess, crop=(H, W), resize=round(min(H, W) * ratio))
    return loaded


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from vit.image_file import open_image  # torch is imported only once there is work (``--help`` stays quick)

    from .analysis import analyze, model_arrays

    try:
        loaded = load_model(args)
        o = options_from(args)
        grid = loaded.model.token_layout(*loaded.preprocess.crop).grid
        panels.check_options(o, loaded.model.cfg.depth, loaded.model.cfg.num_heads, grid)
        request = explain_request(args, loaded.labels)
        images = expand_images(args.images)
        if not images:
            raise ValueError("no images found in " + ", ".join(args.images))
        if args.texts and loaded.text is None:
            raise ValueError(f"--texts needs a CLIP checkpoint with a text tower (OpenAI, open_clip or a Hugging "
                             f"Face CLIPModel folder), but {args.weights} has none.")
        if args.frame_ms < 10:
            raise ValueError(f"--frame-ms must be at least 10 but got {args.frame_ms}.")
        if args.mp4 and not args.animate:
            raise ValueError("--mp4 writes the animation as MP4 too: add --animate.")
        if args.mp4:
            from .animate import mp4_available
            if not mp4_available():
                raise ValueError("--mp4 needs the optional packages imageio and imageio-ffmpeg (pip install imageio "
                                 "imageio-ffmpeg); leave --mp4 out for the GIF alone.")
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.compare:
        return run_comparison(args, loaded, o, images)
    if loaded.config.num_classes == 0:
        print(f"note: {no_classifier_note(loaded.name)}", file=sys.stderr)
    model = panels.model_panels(model_arrays(loaded.model, loaded.name), args.lang)   # the same for every image
    distances, done, failed = [], [], []
    for path, folder in tqdm(list(zip(images, output_dirs(images, args.out))), desc="images", unit="image",
                             disable=args.quiet or len(images) == 1):
        try:
            t0 = time.perf_counter()
            image = open_image(path)
            decode_s = time.perf_counter() - t0
            a = analyze(loaded, image, np.float16 if args.float16 else np.float32)
            explained = explanation_outputs(loaded, image, a, request, o) if request else None
            texts = zero_shot_entries(loaded, a, args.texts) if args.texts else None
            distances.append(write_image_result(path, folder, a, model, o, args, decode_s, explained, texts))
            done.append(str(path))
        except ValueError as error:   # an unreadable or unsupported image file
            failed.append(path)
            tqdm.write(f"error: {path}: {error}", file=sys.stderr)
    if len(distances) > 1:
        write_summary(args.out / "summary", distances, done, grid, loaded.model.cfg.patch_size, args.lang)
    if not args.quiet:
        print(f"wrote {len(done)} of {len(images)} images to {args.out}", file=sys.stderr)
    return 1 if failed else 0
