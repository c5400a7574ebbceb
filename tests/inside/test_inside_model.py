"""Protects the model side of the inside views (``vit.inside``) on tiny random models of every family, each against
an independent computation: forward hooks on the model's own modules and hand-written formulas.

- lens: the last layer is the model's output; each layer's readout is a hand-written ``norm → head`` on the block's
  output (caught by a forward hook), registers and DeiT-distilled included; each patch's top-1 likewise;
- DLA: the parts sum to the logit (≤ 1e-4 relative) for every linear-readout family, in contrast mode too, and for
  a CLIP tower scored against typed texts; the per-source splits sum to the head's term; MAP pooling is refused;
- ablation: the exact head importance (cached prefixes, batched) equals one naive forward per head, the head's
  channels zeroed (or set to the reference mean) by a pre-hook on the module after the heads (``attn.norm``);
- patching: every head and MLP (and the embedding for pooling readouts) from the other photo reproduces its output;
  nothing patched changes nothing; the exact shares equal a naive loop; the residual estimate and the heads'
  linear estimate equal gradient × difference computed by hand (hooks, ``retain_grad``, ``backward``).
"""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import tiny_models
import vit
from tiny_models import FAMILIES
from vit.explain import ClassTarget, TextTarget
from vit.inside import (NotLinear, ablate, classes_for, direct_logit_attribution, head_importance,
                        head_importance_linear, head_means, linear_readout, logit_lens, parse_heads, patch_heads,
                        patch_residual_estimate, read_patches, run_edited, run_from, score_for, trace)

ALL = {**FAMILIES, "beit_token_norm": {**FAMILIES["beit"], "fc_norm": False}}   # avg pooling both ways
LINEAR = [f for f in ALL if ALL[f].get("readout") not in ("map", "map_all")]   # MAP pooling (SigLIP, PE): no DLA
DLA_TOL = 1e-4        # |Σ parts − logit| / |logit|
EXACT_TOL = 1e-5      # batched vs naive, same float32 arithmetic up to the order of operations


def tiny(family: str, seed: int = 0, **kw) -> vit.VisionTransformer:
    return tiny_models.tiny(seed, **{**ALL[family], **kw})


def image(seed: int = 1) -> torch.Tensor:
    return torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(seed))


def clip_tower(seed: int = 0) -> tuple[vit.VisionTransformer, TextTarget]:
    """A tiny CLIP image tower (projection into an 8-wide space, no classes) and 3 typed 'texts' (random unit
    embeddings; the text side is fixed, what is read is the image)."""
    model = tiny_models.tiny(seed, **FAMILIES["clip"], num_classes=0, proj_dim=8)
    embeddings = F.normalize(torch.randn(3, 8, generator=torch.Generator().manual_seed(5)), dim=-1)
    return model, TextTarget(("a cat", "a dog", "a car"), embeddings, 20.0, 1)


