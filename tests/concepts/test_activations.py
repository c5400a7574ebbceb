"""Protects the cached activations (``viz.concepts.activations``): every shard holds exactly the patch tokens the
hook point gives photo by photo (view 0 the model's own crop, the crops the boxes drawn from their seeds), with
their photo, view, row and column; shards hold fixed runs of photos whatever the batch size; the held-out photos are
spread evenly; an unreadable photo is named and left out; ``resume`` keeps the finished shards and writes the rest;
``torchrun`` with two processes writes the same files as one (slow); peak memory does not grow with the folder
(slow)."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

import vit
from tiny_run import REPO, noise_images, single_threaded_env, tiny_checkpoint
from viz.concepts.activations import (Activations, CacheOptions, PhotoViews, cache, folder_photos, held_out,
                                      random_box, shard_photos)
from vit.inside.hooks import hook_tokens

PATCHES, WIDTH = 16, 16           # the tiny checkpoint: 32 px, patches of 8 -> 4 × 4, width 16


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    return vit.load(str(tiny_checkpoint(tmp_path_factory.mktemp("w") / "tiny.pt")))


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    folder = tmp_path_factory.mktemp("photos")
    noise_images(folder, 11, size=(40, 56))
    return folder


def options(**kw) -> CacheOptions:
    return CacheOptions(**{"layer": 1, "crops": 2, "batch_size": 3, "progress": False,
                           "shard_mb": 4 * 3 * PATCHES * WIDTH * 4 / 2**20, **kw})   # 4 photos of 3 views a shard


def expected_tokens(loaded, folder, hook: str = "residual", layer: int = 1, crops: int = 2) -> np.ndarray:
    """Every photo's views one at a time -> (photos, views, N, D)."""
    entries = folder_photos(folder)
    views = PhotoViews(entries, loaded.preprocess, crops, 0)
    out = []
    for i in range(len(entries)):
        _, pixels, _, _ = views[i]
        x = loaded.preprocess.normalise(pixels.permute(0, 3, 1, 2))
        out.append(torch.stack([hook_tokens(loaded.model, x[v:v + 1], layer, hook).tokens[0, 1:]
                                for v in range(len(x))]).numpy())
    return np.stack(out)


def all_tokens(acts: Activations) -> dict[str, np.ndarray]:
    parts = [acts.read(i) for i in range(len(acts.shards))]
    return {k: np.concatenate([p[k].numpy() for p in parts]) for k in parts[0]}


def test_the_shards_hold_each_photo_s_tokens_with_where_they_come_from(loaded, photos, tmp_path):
    hook = "mlp"                                                           # (every hook point: test_hooks.py)
    acts = cache(loaded, photos, tmp_path / "acts", options(hook=hook))
    expected = expected_tokens(loaded, photos, hook)                       # (11, 3, 16, 16)
    got = all_tokens(acts)
    np.testing.assert_allclose(got["tokens"], expected.reshape(-1, WIDTH), rtol=1e-5, atol=1e-6)
    photo, view, patch = np.meshgrid(np.arange(11), np.arange(3), np.arange(PATCHES), indexing="ij")
    assert np.array_equal(got["photo"], photo.ravel()) and np.array_equal(got["view"], view.ravel())
    assert np.array_equal(got["row"], patch.ravel() // 4) and np.array_equal(got["col"], patch.ravel() % 4)
    assert [(s["first"], s["last"], s["tokens"]) for s in acts.shards] == [(0, 4, 192), (4, 8, 192), (8, 11, 144)]
    assert acts.photos == [f"{i:04d}.png" for i in range(11)] and acts.info["hook"] == hook
    assert acts.info["grid"] == [4, 4] and acts.info["d_model"] == WIDTH and acts.info["views"] == 3
    assert np.flatnonzero(acts.held_out).tolist() == [9]                   # 10 % of 11 photos
    assert not acts.failed


def test_shards_do_not_depend_on_the_batch_size(loaded, photos, tmp_path):
    one = all_tokens(cache(loaded, photos, tmp_path / "one", options(batch_size=1)))
    five = all_tokens(cache(loaded, photos, tmp_path / "five", options(batch_size=5)))
    for key in ("photo", "view", "row", "col"):
        assert np.array_equal(one[key], five[key])
    np.testing.assert_allclose(one["tokens"], five["tokens"], rtol=1e-5, atol=1e-6)


def test_random_crops_are_seeded_boxes_inside_the_photo():
    rng = np.random.default_rng(0)
    for size in [(56, 40), (300, 20), (7, 7)]:
        for _ in range(50):
            left, top, right, bottom = random_box(size, rng)
            assert 0 <= left < right <= size[0] and 0 <= top < bottom <= size[1]
    box = lambda: random_box((500, 400), np.random.default_rng([0, 3, 1]))      # noqa: E731
    assert box() == box()
    left, top, right, bottom = box()
    area = (right - left) * (bottom - top) / (500 * 400)
    assert 0.25 - 0.01 <= area <= 1.0 and 3 / 4 - 0.02 <= (right - left) / (bottom - top) <= 4 / 3 + 0.02


def test_held_out_photos_are_spread_evenly():
    assert np.flatnonzero(held_out(30, 0.1)).tolist() == [9, 19, 29]
    assert np.flatnonzero(held_out(4, 0.1)).tolist() == [3]                 # at least one
    assert np.flatnonzero(held_out(2, 0.9)).tolist() == [1]                 # never all
    with pytest.raises(ValueError, match="at least 2 photos"):
        held_out(1, 0.1)


def test_an_unreadable_photo_is_named_and_left_out(loaded, photos, tmp_path):
    folder = tmp_path / "photos"
    folder.mkdir()
    for p in sorted(photos.iterdir())[:5]:
        (folder / p.name).write_bytes(p.read_bytes())
    (folder / "0002.png").write_bytes(b"not a png")
    acts = cache(loaded, folder, tmp_path / "acts", options())
    assert list(acts.failed) == [2] and "0002.png" in acts.photos
    assert sorted(set(all_tokens(acts)["photo"].tolist())) == [0, 1, 3, 4]


def test_resume_keeps_the_finished_shards_and_writes_the_rest(loaded, photos, tmp_path):
    out = tmp_path / "acts"
    whole = all_tokens(cache(loaded, photos, out, options()))
    stamps = {p.name: p.stat().st_mtime_ns for p in out.glob("shard-*")}
    (out / "shard-00001.safetensors").unlink()
    (out / "index.json").unlink()
    resumed = cache(loaded, photos, out, options(resume=True))
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("shard-*") if p.name != "shard-00001.safetensors"} == \
        {k: v for k, v in stamps.items() if k != "shard-00001.safetensors"}
    for key, value in all_tokens(resumed).items():
        assert np.array_equal(value, whole[key]), key
    with pytest.raises(ValueError, match="Cannot resume: the activations in .* were cached with other photos or "
                                         "settings \\(crops differ\\)"):
        cache(loaded, photos, out, options(resume=True, crops=1))


