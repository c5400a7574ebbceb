"""Protects the claim that every explanation method runs, and is right, on every model family the project loads:
CLIP (QuickGELU, norm_pre, no patch bias, projection), SigLIP (no CLS, MAP probe), EVA-02 (rope, SwiGLU with an
inner LayerNorm, q/v biases), BEiT (relative position bias, layer scale, mean pooling), and registers, a
distillation token and a 224×320 input.

- the query: GAE, gradient rollout, attention and rollout read the same query as ``viz.maps.readout`` (the probe
  for SigLIP, the mean of the patch rows for BEiT), checked against ``readout_rollout_map`` /
  ``readout_attention_map`` on the same arrays;
- LRP: the rule-wired views compute the model's own output; CP-LRP conserves exactly on bias-free models of
  every family (sum of patch relevance = the explained logit); AttnLRP does not (its softmax rule does not
  conserve), but each new rule is checked by hand: SwiGLU's product split 1/2 : 1/2 (CP-LRP: all to the value,
  as lxt), the probe's k and v gradients × 1/2 (CP-LRP: 0 and 1), q/k/v × 1/4, 1/4, 1/2 through rope and
  relative bias, gradient × input unchanged through the rotation;
- references: CP-LRP equals lxt's rules on open_clip's own CLIP image tower (QuickGELU patched with lxt's
  identity rule); Grad-CAM equals pytorch-grad-cam on timm's SigLIP with a reshape transform that drops no token.
"""
from __future__ import annotations

import numpy as np
import pytest
import timm
import torch
import torch.nn as nn
from pytorch_grad_cam import GradCAM
from pytorch_grad_cam.utils.model_targets import ClassifierOutputTarget

import vit
import tiny_models
from reference_models import randomize_, save_timm
from viz.explain.explainer import explain_map, explain_tensor
from viz.explain import METHODS
from viz.maps.readout import readout_attention_map, readout_rollout_map
from viz.maps.rollout import fuse_heads
from vit.explain import ATTN_LRP, CP_LRP, ClassTarget, gradient_pass, relevance_pass
from vit.explain.rules import rule_view, without_parameter_grads
from vit.model import PatchEmbed
from vit.positions import apply_rope, rope_tables

FAMILIES = {
    "clip": dict(norm_pre=True, mlp_act="quick_gelu", patch_bias=False),
    "siglip": dict(class_token=False, readout="map", mlp_act="gelu_tanh"),
    "eva02": dict(rope=True, mlp_act="swiglu", mlp_norm=True, k_bias=False, attn_norm=True),
    "beit": dict(pos_embed_kind="none", rel_pos_bias=True, layer_scale=True, readout="mean", fc_norm=True,
                 k_bias=False),
    "registers": dict(num_reg_tokens=4),
    "distilled": dict(distilled=True),
    **{name: tiny_models.FAMILIES[name] for name in ("dinov3", "rope_vit", "rope_mixed_ape", "rope_gap", "relpos",
                                                      "relpos_rpn", "relpos_cls", "parallel", "naflex", "naflex_reg",
                                                      "cls_mean", "mean_all", "map_all", "no_final_norm",
                                                      "registers_pos")},
}
QUERY = {"clip": "cls", "siglip": "map", "eva02": "cls", "beit": "mean", "registers": "cls", "distilled": "distilled",
         "cls_mean": "cls_mean", "mean_all": "mean_all", "map_all": "map_all", "no_final_norm": "cls",
         "registers_pos": "mean",
         "dinov3": "cls", "rope_vit": "cls", "rope_mixed_ape": "cls", "rope_gap": "mean", "relpos": "mean",
         "relpos_rpn": "mean", "relpos_cls": "cls", "parallel": "cls", "naflex": "map", "naflex_reg": "mean"}
CONSERVATION_TOL = 1e-4   # |Σ relevance - logit| / |logit| (float32; CP-LRP conserves exactly up to rounding)


def tiny(family: str, seed: int = 0, **kw) -> vit.VisionTransformer:
    """A 2-block model of the family, every parameter perturbed (no zero bias, probe or table hides a mistake)."""
    return tiny_models.tiny(seed, **{**FAMILIES[family], **kw})


def image(h: int = 32, w: int = 32, seed: int = 1) -> torch.Tensor:
    return torch.randn(1, 3, h, w, generator=torch.Generator().manual_seed(seed))