def block_outputs(model, x) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Every block's output, caught by forward hooks on the model's own forward, and the output itself."""
    caught = []
    hooks = [b.register_forward_hook(lambda m, i, o: caught.append(o[0])) for b in model.blocks]
    try:
        with torch.no_grad():
            output = model(x)
    finally:
        for h in hooks:
            h.remove()
    return caught, output


# --- logit lens ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("family", ALL)
def test_lens_last_layer_is_the_output(family):
    model, x = tiny(family), image()
    t = trace(model, x)
    lens = logit_lens(model, t, classes_for(model))
    assert torch.equal(lens.logits[0, -1], t.output[0])
    with torch.no_grad():
        torch.testing.assert_close(lens.logits[0, -1], model(x)[0], rtol=0, atol=1e-5)
    assert lens.patches.shape == (1, 2, 16) and lens.approximate == (model.cfg.readout in ("map", "map_all"))


@pytest.mark.parametrize("family", ["vit", "registers", "distilled"])
def test_lens_layers_equal_norm_then_head_by_hand(family):
    model, x = tiny(family, depth=3), image()
    outputs, _ = block_outputs(model, x)
    lens = logit_lens(model, trace(model, x), classes_for(model))
    n = model.cfg.num_prefix_tokens
    with torch.no_grad():
        for l, tokens in enumerate(outputs):
            normed = F.layer_norm(tokens, (32,), model.norm.weight, model.norm.bias, model.norm.eps)
            hand = normed[:, 0] @ model.head.weight.T + model.head.bias
            patches = normed[:, n:] @ model.head.weight.T + model.head.bias            # (1, 16, K)
            if family == "distilled":
                hand = (hand + normed[:, 1] @ model.head_dist.weight.T + model.head_dist.bias) / 2
                patches = (patches + normed[:, n:] @ model.head_dist.weight.T + model.head_dist.bias) / 2
            torch.testing.assert_close(lens.logits[:, l], hand, rtol=0, atol=1e-5)
            assert torch.equal(lens.patches[:, l], patches.argmax(dim=-1))


def test_patch_lens_of_a_clip_tower_reads_the_texts():
    model, texts = clip_tower()
    x = image()
    classes = classes_for(model, (), texts)
    assert classes.names == texts.texts
    t = trace(model, x)
    with torch.inference_mode():
        patches = read_patches(model, t.residual[-1], classes)                         # (1, 16, 3)
        embedded = model.norm(t.residual[-1][:, 1:]) @ model.proj.weight.T         # (1, 16, 8)
        hand = 20.0 * F.normalize(embedded, dim=-1) @ texts.embeddings.T           # scaled cosine to each text
    torch.testing.assert_close(patches, hand, rtol=0, atol=1e-4)


# --- direct logit attribution -----------------------------------------------------------------------------------

def assert_sums(d, logit: float) -> None:
    assert abs(d.logit - logit) <= 1e-5 * max(1.0, abs(logit))
    assert abs(d.total() - d.logit) <= DLA_TOL * abs(d.logit), (d.total(), d.logit)


@pytest.mark.parametrize("family", LINEAR)
def test_dla_parts_sum_to_the_logit(family):
    model, x = tiny(family), image()
    classes = classes_for(model)
    t = trace(model, x, attention=True)
    rows = {"cls": 1, "distilled": 2}                                  # the rows kept: a class token's, or all
    read = rows.get(model.cfg.readout, t.layout.num_tokens)
    H = model.cfg.num_heads
    assert t.attention[0].shape == (1, H, read, t.layout.num_tokens)
    for target, contrast in ((None, None), (ClassTarget(2), ClassTarget(4))):
        score = score_for(classes, t.output, target, contrast)
        d = direct_logit_attribution(model, t, score)
        with torch.no_grad():
            logits = model(x)[0]
        a = int(score.index[0])
        assert_sums(d, float(logits[a] - (logits[4] if contrast else 0.0)))
        assert d.heads.shape == (2, H) and d.mlp.shape == (2,) and d.attention_bias.shape == (2,)
        torch.testing.assert_close(d.sources.sum(dim=-1), d.heads, rtol=1e-5, atol=1e-6)


def test_dla_of_a_clip_tower_against_typed_texts():
    model, texts = clip_tower()
    x = image()
    classes = classes_for(model, (), texts)
    t = trace(model, x, attention=True)
    d = direct_logit_attribution(model, t, score_for(classes, t.output, texts))
    with torch.no_grad():
        assert_sums(d, float(texts.logits(model(x))[0, 1]))
    torch.testing.assert_close(d.sources.sum(dim=-1), d.heads, rtol=1e-5, atol=1e-6)


def test_dla_refuses_map_pooling():
    model = tiny("siglip")
    t = trace(model, image(), attention=True)
    with pytest.raises(NotLinear, match="MAP"):
        direct_logit_attribution(model, t, score_for(classes_for(model), t.output))


def test_dla_embedding_share_reads_the_class_token_and_its_position():
    """For a CLS readout the embedding's share is the readout of the class token + its position embedding alone."""
    model = tiny("vit")
    t = trace(model, image(), attention=True)
    score = score_for(classes_for(model), t.output, ClassTarget(0))
    d = direct_logit_attribution(model, t, score)
    u, _ = linear_readout(model, t.residual[-1][0], score.classes, 0)
    cls = (model.cls_token[0, 0] + model.pos_embed[0, 0]).detach()
    assert u[1:].abs().max() == 0
    assert d.embedding == pytest.approx(float(u[0] @ cls), rel=1e-5)


