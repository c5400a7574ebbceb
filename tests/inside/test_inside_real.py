"""Protects the inside views on real weights and the cat photo (``skimage.data.chelsea``), checkpoint preprocessing.

What the views find (computed here, nothing hard-coded; the docs name the numbers):

- the logit lens of the AugReg ViT-Ti turns to cat classes (tabby, tiger cat, Egyptian cat, …) before the last
  layer, with the target (its top-1, Egyptian cat) among the lens's top 2 there; the DeiT-Ti's lens ranks its
  target first before the last layer;
- the AugReg ViT-Ti has heads whose ablation alone costs the target more than 1 logit.

And that they measure the real model, against timm's ``vit_tiny_patch16_224`` loaded with the same AugReg weights:

- DLA's per-head terms equal timm's own head outputs, caught by a pre-hook on each ``attn.proj`` (the concatenated
  heads) and taken through that head's columns of ``proj``, read by the target's row of the head through the final
  LayerNorm with its scale frozen at timm's own last residual (a pre-hook on ``norm``);
- zero-ablating heads in ours equals zeroing the same slice of timm's ``attn.proj`` input (logits to 1e-5).
"""
from __future__ import annotations

import pytest
import timm
import torch
from safetensors.torch import load_file

import vit
from vit.inside import (ablate, classes_for, direct_logit_attribution, head_importance, logit_lens, rank_of,
                        score_for, trace)

CAT_CLASSES = {"tabby", "tiger cat", "Persian cat", "Siamese cat", "Egyptian cat", "lynx"}
DEIT = "deit_tiny_patch16_224.pipevit_ln_fixedpoint.safetensors"

ABLATION_TOL = 1e-5
HEAD_TERM_TOL = 1e-4       # per-head logit terms of a few logits, float32 in both models


@pytest.fixture(scope="module")
def models(augreg_weights, cat):
    loaded = vit.load(augreg_weights)
    reference = timm.create_model("vit_tiny_patch16_224", pretrained=False)
    reference.load_state_dict(load_file(augreg_weights))
    return loaded, reference.eval(), loaded.preprocess(cat)


def timm_run(reference, x, zeroed: dict[int, list[int]] | None = None) -> tuple[torch.Tensor, list, torch.Tensor]:
    """timm's logits, every block's proj input (1, T, D) (with the listed heads' slices zeroed) and its last residual."""
    zeroed, inputs, final = zeroed or {}, [], []
    dh = reference.embed_dim // reference.blocks[0].attn.num_heads

    def before_proj(layer):
        def hook(module, args):
            z = args[0].clone()
            for h in zeroed.get(layer, []):
                z[..., h * dh:(h + 1) * dh] = 0.0
            inputs.append(z)
            return (z,)
        return hook

    hooks = [b.attn.proj.register_forward_pre_hook(before_proj(l)) for l, b in enumerate(reference.blocks)]
    hooks.append(reference.norm.register_forward_pre_hook(lambda m, args: final.append(args[0])))
    try:
        with torch.no_grad():
            logits = reference(x)
    finally:
        for h in hooks:
            h.remove()
    return logits, inputs, final[0]


def test_dla_head_terms_equal_timms_hooked_heads(models):
    loaded, reference, x = models
    t = trace(loaded.model, x, attention=True)
    score = score_for(classes_for(loaded.model, loaded.labels), t.output)
    target = int(score.index[0])
    dla = direct_logit_attribution(loaded.model, t, score)
    logits, inputs, final = timm_run(reference, x)
    assert int(logits.argmax()) == target
    with torch.no_grad():
        cls = final[0, 0]                                                      # timm's last residual of the CLS token
        sigma = (cls.var(unbiased=False) + reference.norm.eps).sqrt()
        read = reference.norm.weight * reference.head.weight[target]           # the target's row through γ
        read = (read - read.mean()) / sigma                                    # centring is linear; σ frozen
        H, dh = 3, 64
        for l, block in enumerate(reference.blocks):
            for h in range(H):
                head_out = block.attn.proj.weight[:, h * dh:(h + 1) * dh] @ inputs[l][0, 0, h * dh:(h + 1) * dh]
                assert float(dla.heads[l, h]) == pytest.approx(float(read @ head_out), abs=HEAD_TERM_TOL), (l, h)
    assert abs(dla.total() - float(logits[0, target])) <= 1e-4 * abs(dla.logit)


@pytest.mark.parametrize("heads", [[(11, 0), (11, 2)], [(2, 0), (9, 0), (9, 1)], [(0, 1)]])
def test_zero_ablation_equals_timm_with_the_proj_input_sliced(models, heads):
    loaded, reference, x = models
    zeroed: dict[int, list[int]] = {}
    for l, h in heads:
        zeroed.setdefault(l, []).append(h)
    expected, _, _ = timm_run(reference, x, zeroed)
    ours = ablate(loaded.model, x, heads)
    assert (ours - expected).abs().max() <= ABLATION_TOL
    assert (expected - timm_run(reference, x)[0]).abs().max() > 0.1      # the ablation does change the logits


def lens_of(loaded, x):
    """(the lens's top-1 name per layer, the target's rank per layer, the target's name); target = the top-1."""
    t = trace(loaded.model, x)
    classes = classes_for(loaded.model, loaded.labels)
    score = score_for(classes, t.output)
    lens = logit_lens(loaded.model, t, classes, patches=False)
    L = lens.logits.shape[1]
    ranks = rank_of(lens.logits[0], score.index.expand(L)).tolist()
    return [classes.names[i] for i in lens.logits[0].argmax(dim=-1)], ranks, classes.names[int(score.index[0])]


def test_the_augreg_lens_sees_a_cat_before_the_last_layer(models):
    loaded, _, x = models
    top1, ranks, target = lens_of(loaded, x)
    L = len(ranks)
    first_cat = next(l for l, name in enumerate(top1) if name in CAT_CLASSES)
    assert target == "Egyptian cat" and ranks[-1] == 1
    assert first_cat < L - 1 and all(name in CAT_CLASSES for name in top1[first_cat:])
    assert max(ranks[first_cat:]) <= 2 and min(ranks[:first_cat]) > 5       # from far down to the top two
    print(f"AugReg ViT-Ti lens on the cat: top-1 per layer {top1}, target rank per layer {ranks}")


@pytest.mark.slow
def test_the_deit_lens_ranks_its_target_first_before_the_last_layer(real_weights_dir, cat):
    loaded = vit.load(real_weights_dir / DEIT)
    top1, ranks, target = lens_of(loaded, loaded.preprocess(cat))
    first = ranks.index(1)
    assert target in CAT_CLASSES and first < len(ranks) - 1
    print(f"DeiT-Ti lens on the cat: target {target!r} rank per layer {ranks}")


@pytest.mark.slow
def test_some_head_alone_costs_more_than_one_logit(models):
    loaded, _, x = models
    t = trace(loaded.model, x)
    score = score_for(classes_for(loaded.model, loaded.labels), t.output)
    delta = head_importance(loaded.model, t, score)[0]                         # (L, H)
    l, h = divmod(int(delta.argmin()), delta.shape[1])
    assert delta[l, h] < -1.0
    with torch.no_grad():                                                      # and it is what ablating it does
        assert float(score(ablate(loaded.model, x, [(l, h)])) - score(t.output)) == pytest.approx(float(delta[l, h]),
                                                                                               abs=1e-4)
    costly = [(f"{a}.{b}", round(float(delta[a, b]), 2)) for a, b in (delta < -1.0).nonzero().tolist()]
    print(f"AugReg ViT-Ti heads costing the cat more than 1 logit: {costly}")
