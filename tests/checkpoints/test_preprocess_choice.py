"""Protects the choice of preprocessing, never silent: own (the source's), crop or squash in the library
(``Preprocess.choose``, ``vit.load(..., preprocess=)``, ``LoadedModel.with_preprocess``), on every command that runs
a model (``python -m viz`` with ``--compare``, ``python -m vit.train``, ``python -m viz.dynamics``) and in what they
write (result.json's and compare.json's "preprocess", statistics.json); and that everything drawn from the crop
follows the mode (the crop box, the outline, the compare overlap, a sidecar naming any source's mode).
"""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import transformers
from PIL import Image

import vit
from reference_models import randomize_
from tiny_run import tiny_checkpoint
from vit.checkpoints.pipelines import huggingface_preprocess, timm_preprocess
from vit.train import TrainOptions, fit, snapshot_dir
from vit.train.squares import make_squares_folder
from viz import panels
from viz.cli import main
from viz.cli.dynamics import main as dynamics_main
from viz.compare import compare, comparison_record
from viz.compare.side import compare_side
from viz.i18n import t

RECORD_KEYS = {"mode", "resize", "crop", "interpolation", "mean", "std"}   # the result.json contract
AUGREG = vit.Preprocess.for_crop(224, 0.9, mean=(0.5,) * 3, std=(0.5,) * 3)   # 248 -> 224
DEIT_HF = huggingface_preprocess({"image_processor_type": "DeiTImageProcessor"}, "deit", (224, 224))  # 256² -> 224


@pytest.fixture(scope="module")
def wide() -> Image.Image:
    return Image.fromarray(np.random.default_rng(0).integers(0, 256, (60, 90, 3), dtype=np.uint8))   # 90×60


def test_squash_shows_the_whole_photo_stretched(wide):
    squash = AUGREG.choose("squash")
    assert (squash.resize_mode, squash.resize, squash.crop) == ("squash", (224, 224), (224, 224))
    assert squash.crop_box(wide.size) == (0.0, 0.0, 90.0, 60.0) and squash.stretches
    assert squash.crop_image(wide).tobytes() == wide.resize((224, 224), Image.Resampling.BICUBIC).tobytes()
    assert squash.scale(wide.size) == (224 / 90, 224 / 60)


def test_crop_keeps_the_sources_proportion():
    assert AUGREG.choose("crop") is AUGREG                   # it already crops: nothing to change
    crop = DEIT_HF.choose("crop")                            # DeiT's processor squashes to 256², then crops 224
    assert (crop.resize_mode, crop.resize, crop.crop, crop.centre) == ("shorter", 256, (224, 224), "floor")
    assert DEIT_HF.crop_box((512, 256)) == (512 * 16 / 256, 16.0, 512 * 240 / 256, 240.0)   # the central 7/8 each way
    for p in (AUGREG, DEIT_HF):
        for choice in ("crop", "squash"):
            assert p.choose(choice).choose(choice) == p.choose(choice)
    assert AUGREG.at_size((384, 384)).resize == round(384 * 248 / 224)
    assert AUGREG.at_size((224, 320)).resize_mode == "cover"   # a non-square input is covered, as timm does
    with pytest.raises(ValueError, match=r"Unknown preprocessing 'stretch'! Expected one of \['own', 'crop', 'squash'\]"):
        AUGREG.choose("stretch")


def test_records_round_trip_and_errors_say_expected_and_got():
    for p in (AUGREG, DEIT_HF, AUGREG.choose("squash"), vit.Preprocess.for_crop(64, 0.9, "border")):
        assert vit.Preprocess.from_dict(json.loads(json.dumps(p.to_dict()))) == p
    with pytest.raises(ValueError, match=r"Unknown resize_mode 'stretch'! Expected one of \['shorter', 'cover'"):
        vit.Preprocess(resize_mode="stretch")
    with pytest.raises(ValueError, match=r"needs resize as a positive number of pixels .* Got resize=\(224, 224\)"):
        vit.Preprocess(resize=(224, 224))
    with pytest.raises(ValueError, match=r"Unknown crop_mode 'edge'! Expected 'center', 'squash' or 'border'"):
        vit.Preprocess.for_crop(224, 0.9, "edge")


