"""Protects the claim that SAM's image encoder (vit/sam.py) is the model of the libraries that ship it: timm's
VisionTransformerSAM (samvit_*, its own files and Meta's SAM checkpoints through timm's converter) and transformers'
SamVisionModel / SamModel, the same output (the mean of the neck's features, relative difference <= 1e-4), the same
neck features, and in every block, windowed (the grid padded with zero tokens to whole windows) and global, the
softmax attention the library itself computed (timm's explicit path at the native size and another one, where the
position table is resized and a global block's relative-position tables interpolated; transformers' eager attention);
and that the capture gives every block's attention on its own layout (vit.swin.WindowCapture), the load is checked
against the library, and a SAM has no class maps, said in one sentence.

The encoders are made small (4 blocks of width 192, two global, windows of 3 on an 8×8 grid: 9×9 padded), every
parameter perturbed.
"""
from __future__ import annotations

from functools import partial

import pytest
import timm
import torch
import transformers
from safetensors.torch import save_file

import vit
from reference_models import assert_close, images, randomize_
from vit.architecture import NO_READOUT
from vit.sam import SamConfig, SamImageEncoder

SMALL = dict(depth=4, global_attn_indexes=[1, 3], img_size=128, embed_dim=192, num_heads=3, window_size=3)


def timm_sam(**kw) -> torch.nn.Module:
    torch.manual_seed(0)
    return randomize_(timm.create_model("samvit_base_patch16", **{**SMALL, **kw}), std=0.05)


