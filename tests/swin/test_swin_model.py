"""Protects vit.swin's model itself: the parameter counts of Swin-T (v1 as torchvision's and timm's, v2 as timm's),
every stage's shape, fused == explicit attention, the capture == the plain forward, the window layouts (shift in odd
blocks, none in a one-window stage, a window shrunk to a smaller v2 stage), the input sizes a model takes and the
sizes it refuses (saying which would work), and the ViT-only paths refusing a Swin in one sentence."""
from __future__ import annotations

import pytest
import torch

from swin_references import small_swin
from vit.architecture import BlockLayout
from vit.swin import SwinConfig, SwinTransformer, swin_variant


@pytest.mark.parametrize("version, window, count", [(1, 7, 28_288_354), (2, 8, 28_347_154)])
def test_swin_t_parameter_counts(version, window, count):
    """torchvision's swin_t and timm's swin_tiny_patch4_window7_224 have 28,288,354 parameters; timm's
    swinv2_tiny_window8_256 28,347,154 (torchvision's v2 keeps a key bias it never uses: 4,416 more)."""
    with torch.device("meta"):
        model = SwinTransformer(swin_variant("swin_t", version=version, window_size=window))
    assert sum(p.numel() for p in model.parameters()) == count
    assert not list(model.buffers())                 # every index and mask is computed, none is saved


def test_every_stage_has_its_shape(swin, photo):
    shapes = []
    with torch.no_grad():
        for tokens, attn, layout in swin.blocks_with_attention(photo):
            shapes.append((tuple(tokens.shape), tuple(attn.shape), layout.stage, layout.block))
    assert shapes == [((1, 16, 16, 8), (1, 16, 1, 16, 16), 0, 0), ((1, 16, 16, 8), (1, 16, 1, 16, 16), 0, 1),
                      ((1, 8, 8, 16), (1, 4, 2, 16, 16), 1, 0), ((1, 8, 8, 16), (1, 4, 2, 16, 16), 1, 1),
                      ((1, 4, 4, 32), (1, 1, 2, 16, 16), 2, 0), ((1, 4, 4, 32), (1, 1, 2, 16, 16), 2, 1)]
    with torch.no_grad():
        assert swin(photo).shape == (1, 4)


