"""The optimisation recipe protects: linear warmup then cosine decay per step, and weight decay only on matrices."""
from __future__ import annotations

import math

import pytest
import torch

import vit
from vit.train.build import param_groups
from vit.train.schedule import WarmupCosine


def test_warmup_rises_linearly_then_cosine_decays_to_near_zero():
    s = WarmupCosine(total_steps=12, warmup_steps=4)
    values = [s(i) for i in range(12)]
    assert values[:4] == pytest.approx([0.25, 0.5, 0.75, 1.0])
    assert values[4] == pytest.approx(1.0) and values[4 + 4] == pytest.approx(0.5)  # half way through the decay
    assert all(a > b for a, b in zip(values[4:], values[5:]))
    assert 0 < values[-1] < 0.05


def test_no_warmup_starts_at_the_peak_and_every_step_learns():
    s = WarmupCosine(total_steps=5, warmup_steps=0)
    assert s(0) == 1.0 and min(s(i) for i in range(5)) > 0
    assert WarmupCosine(total_steps=3, warmup_steps=10)(2) == 1.0  # warmup longer than the run: clipped
    with pytest.raises(ValueError, match="at least 1"):
        WarmupCosine(0, 0)


def test_lambda_lr_follows_the_schedule_and_saves_it():
    p = torch.nn.Parameter(torch.zeros(2))
    opt = torch.optim.AdamW([p], lr=1e-3)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, WarmupCosine(10, 2))
    rates = []
    for _ in range(10):
        rates.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert rates[:3] == pytest.approx([5e-4, 1e-3, 1e-3])
    assert rates[-1] == pytest.approx(1e-3 * 0.5 * (1 + math.cos(math.pi * 7 / 8)))
    assert sched.state_dict()["lr_lambdas"] == [{"total_steps": 10, "warmup_steps": 2}]


def test_weight_decay_skips_biases_norms_and_embeddings():
    model = vit.VisionTransformer(vit.variant("tiny", img_size=32, patch_size=8, depth=1, num_classes=3))
    decay, no_decay = param_groups(model, 0.05)
    names = {id(p): n for n, p in model.named_parameters()}
    decayed = {names[id(p)] for p in decay["params"]}
    assert decay["weight_decay"] == 0.05 and no_decay["weight_decay"] == 0.0
    assert {"blocks.0.attn.qkv.weight", "patch_embed.proj.weight", "head.weight"} <= decayed
    assert not decayed & {"pos_embed", "cls_token", "blocks.0.norm1.weight", "blocks.0.attn.qkv.bias", "head.bias"}
    assert len(decay["params"]) + len(no_decay["params"]) == len(list(model.parameters()))
