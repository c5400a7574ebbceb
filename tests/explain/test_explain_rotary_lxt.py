"""Protects AttnLRP and CP-LRP on DINOv3 against lxt, its authors' package, on transformers' DINOv3ViTModel.

lxt has no DINOv3 patch map of its own, but its rule functions are written for transformers' eager attention and
gated MLPs, which DINOv3ViT uses: ``layer_norm_forward`` (identity rule of LayerNorm), ``mlp_forward`` /
``gated_mlp_forward`` (identity rule of GELU and SiLU, uniform rule of the gated product) and the attention wrappers
(AttnLRP: q, k gradients / 4 and v / 2; CP-LRP: no gradient through q and k), applied after the rotation, which is
linear. lxt's recipe then: gradient × input of the pixels, summed per patch here. The backbone has no head, so the
explained score is a fixed linear read of the CLS feature, the same on both sides.

timm's RoPE ViTs and EVA-02 run timm's attention modules, for which lxt has no patches: their rules are the same
modules as DINOv3's (a rotation, LayerScale, the plain or gated MLP), and the formula tests cover them on every family.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import partial

import pytest
import torch
import torch.nn as nn
import transformers

import vit
from lrp_references import LRP_TOL, assert_close_relative, lxt_efficient, lxt_patched, per_patch
from reference_models import randomize_
from vit.explain import ATTN_LRP, CP_LRP, relevance_pass


@dataclass(frozen=True)
class LinearRead:
    """A score for a backbone: w · (its feature), the same fixed direction for ours and the reference."""
    w: torch.Tensor

    def score(self, output: torch.Tensor) -> torch.Tensor:
        return output @ self.w

    def probability(self, output: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.score(output))

    def describe(self) -> dict:
        return {"index": None, "name": "a linear read of the CLS feature"}


@pytest.fixture(scope="module", params=[False, True], ids=["mlp", "gated"])
def dinov3(request, tmp_path_factory):
    gated = request.param
    config = transformers.DINOv3ViTConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                          num_attention_heads=4, image_size=32, patch_size=8, num_register_tokens=4,
                                          use_gated_mlp=gated, hidden_act="silu" if gated else "gelu")
    torch.manual_seed(0)
    ref = randomize_(transformers.DINOv3ViTModel(config), std=0.05)
    ref.config._attn_implementation = "eager"
    folder = tmp_path_factory.mktemp("dinov3")
    ref.save_pretrained(folder)
    return ref, vit.load(folder).model, gated


def lxt_relevance(ref: nn.Module, x: torch.Tensor, read: LinearRead, rules: str, gated: bool) -> torch.Tensor:
    """lxt's rules on transformers' DINOv3, gradient × input of the pixels per patch (N,)."""
    lxt_efficient()
    patches = importlib.import_module("lxt.efficient.patches")
    modeling = importlib.import_module("transformers.models.dinov3_vit.modeling_dinov3_vit")
    wrap = patches.wrap_attention_forward if rules == "attnlrp" else patches.cp_wrap_attention_forward

    def attention_rule(module) -> bool:        # lxt's own wrapper on the eager attention (transformers 5 dispatch)
        module.eager_attention_forward = wrap(module.eager_attention_forward)
        return True

    mlp = {("attnlrp", False): patches.mlp_forward, ("attnlrp", True): patches.gated_mlp_forward,
           ("cp_lrp", True): patches.cp_gated_mlp_forward}.get((rules, gated), patches.mlp_forward)
    mlp_class = modeling.DINOv3ViTGatedMLP if gated else modeling.DINOv3ViTMLP
    patch_map = {nn.LayerNorm: partial(patches.patch_method, patches.layer_norm_forward),
                 mlp_class: partial(patches.patch_method, mlp), modeling: attention_rule}
    for p in ref.parameters():
        p.requires_grad_(False)
    with lxt_patched(patch_map):
        x = x.clone().requires_grad_()
        read.score(ref(pixel_values=x).pooler_output)[0].backward()
    return per_patch((x * x.grad).sum(1)[0].detach(), 8)


@pytest.mark.parametrize("rules", [ATTN_LRP, CP_LRP], ids=lambda r: r.name)
def test_lrp_on_dinov3_equals_lxt(dinov3, rules):
    ref, ours, gated = dinov3
    x = torch.randn(1, 3, 32, 48, generator=torch.Generator().manual_seed(1))    # a 4×6 grid: not the native one
    read = LinearRead(torch.randn(64, generator=torch.Generator().manual_seed(2)))
    reference = lxt_relevance(ref, x, read, rules.name, gated)
    got = relevance_pass(ours, x, read, rules).relevance[0]
    assert_close_relative(got, reference, LRP_TOL)
    other = relevance_pass(ours, x, read, CP_LRP if rules is ATTN_LRP else ATTN_LRP).relevance[0]
    assert float((other - reference).abs().max()) > 0.01 * float(reference.abs().max())   # the rules matter
