"""Protects how Swin checkpoints open: strict loading names what does not match; the original Microsoft layout (patch
merging at the end of a stage) opens as timm's; each source comes with its own preprocessing (torchvision's weights
by file name, equal to their enums' transforms; a timm Hub folder's pretrained_cfg, its architecture name giving the
window and pretraining windows as timm builds them; a transformers folder's image processor); our own checkpoint
keeps a Swin a Swin; what cannot be known is asked for, never guessed."""
from __future__ import annotations

import json
import re

import pytest
import torch
from PIL import Image
from safetensors.torch import save_file
from skimage import data

import vit
from swin_references import logits, perturbed, pixels, reference, save, small_swin, timm_swin
from vit.checkpoints import registry
from vit.checkpoints.swin_formats import timm_swin_config

GREY = 1.0    # one grey level before normalisation, as tests/checkpoints/test_preprocess_sources.py


@pytest.fixture(scope="module")
def cat() -> Image.Image:
    return Image.fromarray(data.chelsea())


@pytest.fixture(scope="module")
def timm_file(tmp_path_factory):
    ref = perturbed(timm_swin(1))
    return ref, save(ref, "timm", tmp_path_factory.mktemp("timm"))


def grey_levels(ours: torch.Tensor, theirs: torch.Tensor, prep: vit.Preprocess) -> float:
    theirs = theirs.unsqueeze(0) if theirs.dim() == 3 else theirs
    assert tuple(ours.shape) == tuple(theirs.shape)
    return float(((ours - theirs).abs() * torch.tensor(prep.std).view(1, 3, 1, 1)).max() / prep.rescale)


def test_strict_loading_names_every_mismatch(timm_file, tmp_path):
    ref, _ = timm_file
    state = {k: v.contiguous() for k, v in ref.state_dict().items()}
    state.pop("layers.2.blocks.1.norm1.weight")
    state["layers.0.blocks.0.attn.extra"] = torch.zeros(3)
    state["layers.1.downsample.reduction.weight"] = torch.zeros(32, 60)
    save_file(state, str(tmp_path / "broken.safetensors"))
    with pytest.raises(ValueError) as e:
        vit.load(tmp_path / "broken.safetensors")
    message = str(e.value)
    assert "does not match the model (Swin v1, patch 4, img 224×224, D=16, depths=(2, 2, 2, 2)" in message
    assert "missing keys (1): layers.2.blocks.1.norm1.weight" in message
    assert "unexpected keys (1): layers.0.blocks.0.attn.extra" in message
    assert "layers.1.downsample.reduction.weight: checkpoint (32, 60) vs model (32, 64)" in message


def test_the_original_layout_opens_as_timms(timm_file, tmp_path):
    """Microsoft's checkpoints (and timm's before 0.9) merge at the end of a stage: layers.i.downsample is stage
    i+1's merging, and the head is head.* rather than head.fc.*."""
    ref, _ = timm_file
    original = {}
    for k, v in ref.state_dict().items():
        k = re.sub(r"^layers\.(\d+)\.downsample", lambda m: f"layers.{int(m[1]) - 1}.downsample", k)
        original[k.replace("head.fc.", "head.")] = v
    torch.save({"model": original}, tmp_path / "swin_tiny_patch4_window7_224.pth")
    loaded = vit.load(tmp_path / "swin_tiny_patch4_window7_224.pth")
    x = pixels()
    torch.testing.assert_close(logits(loaded.model, "ours", x), logits(ref, "timm", x), rtol=1e-5, atol=1e-5)


