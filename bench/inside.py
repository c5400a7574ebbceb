"""Benchmark rows of the inside views (``vit.inside`` through ``viz.inside.job``), each ÷ one plain forward of the
same model on the same photo: the logit lens with direct logit attribution, head importance by attribution patching
and exactly, exact per-head patching from a second photo, and the residual-stream patching estimate.

``python -m bench.inside [--weights PATH] [--rounds N]`` prints these rows alone (ViT-B/16 at 224 on the CPU, random
init unless ``--weights``); ``bench.run`` prints them with the rest.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import torch

from bench.measure import Row, interleaved, median, ms, table
from vit.image_file import open_image

TARGETS = {"lens + DLA": 1.5, "heads estimate": 3.0, "heads exact": 80.0, "patch exact": 80.0, "residual": 3.0}


def inside_rows(loaded, photo: Path, other_photo: Path, rounds: int) -> list:
    """The inside rows for one model: medians of interleaved rounds (the exact tables, about 60 forwards each, get
    at most 3 rounds)."""
    from viz.inside.job import InsideJob
    from vit.inside import (classes_for, head_importance, patch_heads, patch_residual_estimate, score_for, trace)

    model = loaded.model
    x, other = (loaded.preprocess(open_image(p)) for p in (photo, other_photo))
    classes = classes_for(model, loaded.labels)
    kept, theirs = trace(model, x), trace(model, other)                 # kept streams the exact tables start from
    score = score_for(classes, kept.output)                             # this photo's top-1
    patch_score = score_for(classes, theirs.output)                     # the other photo's top-1

    def first_step(views):
        def run():
            job = InsideJob(model, x, views=views, labels=loaded.labels)
            next(job.steps())                                            # what the page shows at once
            return job.partial()
        return run

    contenders = {
        "plain": torch.inference_mode()(lambda: model(x)),
        "lens + DLA": first_step(["lens", "dla"]),
        "heads estimate": first_step(["heads"]),
        "residual": lambda: patch_residual_estimate(trace(model, x, score=patch_score), theirs, patch_score),
        "heads exact": lambda: head_importance(model, kept, score),
        "patch exact": lambda: patch_heads(model, kept, theirs, patch_score),
    }
    slow = min(rounds, 3)
    t = interleaved(contenders, rounds, rounds_of={"heads exact": slow, "patch exact": slow})
    plain = median(t["plain"])
    ratio = {k: median(v) / plain for k, v in t.items()}
    cfg = model.cfg
    work = cfg.num_heads * (cfg.depth + 1) / 2
    row = lambda key, text: Row(f"**{text} ÷ our plain forward**", f"{ratio[key]:.2f}", f"≤ {TARGETS[key]:g}",  # noqa: E731
                                ratio[key] <= TARGETS[key])
    return [
        Row(f"inside views, one plain forward of this model ({cfg.depth} layers × {cfg.num_heads} heads)", ms(plain)),
        row("lens + DLA", "logit lens (every layer, every patch) + direct logit attribution with per-source splits"),
        row("heads estimate", "head importance by attribution patching (one forward, one backward)"),
        row("heads exact", f"exact head importance, one ablation per head from kept prefixes (work ≈ H·(L+1)/2 = "
                           f"{work:g} forwards)"),
        row("patch exact", "exact per-head patching from a second photo, on top of its forward"),
        row("residual", "residual-stream patching estimate (this photo's forward and backward; the second photo's "
                        "forward is the row above's)"),
    ]


def main(argv=None) -> None:
    from bench.run import random_vit_checkpoint, write_photos

    p = argparse.ArgumentParser(prog="python -m bench.inside", description=__doc__.split("\n")[0])
    p.add_argument("--weights", help="checkpoint instead of a randomly initialised ViT-B/16")
    p.add_argument("--rounds", type=int, default=5, help="timed rounds per measurement (median reported)")
    args = p.parse_args(argv)
    import tempfile

    import vit

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        loaded = vit.load(args.weights or random_vit_checkpoint(tmp / "vit_b_16_random.pt"))
        photos = write_photos(tmp)
        print(f"{loaded.name}, photos {photos[0].name} and {photos[2].name}, torch {torch.__version__} with "
              f"{torch.get_num_threads()} threads\n")
        print(table(inside_rows(loaded, photos[0], photos[2], args.rounds)))


if __name__ == "__main__":
    main()
