"""Benchmark rows of a video transformer: ``python -m bench.video [--rounds N] [--device cuda]``.

VideoMAE-B/16 with 16 frames of 224×224 (tubelets of 2: 8 × 14 × 14 = 1,568 tokens), random init (the cost does not
depend on the weights), batch 1, interleaved rounds:

- transformers' ``VideoMAEForVideoClassification`` plain forward (its default attention), and ours (SDPA);
- our capture (``blocks_with_queries_and_keys``: the fused forward keeping every step's queries and keys in float16,
  from which any rows of any step's attention are recomputed on demand), ÷ transformers' forward;
- our forward with every map kept (``forward_with_attention``: 12 × 1,568 × 1,568 per block, 1.4 GB in float32), and
  the analysis as the command line and the page run it (``viz.analysis.video``: the fused forward with each step's
  attention recomputed a chunk of rows at a time and reduced as it runs, then the rollout), each ÷ transformers'
  forward;
- the same two ratios in CPU time with one thread (``time.process_time``): what each call computes, whatever else
  shares the machine's cores (on a shared machine the wall-time ratios move with the other jobs);
- a patch click: the clicked patch's row and column in every step, recomputed from the kept queries and keys; and on
  TimeSformer-B/16 (8 frames, 1,569 tokens), whose divided blocks are steps of 196 groups in time and 8 in space;
- the peak RSS of a process holding only our model during the capture, the forward with every map, and the analysis,
  each in a process of its own;
- decoding a 10-second clip (1280×720, 30 fps, H.264) into the 16 frames VideoMAE's processor samples
  (``vit.video_file.read_clip``).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch

from bench.measure import Row, interleaved, median, ms, peak_rss_delta_mb, proc_status_kb, table
from viz.analysis.video import capture_clips, clip_analyses
from viz.records import Analysis
from viz.video.view import clip_rollout
from vit.checkpoints.video_formats import huggingface_video_config, video_filter_fn
from vit.video import VideoConfig, VideoTransformer
from vit.video_file import Clip, VideoInfo

TARGET_CAPTURE = 1.30      # our capture ÷ transformers' plain forward (CPU)
TARGET_PEAK_GB = 2.0       # peak RSS of the process during the capture
TARGET_ANALYSIS = 1.30     # the analysis (the page's and the command line's) ÷ transformers' plain forward (CPU)
TARGET_CLICK_MS = 200      # a patch click: its row and column in every step


def videomae_pair(device: torch.device):
    """transformers' VideoMAE-B/16 (16 frames, random init) and ours with its weights."""
    import transformers
    torch.manual_seed(0)
    theirs = transformers.VideoMAEForVideoClassification(transformers.VideoMAEConfig(num_labels=400)).eval()
    cfg = VideoConfig(**huggingface_video_config(theirs.config.to_dict(), "VideoMAE-B"), num_classes=400)
    ours = VideoTransformer(cfg).eval()
    ours.load_state_dict(video_filter_fn(theirs.state_dict(), "huggingface-videomae"))
    return theirs.to(device), ours.to(device)


def timesformer(device: torch.device) -> VideoTransformer:
    """Our TimeSformer-B/16 (8 frames of 224×224, transformers' default configuration, random init)."""
    import transformers
    torch.manual_seed(0)
    cfg = VideoConfig(**huggingface_video_config(transformers.TimesformerConfig().to_dict(), "TimeSformer-B"),
                      num_classes=400)
    return VideoTransformer(cfg).eval().to(device)


def capture(model: VideoTransformer, x: torch.Tensor) -> tuple[torch.Tensor, list]:
    """The fused forward keeping every step's queries and keys in float16 -> (output, [(q, k, block)])."""
    kept = []
    with torch.inference_mode():
        for tokens, q, k, block in model.blocks_with_queries_and_keys(x):
            kept.append((q.half(), k.half(), block))
        return model.forward_head(tokens), kept


