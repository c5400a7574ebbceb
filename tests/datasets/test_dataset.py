"""``python -m viz FOLDER`` as a data-set tool, in this process: which images and labels a folder holds, each
process's share, exact order-independent sums, statistics equal to the mean of per-image values computed with the
numpy definitions (a ViT's and a Swin's: one loop reads either's description), batches equal to one image at a
time, and accuracy on a labelled folder with real weights."""
from __future__ import annotations

import importlib.util
import json
import shutil
from itertools import permutations
from pathlib import Path

import numpy as np
import pytest
import vit
from torch.utils.data.distributed import DistributedSampler
from vit.image_file import open_image
from vit.labels import imagenet_wnids
from viz.analysis import analyze
from viz.cli import main
from viz.folders.files import list_images
from viz.folders.loader import shard
from viz.dataset.report import markdown, summary
from viz.dataset.statistics import ExactSum, Statistics
from viz.maps import windows
from viz.maps.distance import mean_attention_distance
from viz.maps.norms import artifact_mask, flag_high_norm
from viz.maps.rollout import rollout_map
from oracles import attention_entropy, attention_shares

from tiny_run import COLOURS, noise_images, tiny_checkpoint, tiny_swin_checkpoint

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
AUGREG = "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors"


# ---- which images, which labels ------------------------------------------------------------------------------

def test_labelled_folders_name_classes_by_index_wordnet_id_or_name(tmp_path):
    labels = vit.imagenet_labels()
    for folder in ("281", "n02124075", "Egyptian_cat", "TABBY"):
        noise_images(tmp_path / "set" / folder, 2)
    entries = list_images([tmp_path / "set"], labels)
    assert [(e.name, e.label) for e in entries] == [
        ("281/0000", 281), ("281/0001", 281), ("Egyptian_cat/0000", 285), ("Egyptian_cat/0001", 285),
        ("TABBY/0000", 281), ("TABBY/0001", 281), ("n02124075/0000", 285), ("n02124075/0001", 285)]
    noise_images(tmp_path / "set" / "tabbies", 1)
    with pytest.raises(ValueError, match="'tabbies' names no class of this model! Expected a class index 0–999, "
                                         "a WordNet ID such as n01440764"):
        list_images([tmp_path / "set"], labels)
    noise_images(tmp_path / "twice" / "cat", 1)
    with pytest.raises(ValueError, match="'cat' names 2 classes"):
        list_images([tmp_path / "twice"], ["cat", "Cat", "dog"])


def test_plain_folders_files_and_repeated_names(tmp_path):
    noise_images(tmp_path / "a", 2)
    noise_images(tmp_path / "a" / "sub", 1)                 # a folder with images of its own is not labelled
    noise_images(tmp_path / "b", 1)
    entries = list_images([tmp_path / "a", tmp_path / "b", tmp_path / "missing.jpg"], COLOURS)
    assert [(e.name, e.label) for e in entries] == [("0000", None), ("0001", None), ("0000-2", None),
                                                    ("missing", None)]


def test_wordnet_ids_are_timms():
    timm = importlib.util.find_spec("timm")                  # its data file, without importing timm (seconds)
    shipped = Path(timm.submodule_search_locations[0]) / "data" / "_info" / "imagenet_synsets.txt"
    assert imagenet_wnids() == tuple(shipped.read_text().split())
    assert vit.imagenet_labels()[imagenet_wnids().index("n01440764")] == "tench"


# ---- each process's share ------------------------------------------------------------------------------------

@pytest.mark.parametrize("world", [1, 2, 3, 4])
def test_shares_cover_every_image_once_despite_the_samplers_padding(world):
    for count in range(0, 11):
        shares = [shard(count, rank, world) for rank in range(world)]
        assert sorted(i for share in shares for i in share) == list(range(count))
        for rank, share in enumerate(shares):
            padded = list(DistributedSampler(range(count), num_replicas=world, rank=rank, shuffle=False)) \
                if count else []
            assert share == padded[:len(share)]            # the sampler's own order, its repeats cut off
            assert len(padded) - len(share) <= 1


# ---- exact sums ---------------------------------------------------------------------------------------------

