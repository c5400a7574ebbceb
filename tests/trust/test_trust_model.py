"""Protects the model side of the trust checks (vit.explain.perturb): dropping patch tokens equals running the
model on the shorter sequence built by hand, batching equals one image at a time, sequences packed into one row
equal each sequence alone, positions travel with their tokens in every family, and the cascading randomisation is
seeded, nested and never touches the caller's model.
"""
from __future__ import annotations

import pytest
import torch

import vit
from tiny_models import FAMILIES, TINY, tiny
from vit.positions import TokenPositions
from oracles import randomized_copy
from vit.explain.perturb import cascading_randomization, forward_kept, forward_packed

def image(seed: int = 1, h: int = 32, w: int = 32) -> torch.Tensor:
    return torch.randn(1, 3, h, w, generator=torch.Generator().manual_seed(seed))


def top_rows_model(model: vit.VisionTransformer, family: dict):
    """The same network built by hand for the top 2 rows of the 4×4 grid (a 16×32 input): the learned table cut
    to those rows (a NaFlex table first resized to the whole 4×4 grid, as the photo's own grid), the
    relative-position table re-indexed for the 2×4 grid (each offset keeps its row of bias); sine-cosine,
    index-rotary and MLP-computed relative positions of rows 0-1 are the same numbers on the smaller grid. A rotation whose
    coordinates depend on the grid's size (DINOv3's centred ones, a reference grid) gets the 4×4 grid's rows 0-1."""
    short = _top_rows_network(model, family)
    cfg = model.cfg
    if not (cfg.rope and (cfg.rope_coords == "centered" or cfg.rope_ref_grid)):
        return short
    full = model.token_positions(32, 32)
    positions = TokenPositions(full.num_prefix, (full.rope[0][:8], full.rope[1][:8]), None)

    def run(x: torch.Tensor) -> torch.Tensor:
        h = short.embed(x)
        for blk in short.blocks:
            h, _ = blk(h, False, positions)
        return short.forward_head(h)
    return run


def _top_rows_network(model: vit.VisionTransformer, family: dict) -> vit.VisionTransformer:
    cfg = model.cfg
    short = vit.VisionTransformer(vit.ViTConfig(**{**TINY, **family, "img_size": (16, 32), "pos_embed_grid": None}))
    short.eval()
    state = dict(model.state_dict())
    if cfg.pos_embed_grid is not None:
        with torch.no_grad():
            state["pos_embed"] = model.resampled_pos_embed((4, 4))
    if cfg.pos_embed_kind == "learned":
        n_pre = state["pos_embed"].shape[1] - 16
        state["pos_embed"] = state["pos_embed"][:, :n_pre + 8]
    if cfg.pos_embed_kind == "sincos2d":
        state["pos_embed"] = short.pos_embed
    for name in [k for k in state if k.endswith("relative_position_bias_table")]:
        big = state[name]                                             # (7·7 + 3, H): offsets of a 4×4 grid
        small = big.new_empty(3 * 7 + 3, big.shape[1])                # (3·7 + 3, H): offsets of a 2×4 grid
        for dr in (-1, 0, 1):
            for dc in range(-3, 4):
                small[(dr + 1) * 7 + dc + 3] = big[(dr + 3) * 7 + dc + 3]
        small[-3:] = big[-3:]                                         # the prefix rows
        state[name] = small
    short.load_state_dict(state)
    return short


@pytest.mark.parametrize("family", FAMILIES)
def test_dropping_the_bottom_rows_equals_the_model_on_the_top_rows(family):
    model = tiny(**FAMILIES[family])
    x = image()
    with torch.no_grad():
        dropped = forward_kept(model, x, torch.arange(8)[None])          # patches 0…7: the top two rows
        by_hand = top_rows_model(model, FAMILIES[family])(x[:, :, :16])                    # the 16×32 top half through its own model
    torch.testing.assert_close(dropped, by_hand, rtol=1e-5, atol=1e-5)
    assert not torch.allclose(dropped, model(x), atol=1e-3)               # and dropping did change the output


