"""Protects the model-side half of explanations (vit.explain): the relevance rules on hand-computed cases,
the rule-wired views (same logits as the model, the model untouched, unknown module kinds refused), the
gradient pass (block l's gradient belongs to block l), the readouts, and the targets.
"""
from __future__ import annotations

import threading

import pytest
import torch
import torch.nn as nn

import vit
from tiny_models import tiny
from vit.explain import (ATTN_LRP, CP_LRP, ClassTarget, Target, class_target, gradient_pass, readout,
                         relevance_pass)
from vit.explain.rules import ElementwiseIdentity, LayerNormIdentity, scale_gradient, without_parameter_grads

def image(h: int = 32, w: int = 32, seed: int = 1) -> torch.Tensor:
    return torch.randn(1, 3, h, w, generator=torch.Generator().manual_seed(seed))


# --- rules on hand-computed cases ----------------------------------------------------------------------------

def test_identity_rule_passes_each_elements_relevance_unchanged():
    """GELU with the identity rule: input · grad_in = output · grad_out element by element (AttnLRP Eq. 9)."""
    x = torch.tensor([1.0, -2.0, 0.5, 3.0], requires_grad=True)
    y = ElementwiseIdentity(nn.GELU())(x)
    g = torch.tensor([1.0, 2.0, -1.0, 0.5])
    (grad,) = torch.autograd.grad(y, x, g)
    torch.testing.assert_close(y, nn.functional.gelu(x))                      # forward unchanged
    torch.testing.assert_close(x * grad, y * g)


def test_layernorm_rule_treats_the_std_as_a_constant():
    """x = [1, 3], weight 1, bias 0: mean 2, std 1, y = [-1, 1]. With std constant, ∂y/∂x = (I - ½·11ᵀ)/std,
    so grad_out [1, 0] gives [.5, -.5]; the true LayerNorm gradient, with the std's own derivative, is [0, 0]."""
    ln = nn.LayerNorm(2, eps=0.0)
    x = torch.tensor([1.0, 3.0], requires_grad=True)
    y = LayerNormIdentity(ln)(x)
    torch.testing.assert_close(y, torch.tensor([-1.0, 1.0]))
    (grad,) = torch.autograd.grad(y, x, torch.tensor([1.0, 0.0]))
    torch.testing.assert_close(grad, torch.tensor([0.5, -0.5]))
    (true_grad,) = torch.autograd.grad(ln(x), x, torch.tensor([1.0, 0.0]))
    torch.testing.assert_close(true_grad, torch.tensor([0.0, 0.0]))


def test_uniform_rule_halves_a_bilinear_products_relevance_for_each_factor():
    """z = a·b = 6 (a = 2, b = 3): gradient × input gives a and b each the whole 6; scaling each gradient by 1/2
    (the uniform rule) gives each 3, and 3 + 3 = z is conserved."""
    a, b = torch.tensor(2.0, requires_grad=True), torch.tensor(3.0, requires_grad=True)
    z = scale_gradient(a, 0.5) * scale_gradient(b, 0.5)
    ga, gb = torch.autograd.grad(z, (a, b))
    assert float(a.detach() * ga) == 3.0 and float(b.detach() * gb) == 3.0 and float(z.detach()) == 6.0


def test_softmax_gradient_times_input_is_the_papers_softmax_rule():
    """AttnLRP Prop. 3.1: R_in = x ⊙ (R_out - s·ΣR_out). In gradient × input form the incoming gradient is
    R_out / s, and the plain softmax gradient then gives exactly that, which is why no softmax rule is wired."""
    x = torch.tensor([1.0, 2.0, 0.5], requires_grad=True)
    s = x.softmax(-1)
    r_out = torch.tensor([0.3, -0.1, 0.6])
    (grad,) = torch.autograd.grad(s, x, r_out / s.detach())
    torch.testing.assert_close(x * grad, x.detach() * (r_out - s.detach() * r_out.sum()))


# --- views -------------------------------------------------------------------------------------------------------

CONFIGS = {
    "cls": {},
    "registers": dict(num_reg_tokens=4),
    "distilled": dict(distilled=True),
    "avg_no_cls": dict(readout="mean", class_token=False),
    "avg_fc_norm": dict(readout="mean", fc_norm=True),
    "pre_logits_tanh": dict(representation_size=16),
    "layer_scale": dict(layer_scale=True),
}


