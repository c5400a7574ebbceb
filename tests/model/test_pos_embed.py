"""The position-embedding ablation (ViT paper, Appendix D.4): ViTConfig.pos_embed_kind "learned" / "sincos2d" / "none".

Protects: the fixed 2-D sine-cosine table equals hand-computed values and has the structure that makes it a position
code; it is never trained; every kind saves and loads (and resizes) through our checkpoint format; Figure 7's
position panel works for the fixed table and says plainly that there is nothing to show without one; the training
CLI builds each kind and refuses to change it when fine-tuning.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

import vit
from vit.model import POS_EMBED_KINDS, ViTConfig, VisionTransformer, sincos_2d_position_embedding
from vit.train.build import param_groups, scratch_config, scratch_preprocess
from vit.train.options import TrainOptions, parse_args, resolve
from viz import panels
from viz.analysis import model_arrays
from viz.model.view import stages, total_params
from viz.maps.embeddings import neighbour_similarity, position_similarity
from viz.position.view import model_panels, position_panel

TINY = dict(img_size=(16, 16), patch_size=4, embed_dim=16, depth=2, num_heads=2, mlp_dim=32, num_classes=3)


def tiny(kind: str, **overrides) -> VisionTransformer:
    torch.manual_seed(0)
    return VisionTransformer(ViTConfig(**{**TINY, "pos_embed_kind": kind, **overrides})).eval()


def test_sincos_table_equals_hand_computed_values():
    """dim 8: F = 2 frequencies, ω = (1, 1/10000); the patch in row r, column c is
    [sin c, sin(c/10⁴), cos c, cos(c/10⁴), sin r, sin(r/10⁴), cos r, cos(r/10⁴)]."""
    table = sincos_2d_position_embedding((3, 4), 8).double()
    assert table.shape == (12, 8)
    assert table[0].tolist() == [0, 0, 1, 1, 0, 0, 1, 1]                   # position (0, 0): sines 0, cosines 1
    r, c = 1, 2                                                              # row-major index 1·4 + 2 = 6
    expected = [math.sin(c), math.sin(c / 1e4), math.cos(c), math.cos(c / 1e4),
                math.sin(r), math.sin(r / 1e4), math.cos(r), math.cos(r / 1e4)]
    np.testing.assert_allclose(table[6].numpy(), expected, atol=1e-6)       # a float32 table: sin/cos within a few ulps


def test_sincos_table_is_a_translation_invariant_code():
    """Every row has squared norm dim/2; the dot product of two rows depends only on their offset (Δr, Δc) and equals
    Σ_k cos(Δc·ω_k) + cos(Δr·ω_k); a patch is its own closest match."""
    gh, gw, dim = 5, 6, 32
    table = sincos_2d_position_embedding((gh, gw), dim).double()
    np.testing.assert_allclose((table ** 2).sum(dim=1).numpy(), dim / 2, rtol=1e-5)
    omega = 1.0 / 10000 ** (np.arange(dim // 4) / (dim // 4 - 1))
    gram = (table @ table.T).numpy()
    rows, cols = np.divmod(np.arange(gh * gw), gw)
    dr, dc = rows[:, None] - rows[None, :], cols[:, None] - cols[None, :]
    expected = np.cos(dc[..., None] * omega).sum(-1) + np.cos(dr[..., None] * omega).sum(-1)
    np.testing.assert_allclose(gram, expected, atol=1e-5)
    assert (gram.argmax(axis=1) == np.arange(gh * gw)).all()
    # so its grid neighbours are clearly more similar than the average patch
    assert neighbour_similarity(position_similarity(table.numpy(), (gh, gw)), (gh, gw)) > 0.1


def test_sincos_table_is_a_buffer_that_training_never_changes():
    model = tiny("sincos2d")
    assert "pos_embed" not in dict(model.named_parameters()) and "pos_embed" in dict(model.named_buffers())
    assert all(p is not model.pos_embed for group in param_groups(model, 0.05) for p in group["params"])
    before = model.pos_embed.clone()
    expected = torch.cat([torch.zeros(1, 16), sincos_2d_position_embedding((4, 4), 16)]).unsqueeze(0)  # CLS row 0
    assert torch.equal(before, expected)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
    loss = torch.nn.functional.cross_entropy(model(torch.randn(4, 3, 16, 16)), torch.tensor([0, 1, 2, 0]))
    loss.backward()
    optimizer.step()
    assert model.pos_embed.grad is None and torch.equal(model.pos_embed, before)
    assert not torch.equal(model.patch_embed.proj.weight, tiny("sincos2d").patch_embed.proj.weight)  # it did train


def test_no_position_embedding_means_the_model_cannot_tell_where_a_patch_is():
    """Without position embedding, moving whole patches around leaves the logits unchanged (attention treats the
    patches as a set, so the CLS token's output cannot depend on their order); with either table, it changes them."""
    x = torch.randn(1, 3, 16, 16)
    patches = x.reshape(1, 3, 4, 4, 4, 4)                                   # (B, C, gh, P, gw, P)
    shuffled = patches[:, :, [2, 0, 3, 1]][:, :, :, :, [1, 3, 0, 2]].reshape(1, 3, 16, 16)  # whole patches moved
    with torch.inference_mode():
        for kind in POS_EMBED_KINDS:
            model = tiny(kind)
            same = torch.allclose(model(x), model(shuffled), atol=1e-5)
            assert same == (kind == "none"), kind
    assert tiny("none").pos_embed is None and "pos_embed" not in tiny("none").state_dict()


@pytest.mark.parametrize("kind", POS_EMBED_KINDS)
def test_every_kind_round_trips_through_our_checkpoint_format(kind, tmp_path):
    model = tiny(kind)
    path = vit.save_checkpoint(tmp_path / f"{kind}.pt", model, ["a", "b", "c"], scratch_preprocess((16, 16)))
    loaded = vit.load(str(path))
    assert loaded.config.pos_embed_kind == kind and loaded.config == model.cfg
    x = torch.randn(2, 3, 16, 16)
    with torch.inference_mode():
        assert torch.equal(loaded.model(x), model(x))
    assert set(loaded.model.state_dict()) == set(model.state_dict())
    bigger = vit.load(str(path), img_size=(24, 24))                       # a 6×6 grid
    if kind == "sincos2d":   # computed for the new grid, not resized
        assert torch.equal(bigger.model.pos_embed, bigger.model.sincos_table((6, 6)))
    with torch.inference_mode():
        assert bigger.model(torch.randn(1, 3, 24, 24)).shape == (1, 3)


def test_a_checkpoint_from_before_the_field_loads_as_learned(tmp_path):
    from vit.checkpoints.files import read_file

    path = vit.save_checkpoint(tmp_path / "old.pt", tiny("learned"), ["a", "b", "c"], scratch_preprocess((16, 16)))
    ckpt = read_file(path)
    del ckpt["config"]["pos_embed_kind"]
    torch.save(ckpt, path)
    assert vit.load(str(path)).config.pos_embed_kind == "learned"


def test_config_refuses_unknown_kinds_and_sincos_widths_it_cannot_split():
    with pytest.raises(ValueError, match="Unknown pos_embed_kind 'relative'"):
        ViTConfig(**TINY, pos_embed_kind="relative")
    with pytest.raises(ValueError, match="multiple of 4"):
        ViTConfig(**{**TINY, "embed_dim": 18, "num_heads": 2}, pos_embed_kind="sincos2d")


def test_figure7_panel_for_each_kind():
    """The fixed table's similarity is the paper's picture by construction; "none" gets a panel saying so."""
    fixed = model_arrays(tiny("sincos2d"))
    sim = panels.position_similarity_of(fixed)
    assert sim.shape == (16, 16) and fixed.pos_embed_kind == "sincos2d"
    images, arrays = model_panels(fixed)
    assert images["pos_similarity"].width > 200
    none = model_arrays(tiny("none"))
    assert not none.has_position_embedding and none.pos_embed is None
    images, arrays = model_panels(none)
    assert "pos_similarity" not in arrays
    assert images["pos_similarity"].size == position_panel(none).size
    pixels = np.asarray(images["pos_similarity"])
    assert (pixels < 128).any() and (pixels == 255).mean() > 0.8               # text on white, no plot


@pytest.mark.parametrize("kind", POS_EMBED_KINDS)
def test_model_tab_counts_the_parameters_of_each_kind(kind):
    model = tiny(kind)
    assert total_params(stages(model.cfg)) == sum(p.numel() for p in model.parameters())


def test_training_options_build_each_kind_and_keep_a_checkpoints_kind():
    opts, explicit = parse_args(["--out", "w/a.pt", "--pos-embed", "sincos2d"])
    assert opts.pos_embed == "sincos2d" and "pos_embed" in explicit
    assert resolve(TrainOptions(), "folder", None).pos_embed == "learned"
    cfg = scratch_config("tiny", 3, (16, 16), 4, 0.0, 1, 16, 2, None, "none")
    assert cfg.pos_embed_kind == "none"
    pretrained = dataclasses.replace(cfg, pos_embed_kind="sincos2d")
    assert resolve(TrainOptions(), "folder", pretrained).pos_embed == "sincos2d"
    with pytest.raises(ValueError, match="--pos-embed cannot change when fine-tuning"):
        resolve(TrainOptions(pos_embed="learned"), "folder", pretrained)