def test_one_shard_holds_as_many_photos_as_fit():
    assert shard_photos(CacheOptions(layer=0, shard_mb=1.0), views=2, patches=196, width=192) == 3
    assert shard_photos(CacheOptions(layer=0, shard_mb=0.001), views=1, patches=196, width=192) == 1


CACHE_SCRIPT = ("import sys, torch, vit\nfrom viz.folders import distributed\n"
                "from viz.concepts.activations import CacheOptions, cache\n"
                "loaded = vit.load(sys.argv[1])\nprocesses = distributed.start(torch.device('cpu'))\n"
                "cache(loaded, sys.argv[2], sys.argv[3], CacheOptions(layer=1, crops=2, batch_size=2, shard_mb="
                f"{4 * 3 * PATCHES * WIDTH * 4 / 2**20}, progress=False), processes)\ndistributed.finish(processes)\n")


@pytest.mark.slow     # two processes under torchrun
def test_torchrun_with_two_processes_writes_what_one_writes(photos, tmp_path):
    weights = tiny_checkpoint(tmp_path / "tiny.pt")
    script = tmp_path / "cache_folder.py"
    script.write_text(CACHE_SCRIPT)
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    for out, launcher in (("one", [sys.executable]), ("two", torchrun)):
        run = subprocess.run([*launcher, str(script), str(weights), str(photos), str(tmp_path / out)],
                             capture_output=True, text=True, env=single_threaded_env(), cwd=REPO, timeout=300)
        assert run.returncode == 0, run.stderr[-3000:]
    names = sorted(p.name for p in (tmp_path / "one").glob("shard-*"))
    assert names == sorted(p.name for p in (tmp_path / "two").glob("shard-*")) and len(names) == 3
    for name in names:
        a, b = load_file(tmp_path / "one" / name), load_file(tmp_path / "two" / name)
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), name
    index = [json.loads((tmp_path / out / "index.json").read_text()) for out in ("one", "two")]
    assert index[0] == index[1]


PEAK = ("import resource, sys, vit; from viz.concepts.activations import *; loaded = vit.load(sys.argv[1]); "
        "cache(loaded, sys.argv[2], sys.argv[3], CacheOptions(layer=1, crops=3, batch_size=4, shard_mb=1, "
        "progress=False)); print('peak', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)")


@pytest.mark.slow     # two subprocesses over 20 and 400 photos
def test_peak_memory_does_not_grow_with_the_folder(tmp_path):
    """Holding every token would add 400 photos × 4 views × 64 patches × 16 floats = 6.5 MB (plus the tensors'
    overhead); one shard's buffer is 1 MB."""
    weights = tiny_checkpoint(tmp_path / "tiny.pt", size=64)
    peaks = []
    for count in (20, 400):
        noise_images(tmp_path / f"p{count}", count, size=(64, 64))
        result = subprocess.run([sys.executable, "-c", PEAK, str(weights), str(tmp_path / f"p{count}"),
                                 str(tmp_path / f"o{count}")], capture_output=True, text=True,
                                env=single_threaded_env(), cwd=REPO, timeout=600)
        assert result.returncode == 0, result.stderr[-3000:]
        peaks.append(int(result.stderr.split("peak")[-1].split()[0]) / 1024)
    assert Activations.load(tmp_path / "o400").tokens == 400 * 4 * 64
    print(f"\npeak RSS caching 20 photos {peaks[0]:.1f} MB, 400 photos {peaks[1]:.1f} MB")
    assert peaks[1] - peaks[0] < 3.0, peaks