# --- ablation ---------------------------------------------------------------------------------------------------

def naive_ablation(model, x, layer: int, head: int, value: torch.Tensor | None = None) -> torch.Tensor:
    """The output with head ``head`` of block ``layer`` replaced by a pre-hook on the module that receives the
    concatenated heads (attn.norm: EVA-02's sub-LN, an identity elsewhere), one full forward."""
    dh = model.cfg.attention_head_dim

    def hook(module, args):
        z = args[0].clone()
        z[..., head * dh:(head + 1) * dh] = 0.0 if value is None else value
        return (z,)

    handle = model.blocks[layer].attn.norm.register_forward_pre_hook(hook)
    try:
        with torch.no_grad():
            return model(x)
    finally:
        handle.remove()


@pytest.mark.parametrize("family", ALL)
def test_exact_head_importance_equals_one_ablation_at_a_time(family):
    model, x = tiny(family, depth=3), torch.cat([image(1), image(2)])    # two images in one batch
    classes = classes_for(model)
    t = trace(model, x)
    score = score_for(classes, t.output)
    delta = head_importance(model, t, score)                                     # (2, 3, H)
    with torch.no_grad():
        clean = score(model(x))
    for l in range(3):
        for h in range(model.cfg.num_heads):
            naive = score(naive_ablation(model, x, l, h)) - clean
            torch.testing.assert_close(delta[:, l, h], naive, rtol=0, atol=EXACT_TOL)
            torch.testing.assert_close(score(ablate(model, x, [(l, h)])) - clean, naive, rtol=0, atol=EXACT_TOL)


def test_mean_ablation_uses_the_reference_mean_per_position():
    model = tiny("registers", depth=3)
    reference = [torch.cat([image(s), image(s + 1)]) for s in (10, 12)]     # 4 reference images in 2 batches
    means = head_means(model, reference)                                      # (L, H, T, Dh)
    t = trace(model, torch.cat(reference))
    torch.testing.assert_close(means[1, 0], t.heads[1][:, 0].mean(dim=0), rtol=0, atol=1e-6)
    x = image()
    t = trace(model, x)
    score = score_for(classes_for(model), t.output)
    delta = head_importance(model, t, score, means)
    for l, h in ((0, 1), (2, 0)):
        naive = score(naive_ablation(model, x, l, h, means[l, h])) - score(t.output)      # means[l, h]: (T, Dh)
        torch.testing.assert_close(delta[:, l, h], naive, rtol=0, atol=EXACT_TOL)
    assert not torch.allclose(delta, head_importance(model, t, score))     # mean ablation is not zero ablation


def test_linear_estimate_is_gradient_times_minus_the_head_output_by_hand():
    model, x = tiny("eva02", depth=3), image()
    t = trace(model, x, score=None)
    score = score_for(classes_for(model), t.output)
    estimate = head_importance_linear(trace(model, x, score=score))           # (1, L, H)
    caught = []

    def keep(module, args):
        z = args[0]
        z.retain_grad()
        caught.append(z)

    hooks = [b.attn.norm.register_forward_pre_hook(keep) for b in model.blocks]
    try:
        score(model(x)).sum().backward()
    finally:
        for h in hooks:
            h.remove()
        model.zero_grad(set_to_none=True)
    for l, z in enumerate(caught):                                            # z: (1, T, D) concatenated heads
        per_head = (z.grad * (0 - z.detach()))[0].reshape(z.shape[1], 2, 16).sum(dim=(0, 2))
        torch.testing.assert_close(estimate[0, l], per_head, rtol=1e-4, atol=1e-6)


