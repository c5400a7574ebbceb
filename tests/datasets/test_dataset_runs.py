"""``python -m viz FOLDER`` as separate processes: memory stays flat as the folder grows, ``torchrun`` with two
processes (gloo, CPU) gives exactly one process's statistics, and a run killed part-way and resumed gives exactly
the uninterrupted run's, for a ViT and a Swin alike (one loop reads either's description). Tiny models, generated
images: each run takes a few seconds, most of it importing torch."""
from __future__ import annotations

import pytest

import signal
import subprocess
import sys
import time

import numpy as np
from viz.cli import main

from tiny_run import REPO, noise_images, single_threaded_env, statistics, tiny_checkpoint, tiny_swin_checkpoint, viz

pytestmark = pytest.mark.slow   # torchrun, kills and resumes, memory over 100 images
CHECKPOINTS = {"vit": lambda path: tiny_checkpoint(path, depth=3), "swin": tiny_swin_checkpoint}

PEAK = ("import resource, sys; from viz.cli import main; code = main(sys.argv[1:]); "
        "print('peak', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); sys.exit(code)")
MAPS_PER_IMAGE_MB = 2 * 2 * 257 ** 2 * 4 / 2 ** 20      # 2 blocks × 2 heads × T² float32, T = 1 + 16·16: 1 MB


def peak_rss_mb(*args) -> float:
    """Peak RSS of ``python -m viz ARGS`` run in a fresh process (its own high-water mark, read at its end)."""
    result = subprocess.run([sys.executable, "-c", PEAK, *map(str, args)], capture_output=True, text=True,
                            env=single_threaded_env(), cwd=REPO)
    assert result.returncode == 0, result.stderr[-3000:]
    return int(result.stderr.split("peak")[-1].split()[0]) / 1024   # ru_maxrss is in KiB on Linux


def test_peak_memory_stays_flat_from_10_to_100_images(tmp_path):
    """Statistics are streamed: holding every image's maps would add 1 MB per image (100 MB at 100 images)."""
    weights = tiny_checkpoint(tmp_path / "tiny.pt", size=64, patch=4)
    noise_images(tmp_path / "ten", 10, size=(64, 80))
    noise_images(tmp_path / "hundred", 100, size=(64, 80))
    common = ["--weights", weights, "--stats-only", "--batch-size", "4", "--quiet"]
    small = peak_rss_mb(tmp_path / "ten", "--out", tmp_path / "out10", *common)
    large = peak_rss_mb(tmp_path / "hundred", "--out", tmp_path / "out100", *common)
    assert statistics(tmp_path / "out100")["images"] == 100
    assert large - small < 0.15 * 90 * MAPS_PER_IMAGE_MB, (small, large)   # margin: 15 % of a leak of 90 maps


@pytest.mark.parametrize("model", CHECKPOINTS)
def test_torchrun_with_two_processes_gives_exactly_the_single_process_statistics(tmp_path, model):
    """Five images over two processes: DistributedSampler pads the second share with a repeat of image 0, which
    must not be counted twice. One image per forward pass, so that each image's numbers come from the same
    arithmetic in both runs (a batch of another size may round differently: test_dataset.py compares batches
    with one image at a time); the sums themselves are exact in any order and grouping."""
    weights = CHECKPOINTS[model](tmp_path / f"{model}.pt")
    noise_images(tmp_path / "images", 5)
    common = ["--weights", weights, "--quiet"]
    viz(tmp_path / "images", "--out", tmp_path / "one", *common)
    run = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                          "-m", "viz", tmp_path / "images", "--out", tmp_path / "two", "--workers", "1", *common],
                         capture_output=True, text=True, env=single_threaded_env(), cwd=REPO, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    one, two = statistics(tmp_path / "one"), statistics(tmp_path / "two")
    assert (one.pop("processes"), two.pop("processes")) == (1, 2)
    assert two == one and two["images"] == 5
    assert sorted(p.name for p in (tmp_path / "two").iterdir()) == ["0000", "0001", "0002", "0003", "0004", "summary"]
    per_image = [np.load(tmp_path / out / "summary" / "mean_distance.npz")["per_image"] for out in ("one", "two")]
    np.testing.assert_array_equal(*per_image)
    for image in ("0000", "0004"):
        files = [np.load(tmp_path / out / image / "attention.npz") for out in ("one", "two")]
        np.testing.assert_array_equal(files[0]["rollout"], files[1]["rollout"])


def done_so_far(out) -> int:
    """Images the saved progress files of a running data-set run count as finished."""
    total = 0
    for path in (out / "summary" / "partial").glob("session-*-rank-*.npz"):
        try:
            with np.load(path) as saved:
                total += int(np.unpackbits(saved["done"]).sum())
        except (OSError, ValueError, KeyError):   # replaced while being read: count it next time
            pass
    return total


@pytest.mark.parametrize("model", CHECKPOINTS)
def test_resume_after_a_kill_gives_the_uninterrupted_result(tmp_path, capsys, model):
    weights = CHECKPOINTS[model](tmp_path / f"{model}.pt")
    noise_images(tmp_path / "images", 300)
    common = [tmp_path / "images", "--weights", weights, "--stats-only", "--batch-size", "1"]
    viz(*common, "--out", tmp_path / "whole", "--quiet")

    out = tmp_path / "killed"
    child = subprocess.Popen([sys.executable, "-m", "viz", *map(str, common), "--out", str(out), "--quiet"],
                             env=single_threaded_env(), cwd=REPO, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while done_so_far(out) < 20 and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    child.send_signal(signal.SIGKILL)
    child.wait()
    killed_at = done_so_far(out)
    assert 20 <= killed_at < 300 and not (out / "summary" / "statistics.json").exists(), killed_at

    resumed = viz(*common, "--out", out, "--resume")
    assert f"resuming: {killed_at} of 300 images were done in 1 earlier session(s)" in resumed.stderr
    assert statistics(out) == statistics(tmp_path / "whole")

    argv = [str(a) for a in (*common, "--out", out, "--resume")]   # in this process: nothing left to compute
    assert main(argv) == 0 and statistics(out) == statistics(tmp_path / "whole")
    assert "resuming: 300 of 300" in capsys.readouterr().err
    assert main(argv + ["--norm-ratio", "4"]) == 2
    message = capsys.readouterr().err
    assert "Cannot resume: the run saved in" in message and "(norm_ratio differ)" in message
    assert statistics(out) == statistics(tmp_path / "whole")          # the refused run left the summary alone
