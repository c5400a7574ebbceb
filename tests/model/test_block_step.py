"""Protects ``Block.step``, the one place of the block's arithmetic: on every family it is the plain block (fused
and explicit attention), its taps are the tensors the block really used (the normalised input, q and k after the
rotary embedding, the attention, the heads and both branches), its edits replace exactly what they name, the rows
it computes alone equal those rows of the whole block, and the attention recomputed later from kept queries and
keys (``attention_rows``, 16 bits included) equals the block's own."""
from __future__ import annotations

import pytest
import torch

from tiny_models import FAMILIES, tiny
from vit.model import TAPS, attention_rows


def entering(model, layer: int = 1, seed: int = 3):
    """The stream entering block ``layer`` for a random image, and the image's token positions."""
    x = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(seed))
    positions = model.token_positions(32, 32)
    with torch.no_grad():
        stream = model.embed(x)
        for blk in model.blocks[:layer]:
            stream = blk.step(stream, positions).out
    return stream, positions


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_step_is_the_block_and_its_taps_are_what_it_used(family):
    model = tiny(**FAMILIES[family])
    blk = model.blocks[1]
    stream, positions = entering(model)
    with torch.no_grad():
        fused = blk.step(stream, positions)
        step = blk.step(stream, positions, taps=TAPS)
        forward, attn = blk(stream, True, positions)
        post = blk.res_post_norm                                      # timm's *_rpn: the norms after the branches
        normed = stream if post else blk.norm1(stream)
        q, k, v = blk.attn.project(normed)
        q, k = blk.attn.positioned(q, k, positions)
        bias = blk.attn.logit_bias(positions, q.dtype)               # the relative bias (BEiT, relpos), else None
        logits = (q * blk.attn.scale) @ k.transpose(-2, -1)
        want_attn = (logits if bias is None else logits + bias).softmax(-1)
        heads = want_attn @ v
        merged = blk.attn.merge(heads)
        branch = blk.ls1(blk.norm1(merged) if post else merged)
        hidden = blk.mlp(stream + branch if post else blk.norm2(stream + branch))
        mlp = blk.ls2(blk.norm2(hidden) if post else hidden)
    assert torch.equal(step.out, forward) and torch.equal(step.attn, attn)
    torch.testing.assert_close(fused.out, step.out, rtol=1e-5, atol=1e-5)       # fused kernel == explicit softmax
    assert fused.attn is None and fused.normed is None and fused.q is None
    assert torch.equal(step.normed, normed) and torch.equal(step.q, q) and torch.equal(step.k, k)
    torch.testing.assert_close(step.attn, want_attn, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(step.heads, heads, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(step.attn_branch, branch, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(step.mlp_branch, mlp, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(step.out, stream + branch + mlp, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("family", ["vit", "eva02", "beit", "relpos_rpn", "parallel"])
def test_edits_replace_what_they_name_and_rows_are_the_blocks_rows(family):
    model = tiny(**FAMILIES[family])
    blk = model.blocks[0]
    stream, positions = entering(model, layer=0)
    with torch.no_grad():
        full = blk.step(stream, positions)
        zero_head_0 = blk.step(stream, positions, heads=lambda h: torch.cat([torch.zeros_like(h[:, :1]), h[:, 1:]], 1))
        given = blk.step(stream, heads=full.heads)                     # attention skipped: the heads are given
        no_mlp = blk.step(stream, positions, mlp=torch.zeros_like(stream))
        rows = torch.tensor([0, 5])
        some = blk.step(stream, positions, rows=rows)
        some_given = blk.step(stream, rows=rows, heads=full.heads[:, :, rows])
    assert torch.equal(zero_head_0.heads[:, 0], torch.zeros_like(full.heads[:, 0]))
    assert torch.equal(zero_head_0.heads[:, 1:], full.heads[:, 1:]) and not torch.equal(zero_head_0.out, full.out)
    assert torch.equal(given.out, full.out) and given.normed is None
    torch.testing.assert_close(no_mlp.out, stream + full.attn_branch, rtol=0, atol=0)
    torch.testing.assert_close(some.out, full.out[:, rows], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(some_given.out, full.out[:, rows], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="Unknown taps"):
        blk.step(stream, positions, taps=("attention",))


@pytest.mark.parametrize("family", ["vit", "eva02", "beit", "registers", "relpos", "parallel"])
def test_attention_is_recomputed_from_kept_queries_and_keys(family):
    """What attention on demand keeps: q and k of each layer (positions applied), in 16 bits; any rows later."""
    model = tiny(**FAMILIES[family])
    blk = model.blocks[1]
    stream, positions = entering(model)
    with torch.no_grad():
        step = blk.step(stream, positions, taps=("attn", "normed", "qk"))
        q, k = blk.attn.queries_and_keys(step.normed, positions)
        bias = blk.attn.logit_bias(positions, torch.float32)
        rows = torch.tensor([0, 3, 7])
        again = attention_rows(q, k, blk.attn.scale, bias, rows, chunk=2)
        half = attention_rows(step.q.half(), step.k.half(), blk.attn.scale, bias)
    assert torch.equal(q, step.q) and torch.equal(k, step.k)
    torch.testing.assert_close(again, step.attn[:, :, rows], rtol=1e-5, atol=1e-6)
    # float16 keeps 11 significant bits of q and k: the logits move by ~|q||k|·2⁻¹¹, the probabilities by less
    torch.testing.assert_close(half, step.attn, rtol=0, atol=5e-3)