@pytest.fixture(scope="module")
def hf_folder(tmp_path_factory):
    """A tiny Hugging Face ViT classifier saved with ViTImageProcessor at 32×32: it squashes."""
    folder = tmp_path_factory.mktemp("hf_vit")
    torch.manual_seed(0)
    config = transformers.ViTConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                                    image_size=32, patch_size=8, num_labels=3, id2label={0: "a", 1: "b", 2: "c"})
    randomize_(transformers.ViTForImageClassification(config)).save_pretrained(folder)
    transformers.ViTImageProcessorPil(size={"height": 32, "width": 32}).save_pretrained(folder)
    return folder


def test_load_and_with_preprocess(hf_folder):
    own = vit.load(hf_folder)
    assert own.preprocess_choice == "own" and own.preprocess.resize_mode == "squash"
    cropped = vit.load(hf_folder, preprocess="crop")
    assert cropped.preprocess == own.preprocess.choose("crop") and cropped.own_preprocess == own.preprocess
    again = cropped.with_preprocess("own")
    assert again.model is cropped.model and again.preprocess == own.preprocess     # no copy of the model
    assert RECORD_KEYS <= set(cropped.preprocess_record()) and cropped.preprocess_record()["mode"] == "crop"
    with pytest.raises(ValueError, match="Unknown preprocessing 'whole'"):
        vit.load(hf_folder, preprocess="whole")


@pytest.mark.parametrize("mode", ["own", "crop", "squash"])
def test_cli_uses_and_records_the_mode(mode, hf_folder, wide, tmp_path):
    wide.save(tmp_path / "wide.png")
    assert main([str(tmp_path / "wide.png"), "--weights", str(hf_folder), "--preprocess", mode,
                 "--out", str(tmp_path / "out"), "--quiet"]) == 0
    result = json.loads((tmp_path / "out" / "wide" / "result.json").read_text())
    expected = vit.load(hf_folder, preprocess=mode)
    assert result["preprocess"] == {"mode": mode, **expected.preprocess.to_dict()}
    assert RECORD_KEYS <= set(result["preprocess"])
    with torch.no_grad():
        p = expected.model(expected.preprocess(wide)).softmax(-1)[0]
    assert result["top_k"][0]["probability"] == pytest.approx(float(p.max()), rel=1e-5)


def test_cli_compare_records_both_models_mode(hf_folder, wide, tmp_path):
    other = tiny_checkpoint(tmp_path / "tiny.pt")
    wide.save(tmp_path / "wide.png")
    assert main([str(tmp_path / "wide.png"), "--weights", str(hf_folder), "--compare", str(other),
                 "--preprocess", "squash", "--out", str(tmp_path / "out"), "--quiet"]) == 0
    record = json.loads((tmp_path / "out" / "wide" / "compare.json").read_text())
    assert [m["preprocess"]["mode"] for m in record["models"]] == ["squash", "squash"]
    assert [m["crop_box"] for m in record["models"]] == [[0, 0, 90, 60], [0, 0, 90, 60]]


def test_crop_outline_follows_the_mode(wide):
    squash = DEIT_HF.choose("squash")
    picture, note = panels.crop_panel(wide, squash, lang="zh-CN")
    inner = np.asarray(picture)[5:-5, 5:-5].astype(int)
    assert np.abs(inner - np.asarray(wide)[5:-5, 5:-5]).max() <= 1               # nothing dimmed: all of it is seen
    assert t("note.stretched", "zh-CN", crop="224×224") in note
    picture, note = panels.crop_panel(wide, DEIT_HF, lang="en")                   # stretched, then the centre cut
    assert np.asarray(picture)[30, 1].astype(int).sum() < 0.5 * np.asarray(wide)[30, 1].astype(int).sum() + 2
    assert t("note.stretched_crop", "en", crop="224×224", resize="256×256") in note
    _, note = panels.crop_panel(wide.resize((600, 400)), AUGREG)
    assert note is None                                                           # a crop of a large photo: the usual
    border = vit.Preprocess.for_crop(224, 1.0, "border")                          # fitted and padded: past the photo
    box = border.crop_box(wide.size)
    assert box[1] < 0 < box[0] + 1 and box[3] > 60
    panels.crop_panel(wide, border)                                               # drawn clipped, no error