def test_sums_are_exact_in_any_order_and_any_grouping():
    rng = np.random.default_rng(0)
    values = [rng.normal(size=(3, 2)) * 10.0 ** rng.integers(-6, 4) + 50 for _ in range(6)]
    words = set()
    for order in list(permutations(range(6)))[::37]:
        s = ExactSum((3, 2))
        for i in order:
            s.add(values[i])
        words.add(s.words.tobytes())
    halves = [Statistics(), Statistics()]
    for i, v in enumerate(values):
        halves[i % 2].add_image({"x": v})
    halves[0].merge(halves[1])                                # as two processes' all-reduce adds them
    words.add(halves[0].sums["x"].words.tobytes())
    assert len(words) == 1 and halves[0].sums["x"].count == 6
    np.testing.assert_allclose(halves[0].sums["x"].mean(), np.mean(values, axis=0), rtol=1e-14)
    np.testing.assert_allclose(halves[0].sums["x"].std(), np.std(values, axis=0), rtol=1e-9)
    saved = Statistics.from_arrays(halves[0].to_arrays())     # through --resume's file format
    assert saved.sums["x"].words.tobytes() in words and saved.sums["x"].count == 6


def test_method_scores_become_the_faithfulness_table():
    stats = Statistics()
    for deletion, insertion in ((0.1, 0.7), (0.3, 0.5)):
        stats.add_image({"mean_distance": np.ones((1, 1)), "faithfulness.rollout.deletion_auc": deletion,
                         "faithfulness.rollout.insertion_auc": insertion})
    stats.add_image({"mean_distance": np.ones((1, 1))})      # an image no method scored
    s = summary(stats, {})
    assert s["images"] == 3
    assert s["faithfulness"]["rollout"]["deletion_auc"] == {"mean": pytest.approx(0.2), "std": pytest.approx(0.1),
                                                             "images": 2}
    info = dict(model="m", input_size=[1, 1], grid=[1, 1], num_prefix_tokens=0, tokens=1, depth=1, heads=1,
                dtype="float32", device="cpu", processes=1, failed=0, uniform_distance=0.0, uniform_entropy=0.0)
    assert "| rollout | insertion_auc | 0.6000 | 0.1000 | 2 |" in markdown({**info, **s, "images": 0})


# ---- statistics equal the per-image definitions -----------------------------------------------------------------

def per_image_reference(loaded, path: Path, renormalise: bool = False) -> dict:
    """One image through ``analyze`` (the app's one-image path), its values from the numpy definitions."""
    a = analyze(loaded, open_image(path))
    flags = flag_high_norm(a.token_norms, a.num_prefix, a.grid)
    prefix, high = attention_shares(a.attention, a.num_prefix, a.grid, artifact_mask(flags))
    return {"mean_distance": mean_attention_distance(a.attention, a.num_prefix, a.grid, a.patch_size, renormalise),
            "entropy": attention_entropy(a.attention), "prefix_share": prefix, "high_norm_share": high,
            "high_norm_patches": flags.sum(axis=(1, 2)), "probabilities": a.probabilities,
            "rollout": rollout_map(a.attention, a.num_prefix, a.grid)}


