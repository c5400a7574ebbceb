"""A model learning to see: training snapshots (python -m vit.train --snapshot-every N), pos_neighbour_similarity,
and their animation (python -m viz.dynamics SNAPSHOT_DIR IMAGE --out DIR).

Protects: every snapshot is a checkpoint vit.load opens, with its epoch and validation accuracy; snapshots change
nothing about the run and survive --resume; pos_neighbour_similarity equals hand-computed values and, in a short
from-scratch run on the position task, starts near 0 and ends clearly larger; the GIF has one frame per snapshot
and the npz the documented arrays; the demonstration data set is what it says.
"""
from __future__ import annotations

import csv
import math

import numpy as np
import pytest
import torch
from PIL import Image

import vit
from vit.checkpoints.files import read_file
from vit.model import ViTConfig, VisionTransformer
from vit.train import TrainOptions, fit, list_snapshots, snapshot_dir
from vit.train.__main__ import main as train_main
from vit.train.build import scratch_preprocess
from vit.train.snapshots import is_snapshot_epoch, save_snapshot
from vit.train.squares import class_names, main as squares_main, make_squares_folder
from viz.compare.snapshots import load_series
from viz.cli.dynamics import main as dynamics_main
from viz.compare.dynamics import DynamicsView
from viz.maps.embeddings import neighbour_similarity, position_similarity

# Learns where the square is within seconds: 8×8 images of 2×2-pixel patches (a 4×4 grid), 2×2 regions (4 classes),
# 400 images, 2 blocks of width 32, a high constant-then-cosine rate without warmup. Measured on a 2-core CPU:
# pos_neighbour_similarity -0.050 at initialisation, 0.29 after 5 epochs (16 s on the loaded shared machine).
# docs/training.md's demonstration run (600 images of 32×32, 4 blocks of width 96, 40 epochs) takes 3 to 16 minutes on
# the same 2-core CPU: far too long for a test.
FAST = ["--img-size", "8", "--patch-size", "2", "--depth", "2", "--embed-dim", "32", "--heads", "2", "--batch-size",
        "16", "--lr", "1e-2", "--warmup-epochs", "0", "--epochs", "5", "--augment", "none", "--drop-path", "0",
        "--label-smoothing", "0", "--workers", "0"]
FIRST_NEIGHBOUR_SIMILARITY = -0.050   # measured: random initial embeddings, about -1/N for N = 16 patches
LAST_NEIGHBOUR_SIMILARITY = 0.29      # measured after epoch 5



@pytest.fixture(scope="module")
def squares(tmp_path_factory):
    return make_squares_folder(tmp_path_factory.mktemp("squares"), count=400, size=8, regions=2)


@pytest.fixture(scope="module")
def run(squares, tmp_path_factory):
    out = tmp_path_factory.mktemp("weights") / "squares.pt"
    assert train_main(["--data", str(squares), "--out", str(out), *FAST, "--snapshot-every", "1"]) == 0
    return out


@pytest.fixture(scope="module")
def series(run, squares):
    return load_series(snapshot_dir(run), Image.open(squares / "r0c1" / "0001.png"))


def test_neighbour_similarity_of_hand_computed_grids():
    """2×2 grid, embeddings (1,0) (0,1) / (0,1) (-1,0): per patch, neighbours' mean minus all patches' mean is
    0, -1/2, -1/2, 0 -> -1/4. A 1×3 row (1,0), (1,1)/√2, (0,1): ((√2 - 3)/3 + √2/2)/3."""
    square = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [-1.0, 0.0]])
    assert neighbour_similarity(position_similarity(square, (2, 2)), (2, 2)) == -0.25
    row = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    expected = ((math.sqrt(2) - 3) / 3 + math.sqrt(2) / 2) / 3
    assert neighbour_similarity(position_similarity(row, (1, 3)), (1, 3)) == pytest.approx(expected, rel=1e-5)
    # a CLS embedding in front is ignored; random embeddings give about -1/N
    rng = np.random.default_rng(0)
    random = rng.normal(size=(1 + 64, 512))
    assert neighbour_similarity(position_similarity(random, (8, 8)), (8, 8)) == pytest.approx(-1 / 64, abs=0.01)
    with pytest.raises(ValueError, match="Expected \\(4, 4\\)"):
        neighbour_similarity(np.eye(3), (2, 2))


