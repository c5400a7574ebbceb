"""Benchmark rows of the thorough trust check: ``python -m bench.trust [--rounds N]`` prints them alone (``python -m
bench.run`` prints them with the rest).

ViT-B/16 at 224 on the CPU, randomly initialised (the cost does not depend on the weights), each time ÷ one plain
forward of the same model, as the CLI runs it (8 rows or images per step):

- one map's curves under all four protocols (tokens, mean_colour, blur, road; the random map, so no map pass);
- the whole thorough comparison of the 8 methods (maps with their backward passes, every curve, four protocols);
- under each, the floor an exact implementation must pay on this CPU: the matrix products of every sequence and
  image the protocols require at this CPU's peak rate (``bench.run.curve_flops``; each pixel-protocol image is
  a whole forward but for what it shares with the photo), plus ROAD's imputations as measured in that run.
"""
from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import time
from pathlib import Path

import torch

from bench.measure import Row, interleaved, median, table

TARGET_CURVES = 40      # one map's curves under all four protocols, ÷ one plain forward
TARGET_THOROUGH = 300   # the whole thorough comparison of 8 methods, ÷ one plain forward


def images(job) -> list[int]:
    """Kept patches K of every sequence or image a ``TrustJob`` runs (in its plan's order)."""
    return [K for step in job._plan() for row in step for *_, K in row]


def protocols_flops(job) -> float:
    """Matrix-product FLOPs an exact implementation of a ``ProtocolsJob``'s curves must run (``bench.run.
    curve_flops``, which leaves out the first block's QKV: a function of each token's embedding, shared with the
    photo's or the fill's). Under ``tokens`` each sequence is the prefix and its kept patches; under ``mean_colour``
    and ``blur`` each image is a whole sequence whose every token is the photo's or the fill's at that position;
    under ``road`` the imputed patches are new tokens, so their first-block QKV is counted too."""
    from bench.run import curve_flops

    flops = 0.0
    for j in job.jobs:
        cfg = j.model.cfg
        flops += curve_flops(cfg, j.curve_lengths())
        if j.protocol == "road":
            flops += 2.0 * 3 * cfg.embed_dim ** 2 * sum(j.N - K for K in images(j))
    return flops


@contextlib.contextmanager
def timed_imputations(seconds: list[float]):
    """Adds the seconds of every ROAD imputation run inside the block to ``seconds`` (what the run itself paid)."""
    import viz.trust.protocols as protocols

    impute = protocols.noisy_linear_imputation

    def timed(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return impute(*args, **kwargs)
        finally:
            seconds.append(time.perf_counter() - t0)

    protocols.noisy_linear_imputation = timed
    try:
        yield seconds
    finally:
        protocols.noisy_linear_imputation = impute


def thorough_rows(loaded, x: torch.Tensor, rounds: int) -> list:
    """The rows (``bench.run.Row``) of the thorough check on ``loaded`` (a ViT-B/16) for one model input x."""
    from bench.run import matmul_rate
    from viz.trust.job import ProtocolsJob
    from vit.explain import ClassTarget

    model, target = loaded.model, ClassTarget(281)
    plain = torch.inference_mode()(lambda: model(x))
    road_curves: list[float] = []

    def curves():
        with timed_imputations([]) as seconds:
            ProtocolsJob(model, x, target, ["random"], protocols="all").result()
        road_curves.append(sum(seconds))
    t = interleaved({"plain": plain, "curves": curves}, rounds)
    plain_s, curves_s = median(t["plain"]), median(t["curves"])
    job = ProtocolsJob(model, x, target, None, protocols="all")
    with timed_imputations([]) as road_thorough:
        t0 = time.perf_counter()
        job.result()
        thorough_s = time.perf_counter() - t0                      # one round: minutes on a 2-core CPU
    one = ProtocolsJob(model, x, target, ["random"], protocols="all")
    peak = matmul_rate()
    methods = len(job.jobs[0].names)
    return [
        Row("**one map's curves under all four protocols ÷ our plain forward** (tokens, mean_colour, blur, road; "
            f"{len(one.jobs[0].fractions)} points; as the CLI runs them)", f"{curves_s / plain_s:.1f}",
            f"≤ {TARGET_CURVES}", curves_s / plain_s <= TARGET_CURVES),
        floor_row(one, peak, median(road_curves), plain_s),
        Row(f"**whole thorough comparison of {methods} methods ÷ our plain forward** (maps with their backward "
            "passes, every curve under four protocols; one round)", f"{thorough_s / plain_s:.0f}",
            f"≤ {TARGET_THOROUGH}", thorough_s / plain_s <= TARGET_THOROUGH),
        floor_row(job, peak, sum(road_thorough), plain_s),
    ]


def floor_row(job, peak: float, road_s: float, plain_s: float):
    """The floor under a measured row, in plain forwards: its curves' matrix products at peak rate + ROAD's
    imputations as the run measured them."""

    pixel = sum(len(images(j)) for j in job.jobs if j.protocol != "tokens")
    tokens = sum(sum(j.curve_lengths()) for j in job.jobs if j.protocol == "tokens") / job.jobs[0].layout.num_tokens
    flops = protocols_flops(job)
    solves = sum(1 for j in job.jobs if j.protocol == "road" for K in images(j) if 0 < K < j.N)
    return Row(f"&nbsp;&nbsp;what no exact implementation can beat on this CPU: {pixel} whole images and {tokens:.1f} "
               f"forwards' worth of token sequences = {flops / 1e9:.0f} GFLOP of matrix products at this CPU's peak "
               f"rate ({peak / 1e9:.0f} GFLOP/s), plus ROAD's imputations as measured ({solves} sparse solves, "
               f"{road_s:.2f} s)", f"≥ {(flops / peak + road_s) / plain_s:.1f}")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.trust", description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=2, help="timed rounds of the plain forward and of one map's curves")
    args = p.parse_args(argv)
    import vit
    from bench.run import machine, random_vit_checkpoint, write_photos
    from vit.image_file import open_image

    print(f"# python -m bench.trust {' '.join(sys.argv[1:])}".rstrip())
    print(f"Machine: {machine()}\n")
    with tempfile.TemporaryDirectory() as tmp:
        loaded = vit.load(str(random_vit_checkpoint(Path(tmp) / "vit_b_16_random.pt")))
        x = loaded.preprocess(open_image(write_photos(Path(tmp))[0]))
        print(table(thorough_rows(loaded, x, args.rounds)))


if __name__ == "__main__":
    main()