def test_streaming_statistics_equal_the_mean_of_per_image_values(tmp_path):
    weights = tiny_checkpoint(tmp_path / "tiny.pt", depth=3, heads=2)
    folders = {"red": 4, "2": 3, "Cyan": 2}                    # by name, by index, by name in another case
    for i, (folder, n) in enumerate(folders.items()):
        noise_images(tmp_path / "set" / folder, n, seed=i)
    noise_images(tmp_path / "set" / "blue", 1)[0].write_text("not a picture")   # unreadable: reported, not counted
    out = tmp_path / "out"
    argv = [tmp_path / "set", "--weights", weights, "--out", out, "--stats-only", "--batch-size", "3", "--quiet",
            "--distance-renormalise"]
    assert main(list(map(str, argv))) == 1                    # exit 1: one file could not be read
    assert sorted(p.name for p in out.iterdir()) == ["summary"]   # --stats-only: no per-image folders
    got = json.loads((out / "summary" / "statistics.json").read_text())

    loaded = vit.load(str(weights))
    paths = [(p, COLOURS.index(p.parent.name.lower()) if not p.parent.name.isdigit() else int(p.parent.name))
             for folder in sorted(folders) for p in sorted((tmp_path / "set" / folder).iterdir())]
    ref = [per_image_reference(loaded, p, renormalise=True) for p, _ in paths]
    assert got["images"] == 9 and got["failed"] == 1 and got["labelled_images"] == 9
    for name in ("mean_distance", "entropy", "prefix_share", "high_norm_share", "high_norm_patches"):
        values = np.array([r[name] for r in ref])
        np.testing.assert_allclose(got[name], values.mean(axis=0), rtol=1e-5, atol=1e-9, err_msg=name)
        # float32 per-image values: their spread is known to ~1e-6 of the values themselves
        np.testing.assert_allclose(got[f"{name}_std"], values.std(axis=0), atol=1e-5 * np.abs(values).max(),
                                   err_msg=name)
    ranks = [np.argsort(-r["probabilities"], kind="stable") for r in ref]
    assert got["top1"] == pytest.approx(np.mean([order[0] == label for order, (_, label) in zip(ranks, paths)]))
    assert got["top5"] == pytest.approx(np.mean([label in order[:5] for order, (_, label) in zip(ranks, paths)]))
    assert np.shape(got["mean_distance"]) == (3, 2) and np.shape(got["prefix_share"]) == (3,)
    assert (got["architecture"], got["heads"], got["tokens"]) == ("vit", 2, 17)
    assert got["stages"] == [{"grid": [4, 4], "window": None, "heads": 2, "blocks": [0, 1, 2],
                              "shifts": [[0, 0]] * 3, "token_size": 8}]
    for name in ("statistics.md", "mean_distance.png", "entropy.png", "attention_shares.png", "mean_distance.npz"):
        assert (out / "summary" / name).is_file(), name


def swin_reference(loaded, path: Path) -> dict:
    """One image through a Swin's own forward (``forward_with_attention``), its values from the ViT's numpy
    definitions applied to each block's window maps expanded over the block's grid (zero outside a query's window):
    the mean distance with the block's tokens as patches (``token_size`` pixels), the entropy of every query row."""
    x = loaded.preprocess.to_tensor(loaded.preprocess.crop_image(open_image(path)))
    captured = loaded.model.forward_with_attention(x)
    heads = max(a.shape[2] for a in captured.attention)
    distance, entropy = np.zeros((len(captured.layouts), heads)), np.zeros((len(captured.layouts), heads))
    for l, (a, layout) in enumerate(zip(captured.attention, captured.layouts)):
        a = a[0].detach().double().numpy()                                    # (nW, H, N, N)
        dense = np.stack([windows.expand(a[:, h], layout) for h in range(a.shape[1])])[None]   # (1, H, T, T)
        distance[l, :a.shape[1]] = mean_attention_distance(dense, 0, layout.grid, layout.token_size)[0]
        entropy[l, :a.shape[1]] = attention_entropy(dense)[0]
    return {"mean_distance": distance, "entropy": entropy, "heads": [a.shape[2] for a in captured.attention],
            "probabilities": captured.output.softmax(-1)[0].detach().numpy()}