def analysis(model: VideoTransformer, x: torch.Tensor) -> Analysis:
    """The analysis as the command line and the page run it (``viz.analysis.video``): the fused forward, each step's
    attention recomputed a chunk of rows at a time inside the forward and reduced as it comes (the heads' temporal and
    spatial distance, the readout's rows, the head-fused map), queries and keys kept in float16; then the readout's
    rollout through every step (``viz.video.view.clip_rollout``)."""
    frames = x.shape[1]
    clip = Clip(np.zeros((frames, *x.shape[-2:], 3), np.uint8), np.arange(frames), np.arange(frames) / 30.0,
                VideoInfo(frames, 30.0, frames / 30.0, x.shape[-1], x.shape[-2], "h264"))
    a = clip_analyses(SimpleNamespace(labels=(), name=""), capture_clips(model, x, keep=np.float16), [clip])[0]
    clip_rollout(a)
    return a


def patch_click(a: Analysis) -> None:
    """What a click on a patch of the middle frame reads: its row (where it attends) and its column (who attends to
    it) in every step, from the kept queries and keys."""
    arch = a.architecture
    token = arch.num_prefix + arch.frames // 2 * arch.grid[0] * arch.grid[1] + arch.grid[1] // 2
    for layer in range(arch.depth):
        a.maps.rows(layer, None, [token])
        a.maps.columns(layer, None, [token])


def decode_seconds(tmp: Path, rounds: int) -> float:
    """Median seconds of read_clip on a 10-second 1280×720 30 fps H.264 clip (16 frames, VideoMAE's processor)."""
    from fractions import Fraction

    from vit.video_file import VideoLimits, VideoPreprocess, read_clip, require_av
    av = require_av()
    path = tmp / "ten_seconds.mp4"
    rng = np.random.default_rng(0)
    base = rng.integers(0, 255, (720, 1280, 3), dtype=np.uint8)
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("libx264", rate=30)
        stream.width, stream.height, stream.pix_fmt = 1280, 720, "yuv420p"
        stream.time_base = Fraction(1, 30)
        for i in range(300):
            frame = av.VideoFrame.from_ndarray(np.roll(base, 4 * i, axis=1), format="rgb24")
            frame.pts = i
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    prep = VideoPreprocess(num_frames=16)
    t = interleaved({"decode": lambda: read_clip(path, prep, limits=VideoLimits())}, rounds)
    return median(t["decode"])


def video_rows(rounds: int = 5, device: torch.device | None = None) -> list[Row]:
    device = device or torch.device("cpu")
    theirs, ours = videomae_pair(device)
    x = torch.randn(1, 16, 3, 224, 224, device=device)

    def sync(fn):
        def run():
            out = fn()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            return out
        return run

    def theirs_plain():
        with torch.inference_mode():
            theirs(pixel_values=x)

    def ours_plain():
        with torch.inference_mode():
            ours(x)

    def every_map():
        with torch.inference_mode():
            return ours.forward_with_attention(x).output

    calls = {"transformers": theirs_plain, "plain": ours_plain, "capture": lambda: capture(ours, x),
             "every map": every_map, "analysis": lambda: analysis(ours, x)}
    t = interleaved({k: sync(fn) for k, fn in calls.items()}, rounds)
    tf, our, cap, every, ana = (median(t[k]) for k in ("transformers", "plain", "capture", "every map", "analysis"))
    analysed = analysis(ours, x)
    divided = analysis(timesformer(device), torch.randn(1, 8, 3, 224, 224, device=device))
    clicks = interleaved({"click": lambda: patch_click(analysed), "divided": lambda: patch_click(divided)}, rounds)
    click, divided_click = median(clicks["click"]), median(clicks["divided"])
    on_cpu = device.type == "cpu"
    cpu = {}
    if on_cpu:                       # CPU time with one thread: what each call computes, whatever shares the cores
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            cpu = {k: median(v) for k, v in interleaved({k: calls[k] for k in ("transformers", "capture", "analysis")},
                                                        rounds, clock=time.process_time).items()}
        finally:
            torch.set_num_threads(threads)
    rows = [Row(f"transformers' VideoMAE-B/16 plain forward, 16 frames (1,568 tokens), "
                f"{'CPU' if on_cpu else device.type.upper()}", ms(tf)),
            Row("our VideoMAE plain forward (SDPA)", ms(our)),
            Row("our capture (the fused forward, every step's queries and keys kept in float16)", ms(cap)),
            Row("**capture ÷ transformers' forward**", f"{cap / tf:.2f}", f"≤ {TARGET_CAPTURE:.2f}",
                cap / tf <= TARGET_CAPTURE if on_cpu else None),
            Row("our forward with every map kept (explicit softmax, float32)", ms(every)),
            Row("forward with every map ÷ transformers' forward", f"{every / tf:.2f}"),
            Row("our analysis (the fused forward with each step's attention reduced in chunks as it runs: distances, "
                "readout rows, head-fused map; the rollout)", ms(ana)),
            Row("**analysis ÷ transformers' forward**", f"{ana / tf:.2f}", f"≤ {TARGET_ANALYSIS:.2f}",
                ana / tf <= TARGET_ANALYSIS if on_cpu else None)]
    if cpu:
        rows += [Row("capture ÷ transformers' forward, CPU time with one thread",
                     f"{cpu['capture'] / cpu['transformers']:.2f}"),
                 Row("**analysis ÷ transformers' forward, CPU time with one thread**",
                     f"{cpu['analysis'] / cpu['transformers']:.2f}", f"≤ {TARGET_ANALYSIS:.2f}",
                     cpu["analysis"] / cpu["transformers"] <= TARGET_ANALYSIS)]
    rows += [Row("**a patch click** (its row and column in every step)", ms(click), f"≤ {TARGET_CLICK_MS} ms",
                 click * 1000 <= TARGET_CLICK_MS if on_cpu else None),
             Row("**a patch click on TimeSformer-B/16**, 8 frames (its row and column in each time and space step)",
                 ms(divided_click), f"≤ {TARGET_CLICK_MS} ms", divided_click * 1000 <= TARGET_CLICK_MS if on_cpu
                 else None)]
    if device.type == "cpu":
        rows += memory_rows()
        with tempfile.TemporaryDirectory() as tmp:
            rows.append(Row("decoding a 10 s clip (1280×720, 30 fps, H.264) into VideoMAE's 16 frames",
                            ms(decode_seconds(Path(tmp), rounds))))
    return rows