# --- patching ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("family", ALL)
def test_patching_everything_reproduces_the_other_photo(family):
    model = tiny(family)
    x, other = image(1), image(2)
    mine, theirs = trace(model, x), trace(model, other)
    heads = {l: (lambda z, l=l: theirs.heads[l]) for l in range(2)}
    mlps = dict(enumerate(theirs.mlp))
    # a class token reads a position whose embedding is the same in both photos; a pooled readout reads patches too
    embedding = None if model.cfg.readout == "cls" else theirs.residual[0]
    with torch.no_grad():
        torch.testing.assert_close(run_edited(model, x, heads, mlps, embedding), model(other), rtol=0, atol=1e-5)
        torch.testing.assert_close(run_edited(model, x), model(x), rtol=0, atol=1e-5)     # nothing patched
    for l in range(2):        # continued from any block with its own heads: the cached prefix changes nothing
        torch.testing.assert_close(run_from(model, mine.residual[l], l, mine.heads[l], mine.positions), mine.output,
                                   rtol=0, atol=1e-5)


@pytest.mark.parametrize("family", ["vit", "eva02", "beit"])
def test_exact_patching_shares_equal_a_naive_loop(family):
    model = tiny(family, depth=3)
    x, other = image(1), image(2)
    mine, theirs = trace(model, x), trace(model, other)
    score = score_for(classes_for(model), theirs.output)                      # the other photo's top-1
    shares = patch_heads(model, mine, theirs, score)                          # (L, H)
    s_this, s_other = float(score(mine.output)[0]), float(score(theirs.output)[0])
    for l in range(3):
        for h in range(2):
            other_head = theirs.heads[l][0, h]                                # (T, Dh)
            patched = float(score(naive_ablation(model, x, l, h, other_head))[0])
            assert shares[l, h] == pytest.approx((patched - s_this) / (s_other - s_this), abs=1e-4)


def test_residual_estimate_is_gradient_times_difference_by_hand():
    model = tiny("registers", depth=3)
    x, other = image(1), image(2)
    theirs = trace(model, other)
    score = score_for(classes_for(model), theirs.output)
    estimate = patch_residual_estimate(trace(model, x, score=score), theirs, score)   # (L, T)
    caught = []

    def keep(module, args):
        args[0].retain_grad()
        caught.append(args[0])

    hooks = [b.register_forward_pre_hook(keep) for b in model.blocks]
    try:
        s = score(model(x))
        s.sum().backward()
    finally:
        for h in hooks:
            h.remove()
        model.zero_grad(set_to_none=True)
    with torch.no_grad():
        gap = float(score(model(other))[0] - s[0])
        for l, stream in enumerate(caught):
            hand = (stream.grad[0] * (theirs.residual[l][0] - stream.detach()[0])).sum(dim=-1) / gap
            torch.testing.assert_close(estimate[l], hand, rtol=1e-4, atol=1e-6)
    registers = ALL["registers"]["num_reg_tokens"]
    assert estimate.shape == (3, registers + 1 + 16)   # registers, the class token, 4×4 patches


# --- naming heads -----------------------------------------------------------------------------------------------

def test_heads_are_named_layer_dot_head():
    assert parse_heads("11.0, 11.2,3.1", 12, 3) == [(11, 0), (11, 2), (3, 1)]
    assert parse_heads(["0.0", "0.0"], 12, 3) == [(0, 0)]
    for bad, says in (("11-0", "Bad head '11-0'"), ("12.0", "No head 12.0"), ("0.3", "No head 0.3"),
                      ("-1.0", "Bad head '-1.0'"), ("", "No heads given")):
        with pytest.raises(ValueError, match=says) as error:
            parse_heads(bad, 12, 3)
        assert "layers 0 to 11 and heads 0 to 2" in str(error.value)