def test_a_swins_statistics_equal_the_mean_of_per_image_values(tmp_path):
    """The same loop on a model of stages and windows: only the statistics its description gives a meaning (no prefix
    tokens, no one grid for high-norm patches), every block's heads up to its own (null past them)."""
    weights = tiny_swin_checkpoint(tmp_path / "swin.pt")
    for i, (folder, n) in enumerate({"red": 3, "4": 2}.items()):
        noise_images(tmp_path / "set" / folder, n, seed=i)
    noise_images(tmp_path / "set" / "blue", 1)[0].write_text("not a picture")
    out = tmp_path / "out"
    assert main([str(tmp_path / "set"), "--weights", str(weights), "--out", str(out), "--stats-only",
                 "--batch-size", "2", "--quiet"]) == 1
    got = json.loads((out / "summary" / "statistics.json").read_text())
    loaded = vit.load(str(weights))
    paths = [(p, 0 if folder == "red" else 4) for folder in ("4", "red") for p in sorted((tmp_path / "set" / folder).iterdir())]
    ref = [swin_reference(loaded, p) for p, _ in paths]
    heads = ref[0]["heads"]
    assert (got["images"], got["failed"], got["labelled_images"], got["heads"]) == (5, 1, 5, [1, 1, 2, 2, 2, 2])
    for name in ("mean_distance", "entropy"):
        values = np.array([r[name] for r in ref])
        for l, count in enumerate(heads):
            np.testing.assert_allclose(got[name][l][:count], values[:, l, :count].mean(axis=0), rtol=1e-5,
                                       err_msg=name)
            np.testing.assert_allclose(got[f"{name}_std"][l][:count], values[:, l, :count].std(axis=0),
                                       atol=1e-5 * np.abs(values).max(), err_msg=name)
            assert got[name][l][count:] == [None] * (2 - count)
    ranks = [np.argsort(-r["probabilities"], kind="stable") for r in ref]
    assert got["top1"] == pytest.approx(np.mean([order[0] == label for order, (_, label) in zip(ranks, paths)]))
    assert got["top5"] == pytest.approx(np.mean([label in order[:5] for order, (_, label) in zip(ranks, paths)]))
    assert got["architecture"] == "swin" and [s["grid"] for s in got["stages"]] == [[16, 16], [8, 8], [4, 4]]
    absent = ("prefix_share", "high_norm_share", "high_norm_patches", "tokens", "uniform_distance", "uniform_entropy")
    assert not [name for name in absent if name in got]
    assert sorted(p.name for p in (out / "summary").iterdir()) == [
        "entropy.png", "mean_distance.npz", "mean_distance.png", "partial", "statistics.json", "statistics.md"]
    npz = np.load(out / "summary" / "mean_distance.npz")
    assert list(npz["heads"]) == heads and (npz["mean_distance"][0, 1:] == 0).all()
    np.testing.assert_allclose(npz["mean_distance"][5], got["mean_distance"][5], rtol=1e-15)
    md = (out / "summary" / "statistics.md").read_text()
    assert "3 stages of 16×16 → 8×8 → 4×4 patch tokens, 6 blocks × 1–2 heads" in md
    assert "| block | stage | mean distance (px) | entropy (nats) |" in md and "| 5 | 2 | " in md


@pytest.mark.slow
def test_a_swin_folder_gets_the_faithfulness_table_as_a_vits_does(tmp_path):
    """What the loop adds for any model: each image's deletion and insertion curves (pixel protocol) summed into the
    summary's faithfulness table and faithfulness.md."""
    weights = tiny_swin_checkpoint(tmp_path / "swin.pt")
    noise_images(tmp_path / "images", 3)
    out = tmp_path / "out"
    assert main([str(tmp_path / "images"), "--weights", str(weights), "--out", str(out), "--stats-only", "--quiet",
                 "--explain", "gae", "--faithfulness", "--perturbation", "mean_colour", "--steps", "5"]) == 0
    got = json.loads((out / "summary" / "statistics.json").read_text())
    gae = got["faithfulness"]["gae"]
    assert gae["deletion_auc"]["images"] == 3 and len(gae["deletion"]["mean"]) == 5
    assert "| gae |" in (out / "summary" / "faithfulness.md").read_text()


def test_a_swin_folder_in_batches_equals_one_image_at_a_time(tmp_path):
    """Two images per forward pass decoded by a worker: each image's files and the summary are those of one image at
    a time (to float rounding), the summary's per-image distances are the files' (0 past a block's heads)."""
    weights = str(tiny_swin_checkpoint(tmp_path / "swin.pt"))
    images = noise_images(tmp_path / "images", 3)
    common = ["--weights", weights, "--quiet", "--explain", "gae,gradcam"]
    assert main([str(tmp_path / "images"), "--out", str(tmp_path / "one"), *common]) == 0
    assert main([str(tmp_path / "images"), "--out", str(tmp_path / "batch"), "--batch-size", "2", "--workers", "1",
                 *common]) == 0
    for image in images:
        one, batch = (np.load(tmp_path / run / image.stem / "attention.npz") for run in ("one", "batch"))
        for key in ("rollout", "explain_gae", "explain_gradcam", "mean_distance", "attention_0", "probabilities"):
            np.testing.assert_allclose(batch[key], one[key], rtol=1e-5, atol=1e-7, err_msg=key)
    one, batch = (json.loads((tmp_path / r / "summary" / "statistics.json").read_text()) for r in ("one", "batch"))
    assert one["images"] == batch["images"] == 3 and one["mean_distance"][0][1] is None
    np.testing.assert_allclose(np.array(batch["entropy"][2:], dtype=float), np.array(one["entropy"][2:], dtype=float),
                               rtol=1e-5)
    npz = np.load(tmp_path / "one" / "summary" / "mean_distance.npz")
    files = [np.load(tmp_path / "one" / image.stem / "attention.npz")["mean_distance"] for image in images]
    np.testing.assert_array_equal(npz["per_image"], np.nan_to_num(files, nan=0.0))
    np.testing.assert_allclose(np.array(one["mean_distance"][5], dtype=float), npz["per_image"][:, 5].mean(axis=0),
                               rtol=1e-6)