def memory_rows() -> list[Row]:
    """The peak RSS of a process holding only our VideoMAE-B/16 (as the page or the CLI does) during the capture, the
    forward with every map and the analysis, each measured in a fresh process of its own."""
    rows = []
    for what, name in (("capture", "capture"), ("every", "forward with every map"), ("analysis", "analysis")):
        out = subprocess.run([sys.executable, "-m", "bench.video", "--peak", what], capture_output=True, text=True,
                             check=True).stdout.split()
        peak_gb, rise = float(out[0]), float(out[1])
        target = what == "capture"
        rows.append(Row(f"{'**' if target else ''}peak RSS of a process with our VideoMAE-B/16 during the {name}"
                        f"{'**' if target else ''} (rise: {rise:.0f} MiB)", f"{peak_gb:.2f} GB",
                        f"≤ {TARGET_PEAK_GB:.1f} GB" if target else "", peak_gb <= TARGET_PEAK_GB if target else None))
    return rows


def peak(what: str) -> None:
    """Print the peak RSS in GB of this process during one ``what`` ("capture", "every" or "analysis") and its rise
    in MiB."""
    torch.manual_seed(0)
    model = VideoTransformer(VideoConfig(k_bias=False, layer_norm_eps=1e-12)).eval()   # VideoMAE-B/16, 16 frames
    x = torch.randn(1, 16, 3, 224, 224)

    def every_map():
        with torch.inference_mode():
            return model.forward_with_attention(x).output

    fn = {"capture": lambda: capture(model, x), "every": every_map, "analysis": lambda: analysis(model, x)}[what]
    rise, _ = peak_rss_delta_mb(fn)
    print(f"{proc_status_kb('VmHWM') / 2**20:.3f} {rise:.1f}")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.video", description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=5, help="timed rounds per measurement (median reported)")
    p.add_argument("--device", default="cpu", help="cpu or cuda [default: cpu]")
    p.add_argument("--peak", choices=("capture", "every", "analysis"), help=argparse.SUPPRESS)   # one memory row's process
    args = p.parse_args(argv)
    if args.peak:
        peak(args.peak)
        return
    print(table(video_rows(args.rounds, torch.device(args.device))))


if __name__ == "__main__":
    main()
