"""Benchmark rows of a video transformer: ``python -m bench.video [--rounds N] [--device cuda]``.

VideoMAE-B/16 with 16 frames of 224×224 (tubelets of 2: 8 × 14 × 14 = 1,568 tokens), random init (the cost does not
depend on the weights), batch 1, interleaved rounds:

- transformers' ``VideoMAEForVideoClassification`` plain forward (its default attention), and ours (SDPA);
- our forward with capture (``forward_with_attention``: every block's 12 × 1,568 × 1,568 attention kept, 1.4 GB in
  float32), and the streamed analysis (``blocks_with_attention``: each block's heads' temporal and spatial distance
  and its head-fused matrix in float16 taken as it runs, then the rollout through the kept matrices), each ÷
  transformers' forward, with the peak RSS of the whole process during the call;
- decoding a 10-second clip (1280×720, 30 fps, H.264) into the 16 frames VideoMAE's processor samples
  (``vit.video_file.read_clip``).
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import torch

from bench.measure import Row, interleaved, median, ms, peak_rss_delta_mb, proc_status_kb, table
from viz.maps.video import readout_row, spatial_distance, temporal_distance, video_rollout
from vit.checkpoints.video_formats import huggingface_video_config, video_filter_fn
from vit.video import VideoConfig, VideoTransformer

TARGET_CAPTURE = 1.30      # our capture ÷ transformers' plain forward (CPU)
TARGET_PEAK_GB = 2.0       # peak RSS of the process during the capture


def videomae_pair(device: torch.device):
    """transformers' VideoMAE-B/16 (16 frames, random init) and ours with its weights."""
    import transformers
    torch.manual_seed(0)
    theirs = transformers.VideoMAEForVideoClassification(transformers.VideoMAEConfig(num_labels=400)).eval()
    cfg = VideoConfig(**huggingface_video_config(theirs.config.to_dict(), "VideoMAE-B"), num_classes=400)
    ours = VideoTransformer(cfg).eval()
    ours.load_state_dict(video_filter_fn(theirs.state_dict(), "huggingface-videomae"))
    return theirs.to(device), ours.to(device)


def streamed_analysis(model: VideoTransformer, x: torch.Tensor) -> dict:
    """One forward pass reduced step by step: per step the heads' distances and the head-fused attention (float16),
    then the rollout of the readout row through them; no step's full attention outlives its step."""
    fused, indices, temporal, spatial = [], [], [], []
    with torch.inference_mode():
        for tokens, attn, layout in model.blocks_with_attention(x):
            a = attn[0].float().cpu().numpy()                                          # (G, H, n, n)
            index = layout.token_index().numpy()
            temporal.append(temporal_distance(a, index, layout.num_prefix, layout.grid, layout.tubelet))
            spatial.append(spatial_distance(a, index, layout.num_prefix, layout.grid, layout.patch_size))
            fused.append(attn[0].mean(dim=1, keepdim=True).half().cpu().numpy())       # (G, 1, n, n)
            indices.append(index)
            del a, attn
        model.forward_head(tokens)
    T = layout.num_tokens
    kind = model.cfg.global_pool if model.cfg.global_pool != "probe" else "avg"
    rollout = video_rollout([f.astype(np.float32) for f in fused], indices, layout.num_prefix, layout.frames,
                            layout.grid, readout_row(layout.num_prefix, T, kind))
    return {"temporal": np.stack(temporal), "spatial": np.stack(spatial), "rollout": rollout}


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

    def capture():
        with torch.inference_mode():
            return ours.forward_with_attention(x).output

    calls = {"transformers": theirs_plain, "plain": ours_plain, "capture": capture,
             "analysis": lambda: streamed_analysis(ours, x)}
    t = interleaved({k: sync(fn) for k, fn in calls.items()}, rounds)
    tf, our, cap, ana = (median(t[k]) for k in ("transformers", "plain", "capture", "analysis"))
    rows = [Row(f"transformers' VideoMAE-B/16 plain forward, 16 frames (1,568 tokens), "
                f"{'CPU' if device.type == 'cpu' else device.type.upper()}", ms(tf)),
            Row("our VideoMAE plain forward (SDPA)", ms(our)),
            Row("our forward with capture (every block's attention kept, float32)", ms(cap)),
            Row("**capture ÷ transformers' forward**", f"{cap / tf:.2f}", f"≤ {TARGET_CAPTURE:.2f}",
                cap / tf <= TARGET_CAPTURE if device.type == "cpu" else None),
            Row("streamed analysis (each block's distances and head-fused map as it runs, then the rollout)", ms(ana)),
            Row("**streamed analysis ÷ transformers' forward**", f"{ana / tf:.2f}", f"≤ {TARGET_CAPTURE:.2f}",
                ana / tf <= TARGET_CAPTURE if device.type == "cpu" else None)]
    if device.type == "cpu":
        for name, fn in (("capture", capture), ("streamed analysis", lambda: streamed_analysis(ours, x))):
            rise, _ = peak_rss_delta_mb(fn)
            peak = (proc_status_kb("VmHWM")) / 2**20
            rows.append(Row(f"**peak RSS of the process during the {name}** (rise above the loaded models: "
                            f"{rise:.0f} MiB)", f"{peak:.2f} GB", f"≤ {TARGET_PEAK_GB:.1f} GB",
                            peak <= TARGET_PEAK_GB))
        with tempfile.TemporaryDirectory() as tmp:
            rows.append(Row("decoding a 10 s clip (1280×720, 30 fps, H.264) into VideoMAE's 16 frames",
                            ms(decode_seconds(Path(tmp), rounds))))
    return rows


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.video", description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=5, help="timed rounds per measurement (median reported)")
    p.add_argument("--device", default="cpu", help="cpu or cuda [default: cpu]")
    args = p.parse_args(argv)
    print(table(video_rows(args.rounds, torch.device(args.device))))


if __name__ == "__main__":
    main()