def test_every_snapshot_loads_with_its_epoch_and_validation_accuracy(run):
    snapshots = list_snapshots(snapshot_dir(run))
    assert snapshot_dir(run) == run.with_name("squares.snapshots")
    assert [s.epoch for s in snapshots] == [0, 1, 2, 3, 4, 5]
    assert [s.path.name for s in snapshots] == [f"epoch-000{e}.pt" for e in range(6)]
    with open(run.with_name("squares.metrics.csv")) as f:
        val_acc = {int(r["epoch"]): float(r["val_acc"]) for r in csv.DictReader(f)}
    for s in snapshots[1:]:
        assert s.val_accuracy == pytest.approx(val_acc[s.epoch], abs=1e-6)
    assert snapshots[0].val_accuracy == pytest.approx(0.25, abs=0.15)    # 4 classes, untrained
    models = [vit.load(str(s.path)) for s in snapshots]
    assert all(m.config.img_size == (8, 8) and m.labels == class_names(2) for m in models)
    extra = read_file(snapshots[0].path)["extra"]
    assert extra["name"] == "squares epoch 0" and extra["epoch"] == 0 and models[0].name == "squares epoch 0"
    x = torch.randn(3, 3, 8, 8)
    last = vit.load(str(run.with_name("squares.last.pt")))
    with torch.inference_mode():
        assert torch.equal(models[-1].model(x), last.model(x))           # the final snapshot is the final model
        assert not torch.equal(models[0].model(x), models[-1].model(x))


def test_pos_neighbour_similarity_starts_near_zero_and_grows(series):
    n = series.pos_neighbour_similarity
    print(f"\npos_neighbour_similarity by epoch: {np.round(n, 3).tolist()}")
    assert n[0] == pytest.approx(FIRST_NEIGHBOUR_SIMILARITY, abs=0.03)
    assert n[-1] == pytest.approx(LAST_NEIGHBOUR_SIMILARITY, abs=0.1)
    assert n[-1] > n[0] + 0.2
    assert series.mean_distance.shape == (6, 2, 2) and series.rollout.shape == (6, 4, 4)
    assert series.pos_similarity.shape == (6, 16, 16)


def test_dynamics_cli_writes_one_frame_per_snapshot_and_the_arrays(run, squares, tmp_path):
    out = tmp_path / "dyn"
    assert dynamics_main([str(snapshot_dir(run)), str(squares / "r0c1" / "0001.png"), "--out", str(out),
                          "--frame-ms", "200"]) == 0
    with Image.open(out / "dynamics.gif") as gif:
        assert gif.n_frames == 6 and gif.info["duration"] == 200
    npz = np.load(out / "dynamics.npz")
    assert npz["epochs"].tolist() == [0, 1, 2, 3, 4, 5]
    assert npz["val_accuracy"].shape == (6,) and npz["pos_neighbour_similarity"].shape == (6,)
    assert npz["mean_distance"].shape == (6, 2, 2)
    snapshots = list_snapshots(snapshot_dir(run))
    np.testing.assert_allclose(npz["val_accuracy"], [s.val_accuracy for s in snapshots])
    m = vit.load(str(snapshots[3].path)).model
    sim = position_similarity(m.pos_embed.detach().numpy(), (4, 4))
    assert npz["pos_neighbour_similarity"][3] == pytest.approx(neighbour_similarity(sim, (4, 4)))
    assert dynamics_main([str(tmp_path / "nothing"), str(squares / "r0c1" / "0001.png"), "--out", str(out)]) == 2
    assert dynamics_main([str(snapshot_dir(run)), str(squares / "r0c1" / "0001.png"), "--out", str(tmp_path / "k"),
                          "--every", "2"]) == 0
    assert np.load(tmp_path / "k" / "dynamics.npz")["epochs"].tolist() == [0, 2, 4, 5]   # every 2nd and the last


def test_frames_are_drawn_from_arrays(series):
    view = DynamicsView(series)
    first, again = view.frame(2), view.frame(2)
    assert np.array_equal(np.asarray(first), np.asarray(again)) and first.size == view.frame(-1).size
    assert not np.array_equal(np.asarray(view.frame(0)), np.asarray(view.frame(5)))
    assert view.caption(0).startswith("squares: epoch 0 | validation accuracy")
    assert "pos_neighbour_similarity -0.0" in view.caption(0)
    with pytest.raises(ValueError, match="Snapshot 6 does not exist"):
        view.frame(6)