def test_torchvision_swin_weights_table_equals_its_enums():
    from torchvision.models import (Swin_B_Weights, Swin_S_Weights, Swin_T_Weights, Swin_V2_B_Weights,
                                    Swin_V2_S_Weights, Swin_V2_T_Weights)
    enums = {"swin_t": Swin_T_Weights, "swin_s": Swin_S_Weights, "swin_b": Swin_B_Weights,
             "swin_v2_t": Swin_V2_T_Weights, "swin_v2_s": Swin_V2_S_Weights, "swin_v2_b": Swin_V2_B_Weights}
    ours = {ck.name: ck for ck in registry.torchvision_swin_checkpoints()}
    theirs = {f"{arch}.{w.name.lower()}": w for arch, enum in enums.items() for w in enum}
    assert sorted(ours) == sorted(theirs) and len(ours) == 6
    for name, w in theirs.items():
        ck, kw = ours[name], w.transforms.keywords
        assert ck.url == w.url and ck.filename == w.url.rsplit("/", 1)[-1], name
        assert ck.preprocess == vit.Preprocess(resize=kw["resize_size"], crop=(kw["crop_size"],) * 2,
                                               interpolation=kw["interpolation"].value), name
        assert ck.config == {"img_size": (kw["crop_size"],) * 2} and ck.format == "torchvision-swin", name
    assert registry.by_name("swin_t") is not None and registry.by_name("swin_v2_b").filename == "swin_v2_b-781e5279.pth"


def test_a_torchvision_file_brings_its_weights_transforms(tmp_path, cat):
    """A file named as torchvision's swin_t weights gets Swin_T_Weights.IMAGENET1K_V1.transforms(): 232 -> 224
    bicubic, and ImageNet's names (the tensors here are the small Swin's with 1000 classes: the name says the
    preprocessing, the tensors the shape)."""
    from torchvision.models import Swin_T_Weights
    ref = perturbed(reference("torchvision", 1, num_classes=1000))
    torch.save(ref.state_dict(), tmp_path / "swin_t-704ceda3.pth")
    loaded = vit.load(tmp_path / "swin_t-704ceda3.pth")
    assert loaded.name == "swin_t.imagenet1k_v1" and loaded.config.img_size == (224, 224)
    assert not loaded.config.shrink_window                  # torchvision pads a smaller stage: refused, not shrunk
    assert grey_levels(loaded.preprocess(cat), Swin_T_Weights.IMAGENET1K_V1.transforms()(cat), loaded.preprocess) \
        <= GREY
    renamed = tmp_path / "my_swin.pth"
    renamed.write_bytes((tmp_path / "swin_t-704ceda3.pth").read_bytes())
    assert vit.load(renamed).preprocess == loaded.preprocess   # an unknown name: its version's convention


