"""``--compare B``: the --weights model (A) against B on every image: ``compare.png`` and ``compare.json``.

With ``--explain METHODS`` the class map of every method for the same target in both models is one more row
of compare.png and ``"explain"`` in compare.json (``explanation_pairs``).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tqdm import tqdm

from .. import panels
from .options import print_assumptions, print_verification
from .write import write_animation


def _same_target(loaded, target, name: str, texts) -> object:
    """A's resolved target for the other model: a class of the same name (the index when A named none), or
    the same text (CLIP). ValueError when that model has no such class or no text tower."""
    from vit.explain import TextTarget

    from ..explain.explainer import resolve_target
    return resolve_target(loaded, name, list(texts), text=isinstance(target, TextTarget))


def explanation_pairs(loaded_a, loaded_b, sides: tuple, request) -> tuple[dict, dict]:
    """--explain with --compare: every method's map for the same target in A and in B.

    The target is ``request.target`` resolved in A (None: A's top-1 class, or A's best text), then found by
    name in B, so both maps answer the same question. Returns (extra maps for ``viz.compare.compare``:
    {"<method>: <target>": (map of A, map of B)}, the start of compare.json's "explain" entry).
    """
    from ..explain.explainer import explain_tensor

    def run(loaded, side, target):
        x = loaded.preprocess.to_tensor(side.analysis.image).to(next(loaded.model.parameters()).device)
        return explain_tensor(loaded.model, x, target, request.methods, loaded.labels)

    a = run(loaded_a, sides[0], request.target)
    name = a.target["name"]
    try:
        b = run(loaded_b, sides[1], _same_target(loaded_b, request.target, name, getattr(request.target, "texts", ())))
    except ValueError as error:
        raise ValueError(f"B cannot explain A's target {name!r}: {error}") from None
    maps = {f"{m}: {name}": (a.map(m), b.map(m)) for m in request.methods}
    record = {"methods": list(request.methods), "target": {"name": name, "a": a.target, "b": b.target},
              "readout": {"a": a.query, "b": b.query}}
    return maps, record


def write_comparison(path: Path, folder: Path, image, sides: tuple, o: panels.MapOptions,
                     args: argparse.Namespace, explained: tuple[dict, dict] | None = None) -> dict:
    """compare.png and compare.json for one image (and the two animations with --animate); returns the record.

    ``explained``: ``explanation_pairs``' result; its maps become rows of compare.png, and compare.json gets
    ``"explain": {"methods", "target": {"name", "a", "b"}, "readout", "difference": {method: {"title",
    "total_variation", "max_abs_difference", "correlation"}}}`` (the same statistics as the other maps)."""
    from ..compare import compare, comparison_image, comparison_record

    side_a, side_b = sides
    extra = explained[0] if explained else None
    c = compare(image, side_a, side_b, o.layer, o.head, o.fusion, o.discard_ratio, args.top_k, extra_maps=extra)
    folder.mkdir(parents=True, exist_ok=True)
    comparison_image(c, o.cmap, o.alpha).save(folder / "compare.png")
    files = ["compare.png", "compare.json"]
    if args.animate:
        files += write_animation(folder, "animation", side_a.analysis, o, args)
        files += write_animation(folder, "animation_b", side_b.analysis, o, args)
    record = {"image": str(path), **comparison_record(c), "files": sorted(files)}
    if explained:
        titles = list(explained[0])
        record["explain"] = {**explained[1], "difference": {
            m: {"title": t, **c.maps[t].stats()} for m, t in zip(explained[1]["methods"], titles)}}
    (folder / "compare.json").write_text(json.dumps(record, indent=2) + "\n")
    return record


def run_comparison(args: argparse.Namespace, loaded_a, o: panels.MapOptions, entries: list, request=None) -> int:
    """``--compare B``: per image, A (--weights) against B on the same photo. Exit code 2 for a model that cannot
    be loaded or options that do not fit both models, 1 when an image failed. ``request``: --explain's
    ``ExplainRequest`` (the class maps of both models become rows of the comparison), or None."""
    import vit
    from vit.image_file import open_image

    from ..compare.side import compare_side

    try:
        loaded_b = vit.load(args.compare, preprocess=args.preprocess, verify=not args.no_verify)
    except (ValueError, FileNotFoundError) as error:
        print(f"error: cannot load the --compare weights: {error}", file=sys.stderr)
        return 2
    print_verification(loaded_b, args.compare)
    print_assumptions(loaded_b, args.compare)
    try:
        for loaded in (loaded_a, loaded_b):
            panels.check_options(o, loaded.model.cfg.depth, loaded.model.cfg.num_heads)
    except ValueError as error:
        print(f"error: {error} (the options must fit both models)", file=sys.stderr)
        return 2
    done, failed = 0, []
    for entry in tqdm(entries, desc="images", unit="image", disable=args.quiet or len(entries) == 1):
        try:
            image = open_image(entry.path)
            sides = compare_side(loaded_a, image), compare_side(loaded_b, image)
            explained = explanation_pairs(loaded_a, loaded_b, sides, request) if request else None
            write_comparison(entry.path, args.out / entry.name, image, sides, o, args, explained)
            done += 1
        except ValueError as error:
            failed.append(entry.path)
            tqdm.write(f"error: {entry.path}: {error}", file=sys.stderr)
    if not args.quiet:
        print(f"wrote {done} of {len(entries)} comparisons to {args.out}", file=sys.stderr)
    return 1 if failed else 0

