"""The Video tab's jobs run as the page runs them, in this process, their peak memory measured from /proc beside the
estimate of ``viz.analysis.peak`` (``ClipShape``): what ``test_peaks.py`` runs in a process of its own per clip size.

    python tests/load/measured_video_peaks.py FAMILY SIDE FRAMES JOB [JOB …]     # one JSON line per job

The model is a random VideoMAE-like one (tubelets of 2 frames, joint attention, no CLS token, the mean read) or a
TimeSformer-like one (one frame a time position, a CLS token, divided blocks) or a V-JEPA 2-like one (rotary
positions, the attentive probe read), of width 192, 3 heads, 4 blocks, for
clips of FRAMES frames of SIDE×SIDE pixels, saved as this explorer's own checkpoint and
served from it; the clip is twice as many frames of moving colour gradients, uploaded. The jobs: ``video`` (the clip
decoded and analysed, its rollout and first pictures: ``vit_explorer.tabs.video.analyse``), ``video_gradcam``
(Grad-CAM per frame of its top-1 class on the analysed clip: ``explain_clip``), ``video_gae`` (GAE through space and
time, the same way) and ``video_check`` (the deletion and insertion check of the maps drawn for that class, Grad-CAM's
drawn first when none is: ``check_clip``). Each peak is VmHWM after the job less VmRSS before it, as
``measured_peaks.py`` measures a photo's jobs.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path[:0] = [str(HERE.parents[2]), str(HERE.parents[1])]
os.environ.setdefault("GRADIO_TEMP_DIR", tempfile.mkdtemp(prefix="vit-explorer-video-peaks-"))

import torch  # noqa: E402

import vit  # noqa: E402
from handler_steps import finished  # noqa: E402
from measured_peaks import measure  # noqa: E402
from video_clips import gradient_frames, write_video  # noqa: E402
from vit.video import VideoConfig, VideoTransformer  # noqa: E402
from vit.video_file import VideoPreprocess  # noqa: E402
from viz.video.faithfulness import BATCH  # noqa: E402
from vit_explorer import server, state  # noqa: E402
from vit_explorer.tabs import video as tab  # noqa: E402
from viz.analysis import peak  # noqa: E402

CLASSES = [f"class {i}" for i in range(10)]


# FAMILY: a VideoMAE-like model (tubelets of 2 frames, joint attention, no CLS token, the mean read) or a
# TimeSformer-like one (one frame a time position, a CLS token, divided blocks: a time step then a space step) or a
# V-JEPA 2-like one (rotary positions, no CLS token, an attentive probe of one block and a query)
FAMILIES = {"videomae": dict(tubelet_size=2, k_bias=False),
            "timesformer": dict(tubelet_size=1, attention="divided", class_token=True, pos_embed="space_time",
                                global_pool="token"),
            "vjepa2": dict(tubelet_size=2, pos_embed="rope3d", global_pool="probe", probe_depth=1, probe_mlp_dim=768)}


def small_video_model(family: str, side: int, frames: int) -> VideoTransformer:
    torch.manual_seed(0)
    cfg = VideoConfig(img_size=side, num_frames=frames, patch_size=16, num_classes=len(CLASSES), embed_dim=192,
                      depth=4, num_heads=3, mlp_dim=768, **FAMILIES[family])
    return VideoTransformer(cfg).eval()


def main(argv: list[str]) -> None:
    family, side, frames, jobs = argv[0], int(argv[1]), int(argv[2]), argv[3:]
    server.return_freed_memory_to_the_os()
    state.SETTINGS.any_model = True
    torch.set_num_threads(min(2, torch.get_num_threads()))
    folder = Path(os.environ["GRADIO_TEMP_DIR"])
    model = small_video_model(family, side, frames)
    weights = str(vit.save_checkpoint(folder / f"{family}_like.pt", model, CLASSES,
                                      VideoPreprocess(resize=side, crop=(side, side), num_frames=frames)))
    (folder / "f00d").mkdir(exist_ok=True)
    clip = str(write_video(folder / "f00d" / "clip.mp4", gradient_frames(2 * frames, side, side)))
    served = state.MODELS.get(state.model_source(weights))          # loaded and warmed up before any job
    shape = peak.ClipShape.of(served.loaded.model, params=served.nbytes)
    calls = {"video": (lambda: tab.analyse(weights, clip, "en"), peak.of("video", shape)),
             "video_gradcam": (lambda: tab.explain_clip(weights, clip, None, "gradcam", 0, "en"),
                               peak.of("video_classmap", shape, method="gradcam")),
             "video_gae": (lambda: tab.explain_clip(weights, clip, None, "gae", 0, "en"),
                           peak.of("video_classmap", shape, method="gae")),
             "video_check": (lambda: finished(tab.check_clip(weights, clip, None, "gradcam", "en")),
                             peak.of("video_check", shape, batch=BATCH))}
    if jobs[0] != "video":
        tab.analyse(weights, clip, "en")
    for name in jobs:
        fn, estimate = calls[name]
        if name == "video_check":                  # a map to check, drawn before the peak (or found, drawn already)
            tab.explain_clip(weights, clip, None, "gradcam", 0, "en")
        measured, seconds = measure(fn)
        print(json.dumps({"job": name, "family": family, "side": side, "frames": frames, "tokens": shape.tokens,
                          "measured": measured, "estimate": estimate, "seconds": round(seconds, 2)}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