def test_a_timm_hub_folder_brings_its_window_and_preprocessing(tmp_path, cat):
    """config.json {"architecture", "pretrained_cfg"} beside the weights, as on huggingface.co/timm: the name says a
    Swin v2's window (no tensor does), the pretrained_cfg the preprocessing, equal to timm's create_transform."""
    from timm.data import create_transform, resolve_data_config
    ref = perturbed(timm_swin(2, img_size=(256, 256), window_size=8))
    save_file({k: v.contiguous() for k, v in ref.state_dict().items()}, str(tmp_path / "model.safetensors"))
    cfg = {"input_size": [3, 256, 256], "crop_pct": 0.9, "interpolation": "bicubic",
           "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}
    (tmp_path / "config.json").write_text(json.dumps({"architecture": "swinv2_tiny_window8_256", "num_classes": 5,
                                                      "pretrained_cfg": cfg}))
    loaded = vit.load(tmp_path)
    assert loaded.config.window_size == (8,) * 4 and loaded.config.img_size == (256, 256)
    x = pixels((256, 256))
    torch.testing.assert_close(logits(loaded.model, "ours", x), logits(ref, "timm", x), rtol=1e-5, atol=1e-5)
    transform = create_transform(**resolve_data_config(pretrained_cfg=cfg))
    assert grey_levels(loaded.preprocess(cat), transform(cat), loaded.preprocess) <= GREY


def test_timm_architecture_names_give_windows_as_timm_builds_them():
    import timm
    for name in ("swinv2_base_window12to16_192to256", "swinv2_tiny_window16_256", "swin_base_patch4_window12_384"):
        with torch.device("meta"):
            model = timm.create_model(name)
        hints = timm_swin_config(name)
        windows = [layer.blocks[0].attn.window_size[0] for layer in model.layers]
        assert hints["window_size"] == max(windows), name            # the configured window (shrunk where larger)
        if "to" in name.split("window")[1]:
            assert hints["pretrained_window_sizes"] == tuple(layer.blocks[0].attn.pretrained_window_size[0]
                                                             for layer in model.layers)
    assert timm_swin_config("vit_base_patch16_224") == {}


def test_a_timm_v2_file_without_its_window_is_asked_for(tmp_path):
    ref = perturbed(timm_swin(2))
    path = save(ref, "timm", tmp_path)
    with pytest.raises(ValueError, match=r"window size of this Swin v2 is not in its tensors.*\"window_size\": W"):
        vit.load(path)
    path.with_suffix(".json").write_text(json.dumps({"config": {"window_size": 7}}))
    assert vit.load(path).config.window_size == (7,) * 4


def test_a_transformers_folder_brings_its_image_processor(tmp_path, cat):
    from transformers import AutoImageProcessor, ViTImageProcessor
    ref = perturbed(reference("transformers", 1))
    save(ref, "transformers", tmp_path)
    ViTImageProcessor(size={"height": 224, "width": 224}, resample=3, image_mean=[0.485, 0.456, 0.406],
                      image_std=[0.229, 0.224, 0.225]).save_pretrained(tmp_path)
    loaded = vit.load(tmp_path)
    theirs = AutoImageProcessor.from_pretrained(tmp_path, backend="pil")(cat, return_tensors="pt")["pixel_values"]
    assert grey_levels(loaded.preprocess(cat), theirs, loaded.preprocess) <= GREY
    assert len(loaded.labels) == 5 and loaded.format == "huggingface-swin"


def test_a_transformers_swin_with_absolute_embeddings_opens_as_itself(tmp_path):
    """transformers' use_absolute_embeddings (the original Swin's "ape"): a learnt table added after the patch
    partition, read off the file (its grid gives the input size)."""
    ref = perturbed(reference("transformers", 1, use_absolute_embeddings=True))
    save(ref, "transformers", tmp_path)
    loaded = vit.load(tmp_path)
    assert loaded.config.absolute_pos_embed and loaded.model.absolute_pos_embed.shape == (1, 56 * 56, 16)
    x = pixels()
    torch.testing.assert_close(logits(loaded.model, "ours", x), logits(ref, "transformers", x), rtol=1e-5, atol=1e-5)


def test_our_checkpoint_keeps_a_swin_a_swin(tmp_path):
    model = small_swin(2)
    prep = vit.Preprocess(resize=32, crop=(32, 32))
    vit.save_checkpoint(tmp_path / "s.pt", model, list("abcd"), prep)
    assert torch.load(tmp_path / "s.pt", weights_only=True)["arch"] == "swin"
    loaded = vit.load(tmp_path / "s.pt")
    assert loaded.config == model.cfg and loaded.format == "vit-explorer" and loaded.labels == list("abcd")
    x = pixels((32, 32))
    torch.testing.assert_close(logits(loaded.model, "ours", x), logits(model, "ours", x), rtol=0, atol=0)
    vit_model = vit.VisionTransformer(vit.variant("tiny", img_size=32, patch_size=8, depth=1))
    vit.save_checkpoint(tmp_path / "v.pt", vit_model, [f"c{i}" for i in range(1000)], prep)
    assert "arch" not in torch.load(tmp_path / "v.pt", weights_only=True)      # a ViT's file is as before


def test_a_known_swin_offline_says_what_to_download(monkeypatch, tmp_path):
    monkeypatch.setenv("VIT_WEIGHTS_DIR", str(tmp_path))
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "hub"))
    with pytest.raises(FileNotFoundError, match=r"https://download.pytorch.org/models/swin_t-704ceda3.pth"):
        vit.load("swin_t", download=False)
