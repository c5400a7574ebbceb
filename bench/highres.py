"""The high-resolution rows: ``python -m bench.highres [--size 1022] [--device cpu|cuda] [--rounds N]``.

A random DINOv2 ViT-S/14 (LayerScale, no classifier: timm's ``vit_small_patch14_dinov2`` architecture) at
1022×1022 (73×73 patches + CLS = 5,330 tokens), as the page analyses a photo (``viz.analysis.serve.analyze_photo``:
attention on demand, float16 kept): the plain forward, the analysis and their ratio; the page's first pictures of a
new photo (``viz.explorer.pictures``: the rollout, recomputed from the top, among them); a patch click and a rollout
control as the page's handlers run them (Gradio-free: ``viz.explorer``); what the server caches for the photo; and
the peak memory: on the CPU the resident set of this process (run it alone, with glibc's malloc tuned as the server
tunes it: ``bench.run`` starts it so, as ``MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=524288 python -m bench.highres``),
on a GPU the device memory allocated above the model's.

``rows(device, size, rounds)`` returns the table's rows, for ``bench.run`` or a GPU machine
(``python -m bench.highres --device cuda``): nothing here imports Gradio.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import torch
from PIL import Image

import vit
from bench.measure import Row, interleaved, median, ms, proc_status_kb, release_free_memory, reset_peak_rss, table
from viz.controls import AnalysisKey, Controls, Session
from viz.query.view import query_photo, query_views, select_patch
from viz.records import cached_bytes
from viz.rollout.view import rollout_view

MB = 2 ** 20
SIZE = 1022
GOALS = {"peak_rss": 1.5 * 2**30, "ratio": 1.3, "click": 0.2, "cache": 64 * MB}


def dinov2_small(size: int, device: torch.device):
    """A random DINOv2 ViT-S/14 served at ``size`` pixels (position embeddings learnt for 518, resampled)."""
    torch.manual_seed(0)
    cfg = vit.variant("small-14", img_size=518, num_classes=0, layer_scale=True)
    model = vit.VisionTransformer(cfg).eval().to(device)
    return vit.LoadedModel(model=model, preprocess=vit.Preprocess.for_crop(size), labels=(),
                           name="DINOv2 ViT-S/14 (random init)", source="dinov2_vits14", config=cfg, format="own")


def photo(size: int) -> Image.Image:
    """scikit-image's cat at the model's input size (so that the crop is the whole photo)."""
    from skimage import data
    return Image.fromarray(data.chelsea()).resize((size, size), Image.Resampling.BICUBIC)


def measure(device: torch.device, size: int = SIZE, rounds: int = 1) -> dict:
    """Seconds and bytes of the high-resolution rows (module docstring), measured in this process."""
    from viz import explorer
    from viz.analysis import model_arrays
    from viz.analysis.serve import ServedModel

    loaded = dinov2_small(size, device)
    served = ServedModel(loaded, model_arrays(loaded.model))
    image = photo(size)
    x = loaded.preprocess(image).to(device)
    with torch.inference_mode():
        loaded.model(x[..., :224, :224])                                   # torch's kernels warmed up

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    @torch.inference_mode()
    def plain():
        loaded.model(x)
        sync()

    analyses = []

    def analysis():
        analyses.append(analyze_photo_from(image, served))
        sync()

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
        base_gpu = torch.cuda.memory_allocated(device)
    release_free_memory()
    reset_peak_rss()
    t = interleaved({"plain": plain, "analysis": analysis}, rounds, warmup=0)
    a = analyses[-1]
    del analyses[:-1]
    session = Session(AnalysisKey("cat", "dinov2"))
    c = Controls()
    started = time.perf_counter()
    pictures = explorer.pictures(session, a, c)
    first = time.perf_counter() - started
    gh, gw = a.grid
    W, H = pictures["query_photo"].size
    spots = iter([(r, col) for r in range(1, gh, 9) for col in range(2, gw, 11)])

    def click():                                    # what the page's pick_patch draws for a click
        r, col = next(spots)
        s = select_patch(session, a, (col + 0.5) * W / gw, (r + 0.5) * H / gh)
        query_photo(s, a)
        query_views(s, a, c)

    discards = iter([0.5, 0.0, 0.95, 0.9])

    def rollout_control():                           # what the page's discard_ratio_changed draws
        rollout_view(a, Controls(discard_ratio=next(discards)))

    clicks = interleaved({"click": click}, max(3, rounds), warmup=1)["click"]
    rollouts = interleaved({"rollout": rollout_control}, 1, warmup=0)["rollout"]
    peak = (torch.cuda.max_memory_allocated(device) - base_gpu) if device.type == "cuda" else \
        proc_status_kb("VmHWM") * 1024
    T = a.num_prefix + gh * gw
    return {"device": device.type, "size": size, "tokens": T, "grid": [gh, gw], "depth": a.depth, "heads": a.heads,
            "plain": median(t["plain"]), "analysis": median(t["analysis"]), "first_pictures": first,
            "click": median(clicks), "rollout_control": median(rollouts), "cache": cached_bytes(a),
            "peak": peak, "full_attention": a.depth * a.heads * T * T * 4}


def analyze_photo_from(image: Image.Image, served):
    """``analyze_photo`` of an image already decoded (the bench's photo is made in memory)."""
    from viz.analysis import analyze
    from viz.analysis.serve import ATTENTION_DTYPE
    return analyze(served.loaded, image, ATTENTION_DTYPE, on_demand=True)


def rows(m: dict) -> list[Row]:
    """The table's rows from ``measure``'s numbers."""
    where = "CPU" if m["device"] == "cpu" else "GPU"
    ratio = m["analysis"] / m["plain"]
    name = f"DINOv2 ViT-S/14 @ {m['size']}×{m['size']} ({m['grid'][0]}×{m['grid'][1]} + 1 = {m['tokens']:,} tokens)"
    out = [Row(f"{name}: plain forward / analysis (the page's, attention on demand)",
               f"{ms(m['plain'])} / {ms(m['analysis'])}"),
           Row(f"**analysis ÷ plain forward**, {where}", f"{ratio:.2f}", f"≤ {GOALS['ratio']}", ratio <= GOALS["ratio"]),
           Row("&nbsp;&nbsp;the page's first pictures of the photo, the rollout (discard 0.9) recomputed from the top "
               "among them", ms(m["first_pictures"])),
           Row("**a patch click** (`pick_patch`'s pictures: framed photo, attention row and column)", ms(m["click"]),
               f"≤ {GOALS['click'] * 1000:.0f} ms", m["click"] <= GOALS["click"]),
           Row("&nbsp;&nbsp;a rollout control (the rollout recomputed)", ms(m["rollout_control"])),
           Row(f"**what the server caches for the photo** (its L·H·T² float32 maps would be "
               f"{m['full_attention'] / 2**30:.1f} GB)", f"{m['cache'] / MB:.1f} MB", f"≤ {GOALS['cache'] // MB} MB",
               m["cache"] <= GOALS["cache"])]
    if m["device"] == "cpu":
        out.append(Row("**peak RSS of the process** (import, model, analysis, pictures, clicks)",
                       f"{m['peak'] / 2**30:.2f} GB", "≤ 1.5 GB", m["peak"] <= GOALS["peak_rss"]))
    else:
        out.append(Row("peak GPU memory above the model", f"{m['peak'] / MB:.0f} MiB"))
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.highres", description=__doc__.split("\n")[0])
    p.add_argument("--size", type=int, default=SIZE, help="input side in pixels (a multiple of 14; default 1022)")
    p.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    p.add_argument("--rounds", type=int, default=1, help="timed rounds of the forward and the analysis")
    p.add_argument("--json", action="store_true", help="print the numbers as JSON instead of the table")
    args = p.parse_args(argv)
    m = measure(torch.device(args.device), args.size, args.rounds)
    print(json.dumps(m) if args.json else table(rows(m)))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