def timm_attention(model, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """timm's output and every block's softmax attention (attn_drop's input, its fused path off), (B·nW·H, N, N)."""
    maps = []
    for block in model.blocks:
        block.attn.fused_attn = False
    hooks = [b.attn.attn_drop.register_forward_hook(lambda m, i, o: maps.append(i[0])) for b in model.blocks]
    try:
        with torch.no_grad():
            out = model(x)
    finally:
        for h in hooks:
            h.remove()
    return out, maps


def assert_blocks(capture, reference: list[torch.Tensor]) -> None:
    """Ours (B, nW, H, N, N) per block against the library's windows and heads stacked in the batch, same order."""
    assert len(capture.attention) == len(reference)
    for i, (ours, ref) in enumerate(zip(capture.attention, reference)):
        assert_close(ours, ref.reshape(ours.shape), f"attention of block {i}")


@pytest.fixture(scope="module")
def timm_file(tmp_path_factory):
    ref = timm_sam()
    path = tmp_path_factory.mktemp("sam") / "samvit.safetensors"
    save_file({k: v.contiguous() for k, v in ref.state_dict().items()}, str(path))
    return ref, path


@pytest.mark.parametrize("size", [(128, 128), pytest.param((112, 144), marks=pytest.mark.slow)])
def test_timm_samvit_every_block_at_two_sizes(timm_file, size):
    ref, path = timm_file
    loaded = vit.load(path)
    cfg = loaded.config
    assert isinstance(cfg, SamConfig) and cfg.family == "sam" and loaded.format == "timm-sam"
    assert (cfg.num_heads, cfg.window_size, cfg.global_blocks, cfg.img_size) == (3, 3, (1, 3), (128, 128))
    assert cfg.layer_norm_eps == 1e-5 and [a.key for a in loaded.assumptions] == ["sam_eps"]   # timm's samvit
    assert loaded.verified.status == "verified" and loaded.verified.library == "timm"
    x = images(2, size)
    expected, maps = timm_attention(ref, x)
    with torch.no_grad():
        capture = loaded.model.forward_with_attention(x)
        assert_close(loaded.model(x), expected, "fused forward")
        assert_close(loaded.model.features(x), ref.forward_features(x), "the neck's features")
    assert_close(capture.output, expected)
    assert_blocks(capture, maps)


def test_the_capture_gives_each_block_on_its_own_layout(timm_file):
    """Windowed blocks: (B, nW, H, 9, 9) on the 8×8 grid padded to 9×9 (9 windows of 3×3); global blocks:
    (B, 1, H, 64, 64) over the grid. Each row a softmax over its window's keys (the padding's zero tokens among
    them). The capture's layouts are the model's description (``architecture``), which reads no token."""
    _, path = timm_file
    model = vit.load(path).model
    with torch.no_grad():
        capture = model.forward_with_attention(images(1, (128, 128)))
    for block, (attn, layout) in enumerate(zip(capture.attention, capture.layouts)):
        if block in (1, 3):
            assert attn.shape == (1, 1, 3, 64, 64) and layout.window is None and layout.padded_grid == (8, 8)
        else:
            assert attn.shape == (1, 9, 3, 9, 9) and (layout.window, layout.padded_grid) == ((3, 3), (9, 9))
        assert layout.grid == (8, 8) and layout.heads == 3 and layout.prefix == 0
        assert layout.num_windows == attn.shape[1] and layout.block == block and layout.token_size == 16
        torch.testing.assert_close(attn.sum(-1), torch.ones(attn.shape[:-1]))
    arch = model.architecture(128, 128)
    assert arch.blocks == tuple(capture.layouts) and arch.readout is None and arch.family == "sam"
    assert arch.windowed and not arch.one_sequence and arch.grid == (8, 8) and arch.stages == ((0, 1, 2, 3),)


def test_metas_sam_checkpoint_is_timms_conversion(timm_file, tmp_path):
    """Meta's layout (image_encoder.*, mlp.lin1/lin2, beside the prompt encoder and mask decoder): its encoder alone,
    SAM's own eps 1e-6, SAM's own preprocessing (the longer side to 128, padded at the bottom right)."""
    ref, _ = timm_file
    meta = {"image_encoder." + k.replace("mlp.fc", "mlp.lin"): v for k, v in ref.state_dict().items()}
    meta["prompt_encoder.point_embeddings.0.weight"] = torch.randn(1, 256)
    meta["mask_decoder.iou_token.weight"] = torch.randn(1, 256)
    torch.save(meta, tmp_path / "sam_vit_b_01ec64.pth")
    loaded = vit.load(tmp_path / "sam_vit_b_01ec64.pth")
    assert loaded.format == "sam" and loaded.config.layer_norm_eps == 1e-6 and loaded.verified.library == "timm"
    assert (loaded.preprocess.resize_mode, loaded.preprocess.centre, loaded.preprocess.crop) == \
        ("fit", "start", (128, 128))
    sam = timm_sam(norm_layer=partial(torch.nn.LayerNorm, eps=1e-6))
    sam.load_state_dict(ref.state_dict())
    x = images(2, (128, 128))
    expected, maps = timm_attention(sam, x)
    with torch.no_grad():
        capture = loaded.model.forward_with_attention(x)
    assert_close(capture.output, expected)
    assert_blocks(capture, maps)


@pytest.mark.parametrize("kind", ["SamVisionModel", pytest.param("SamModel", marks=pytest.mark.slow)])
def test_transformers_sam_every_block(kind, tmp_path):
    vision = transformers.SamVisionConfig(hidden_size=64, num_hidden_layers=4, num_attention_heads=4, image_size=128,
                                          patch_size=16, window_size=3, global_attn_indexes=[1, 3],
                                          output_channels=32, mlp_dim=128, attn_implementation="eager")
    torch.manual_seed(0)
    if kind == "SamModel":
        ref = transformers.SamModel(transformers.SamConfig(vision_config=vision.to_dict()))
    else:
        ref = transformers.SamVisionModel(vision)
    randomize_(ref, std=0.05).save_pretrained(tmp_path / kind)
    ref = type(ref).from_pretrained(tmp_path / kind, attn_implementation="eager")   # its attention returned
    loaded = vit.load(tmp_path / kind)
    assert loaded.format == "huggingface-sam" and loaded.verified.library == "transformers"
    assert (loaded.config.window_size, loaded.config.global_blocks, loaded.config.neck_dim) == (3, (1, 3), 32)
    encoder = getattr(ref, "vision_encoder", ref)
    x = images(2, (128, 128))
    with torch.no_grad():
        out = encoder(pixel_values=x, output_attentions=True)
        capture = loaded.model.forward_with_attention(x)
        assert_close(loaded.model.features(x), out.last_hidden_state, "the neck's features")
    assert_close(capture.output, out.last_hidden_state.mean(dim=(2, 3)))
    assert_blocks(capture, list(out.attentions))        # windowed (8×8 padded to 9×9) and global blocks


def test_a_fine_tuned_samvit_classifier(tmp_path):
    """timm's samvit_base_patch16_224: no absolute table, no neck (a LayerNorm over channels), a head on the mean."""
    torch.manual_seed(0)
    ref = randomize_(timm.create_model("samvit_base_patch16_224", depth=2, global_attn_indexes=[1], embed_dim=96,
                                       num_heads=2, num_classes=5), std=0.05)
    save_file({k: v.contiguous() for k, v in ref.state_dict().items()}, str(tmp_path / "cls.safetensors"))
    loaded = vit.load(tmp_path / "cls.safetensors")
    assert (loaded.config.abs_pos, loaded.config.neck_dim, loaded.config.num_classes) == (False, 0, 5)
    x = images(2, (224, 224))
    expected, maps = timm_attention(ref, x)
    with torch.no_grad():
        capture = loaded.model.forward_with_attention(x)
    assert_close(capture.output, expected)
    assert_blocks(capture, maps)


@pytest.mark.parametrize("flags", [[], ["--explain", "gae"]])
def test_no_readout_token_no_maps(timm_file, tmp_path, capsys, flags):
    """Asked for maps or class maps, the CLI says in one sentence, read from the description (no readout), why a SAM
    has none, after the load's check."""
    from viz.cli import main
    _, path = timm_file
    photo = tmp_path / "photo.png"
    from PIL import Image
    Image.new("RGB", (64, 48), (120, 30, 200)).save(photo)
    assert main([str(photo), "--weights", str(path), "--out", str(tmp_path / "out"), *flags]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0].startswith(f"{path}: checked against timm") and lines[-1] == f"error: {NO_READOUT}"
    assert not (tmp_path / "out").exists()


def test_the_page_serves_no_sam(timm_file):
    """The page refuses a SAM with the same sentence before anything runs."""
    from viz.analysis.serve import serve
    with pytest.raises(ValueError) as refused:
        serve(vit.load(timm_file[1]))
    assert str(refused.value) == NO_READOUT


def test_a_sam_model_is_built_on_any_grid():
    """SamImageEncoder on its own: a grid the windows do not divide is padded, one that they do is not."""
    cfg = SamConfig(img_size=(96, 96), embed_dim=32, depth=2, num_heads=2, mlp_dim=64, window_size=4,
                    global_blocks=(1,), neck_dim=8)
    model = SamImageEncoder(cfg).eval()
    assert [b.padded_grid for b in model.architecture(96, 96).blocks] == [(8, 8), (6, 6)]
    assert [b.padded_grid for b in model.architecture(128, 64).blocks] == [(8, 4), (8, 4)]
    with torch.no_grad():
        assert model(images(1, (96, 80))).shape == (1, 8)
