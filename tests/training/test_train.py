"""Training protects: a tiny ViT really learns, its checkpoint is a normal vit.load source with its own class names,
fine-tuning starts from the pretrained weights, and --resume continues the same run exactly."""
from __future__ import annotations

import csv
import time
from pathlib import Path

import pytest
import torch
from PIL import Image

import vit
from synthetic_shapes import CLASSES, make_shapes_folder
from vit.checkpoints.files import read_file
from vit.train import TrainOptions, fit
from vit.train.__main__ import main
from vit.train.build import HEAD_PREFIXES, fine_tune_model
from vit.train.data import open_data

# A ViT small enough to train in seconds on a CPU: 32×32 images, 8×8 patches (16 tokens + CLS), 3 blocks of width 64.
TINY = dict(img_size=(32, 32), patch_size=8, depth=3, embed_dim=64, num_heads=4, batch_size=16, lr=2e-3,
            warmup_epochs=1, workers=0)
REAL_VIT_TINY = "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors"



@pytest.fixture(scope="module")
def shapes(tmp_path_factory):
    return make_shapes_folder(tmp_path_factory.mktemp("shapes"), per_class=40)  # 4 classes: 32 train + 8 val each


@pytest.fixture(scope="module")
def trained(shapes, tmp_path_factory):
    out = tmp_path_factory.mktemp("weights") / "shapes.pt"
    tic = time.perf_counter()
    result = fit(TrainOptions(data=str(shapes), out=str(out), epochs=8, **TINY))
    print(f"\ntiny ViT on synthetic shapes: best val acc {result.best['val_acc']:.3f} at epoch "
          f"{result.best['epoch']}, {time.perf_counter() - tic:.1f}s")
    return result


def test_tiny_vit_learns_synthetic_shapes(trained):
    assert trained.best["val_acc"] >= 0.9, trained.history
    assert trained.history[-1]["train_loss"] < trained.history[0]["train_loss"]


def test_metrics_csv_and_curves_are_written_per_epoch(trained):
    with open(trained.files.metrics) as f:
        rows = list(csv.DictReader(f))
    assert [int(r["epoch"]) for r in rows] == list(range(1, 9))
    assert set(rows[0]) == {"epoch", "lr", "train_loss", "train_acc", "val_loss", "val_acc", "seconds", "best"}
    assert [r["best"] for r in rows].count("1") == 1
    best = next(r for r in rows if r["best"] == "1")
    assert float(best["val_acc"]) == pytest.approx(trained.best["val_acc"], abs=1e-6)
    with Image.open(trained.files.curves) as png:
        assert png.format == "PNG" and png.width > 300 and png.height > 200


def test_checkpoint_reloads_with_identical_logits_and_its_class_names(trained):
    last = vit.load(str(trained.files.last))
    x = torch.randn(5, 3, 32, 32)
    with torch.inference_mode():
        assert torch.equal(last.model(x), trained.model(x))
    best = vit.load(str(trained.files.best))
    assert best.labels == sorted(CLASSES) == trained.labels
    assert best.preprocess == trained.preprocess and best.config.img_size == (32, 32)


def test_best_checkpoint_classifies_the_held_out_images_as_recorded(trained, shapes):
    """Through vit.load and the checkpoint's own preprocessing (what the app does), the saved best model gets the
    held-out images right as often as the run reported, naming them by their class folders."""
    best = vit.load(str(trained.files.best))
    val = open_data(shapes, val_share=0.2, seed=0).val
    right = 0
    with torch.inference_mode():
        for i in range(len(val)):
            path, _ = val.dataset.samples[val.indices[i]]
            with Image.open(path) as img:
                name = best.labels[best.model(best.preprocess(img)).argmax().item()]
            right += name == Path(path).parent.name
    assert right / len(val) == pytest.approx(trained.best["val_acc"])


def test_fine_tune_model_copies_everything_but_the_head(real_weights_dir):
    pretrained = vit.load(str(real_weights_dir / REAL_VIT_TINY)).model
    model = fine_tune_model(pretrained, num_classes=3, drop_path=0.1)
    before, after = pretrained.state_dict(), model.state_dict()
    assert before.keys() == after.keys()
    for key in before:
        if key.startswith(HEAD_PREFIXES):
            assert after[key].shape[0] == 3, key
        else:
            assert torch.equal(before[key], after[key]), key


