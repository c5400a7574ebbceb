"""Benchmark rows of a Swin: ``python -m bench.swin [--rounds N] [--device cuda]`` prints them alone (``python -m
bench.run`` prints them with the rest).

Swin-T at 224 (window 7, random init: the cost does not depend on the weights), batch 1, interleaved rounds:

- the forward with capture (``forward_with_attention``: every block's window attention with its layout) against
  torchvision's ``swin_t`` plain forward (its own explicit-softmax window attention), and our plain (SDPA) forward;
- the analysis the CLI and the page make of a photo (``viz.analysis.capture_blocks``: the forward with capture,
  every block's token norms, all moved to numpy, and the rollout, distances and the pool's rows the views read)
  against the capture forward alone;
- a class map for a new target (GAE through windows and merges: one forward and one backward with the formulas,
  ``viz.analysis.explain_tensor``) against our plain forward; rollout through the hierarchy from a capture, the
  formulas alone.
"""
from __future__ import annotations

import argparse

import torch

from bench.measure import Row, interleaved, median, ms, table
from bench.run import synchronized
from viz.analysis.capture import capture_blocks
from viz.explain.explainer import explain_tensor
from viz.maps.source import rollout_rows
from viz.maps.windows import WindowedAttention, mean_row
from vit.explain import ClassTarget
from vit.swin import SwinTransformer, swin_variant

TARGET_CAPTURE = 1.10    # capture forward ÷ torchvision's swin_t plain forward
TARGET_ANALYSIS = 1.20   # the analysis of a photo ÷ the capture forward
TARGET_CLASS_MAP = 3.00  # a class map (GAE) ÷ our plain forward


def swin_rows(rounds: int = 7, device: torch.device | None = None) -> list[Row]:
    """The Swin rows: Swin-T at 224, ours and torchvision's ``swin_t``, random init, on ``device`` (CPU default)."""
    from torchvision.models import swin_t
    device = device or torch.device("cpu")
    torch.manual_seed(0)
    theirs = swin_t().eval().to(device)
    ours = SwinTransformer(swin_variant("swin_t")).eval().to(device)
    x = torch.randn(1, 3, 224, 224, device=device)

    def plain(model):
        with torch.inference_mode():
            model(x)

    def capture():
        with torch.inference_mode():
            ours.forward_with_attention(x)

    def rollout(source: WindowedAttention) -> None:
        rollout_rows(source, mean_row(tuple(source.layouts[-1].grid)))

    def analysis():
        arrays = capture_blocks(ours, x)
        source = WindowedAttention([a[0] for a in arrays["attention"]], arrays["architecture"].blocks)
        rollout(source)
        source.mean_distance(4)
        for layer in range(source.depth):
            source.readout_rows(layer)

    with torch.inference_mode():
        captured = ours.forward_with_attention(x)
    kept = WindowedAttention([a[0].float().cpu().numpy() for a in captured.attention], captured.layouts)
    calls = {"torchvision": lambda: plain(theirs), "plain": lambda: plain(ours), "capture": capture, "analysis": analysis,
             "gae": lambda: explain_tensor(ours, x, ClassTarget(0), ["gae"]),
             "rollout": lambda: rollout(kept)}
    t = interleaved({k: synchronized(fn, device) for k, fn in calls.items()}, rounds)
    tv, our, cap, gae, roll, ana = (median(t[k]) for k in ("torchvision", "plain", "capture", "gae", "rollout",
                                                          "analysis"))
    where = device.type.upper() if device.type != "cpu" else "CPU"
    return [
        Row(f"torchvision `swin_t` plain forward, Swin-T @ 224, {where}", ms(tv)),
        Row("our Swin plain forward (SDPA)", ms(our)),
        Row("our Swin forward with capture (every block's window attention)", ms(cap)),
        Row("**Swin capture forward ÷ torchvision `swin_t` plain forward**", f"{cap / tv:.2f}",
            f"≤ {TARGET_CAPTURE:.2f}", cap / tv <= TARGET_CAPTURE),
        Row("our Swin plain forward ÷ torchvision `swin_t` plain forward", f"{our / tv:.2f}"),
        Row("Swin analysis of a photo (capture, token norms, to numpy; rollout, distances, the pool's rows)", ms(ana)),
        Row("**Swin analysis ÷ Swin capture forward**", f"{ana / cap:.2f}", f"≤ {TARGET_ANALYSIS:.2f}",
            ana / cap <= TARGET_ANALYSIS),
        Row("Swin class map for a new target (GAE through windows and merges: forward + backward + formulas)", ms(gae)),
        Row("**Swin class map ÷ our plain forward**", f"{gae / our:.2f}", f"≤ {TARGET_CLASS_MAP:.2f}",
            gae / our <= TARGET_CLASS_MAP),
        Row("rollout through the hierarchy from a capture (formulas alone)", ms(roll)),
    ]


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.swin", description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=7, help="timed rounds per measurement (median reported)")
    p.add_argument("--device", default="cpu", help="cpu or cuda [default: cpu]")
    args = p.parse_args(argv)
    print(table(swin_rows(args.rounds, torch.device(args.device))))


if __name__ == "__main__":
    main()
