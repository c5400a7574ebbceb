"""``--compare B``: the --weights model (A) against B on every image: ``compare.png`` and ``compare.json``."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tqdm import tqdm

from .. import panels
from .write import write_animation


def write_comparison(path: Path, folder: Path, image, sides: tuple, o: panels.MapOptions,
                     args: argparse.Namespace) -> dict:
    """compare.png and compare.json for one image (and the two animations with --animate); returns the record."""
    from ..compare import compare, comparison_image, comparison_record

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


def run_comparison(args: argparse.Namespace, loaded_a, o: panels.MapOptions, entries: list) -> int:
    """``--compare B``: per image, A (--weights) against B on the same photo. Exit code 2 for a model that cannot
    be loaded or options that do not fit both models, 1 when an image failed."""
    import vit
    from vit.image_file import open_image

    from ..analysis import compare_side

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
    for entry in tqdm(entries, desc="images", unit="image", disable=args.quiet or len(entries) == 1):
        try:
            image = open_image(entry.path)
            sides = compare_side(loaded_a, image), compare_side(loaded_b, image)
            write_comparison(entry.path, args.out / entry.name, image, sides, o, args)
            done += 1
        except ValueError as error:
            failed.append(entry.path)
            tqdm.write(f"error: {entry.path}: {error}", file=sys.stderr)
    if not args.quiet:
        print(f"wrote {done} of {len(entries)} comparisons to {args.out}", file=sys.stderr)
    return 1 if failed else 0