@pytest.mark.slow
def test_batches_equal_one_image_at_a_time(real_weights_dir, tmp_path):
    """Decoded by two worker processes, two images per forward pass (and a last batch of one): the files hold what
    the app's one-image path computes (probabilities, rollout, mean distance), and the summary averages those."""
    folder = tmp_path / "photos"
    shutil.copytree(EXAMPLES, folder, ignore=shutil.ignore_patterns("*.md"))
    out = tmp_path / "out"
    weights = str(real_weights_dir / AUGREG)
    assert main([str(folder), "--weights", weights, "--out", str(out), "--batch-size", "2", "--workers", "2",
                 "--quiet"]) == 0
    loaded = vit.load(weights)
    names = ["camera", "chelsea", "coffee"]
    for name in names:
        path = next(folder.glob(name + ".*"))
        ref = per_image_reference(loaded, path)
        saved = np.load(out / name / "attention.npz")
        np.testing.assert_allclose(saved["probabilities"], ref["probabilities"], rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(saved["rollout"], ref["rollout"], rtol=1e-4, atol=1e-7)
        np.testing.assert_allclose(saved["mean_distance"], ref["mean_distance"], rtol=1e-4)
        batch_size = json.loads((out / name / "result.json").read_text())["timings_s"]["batch_size"]
        assert batch_size == (1 if name == "coffee" else 2)                 # camera, chelsea | coffee
    npz = np.load(out / "summary" / "mean_distance.npz")
    assert [Path(p).stem for p in npz["images"]] == names and npz["per_image"].shape == (3, 12, 3)
    got = json.loads((out / "summary" / "statistics.json").read_text())
    np.testing.assert_allclose(got["mean_distance"], npz["per_image"].mean(axis=0), rtol=1e-5)


def test_accuracy_of_a_labelled_folder_with_real_weights(real_weights_dir, tmp_path):
    """The AugReg ViT-Ti's top-5 (measured): chelsea Egyptian cat, tiger cat, tabby, …; coffee espresso, cup, …;
    camera tripod, binoculars, reflex camera, …"""
    place = {"n02124075": "chelsea", "tabby": "chelsea", "Espresso": "coffee", "reflex_camera": "camera",
             "0": "camera"}                                  # top-1 yes, no, yes, no, no; top-5 all but tench
    for folder, photo in place.items():
        (tmp_path / "set" / folder).mkdir(parents=True)
        shutil.copy(EXAMPLES / f"{photo}.jpg", tmp_path / "set" / folder / f"{photo}.jpg")
    out = tmp_path / "out"
    assert main([str(tmp_path / "set"), "--weights", str(real_weights_dir / AUGREG), "--out", str(out),
                 "--stats-only", "--batch-size", "5", "--quiet"]) == 0
    got = json.loads((out / "summary" / "statistics.json").read_text())
    assert (got["images"], got["labelled_images"], got["top1"], got["top5"]) == (5, 5, 0.4, 0.8)
    assert "top-1 **0.4000**, top-5 **0.8000**" in (out / "summary" / "statistics.md").read_text()
    # the AugReg ViT-Ti's four corner artifacts take most of the last blocks' attention, none of the first
    assert got["high_norm_share"][-1] > 0.5 > 0.1 > got["high_norm_share"][0]
    assert got["high_norm_patches"][-1] >= 4 and got["high_norm_patches"][0] == 0