def test_compare_overlap_follows_the_mode(tmp_path, wide):
    """A squashed model saw the whole photo, a cropped one its centre, a padded one more than the photo: compared
    on the photo pixels both saw."""
    paths = {}
    for name, prep in (("squash", vit.Preprocess(resize=(32, 32), crop=(32, 32), resize_mode="squash")),
                       ("crop", vit.Preprocess.for_crop(32)), ("border", vit.Preprocess.for_crop(32, 1.0, "border"))):
        torch.manual_seed(0)
        cfg = vit.ViTConfig(img_size=32, patch_size=8, embed_dim=16, depth=1, num_heads=2, mlp_dim=32, num_classes=3)
        paths[name] = vit.save_checkpoint(tmp_path / f"{name}.pt", vit.VisionTransformer(cfg).eval(), ["a", "b", "c"],
                                          prep)
    sides = {name: compare_side(vit.load(path), wide) for name, path in paths.items()}
    assert sides["squash"].crop_box == (0.0, 0.0, 90.0, 60.0)
    c = compare(wide, sides["squash"], sides["crop"])
    assert c.box == sides["crop"].crop_box                                      # the crop lies inside the photo
    c = compare(wide, sides["border"], sides["squash"])
    assert c.box == (0, 0, 90, 60)                                              # the padding is no photo
    record = comparison_record(c)
    assert [m["preprocess"]["resize_mode"] for m in record["models"]] == ["fit", "squash"]


def test_sidecar_names_any_source_mode(tmp_path, wide):
    cfg = vit.ViTConfig(img_size=32, patch_size=8, embed_dim=16, depth=1, num_heads=2, mlp_dim=32, num_classes=3)
    torch.save(vit.VisionTransformer(cfg).state_dict(), tmp_path / "m.pt")
    timm_cfg = {"input_size": [3, 32, 32], "crop_pct": 0.9, "crop_mode": "border", "mean": [0.5] * 3, "std": [0.5] * 3}
    cases = [({"timm": timm_cfg}, timm_preprocess(timm_cfg)),
             ({"huggingface": {"image_processor_type": "SiglipImageProcessor", "size": {"height": 32, "width": 32}}},
              huggingface_preprocess({"size": {"height": 32, "width": 32}}, "siglip", (32, 32))),
             ({"torchvision": {"crop_size": 32, "resize_size": 36}}, vit.Preprocess(resize=36, crop=32,
                                                                               interpolation="bilinear")),
             ({"resize_mode": "squash", "resize": [32, 32], "crop": [32, 32]},
              vit.Preprocess(resize=(32, 32), crop=(32, 32), resize_mode="squash"))]
    for spec, expected in cases:
        (tmp_path / "m.json").write_text(json.dumps({"preprocess": spec, "labels": ["a", "b", "c"]}))
        assert vit.load(tmp_path / "m.pt").preprocess == expected, spec
    (tmp_path / "m.json").write_text(json.dumps({"preprocess": {"timm": timm_cfg, "resize": 3}}))
    with pytest.raises(ValueError, match=r"m.json: A preprocess naming its source holds that source's settings alone"):
        vit.load(tmp_path / "m.pt")


@pytest.mark.slow
def test_training_and_dynamics_take_the_mode(tmp_path):
    data = make_squares_folder(tmp_path / "squares", count=16, size=8, regions=2)
    out = tmp_path / "w" / "sq.pt"
    result = fit(TrainOptions(data=str(data), out=str(out), img_size=(8, 8), patch_size=2, depth=1, embed_dim=16,
                              num_heads=2, epochs=1, batch_size=8, workers=0, augment="none", preprocess="squash",
                              snapshot_every=1))
    assert result.preprocess.resize_mode == "squash" and vit.load(out).preprocess == result.preprocess
    photo = Image.fromarray(np.random.default_rng(1).integers(0, 256, (8, 12, 3), dtype=np.uint8))   # 12×8
    photo.save(tmp_path / "photo.png")
    for mode in ("own", "crop"):
        assert dynamics_main([str(snapshot_dir(out)), str(tmp_path / "photo.png"), "--out", str(tmp_path / mode),
                              "--preprocess", mode]) == 0
    own = np.load(tmp_path / "own" / "dynamics.npz")["rollout"]
    crop = np.load(tmp_path / "crop" / "dynamics.npz")["rollout"]
    assert own.shape == crop.shape and not np.allclose(own, crop)    # the model saw other pixels
