"""Benchmark rows of the thorough trust check: ``python -m bench.trust [--rounds N]`` prints them alone (``python -m
bench.run`` prints them with the rest).

ViT-B/16 at 224 on the CPU, randomly initialised (the cost does not depend on the weights), each time ÷ one plain
forward of the same model, as the CLI runs it (8 rows or images per step):

- one map's curves under all four protocols (tokens, mean_colour, blur, road; the random map, so no map pass);
- the whole thorough comparison of the 8 methods (maps with their backward passes, every curve, four protocols);
- what the protocol fixes, whatever the code: the curves' work in forwards' worth of tokens (packed token
  sequences ÷ the forward's tokens, plus one forward per pixel-protocol image), the floor under each ratio at the
  plain forward's speed, and ROAD's sparse solve per image.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from bench.measure import interleaved, median

TARGET_CURVES = 40      # one map's curves under all four protocols, ÷ one plain forward
TARGET_THOROUGH = 300   # the whole thorough comparison of 8 methods, ÷ one plain forward


def work_in_forwards(job) -> float:
    """The curves of a ``ProtocolsJob`` in forwards' worth of tokens: what the protocols fix, whatever the packing."""
    tokens = job.jobs[0].layout.num_tokens
    return sum(sum(j.curve_lengths()) for j in job.jobs) / tokens


def road_solves(job) -> int:
    """Sparse solves a ``road`` job runs: one per image with some patches kept and some removed."""
    n = job.N
    return sum(1 for step in job._plan() for row in step for *_, K in row if 0 < K < n)


def road_seconds(x: torch.Tensor, patch: int, rounds: int = 3) -> float:
    """Median seconds of one ROAD imputation of half the patches of x (1, C, H, W)."""
    from viz.trust.protocols import pixel_mask
    from viz.trust.road import noisy_linear_imputation

    gh, gw = x.shape[-2] // patch, x.shape[-1] // patch
    keep = np.flatnonzero(np.random.default_rng(0).random(gh * gw) < 0.5)
    mask = pixel_mask(keep, (gh, gw), patch)
    return median(interleaved({"road": lambda: noisy_linear_imputation(x[0], mask)}, rounds)["road"])


def thorough_rows(loaded, x: torch.Tensor, rounds: int) -> list:
    """The rows (``bench.run.Row``) of the thorough check on ``loaded`` (a ViT-B/16) for one model input x."""
    from bench.run import Row, ms
    from viz.trust.job import ProtocolsJob
    from vit.explain import ClassTarget

    model, target = loaded.model, ClassTarget(281)
    plain = torch.inference_mode()(lambda: model(x))
    curves = lambda: ProtocolsJob(model, x, target, ["random"], protocols="all").result()
    t = interleaved({"plain": plain, "curves": curves}, rounds)
    plain_s, curves_s = median(t["plain"]), median(t["curves"])
    t0 = time.perf_counter()
    job = ProtocolsJob(model, x, target, None, protocols="all")
    job.result()
    thorough_s = time.perf_counter() - t0                          # one round: minutes on a 2-core CPU
    one = ProtocolsJob(model, x, target, ["random"], protocols="all")
    road_s = road_seconds(x, model.cfg.patch_size)
    curves_work, thorough_work = work_in_forwards(one), work_in_forwards(job)
    methods = len(job.jobs[0].names)
    solves, all_solves = road_solves(one.jobs[-1]), road_solves(job.jobs[-1])
    return [
        Row("**one map's curves under all four protocols ÷ our plain forward** (tokens, mean_colour, blur, road; "
            f"{len(one.jobs[0].fractions)} points; as the CLI runs them)", f"{curves_s / plain_s:.1f}",
            f"≤ {TARGET_CURVES}", curves_s / plain_s <= TARGET_CURVES),
        Row(f"&nbsp;&nbsp;the work the protocols fix: {curves_work:.1f} forwards' worth of tokens, plus {solves} ROAD "
            f"solves of about {ms(road_s)} each (half the patches removed), in plain forwards (batched rows run "
            "faster per token than one plain forward)", f"{curves_work + solves * road_s / plain_s:.1f}"),
        Row(f"**whole thorough comparison of {methods} methods ÷ our plain forward** (maps with their backward "
            "passes, every curve under four protocols; one round)", f"{thorough_s / plain_s:.0f}",
            f"≤ {TARGET_THOROUGH}", thorough_s / plain_s <= TARGET_THOROUGH),
        Row(f"&nbsp;&nbsp;the work the protocols fix: {thorough_work:.0f} forwards' worth of tokens plus {all_solves} "
            "ROAD solves, in plain forwards", f"{thorough_work + all_solves * road_s / plain_s:.0f}"),
    ]


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.trust", description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=2, help="timed rounds of the plain forward and of one map's curves")
    args = p.parse_args(argv)
    import vit
    from bench.run import machine, random_vit_checkpoint, table, write_photos
    from vit.image_file import open_image

    print(f"# python -m bench.trust {' '.join(sys.argv[1:])}".rstrip())
    print(f"Machine: {machine()}\n")
    with tempfile.TemporaryDirectory() as tmp:
        loaded = vit.load(str(random_vit_checkpoint(Path(tmp) / "vit_b_16_random.pt")))
        x = loaded.preprocess(open_image(write_photos(Path(tmp))[0]))
        print(table(thorough_rows(loaded, x, args.rounds)))


if __name__ == "__main__":
    main()