# --- every method, every family -------------------------------------------------------------------------------

@pytest.mark.parametrize("family", FAMILIES)
def test_every_method_runs_on_every_family(family):
    model, x = tiny(family), image()
    e = explain_tensor(model, x, ClassTarget(2))
    assert set(e.maps) == set(METHODS) and e.query == QUERY[family]
    for name, values in e.maps.items():
        assert values.shape == (4, 4) and np.isfinite(values).all(), name
    for name in ("gae", "attnlrp", "cp_lrp", "grad_rollout", "gradcam"):     # class-specific, and not all zero
        assert np.abs(e.map(name)).max() > 0, name
    with torch.no_grad():
        assert e.score == pytest.approx(float(model(x)[0, 2]), rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("family", ["clip", "siglip", "eva02", "registers", "relpos", "naflex"])
def test_a_224x320_input_gives_14x20_maps(family):
    e = explain_tensor(tiny(family, patch_size=16), image(224, 320), ClassTarget(1))
    assert {k: v.shape for k, v in e.maps.items()} == {k: (14, 20) for k in METHODS}


@pytest.mark.parametrize("family", ["siglip", "beit", "clip"])
def test_attention_maps_read_the_same_query_as_the_readout_maps(family):
    """attention and rollout of the explanation = viz.maps.readout's maps for the model's query; GAE and
    gradient rollout read their matrices through the same row (for SigLIP p·R with p the probe's attention)."""
    model, x = tiny(family), image()
    e = explain_tensor(model, x, ClassTarget(0))
    with torch.no_grad():
        capture = model.forward_with_attention(x)
    attn = capture.attention[0].numpy()
    probe = None if capture.probe_attention is None else capture.probe_attention[0].numpy()
    n, grid = model.cfg.num_prefix_tokens, (4, 4)
    query = QUERY[family]
    np.testing.assert_allclose(e.map("attention"), readout_attention_map(attn, n, grid, query, probe), rtol=1e-5,
                               atol=1e-7)
    np.testing.assert_allclose(e.map("rollout"), readout_rollout_map(fuse_heads(attn, "mean"), n, grid, query, probe),
                               rtol=1e-4, atol=1e-7)
    g = gradient_pass(model, x, ClassTarget(0))
    A, G = (torch.stack(blocks, dim=1)[0].numpy() for blocks in (g.attention, g.attention_grad))   # (L, H, T, T)
    R = np.eye(A.shape[-1], dtype=np.float32)
    for a, grad in zip(A, G):                                   # GAE by its definition, R ← R + mean_h((∇A⊙A)⁺)·R
        R = R + np.maximum(a * grad, 0).mean(axis=0) @ R
    row = {"cls": R[0], "mean": R[n:].mean(axis=0), "map": None if probe is None else probe.mean(axis=0) @ R}[query]
    np.testing.assert_allclose(e.map("gae"), row[n:].reshape(grid), rtol=1e-4, atol=1e-7)


def test_the_siglip_probe_row_is_not_a_patch_row():
    """Without a CLS token, token 0 is the first patch: reading its row would be a silent wrong map."""
    model, x = tiny("siglip"), image()
    g = gradient_pass(model, x, ClassTarget(0))
    assert g.readout.query == "map" and g.probe is not None
    torch.testing.assert_close(g.readout.weights, g.probe[0].mean(dim=0))
    assert float(g.readout.weights.sum()) == pytest.approx(1.0, abs=1e-5) and g.readout.weights[0] < 0.9


# --- LRP rules -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("rules", [ATTN_LRP, CP_LRP], ids=["attnlrp", "cp_lrp"])
@pytest.mark.parametrize("family", FAMILIES)
def test_rule_views_compute_the_models_own_output(family, rules):
    model, x = tiny(family), image()
    view = rule_view(without_parameter_grads(model), rules, lambda name, m: m if isinstance(m, PatchEmbed) else None)
    with torch.no_grad():
        torch.testing.assert_close(view(x), model(x), rtol=1e-5, atol=1e-6)


def bias_free(family: str) -> vit.VisionTransformer:
    """The family's tiny model with every bias-like constant zero: linear and LayerNorm biases, q/v biases,
    relative bias table, CLS/DIST/register tokens and position embeddings (everything that absorbs relevance)."""
    model = tiny(family)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or name.endswith("_token") or "pos_embed" in name or \
                    "relative_position_bias_table" in name:
                p.zero_()
    return model


@pytest.mark.parametrize("family", FAMILIES)
def test_cp_lrp_conserves_the_logit_on_every_family(family):
    """Σ_patches relevance = the explained logit: every CP-LRP rule conserves (identity rules, LayerNorm with a
    constant std, rotation, layer scale, mean pooling, the gated product and attention weights as constants)."""
    model, x = bias_free(family), image()
    for cls in (0, 3):
        r = relevance_pass(model, x, ClassTarget(cls), CP_LRP)
        logit = float(r.score[0])
        assert abs(float(r.relevance.sum()) - logit) <= CONSERVATION_TOL * abs(logit), (cls, float(r.relevance.sum()), logit)


@pytest.mark.parametrize("family", ["eva02", "siglip"])
def test_attnlrp_does_not_conserve_through_the_softmax_but_cp_lrp_does(family):
    model, x = bias_free(family), image()
    a = relevance_pass(model, x, ClassTarget(1), ATTN_LRP)
    assert abs(float(a.relevance.sum()) - float(a.score[0])) > 1e-3 * abs(float(a.score[0]))


def weight_grads(module: nn.Module, rules, linear: str, x: torch.Tensor, run) -> tuple[torch.Tensor, torch.Tensor]:
    """(under the rule, plain) gradient of the weight of child ``linear`` for the score Σ run(module, x)·w.

    The rows of a packed projection's weight gradient are Σ_t ∂score/∂(q|k|v)_t ⊗ x_t, so a rule that scales the
    gradient of q, k or v scales exactly its rows; the weight is read from the model's own parameters (whatever
    path uses it, F.linear with q/v biases included)."""
    weight = dict(module.named_modules())[linear].weight
    out = []
    for m in (rule_view(module, rules, lambda n, c: None), module):
        y = run(m, x)
        w = torch.linspace(-1, 1, y.numel()).reshape(y.shape)
        out.append(torch.autograd.grad((y * w).sum(), [weight])[0])
    return tuple(out)


def test_swiglu_rule_splits_the_gated_product_in_half_and_cp_lrp_gives_it_to_the_value():
    """h = SiLU(a) ⊙ b: AttnLRP gives a and b each half of h's relevance (SiLU's identity rule on a),
    R_a = R_b = ½·h·g; CP-LRP (lxt's gated-MLP rule) stops the gate: R_a = 0, R_b = h·g."""
    mlp = tiny("eva02").blocks[0].mlp
    x = torch.randn(1, 3, 32, generator=torch.Generator().manual_seed(4)).requires_grad_()
    store = {}

    def capture(name):
        return lambda m, i, o: store.__setitem__(name, o)

    for rules, (share_a, share_b) in ((ATTN_LRP, (0.5, 0.5)), (CP_LRP, (0.0, 1.0))):
        view = rule_view(without_parameter_grads(mlp), rules, lambda n, m: None)
        hooks = [view.fc1_g.register_forward_hook(capture("a")), view.fc1_x.register_forward_hook(capture("b")),
                 view.drop1.register_forward_hook(capture("h"))]
        y = view(x)
        for h in hooks:
            h.remove()
        ga, gb, gh = torch.autograd.grad(y.sum(), [store["a"], store["b"], store["h"]])
        R_h = store["h"] * gh
        torch.testing.assert_close(store["a"] * ga, share_a * R_h, rtol=1e-4, atol=1e-7)
        torch.testing.assert_close(store["b"] * gb, share_b * R_h, rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("family", ["eva02", "beit"])
def test_attention_rule_scales_q_k_v_gradients_through_rope_and_relative_bias(family):
    """The packed qkv's gradient under AttnLRP is (¼, ¼, ½) × the plain gradient and under CP-LRP (0, 0, 1) ×:
    the rotation and the relative bias pass the gradient as the plain model does (linear map, constant)."""
    model = tiny(family, attn_norm=False)      # no sub-LayerNorm after the heads: its rule would change the gradient
    blk = model.blocks[1]                                   # its own parameters, requiring grad
    tokens = torch.randn(1, 17, 32, generator=torch.Generator().manual_seed(5))
    positions = model.token_positions(32, 32)
    for rules, scales in ((ATTN_LRP, (0.25, 0.25, 0.5)), (CP_LRP, (0.0, 0.0, 1.0))):
        got, want = weight_grads(blk.attn, rules, "qkv", tokens, lambda m, t: m(t, False, positions)[0])
        for i, s in enumerate(scales):                      # rows 0:D of q, D:2D of k, 2D:3D of v
            torch.testing.assert_close(got[32 * i:32 * (i + 1)], s * want[32 * i:32 * (i + 1)], rtol=1e-4, atol=1e-7)
        assert want.abs().min(dim=1).values.max() > 0


def test_the_probe_rule_gives_k_and_v_half_each_and_cp_lrp_all_to_v():
    """The probe's query is a constant: its logits are linear in k, so k takes A's whole half (gradient × ½), v
    the other half (× ½); CP-LRP: k × 0, v × 1. The residual MLP is cut off (its own rules would change the
    gradient that reaches the attention), so the reference is the plain probe attention."""
    pool = tiny("siglip").attn_pool
    pool.norm, pool.mlp = nn.Identity(), nn.Identity()
    tokens = torch.randn(1, 16, 32, generator=torch.Generator().manual_seed(6))
    for rules, scales in ((ATTN_LRP, (0.5, 0.5)), (CP_LRP, (0.0, 1.0))):
        got, want = weight_grads(pool, rules, "kv", tokens, lambda m, t: m(t)[0])
        for i, s in enumerate(scales):                      # rows 0:D of k, D:2D of v
            torch.testing.assert_close(got[32 * i:32 * (i + 1)], s * want[32 * i:32 * (i + 1)], rtol=1e-4, atol=1e-7)


def test_rotation_passes_relevance_unchanged():
    """Rope is a rotation of each channel pair: Σ q·∂/∂q before it equals Σ q'·∂/∂q' after it (per token)."""
    sin, cos = rope_tables((4, 4), 16)
    q = torch.randn(1, 2, 17, 16, generator=torch.Generator().manual_seed(7)).requires_grad_()
    rotated = apply_rope(q, sin, cos, 1)
    g_out = torch.randn(rotated.shape, generator=torch.Generator().manual_seed(8))
    (g_in,) = torch.autograd.grad(rotated, q, g_out)
    torch.testing.assert_close((q * g_in).sum(-1), (rotated * g_out).sum(-1), rtol=1e-5, atol=1e-5)


def test_an_unsupported_part_is_refused_by_name():
    model = tiny("eva02")
    model.blocks[0].attn.k_norm = nn.LayerNorm(16)
    with pytest.raises(ValueError, match="also has k_norm"):
        relevance_pass(model, image())
    pool_model = tiny("siglip")
    pool_model.attn_pool.pos_embed = nn.Parameter(torch.zeros(1, 16, 32))
    with pytest.raises(ValueError, match="RuleAttentionPool .* also has pos_embed"):
        relevance_pass(pool_model, image())


# --- Grad-CAM without a CLS token: pytorch-grad-cam with a reshape transform that drops nothing ----------------

def test_gradcam_without_cls_equals_pytorch_grad_cam_on_timms_siglip(tmp_path):
    """timm's SigLIP (no prefix token, MAP head with a 5-class head), target layer blocks[-1].norm1: every token is
    a patch, so the package's reshape transform keeps all of them; our raw map equals the package's raw map."""
    torch.manual_seed(0)
    ref = randomize_(timm.create_model("vit_base_patch16_siglip_224", depth=2, embed_dim=64, num_heads=4,
                                       img_size=64, num_classes=5))
    ours = vit.load(save_timm(ref, tmp_path, num_heads=4)).model
    x = image(64, 64, seed=9)

    def reshape_transform(t):                               # (B, 16, D) -> (B, D, 4, 4): no token to drop
        return t.reshape(t.size(0), 4, 4, t.size(2)).permute(0, 3, 1, 2)

    for cls in (0, 3):
        layer, targets = ref.blocks[-1].norm1, [ClassifierOutputTarget(cls)]
        with GradCAM(model=ref, target_layers=[layer], reshape_transform=reshape_transform) as cam:
            cam(input_tensor=x, targets=targets)
            got_acts = cam.activations_and_grads
            raw = cam.get_cam_image(x, layer, targets, got_acts.activations[0].numpy(), got_acts.gradients[0].numpy())
        expected = np.maximum(raw[0], 0)
        mine = explain_map("gradcam", ours, x, ClassTarget(cls))
        assert expected.max() > 0 and np.abs(mine - expected).max() <= 1e-5 * expected.max()