def test_fused_equals_explicit_and_capture_equals_plain(swin):
    x = torch.randn(3, 3, 32, 32, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        fused = swin(x)
        swin.fused_attn = False
        try:
            explicit = swin(x)
        finally:
            swin.fused_attn = True
        capture = swin.forward_with_attention(x)
    torch.testing.assert_close(fused, explicit, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(capture.output, fused, rtol=1e-5, atol=1e-5)
    for attn in capture.attention:
        torch.testing.assert_close(attn.sum(-1), torch.ones_like(attn.sum(-1)))
    assert capture.token_norms is None


def test_the_description_places_every_block_s_windows():
    model = SwinTransformer(swin_variant("tiny"))
    arch = model.architecture(224, 224)
    layouts = arch.blocks
    assert len(layouts) == 12 and arch.readout == "mean" and arch.stages == ((0, 1), (2, 3), (4, 5, 6, 7, 8, 9),
                                                                              (10, 11))
    assert layouts[0] == BlockLayout(0, 0, 0, 3, (56, 56), 4, window=(7, 7), shift=(0, 0))
    assert layouts[1] == BlockLayout(1, 0, 1, 3, (56, 56), 4, window=(7, 7), shift=(3, 3))
    assert layouts[-1] == BlockLayout(11, 3, 1, 24, (7, 7), 32, window=(7, 7), shift=(0, 0))   # one window: never shifted
    assert [lay.num_windows for lay in layouts[::2]] == [64, 16, 4, 4, 4, 1]
    v2 = SwinTransformer(swin_variant("tiny", version=2, window_size=16, img_size=256))
    assert v2.architecture(256, 256).blocks[-1] == BlockLayout(11, 3, 1, 24, (8, 8), 32, window=(8, 8))  # the stage's


TWO_STAGES = dict(img_size=32, patch_size=4, embed_dim=8, depths=(2, 2), num_heads=(1, 2), window_size=4)


@pytest.mark.parametrize("cfg, size, why", [
    (swin_variant("tiny"), (225, 224), "the patch size 4 does not divide it"),
    (swin_variant("tiny"), (200, 200), "stage 0's 50×50 grid is not a multiple of its 7×7 window"),
    (swin_variant("tiny"), (112, 112), "stage 2's 7×7 grid cannot be merged 2×2"),
    (SwinConfig(**TWO_STAGES), (16, 16), "stage 1's 2×2 grid is smaller than the 4×4 windows its position bias table "
                                         "is learnt for"),
])
def test_a_size_the_model_does_not_take_is_refused_with_sizes_that_work(cfg, size, why):
    model = SwinTransformer(cfg)
    with pytest.raises(ValueError) as e:
        model.architecture(*size)
    assert why in str(e.value) and "e.g. " in str(e.value)
    nearest = str(e.value).split("e.g. ")[1].split(",")[0]
    model.architecture(*map(int, nearest.split("×")))                     # the suggestion works
    with pytest.raises(ValueError, match="Wrong input size for this Swin"):
        model(torch.zeros(1, 3, *size))


def test_a_torchvision_swin_refuses_a_stage_smaller_than_its_window():
    """torchvision pads such a stage to one window; timm and transformers shrink the window. A model opened from
    torchvision says so instead of computing it the other way."""
    cfg = swin_variant("tiny", version=2, window_size=8, img_size=256)
    assert SwinTransformer(cfg).architecture(128, 128).blocks[-1].window == (4, 4)   # shrinks to the 4×4 last stage
    with pytest.raises(ValueError, match="stage 3's 4×4 grid is smaller than its 8×8 window, which torchvision pads"):
        SwinTransformer(SwinConfig(**{**cfg.__dict__, "shrink_window": False})).architecture(128, 128)


def test_config_checks():
    assert SwinConfig(window_size=7).window_size == (7, 7, 7, 7)
    assert SwinConfig(depths=(2, 2), num_heads=(2, 4), window_size=4).pretrained_window_sizes == (0, 0)
    with pytest.raises(ValueError, match="num_heads needs one value per stage"):
        SwinConfig(depths=(2, 2), num_heads=(2, 4, 8))
    with pytest.raises(ValueError, match="which 5 heads do not divide"):
        SwinConfig(depths=(2,), num_heads=(5,), window_size=7)
    with pytest.raises(ValueError, match="Unknown Swin size"):
        swin_variant("huge")
    assert swin_variant("Swin-B").embed_dim == 128


def test_eval_layout_is_the_patch_grid():
    model = small_swin(1)
    assert tuple(model.eval_layout(torch.zeros(1, 3, 32, 32), "Explanations")) == (0, (16, 16))
    model.train()
    with pytest.raises(ValueError, match="eval mode"):
        model.eval_layout(torch.zeros(1, 3, 32, 32), "Explanations")


def test_the_one_sequence_paths_refuse_a_swin_in_one_sentence(photo):
    """What is defined on one sequence of tokens through every layer says so for a Swin (its description has none),
    in one sentence, and runs nothing."""
    from viz.analysis.capture import capture
    from vit.explain.perturb import forward_kept, forward_packed
    from vit.inside.stream import run_edited, trace
    model = small_swin(1)
    calls = [lambda: trace(model, photo), lambda: run_edited(model, photo), lambda: capture(model, photo)]
    for call in calls:
        with pytest.raises(ValueError, match=r"reads one sequence of tokens through every layer; this model's blocks "
                                             r"change grid or attend inside windows"):
            call()
    for call in (lambda: forward_kept(model, photo, torch.zeros(1, 3, dtype=torch.long)),
                 lambda: forward_packed(model, photo, [[torch.arange(3)]])):
        with pytest.raises(ValueError, match=r"^Token dropping does not apply to this model: its windows tile the "
                                             r"whole grid .* pixel protocols"):
            call()