def test_a_run_without_position_embedding_says_so(tmp_path):
    """Snapshots of a "none" model: no similarity to show, pos_neighbour_similarity NaN, frames still drawn."""
    folder = tmp_path / "none.snapshots"
    for epoch in (0, 2):
        torch.manual_seed(epoch)
        model = VisionTransformer(ViTConfig(img_size=8, patch_size=2, embed_dim=16, depth=1, num_heads=2, mlp_dim=32,
                                            num_classes=2, pos_embed_kind="none"))
        save_snapshot(folder, model, ["a", "b"], scratch_preprocess((8, 8)), epoch, 0.5, 0.7, "none")
    series = load_series(folder, Image.new("RGB", (8, 8)))
    assert np.isnan(series.pos_neighbour_similarity).all() and series.pos_similarity.shape == (2, 0, 0)
    view = DynamicsView(series)
    assert "no position embedding" in view.caption(1) and view.frame(1).width > 800


def test_snapshots_change_nothing_about_the_run_and_survive_resume(squares, tmp_path, monkeypatch):
    """The same run with and without --snapshot-every ends with identical weights; interrupted in epoch 3 and
    resumed, it keeps every snapshot (the first one written once, before any step)."""
    import vit.train.trainer as trainer

    small = dict(data=str(squares), img_size=(8, 8), patch_size=2, depth=1, embed_dim=16, num_heads=2,
                 batch_size=32, lr=1e-2, warmup_epochs=0, epochs=3, augment="none", workers=0)
    plain = fit(TrainOptions(out=str(tmp_path / "plain.pt"), **small))

    real = trainer.train_one_epoch
    calls = []

    def interrupted(*args, desc, **kwargs):
        calls.append(desc)
        if desc == "epoch 3/3" and len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, desc=desc, **kwargs)

    monkeypatch.setattr(trainer, "train_one_epoch", interrupted)
    out = tmp_path / "snap.pt"
    with pytest.raises(KeyboardInterrupt):
        fit(TrainOptions(out=str(out), snapshot_every=2, **small))
    assert [s.epoch for s in list_snapshots(snapshot_dir(out))] == [0, 2]
    assert train_main(["--out", str(out), "--resume"]) == 0
    assert [s.epoch for s in list_snapshots(snapshot_dir(out))] == [0, 2, 3]     # every 2nd, and the last
    x = torch.randn(4, 3, 8, 8)
    with torch.inference_mode():
        assert torch.equal(vit.load(str(out.with_name("snap.last.pt"))).model(x), plain.model(x))
    assert [is_snapshot_epoch(e, 2, 5) for e in range(1, 6)] == [False, True, False, True, True]
    assert not is_snapshot_epoch(3, 0, 3)


def test_demonstration_data_set(tmp_path, capsys):
    """Each class's square lies wholly inside its grid cell; the same arguments write the same pixels."""
    root = make_squares_folder(tmp_path / "a", count=90, size=32, regions=3, seed=1)
    assert sorted(p.name for p in root.iterdir()) == class_names(3) == ["r0c0", "r0c1", "r0c2", "r1c0", "r1c1",
                                                                        "r1c2", "r2c0", "r2c1", "r2c2"]
    for name in class_names(3):
        files = sorted((root / name).iterdir())
        assert len(files) == 10
        r, c = int(name[1]), int(name[3])
        for path in files:
            pixels = np.asarray(Image.open(path)).min(axis=2)
            ys, xs = np.nonzero(pixels >= 170)                  # the square's pixels (background <= ~160)
            assert ys.size >= 16 and ys.min() >= r * 32 / 3 and ys.max() < (r + 1) * 32 / 3, path
            assert xs.min() >= c * 32 / 3 and xs.max() < (c + 1) * 32 / 3, path
    assert squares_main([str(tmp_path / "b"), "--count", "90", "--regions", "3", "--seed", "1"]) == 0
    assert np.array_equal(np.asarray(Image.open(tmp_path / "b" / "r2c1" / "0003.png")),
                          np.asarray(Image.open(root / "r2c1" / "0003.png")))
    assert squares_main([str(tmp_path / "c"), "--count", "5"]) == 2
    assert "count >= 18" in capsys.readouterr().err