def test_fine_tuning_starts_from_the_checkpoint_not_from_scratch(real_weights_dir, tmp_path):
    """One step on two images: every weight but the head stays within a step of the pretrained value (a fresh
    model differs by ~0.02-1), and the checkpoint's preprocessing (AugReg: mean = std = 0.5) is kept."""
    source = real_weights_dir / REAL_VIT_TINY
    two = {k: CLASSES[k] for k in ("green_circle", "red_square")}
    data = make_shapes_folder(tmp_path / "two", per_class=2, classes=two)  # 1 train + 1 val image per class
    out = tmp_path / "ft.pt"
    result = fit(TrainOptions(data=str(data), out=str(out), init=str(source), epochs=1, batch_size=2, workers=0))
    assert len(result.history) == 1 and result.history[0]["lr"] > 0
    pretrained = vit.load(str(source)).model.state_dict()
    tuned = vit.load(str(out))
    assert tuned.labels == ["green_circle", "red_square"] and tuned.config.num_classes == 2
    assert tuned.preprocess.mean == (0.5, 0.5, 0.5) and tuned.preprocess.std == (0.5, 0.5, 0.5)
    moved = 0.0
    for key, value in tuned.model.state_dict().items():
        if not key.startswith(HEAD_PREFIXES):
            moved = max(moved, (value - pretrained[key]).abs().max().item())
    assert 0 < moved < 1e-3


def _deep_equal(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_deep_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(map(_deep_equal, a, b))
    return a == b


def test_resume_continues_at_the_right_epoch_with_the_same_optimizer_state(tmp_path, monkeypatch):
    """Ctrl-C in epoch 3 of 3, then --resume: only epoch 3 is trained again, and weights, optimizer, schedule and
    metrics end exactly as in the uninterrupted run."""
    import vit.train.trainer as trainer

    data = make_shapes_folder(tmp_path / "data", per_class=12)
    options = dict(TINY, data=str(data), epochs=3)
    full = fit(TrainOptions(out=str(tmp_path / "full.pt"), **options))

    trained_epochs = []
    real_train_one_epoch = trainer.train_one_epoch

    def train_one_epoch(*args, desc, **kwargs):
        trained_epochs.append(desc)
        if desc == "epoch 3/3" and len(trained_epochs) == 3:  # the first run: interrupted in its third epoch
            raise KeyboardInterrupt
        return real_train_one_epoch(*args, desc=desc, **kwargs)

    monkeypatch.setattr(trainer, "train_one_epoch", train_one_epoch)
    part = tmp_path / "part.pt"
    with pytest.raises(KeyboardInterrupt):
        fit(TrainOptions(out=str(part), **options))
    assert read_file(tmp_path / "part.last.pt")["extra"]["train"]["epoch"] == 2

    assert main(["--out", str(part), "--resume"]) == 0
    assert trained_epochs == ["epoch 1/3", "epoch 2/3", "epoch 3/3", "epoch 3/3"]

    done = {name: read_file(tmp_path / f"{name}.last.pt") for name in ("full", "part")}
    for key in ("model", "labels", "preprocess", "config"):
        assert _deep_equal(done["full"][key], done["part"][key]), key
    full_state, part_state = done["full"]["extra"]["train"], done["part"]["extra"]["train"]
    assert full_state["epoch"] == part_state["epoch"] == 3
    assert _deep_equal(full_state["optimizer"], part_state["optimizer"])
    assert full_state["optimizer"]["state"][0]["step"].item() == 3 * 3  # 40 train images / batch 16 = 3 steps/epoch
    assert _deep_equal(full_state["scheduler"], part_state["scheduler"])
    strip = [{k: v for k, v in row.items() if k != "seconds"} for row in full.history]
    assert [{k: v for k, v in row.items() if k != "seconds"} for row in part_state["history"]] == strip
    with open(tmp_path / "part.metrics.csv") as f:
        assert [int(r["epoch"]) for r in csv.DictReader(f)] == [1, 2, 3]