@pytest.mark.parametrize("name", CONFIGS)
def test_every_pass_explains_the_models_own_logits(name):
    """The views run the model's own forward with rules that change only gradients: same output as model(x),
    for every prefix layout and head, on a non-square input (32×48: a 4×6 grid)."""
    model = tiny(**CONFIGS[name])
    x = image(32, 48)
    with torch.no_grad():
        logits = model(x)
    g = gradient_pass(model, x, ClassTarget(2))
    for p in (g, relevance_pass(model, x, ClassTarget(2), ATTN_LRP), relevance_pass(model, x, ClassTarget(2), CP_LRP)):
        torch.testing.assert_close(p.output, logits, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(p.score, logits[:, 2], atol=1e-5, rtol=1e-5)
    T = model.cfg.num_prefix_tokens + 24
    attention = torch.stack(g.attention, dim=1)                     # (B, L, H, T, T): one sequence, so stackable
    assert attention.shape == torch.stack(g.attention_grad, dim=1).shape == (1, 2, 2, T, T)
    assert g.tokens.shape == g.tokens_grad.shape == (1, T, 32)
    with torch.no_grad():
        attn = model.forward_with_attention(x).attention
    torch.testing.assert_close(attention, attn, atol=1e-6, rtol=1e-5)


def test_the_model_is_left_as_it_was():
    model = tiny()
    before = [(id(p), p.requires_grad, p.detach().clone()) for p in model.parameters()]
    modules = list(model.modules())
    gradient_pass(model, image())
    relevance_pass(model, image())
    assert [(id(p), p.requires_grad) for p in model.parameters()] == [(i, r) for i, r, _ in before]
    assert all(torch.equal(p, v) for p, (_, _, v) in zip(model.parameters(), before))
    assert list(model.modules()) == modules and all(p.grad is None for p in model.parameters())
    assert not any(m._forward_hooks or m._backward_hooks for m in model.modules())


def test_without_parameter_grads_shares_storage_and_records_no_weight():
    model = tiny()
    view = without_parameter_grads(model)
    params = list(view.parameters())
    assert len(params) == len(list(model.parameters())) and not any(p.requires_grad for p in params)
    assert view.head.weight.data_ptr() == model.head.weight.data_ptr() and model.head.weight.requires_grad


def test_passes_work_when_no_parameter_requires_grad_and_under_inference_mode():
    model = tiny()
    expected = gradient_pass(model, image()).attention_grad
    model.requires_grad_(False)
    with torch.inference_mode():
        x = image()
        got = gradient_pass(model, x).attention_grad
        r = relevance_pass(model, x).relevance
    torch.testing.assert_close(got, expected)
    assert r.shape == (1, 16)


def test_a_module_kind_without_a_rule_is_refused():
    model = tiny()
    model.blocks[1].mlp.act = nn.Softsign()
    with pytest.raises(ValueError, match=r"No relevance rule for blocks\.1\.mlp\.act \(Softsign\)"):
        relevance_pass(model, image())
    gradient_pass(model, image())        # plain gradients need no rule


def test_an_attention_with_parts_the_rule_does_not_reproduce_is_refused():
    model = tiny()
    model.blocks[0].attn.q_norm = nn.LayerNorm(16)     # as a q/k-norm block would have
    with pytest.raises(ValueError, match="also has q_norm"):
        relevance_pass(model, image())


def test_explanations_are_refused_in_training_mode():
    with pytest.raises(ValueError, match="eval mode"):
        gradient_pass(tiny().train(), image())


def test_concurrent_passes_do_not_mix():
    model = tiny()
    x1, x2 = image(seed=1), image(seed=2)
    alone = [gradient_pass(model, x).attention_grad for x in (x1, x2)]
    got = {}

    def run(i, x):
        for _ in range(3):
            got[i] = gradient_pass(model, x).attention_grad

    threads = [threading.Thread(target=run, args=(i, x)) for i, x in enumerate((x1, x2))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    torch.testing.assert_close(got[0], alone[0])
    torch.testing.assert_close(got[1], alone[1])


# --- block l's gradient is block l's ---------------------------------------------------------------------------

def test_each_blocks_gradient_is_the_derivative_through_that_block():
    """Finite differences in float64: add ε·D to block l's attention (a forward hook on its attn_drop, on the
    explicit-softmax path) and the score moves by ε·⟨∂score/∂A_l, D⟩ for that l, not for the mirrored block."""
    model = tiny(depth=3).double()
    model.fused_attn = False
    x = image().double()
    g = gradient_pass(model, x, ClassTarget(1))
    T = g.attention[0].shape[-1]
    D = torch.randn(1, 2, T, T, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    eps = 1e-6

    def score_with(layer: int, sign: float) -> float:
        hook = model.blocks[layer].attn.attn_drop.register_forward_hook(lambda m, i, o: o + sign * eps * D)
        try:
            with torch.no_grad():
                return float(model(x)[0, 1])
        finally:
            hook.remove()

    for layer in range(3):
        numeric = (score_with(layer, 1) - score_with(layer, -1)) / (2 * eps)
        assert numeric == pytest.approx(float((g.attention_grad[layer][0] * D[0]).sum()), rel=1e-5, abs=1e-9)
    mirrored = float((g.attention_grad[2][0] * D[0]).sum())
    assert (score_with(0, 1) - score_with(0, -1)) / (2 * eps) != pytest.approx(mirrored, rel=1e-3)


# --- readouts and targets ---------------------------------------------------------------------------------------

def test_readout_weights_follow_the_pooling():
    def weights(**kw):
        m = tiny(**kw)
        return readout(m, m.token_layout(32, 32))

    assert weights().weights.tolist() == [1.0] + [0.0] * 16 and weights().description == "the CLS token"
    torch.testing.assert_close(weights(readout="mean", class_token=False).weights, torch.full((16,), 1 / 16))
    avg = weights(readout="mean")
    assert avg.weights[0] == 0 and avg.description == "the mean of the patch tokens"
    dist = weights(distilled=True)
    assert dist.weights[:2].tolist() == [0.5, 0.5] and dist.weights[2:].sum() == 0 and "distillation" in dist.description
    reg = weights(num_reg_tokens=4)
    assert reg.weights[0] == 1 and reg.weights.sum() == 1


def test_class_target_scores_the_logit_and_defaults_to_top1():
    logits = torch.tensor([[1.0, 3.0, 2.0], [5.0, 0.0, 1.0]])
    assert isinstance(ClassTarget(1), Target)
    torch.testing.assert_close(ClassTarget(2).score(logits), torch.tensor([2.0, 1.0]))
    torch.testing.assert_close(ClassTarget().score(logits), torch.tensor([3.0, 5.0]))       # each row's top-1
    torch.testing.assert_close(ClassTarget(0).probability(logits), logits.softmax(1)[:, 0])
    assert ClassTarget(7, "x").describe() == {"index": 7, "name": "x"}
    with pytest.raises(ValueError, match="0 <= class < 3"):
        ClassTarget(3).score(logits)


def test_gradient_pass_defaults_to_the_top1_class():
    model = tiny()
    x = image()
    top = int(model(x).argmax())
    torch.testing.assert_close(gradient_pass(model, x).attention_grad, gradient_pass(model, x, ClassTarget(top)).attention_grad)


def test_class_names_resolve_and_errors_show_close_matches_not_the_whole_list():
    labels = vit.imagenet_labels()
    assert class_target(labels, "Tabby") == ClassTarget(281, "tabby")
    assert class_target(labels, " 967 ") == ClassTarget(967, "espresso")
    with pytest.raises(ValueError) as error:
        class_target(labels, "tabbby")
    text = str(error.value)
    assert "1000 classes" in text and "'tabby' (281)" in text and len(text) < 300
    with pytest.raises(ValueError, match="numbered 0 to 999"):
        class_target(labels, 1000)
    with pytest.raises(ValueError, match=r"'crane' names 2 classes \(1, 3\); give the index"):
        class_target(["a", "crane", "b", "Crane"], "crane")
    with pytest.raises(ValueError, match="no classes"):
        class_target([], "cat")