@pytest.mark.parametrize("family", FAMILIES)
def test_keeping_every_patch_in_any_order_is_the_model_itself(family):
    """Positions travel with their tokens (table rows, rotary angles, bias sub-matrix) and pooling is over a set,
    so every patch in a shuffled order gives exactly the plain forward."""
    model, x = tiny(**FAMILIES[family]), image()
    shuffled = torch.randperm(16, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        torch.testing.assert_close(forward_kept(model, x, shuffled[None]), model(x), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(forward_kept(model, x, torch.arange(16)[None]), model(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_batch_of_perturbed_copies_equals_one_at_a_time(family):
    model, x = tiny(**FAMILIES[family]), image()
    g = torch.Generator().manual_seed(4)
    keep = torch.stack([torch.randperm(16, generator=g)[:6] for _ in range(5)])     # (5, 6): other patches per row
    with torch.no_grad():
        batched = forward_kept(model, x, keep)
        single = torch.cat([forward_kept(model, x, k[None]) for k in keep])
        several_images = forward_kept(model, x.expand(5, -1, -1, -1), keep)         # one image per row
    torch.testing.assert_close(batched, single, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(several_images, single, rtol=1e-5, atol=1e-5)
    assert batched.shape == (5, 5) and not torch.allclose(batched[0], batched[1])


@pytest.mark.parametrize("family", FAMILIES)
def test_sequences_packed_into_rows_equal_each_sequence_alone(family):
    """Rows of different lengths (padded), sequences of different lengths in one row, the prefix alone, the whole
    photo: each output equals forward_kept on that sequence, so the mask keeps every sequence to itself and
    every family's positions (tables, rotary angles, relative-bias rows) follow their tokens."""
    model, x = tiny(**FAMILIES[family]), image()
    g = torch.Generator().manual_seed(5)
    sequences = [torch.randperm(16, generator=g)[:k] for k in (16, 3, 9, 1, 12, 4, 2)]
    if model.cfg.readout == "cls":
        sequences.append(torch.zeros(0, dtype=torch.long))
    rows = [sequences[:2], sequences[2:4], sequences[4:]]             # rows of unequal length: the short ones padded
    with torch.no_grad():
        packed = forward_packed(model, x, rows)
        alone = torch.cat([forward_kept(model, x, k[None]) for k in sequences])
    torch.testing.assert_close(packed, alone, rtol=1e-5, atol=1e-5)
    assert not torch.allclose(packed[1], packed[2], atol=1e-3)                       # different sequences differ


def test_packing_checks_its_input():
    with pytest.raises(ValueError, match=r"outside \[0, 16\)"):
        forward_packed(tiny(), image(), [[torch.tensor([3]), torch.tensor([0, 16])]])
    with pytest.raises(ValueError, match="needs at least one kept patch"):
        forward_packed(tiny(readout="mean", class_token=False), image(), [[torch.arange(3), torch.zeros(0)]])
    with pytest.raises(ValueError, match=r"one image \(1, C, H, W\)"):
        forward_packed(tiny(), image().expand(2, -1, -1, -1), [[torch.arange(3)]])


def test_prefix_tokens_alone_classify_with_a_class_token_and_pooling_refuses_nothing():
    with torch.no_grad():
        out = forward_kept(tiny(num_reg_tokens=2), image(), torch.zeros(3, 0, dtype=torch.long))
    assert out.shape == (3, 5) and torch.allclose(out[0], out[2])
    with pytest.raises(ValueError, match="needs at least one kept patch"):
        forward_kept(tiny(readout="mean", class_token=False), image(), torch.zeros(1, 0, dtype=torch.long))
    with pytest.raises(ValueError, match=r"outside \[0, 16\)"):
        forward_kept(tiny(), image(), torch.tensor([[0, 16]]))
    with pytest.raises(ValueError, match=r"keep must be \(B, K\)"):
        forward_kept(tiny(), image(), torch.arange(3))


def test_randomisation_is_seeded_nested_from_the_top_and_leaves_the_model_alone():
    model = tiny(depth=3)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    one, two = randomized_copy(model, 1, seed=7), randomized_copy(model, 2, seed=7)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())          # caller's model untouched
    s0, s1, s2 = model.state_dict(), one.state_dict(), two.state_dict()
    changed = lambda s, b: any(not torch.equal(s0[k], s[k]) for k in s0 if k.startswith(f"blocks.{b}."))
    assert [changed(s1, b) for b in range(3)] == [False, False, True]                    # the top block first
    assert [changed(s2, b) for b in range(3)] == [False, True, True]
    assert all(torch.equal(s1[k], s2[k]) for k in s1 if k.startswith("blocks.2."))       # nested: same draw
    assert all(torch.equal(s0[k], s2[k]) for k in s0 if not k.startswith("blocks."))     # embeddings and head kept
    again = randomized_copy(model, 2, seed=7).state_dict()
    assert all(torch.equal(s2[k], again[k]) for k in s2)                                 # seeded
    other = randomized_copy(model, 2, seed=8).state_dict()
    assert not torch.equal(s2["blocks.2.attn.qkv.weight"], other["blocks.2.attn.qkv.weight"])
    w = s2["blocks.2.mlp.fc1.weight"]
    assert abs(float(w.std()) - 0.02) < 0.003 and abs(float(w.mean())) < 0.003            # the init's normal(0, 0.02)
    cascade = [(k, {n: v.clone() for n, v in m.state_dict().items()}) for k, m in cascading_randomization(model, 7)]
    assert [k for k, _ in cascade] == [1, 2, 3]
    assert all(torch.equal(cascade[1][1][k], s2[k]) for k in s2)                         # the cascade = the copies
