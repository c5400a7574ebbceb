"""Training data protects: what --data finds (split folders, held-out share, CIFAR-10), that the held-out split is
stratified and fixed by the seed, clear errors for unusable folders, and the train/validation transforms."""
from __future__ import annotations

import os
import pickle

import numpy as np
import pytest
import torch
import torchvision.datasets.cifar
from PIL import Image

from synthetic_shapes import CLASSES, make_shapes_folder
from vit import Preprocess
from vit.train.data import holdout_split, open_data
from vit.train.options import TrainOptions, resolve
from vit.train.transforms import EvalTransform, resolve_augment, train_transform


def test_folder_without_splits_holds_out_a_share_of_every_class(tmp_path):
    make_shapes_folder(tmp_path, per_class=10)
    data = open_data(tmp_path, val_share=0.2, seed=0)
    assert data.classes == sorted(CLASSES) and data.kind == "folder"
    assert len(data.train) == 32 and len(data.val) == 8
    val_labels = [data.val[i][1] for i in range(len(data.val))]
    assert sorted(val_labels) == [0, 0, 1, 1, 2, 2, 3, 3]
    assert not set(data.train.indices) & set(data.val.indices)
    img, label = data.train[0]
    assert img.mode == "RGB" and img.size == (32, 32) and 0 <= label < 4


def test_holdout_split_is_fixed_by_the_seed():
    labels = [i % 3 for i in range(60)]
    assert holdout_split(labels, 0.25, seed=1) == holdout_split(labels, 0.25, seed=1)
    assert holdout_split(labels, 0.25, seed=1)[1] != holdout_split(labels, 0.25, seed=2)[1]
    train, val = holdout_split(labels, 0.25, seed=1)
    assert sorted(train + val) == list(range(60)) and len(val) == 3 * 5


def test_train_and_val_sub_folders_are_used_as_given(tmp_path):
    make_shapes_folder(tmp_path / "train", per_class=3)
    make_shapes_folder(tmp_path / "val", per_class=1, classes={"red_square": CLASSES["red_square"]})
    data = open_data(tmp_path, val_share=0.2, seed=0)
    assert data.classes == sorted(CLASSES)
    assert len(data.train) == 12 and len(data.val) == 1
    assert data.val[0][1] == sorted(CLASSES).index("red_square")  # indices follow the train/ classes


def test_train_folder_alone_gets_a_held_out_share(tmp_path):
    make_shapes_folder(tmp_path / "train", per_class=5)
    data = open_data(tmp_path, val_share=0.2, seed=0)
    assert data.classes == sorted(CLASSES) and len(data.train) == 16 and len(data.val) == 4


def test_val_folder_with_an_unknown_class_is_refused(tmp_path):
    make_shapes_folder(tmp_path / "train", per_class=2, classes={k: CLASSES[k] for k in ("red_square", "green_circle")})
    make_shapes_folder(tmp_path / "val", per_class=1, classes={"yellow_cross": CLASSES["yellow_cross"]})
    with pytest.raises(ValueError, match="yellow_cross"):
        open_data(tmp_path, 0.2, 0)


@pytest.mark.parametrize("layout, error, message", [
    ({}, FileNotFoundError, "not a folder"),
    ({"only_class": 3}, ValueError, "at least 2"),
    ({"a": 3, "b": 0}, FileNotFoundError, "b"),          # an empty class folder
    ({"a": 3, "b": 1}, ValueError, "at least 2 per class"),
])
def test_unusable_folders_get_a_clear_message(tmp_path, layout, error, message):
    root = tmp_path / "data"
    for name, n in layout.items():
        (root / name).mkdir(parents=True)
        for i in range(n):
            Image.new("RGB", (8, 8)).save(root / name / f"{i}.png")
    with pytest.raises(error, match=message):
        open_data(root, 0.2, 0)


def _write_cifar10(folder, per_batch: int) -> np.ndarray:
    """The python-batches layout: pickled dicts with uint8 rows of 3072 (R, G, B planes) and labels 0-9."""
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    rows = rng.integers(0, 256, (per_batch, 3072), dtype=np.uint8)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        with open(folder / name, "wb") as f:
            pickle.dump({"data": rows, "labels": [i % 10 for i in range(per_batch)]}, f)
    names = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
    with open(folder / "batches.meta", "wb") as f:
        pickle.dump({"label_names": names}, f)
    return rows


@pytest.mark.parametrize("point_at_batches_folder", [False, True])
def test_cifar10_python_batches_are_read_by_torchvision(tmp_path, monkeypatch, point_at_batches_folder):
    # The real batches are 170 MB and not available offline; torchvision checks their MD5s, so for this stand-in
    # (same format, 4 images per batch) its check only asks that each file exists.
    monkeypatch.setattr(torchvision.datasets.cifar, "check_integrity", lambda path, md5=None: os.path.isfile(path))
    rows = _write_cifar10(tmp_path / "cifar-10-batches-py", per_batch=4)
    data = open_data(tmp_path / "cifar-10-batches-py" if point_at_batches_folder else tmp_path, 0.2, 0)
    assert data.kind == "cifar10" and data.classes[:3] == ["airplane", "automobile", "bird"]
    assert len(data.train) == 20 and len(data.val) == 4
    img, label = data.val[1]
    assert img.size == (32, 32) and label == 1
    assert np.array_equal(np.asarray(img), rows[1].reshape(3, 32, 32).transpose(1, 2, 0))
    opts = resolve(TrainOptions(data=str(tmp_path)), data.kind, None)
    assert opts.img_size == (32, 32) and opts.patch_size == 4 and opts.variant == "tiny"


def test_missing_cifar10_says_how_to_get_it(tmp_path):
    (tmp_path / "cifar-10-batches-py").mkdir()
    with pytest.raises(FileNotFoundError, match="--download"):
        open_data(tmp_path, 0.2, 0)


def test_validation_transform_is_the_checkpoint_preprocessing():
    pre = Preprocess(resize=40, crop=(32, 32), mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5))
    img = Image.fromarray(np.random.default_rng(0).integers(0, 256, (50, 60, 3), dtype=np.uint8))
    assert torch.equal(EvalTransform(pre)(img), pre(img)[0])


def test_training_augmentation_crops_to_the_model_size_and_normalizes():
    pre = Preprocess(resize=32, crop=(32, 32), mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5))
    white = Image.new("RGB", (45, 37), (255, 255, 255))
    x = train_transform("auto", pre)(white)
    assert x.shape == (3, 32, 32) and torch.allclose(x, torch.ones_like(x))  # (1 - 0.5) / 0.5
    assert resolve_augment("auto", pre) == "light"
    assert resolve_augment("auto", Preprocess.for_crop(224)) == "standard"
    with pytest.raises(ValueError, match="Unknown augmentation"):
        resolve_augment("heavy", pre)
