"""Protects the memory budget's estimates (``viz.analysis.peak``): every job a visitor can start, run as the page
runs it in a process of its own (``measured_peaks.py``), peaks at no more than its estimate, and at no more than
``peak.TOLERANCE`` below it (an estimate that wasteful would refuse jobs that fit). Small and medium sizes of the
AugReg ViT-Ti (real weights: its trust check and inside views run as they do for visitors) and a random ViT-S/16
(twice the heads and the width: the terms that follow them), so that the terms are checked where they differ; the
Video tab's jobs (a clip's analysis, its Grad-CAM and GAE per frame, the deletion and insertion check of both) on a
random VideoMAE-like model at two clip sizes, a TimeSformer-like and a V-JEPA 2-like one
(``measured_video_peaks.py``).

The peak is the process's VmHWM above its VmRSS before the job, from /proc, malloc tuned as the server tunes it."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import vit
from viz.analysis import peak

pytestmark = pytest.mark.slow        # each case is a process that runs a dozen jobs

AUGREG = "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors"
HERE = Path(__file__).resolve().parent
EVERY = ("analysis", "render", "explain", "family_gradient", "family_attnlrp", "family_cp_lrp", "family_attention",
         "trust_fast", "trust_sanity", "inside_views", "inside_ablation", "inside_patching", "compare", "animation",
         "features", "features_second", "walk")
THOROUGH = ("trust_thorough",)    # alone: minutes of pixel protocols (ROAD's solves) on a 2-core CPU
MEDIUM = ("analysis", "render", "explain", "family_gradient", "family_attnlrp", "inside_views", "inside_patching",
          "animation", "features_second", "walk", "trust_fast")
WIDER = ("analysis", "render", "family_gradient", "family_attnlrp", "family_attention", "inside_views",
         "inside_ablation", "animation", "features", "walk")


@pytest.fixture(scope="module")
def vit_s(tmp_path_factory) -> Path:
    """A ViT-S/16 with random weights (6 heads, width 384) and 10 classes."""
    torch.manual_seed(0)
    model = vit.VisionTransformer(vit.variant("vit_s_16", num_classes=10)).eval()
    path = tmp_path_factory.mktemp("vit-s") / "vit_s_16.pt"
    return vit.save_checkpoint(path, model, [f"class {i}" for i in range(10)], vit.Preprocess.for_crop(224))


def measured(script: str, *args, jobs: tuple[str, ...]) -> list[dict]:
    """The rows ``script`` (``measured_peaks.py`` or ``measured_video_peaks.py``) prints for ``jobs``."""
    run = subprocess.run([sys.executable, str(HERE / script), *map(str, args), *jobs],
                         capture_output=True, text=True, timeout=3000)
    rows = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    assert run.returncode == 0 and len(rows) == len(jobs), run.stderr[-3000:]
    return rows


def assert_within_estimates(rows: list[dict], where: str) -> None:
    """Every row's measured peak ≤ its estimate ≤ ``peak.TOLERANCE`` of it; the table printed."""
    factor, slack = peak.TOLERANCE
    table = "\n".join(f"{r['job']:>16} at {where}: measured {r['measured'] / 2**20:7.1f} MB, estimated "
                      f"{r['estimate'] / 2**20:7.1f} MB ({r['seconds']:.1f} s)" for r in rows)
    print(table)
    under = [r["job"] for r in rows if r["measured"] > r["estimate"]]
    wasteful = [r["job"] for r in rows if r["estimate"] > factor * r["measured"] + slack]
    assert not under, f"estimated below the measured peak: {under}\n{table}"
    assert not wasteful, f"estimated beyond {factor} × the measured peak + {slack / 2**20:.0f} MB: {wasteful}\n{table}"


@pytest.mark.parametrize("model, side, jobs", [("augreg", 224, EVERY), ("augreg", 224, THOROUGH),
                                               ("augreg", 384, MEDIUM), ("vit_s", 224, WIDER)],
                         ids=["ViT-Ti 224", "ViT-Ti 224 thorough", "ViT-Ti 384", "ViT-S 224"])
def test_each_jobs_peak_is_within_its_estimate(real_weights_dir, vit_s, model, side, jobs):
    weights = real_weights_dir / AUGREG if model == "augreg" else vit_s
    assert_within_estimates(measured("measured_peaks.py", weights, side, jobs=jobs), str(side))


@pytest.mark.parametrize("family, side, frames", [("videomae", 112, 8), ("videomae", 224, 16),
                                                  ("timesformer", 224, 8), ("vjepa2", 224, 8)],
                         ids=["VideoMAE-like 196 tokens", "VideoMAE-like 1568 tokens", "TimeSformer-like 1569 tokens",
                              "V-JEPA 2-like 784 tokens"])
def test_a_clips_jobs_peak_within_their_estimates(family, side, frames):
    rows = measured("measured_video_peaks.py", family, side, frames, jobs=("video", "video_gradcam", "video_gae",
                                                                           "video_check"))
    assert_within_estimates(rows, f"{family} {side} px × {frames}")
