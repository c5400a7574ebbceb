"""Protects the command line's contract for video models, end to end on the moving squares with a model trained on
them: ``python -m viz VIDEO --weights W --out D [--frames N]`` writes D/<stem>/result.json (top-k, "frames" with the
sampled frames' indices and times, "preprocess"), input_frames.npy ((T, H, W, 3) uint8: the frames as the model saw
them), frames.png, rollout.gif, temporal_distance.png and attention.npz (rollout (T', gh, gw), frame_indices,
temporal_distance (L, H), spatial_distance (L, H)), each equal to what ``viz.analysis`` computes; a folder of videos
read as a folder of photos (labelled sub-folders); a bad video reported in one sentence while the others are
written; options a video model does not run refused before any video is read."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PIL import Image

import vit
from video_clips import audio_only, moving_squares_toy
from viz.analysis import analyze
from viz.cli import main
from viz.video.classmap import clip_gradcam, clip_maps
from viz.video.faithfulness import ClipCheck
from viz.video.view import clip_rollout
from vit.explain import ClassTarget
from vit.video_file import read_clip, sample_indices

FILES = {"result.json", "input_frames.npy", "frames.png", "rollout.gif", "temporal_distance.png", "attention.npz"}


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    return moving_squares_toy(tmp_path_factory.mktemp("squares"))


def test_one_video_writes_the_contract(toy, tmp_path):
    weights, data = toy
    video = data / "left" / "0000.mp4"
    assert main([str(video), "--weights", str(weights), "--out", str(tmp_path), "--quiet"]) == 0
    folder = tmp_path / "0000"
    assert {p.name for p in folder.iterdir()} == FILES
    result = json.loads((folder / "result.json").read_text())
    loaded = vit.load(weights)
    clip = read_clip(video, loaded.preprocess)
    assert result["frames"]["indices"] == sample_indices(clip.info.frames, 8).tolist() == clip.indices.tolist()
    assert np.allclose(result["frames"]["seconds"], clip.indices / clip.info.fps)
    assert result["preprocess"] == loaded.preprocess_record() and sorted(result["files"]) == sorted(FILES)
    assert [e["label"] for e in result["top_k"]][:4] and set(e["label"] for e in result["top_k"]) <= set(loaded.labels)
    frames = np.load(folder / "input_frames.npy")
    assert frames.dtype == np.uint8 and frames.shape == (8, 32, 32, 3) and np.array_equal(frames, clip.frames)
    a = analyze(loaded, clip)
    arrays = np.load(folder / "attention.npz")
    assert arrays["rollout"].shape == (4, 4, 4)                                  # (T', gh, gw): tubelets of 2
    assert np.allclose(arrays["rollout"], clip_rollout(a), atol=1e-6)
    assert 0.0 < arrays["rollout"].sum() <= 1.0 + 1e-5 and (arrays["rollout"] >= 0).all()
    assert arrays["frame_indices"].tolist() == clip.indices.tolist()
    assert arrays["temporal_distance"].shape == arrays["spatial_distance"].shape == (2, 2)
    assert np.allclose(arrays["temporal_distance"], a.temporal_distance, atol=1e-5)
    assert np.allclose(arrays["spatial_distance"], a.mean_distance[False], atol=1e-4)
    assert (arrays["temporal_distance"] > 0).all()
    gif = Image.open(folder / "rollout.gif")
    assert gif.n_frames == 8
    assert Image.open(folder / "frames.png").width >= 8 * 32


def test_explain_gradcam_writes_the_class_map(toy, tmp_path):
    """--explain gradcam: gradcam.png and ``gradcam`` (T', gh, gw) in attention.npz beside the contract's keys, equal to
    ``viz.video.classmap`` for the top-1 class, or for --target."""
    weights, data = toy
    video = data / "right" / "0001.mp4"
    loaded = vit.load(weights)
    x = loaded.preprocess.clip_tensor(read_clip(video, loaded.preprocess).frames)
    for argv, folder in (([], tmp_path / "top"), (["--target", "up"], tmp_path / "up")):
        assert main([str(video), "--weights", str(weights), "--out", str(folder), "--quiet", "--explain", "gradcam",
                     *argv]) == 0
        out = folder / "0001"
        assert {p.name for p in out.iterdir()} == FILES | {"gradcam.png"}
        arrays = np.load(out / "attention.npz")
        assert set(arrays.files) == {"rollout", "frame_indices", "frame_seconds", "temporal_distance",
                                     "spatial_distance", "probabilities", "gradcam"}
        result = json.loads((out / "result.json").read_text())
        index = loaded.labels.index("up") if argv else int(np.argmax(arrays["probabilities"]))
        expected = clip_gradcam(loaded.model, x, ClassTarget(index))
        assert result["explain"] == {"target": {"index": index, "name": loaded.labels[index]}, "methods": ["gradcam"]}
        assert "gradcam.png" in result["files"]
        assert arrays["gradcam"].shape == (4, 4, 4) and np.allclose(arrays["gradcam"], expected.values, atol=1e-6)
        assert arrays["gradcam"].min() == 0 and arrays["gradcam"].max() > 0.99
        assert Image.open(out / "gradcam.png").width >= 8 * 32


def test_explain_gae_and_faithfulness(toy, tmp_path):
    """--explain gradcam,gae --faithfulness: gae.png, trust.png, ``gae`` (T', gh, gw) in attention.npz and the photo
    command's "faithfulness", "perturbation" and "gains" in result.json, equal to the library's (one gradient pass
    for both maps, the tubelets' curves with the clip's mean colour as the baseline, the random order among them)."""
    weights, data = toy
    video = data / "left" / "0001.mp4"
    loaded = vit.load(weights)
    x = loaded.preprocess.clip_tensor(read_clip(video, loaded.preprocess).frames)
    assert main([str(video), "--weights", str(weights), "--out", str(tmp_path), "--quiet", "--explain", "gradcam,gae",
                 "--faithfulness", "--steps", "5"]) == 0
    out = tmp_path / "0001"
    assert {p.name for p in out.iterdir()} == FILES | {"gradcam.png", "gae.png", "trust.png"}
    arrays = np.load(out / "attention.npz")
    result = json.loads((out / "result.json").read_text())
    explain = result["explain"]
    index = explain["target"]["index"]
    expected = clip_maps(loaded.model, x, ("gradcam", "gae"), ClassTarget(index))
    assert explain["methods"] == ["gradcam", "gae"] and index == int(np.argmax(arrays["probabilities"]))
    for method in ("gradcam", "gae"):
        assert arrays[method].shape == (4, 4, 4)
        assert np.allclose(arrays[method], expected.maps[method], rtol=1e-5, atol=1e-6 * abs(arrays[method]).max())
    report = ClipCheck(loaded.model, x, index, expected.maps, points=5).result()
    assert explain["perturbation"] == "mean_colour" and set(explain["faithfulness"]) == {"gradcam", "gae", "random"}
    for method in ("gradcam", "gae", "random"):
        mine = report.methods[method].faithfulness if method != "random" else report.random
        entry = explain["faithfulness"][method]
        assert len(entry["deletion"]) == 5 and set(entry) == {"deletion_auc", "insertion_auc", "deletion", "insertion",
                                                              "auc_error"}
        assert np.allclose(entry["deletion"], mine.deletion, atol=1e-6)
        assert np.allclose(entry["insertion"], mine.insertion, atol=1e-6)
    assert set(explain["gains"]) == {"gradcam", "gae"}
    assert set(explain["gains"]["gae"]) == {"deletion_gain", "insertion_gain"}
    assert sorted(result["files"]) == sorted(FILES | {"gradcam.png", "gae.png", "trust.png"})
    assert Image.open(out / "trust.png").width >= 600


def test_explain_refused_without_a_classifier_head(toy, tmp_path, capsys):
    """A video model saved without its head (num_classes 0) has no class to explain: refused before any video runs."""
    weights, data = toy
    saved = torch.load(weights, map_location="cpu", weights_only=False)
    saved["config"]["num_classes"], saved["labels"] = 0, []
    saved["model"] = {k: v for k, v in saved["model"].items() if not k.startswith("head.")}
    headless = tmp_path / "headless.pt"
    torch.save(saved, headless)
    argv = [str(data / "up" / "0000.mp4"), "--weights", str(headless), "--out", str(tmp_path / "o")]
    assert main([*argv, "--explain", "gradcam"]) == 2
    assert "--explain explains a class, and this video model has no classifier head" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
    assert main([*argv, "--quiet"]) == 0 and (tmp_path / "o" / "0000" / "attention.npz").is_file()


@pytest.mark.slow
def test_a_folder_of_videos_and_a_bad_one(toy, tmp_path, capsys):
    weights, data = toy
    bad = audio_only(tmp_path / "sound.mp4")
    out = tmp_path / "out"
    assert main([str(data), str(bad), "--weights", str(weights), "--out", str(out), "--quiet"]) == 1
    assert "sound.mp4" in capsys.readouterr().err
    for direction in ("down", "left", "right", "up"):
        assert {p.name for p in (out / direction / "0000").iterdir()} == FILES
        assert {p.name for p in (out / direction / "0001").iterdir()} == FILES
    assert not (out / "sound").exists()


@pytest.mark.parametrize("argv, says", [
    (["--frames", "4"], "Expected exactly 8 frames"),
    (["--explain", "gradcam,attention"], "--explain attention is not drawn for video models; the video methods are "
                                         "gradcam, gae."),
    (["--explain", "nope"], "Unknown explanation method 'nope'"),
    (["--target", "up"], "--target chooses the class of --explain; give --explain gradcam (or gae) too."),
    (["--explain", "gradcam", "--contrast", "up"], "--contrast is not drawn for video models"),
    (["--explain", "gradcam", "--sanity"], "--sanity is not drawn for video models"),
    (["--faithfulness"], "--faithfulness scores the maps of --explain; give --explain METHODS too"),
    (["--explain", "gae", "--faithfulness", "--perturbation", "tokens,blur"],
     "--perturbation tokens,blur is not run for video models; a video's tubelets are removed in pixel space, one way "
     "per run: mean_colour or blur."),
    (["--explain", "gae", "--faithfulness", "--perturbation", "road"], "--perturbation road is not run for video"),
    (["--explain", "gradcam", "--target", "sideways"], "Unknown class 'sideways'"),
    (["--frame-ms", "5"], "--frame-ms must be at least 10"),
])
def test_refused_before_any_video_runs(toy, tmp_path, capsys, argv, says):
    weights, data = toy
    assert main([str(data / "up" / "0000.mp4"), "--weights", str(weights), "--out", str(tmp_path / "o"), *argv]) == 2
    checked, err = capsys.readouterr().err.split("\n", 1)     # the load's check first, then the error
    assert checked == f"{weights}: not verified (this explorer's own format: it is its own library)", checked
    assert says in err and err.count("\n") == 1
    assert not (tmp_path / "o").exists()
