"""Protects the claim that CLIP explains a typed text: the target is the image–text score
exp(logit_scale) · cos(image embedding, text embedding), its gradient equals open_clip's own similarity's on the
same weights, every method takes it through the one signature ``explain_map(name, model, x, target)``, CP-LRP
on it equals lxt's rules on open_clip's own image tower, and the CLI contract
``--texts … --explain … --target TEXT`` writes the maps for that text.

A tiny random open_clip model (QuickGELU, 2 blocks, 64×64 input, 4×4 grid) saved in OpenAI's layout; no download.
"""
from __future__ import annotations

import json
from functools import partial

import numpy as np
import open_clip
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import vit
from lrp_references import LRP_TOL, assert_close_relative, lxt_efficient, lxt_patched, per_patch
from reference_models import images, open_clip_tiny
from viz.explain.explainer import explain, explain_map
from vit.clip import text_target
from vit.explain import CP_LRP, TextTarget, relevance_pass

TEXTS = ["a photo of a cat", "a photo of a dog"]


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    """(loaded, open_clip reference, checkpoint path), the same float32 weights."""
    ref = open_clip_tiny()
    path = tmp_path_factory.mktemp("clip") / "clip.pt"
    torch.save(ref.state_dict(), path)
    return vit.load(path), ref, path


def open_clip_score(ref, x: torch.Tensor, text: str) -> torch.Tensor:
    """open_clip's own similarity logit: logit_scale.exp() · normalize(encode_image) · normalize(encode_text)."""
    tokens = open_clip.tokenize([text])
    with torch.no_grad():
        t = F.normalize(ref.encode_text(tokens), dim=-1)
    return ref.logit_scale.exp() * (F.normalize(ref.encode_image(x), dim=-1) @ t.T)[:, 0]


def test_the_text_target_is_open_clips_similarity_and_its_gradient(clip):
    loaded, ref, _ = clip
    x = images(1, (64, 64), seed=3)
    target = text_target(loaded, TEXTS[0], TEXTS)
    assert isinstance(target, TextTarget) and target.describe() == {"index": 0, "name": TEXTS[0], "text": TEXTS[0]}
    ours_x, ref_x = x.clone().requires_grad_(), x.clone().requires_grad_()
    ours = target.score(loaded.model(ours_x))
    expected = open_clip_score(ref, ref_x, TEXTS[0])
    torch.testing.assert_close(ours, expected, rtol=1e-4, atol=1e-5)
    (g_ours,) = torch.autograd.grad(ours.sum(), ours_x)
    (g_ref,) = torch.autograd.grad(expected.sum(), ref_x)
    assert float((g_ours - g_ref).abs().max()) <= 1e-4 * float(g_ref.abs().max())
    with torch.no_grad():        # the probability is the zero-shot probability among the typed texts
        logits = torch.stack([open_clip_score(ref, x, t) for t in TEXTS], dim=1)
        torch.testing.assert_close(target.probability(loaded.model(x)), logits.softmax(dim=1)[:, 0], rtol=1e-4, atol=1e-6)


def test_every_method_explains_a_text_and_two_texts_give_two_maps(clip):
    loaded, _, _ = clip
    x = images(1, (64, 64), seed=4)
    cat, dog = (text_target(loaded, t, TEXTS) for t in TEXTS)
    for name in ("gae", "attnlrp", "cp_lrp", "grad_rollout", "gradcam"):
        a, b = explain_map(name, loaded.model, x, cat), explain_map(name, loaded.model, x, dog)
        assert a.shape == b.shape == (4, 4)
        assert np.abs(a - b).max() > 1e-3 * np.abs(a).max(), f"{name}: the same map for both texts"
    np.testing.assert_array_equal(explain_map("rollout", loaded.model, x, cat), explain_map("rollout", loaded.model, x, dog))


def test_without_a_text_the_best_of_the_texts_is_explained(clip, cat):
    loaded, _, _ = clip
    e = explain(loaded, cat, None, ["gae"], texts=TEXTS)
    from vit.clip import zero_shot
    best = TEXTS[int(zero_shot(loaded, cat, TEXTS)[0].argmax())]
    assert e.target == {"index": TEXTS.index(best), "name": best, "text": best}
    with pytest.raises(ValueError, match="no classes: give the text"):
        explain(loaded, cat, None, ["gae"])


def test_cp_lrp_of_a_text_equals_lxt_on_open_clips_own_tower(clip):
    """lxt's CP-LRP rules on open_clip's modules (its LayerNorm subclass and QuickGELU get lxt's LayerNorm and
    identity rules, torch's MultiheadAttention lxt's CP-LRP patch), then lxt's recipe: gradient × input of the
    pixels from the score, summed per patch. CLIP has no patch bias, so the pixel relevance is ours exactly."""
    loaded, ref, _ = clip
    efficient = lxt_efficient()
    from lxt.efficient import patches
    x = images(1, (64, 64), seed=5)
    patch_map = {open_clip.transformer.LayerNorm: partial(patches.patch_method, patches.layer_norm_forward),
                 open_clip.transformer.QuickGELU: partial(patches.patch_method, patches.non_linear_forward,
                                                          keep_original=True),
                 nn.MultiheadAttention: partial(patches.patch_method, patches.cp_multi_head_attention_forward,
                                                keep_original=True)}
    for p in ref.parameters():
        p.requires_grad_(False)
    pixels = x.clone().requires_grad_()
    with lxt_patched(patch_map):
        open_clip_score(ref, pixels, TEXTS[1]).sum().backward()
    reference = per_patch((pixels * pixels.grad).sum(1)[0].detach(), 16)
    got = relevance_pass(loaded.model, x, text_target(loaded, TEXTS[1], TEXTS), CP_LRP).relevance[0]
    assert efficient is not None
    assert_close_relative(got, reference, LRP_TOL)


def test_the_cli_explains_the_typed_text(clip, cat, tmp_path):
    """The contract: --texts T1,T2 --explain METHODS --target T1 -> explain_<method>.png, explain_<method> in
    attention.npz, result.json "explain" → "target" names the text, "zero_shot" as before."""
    from viz.cli import main
    _, _, path = clip
    photo = tmp_path / "cat.png"
    cat.save(photo)
    out = tmp_path / "out"
    args = [str(photo), "--weights", str(path), "--texts", ",".join(TEXTS), "--out", str(out), "--quiet"]
    assert main(args + ["--explain", "gae,attnlrp", "--target", TEXTS[1]]) == 0
    folder = out / "cat"
    result = json.loads((folder / "result.json").read_text())
    assert result["explain"]["target"] == {"index": 1, "name": TEXTS[1], "text": TEXTS[1]}
    assert result["explain"]["methods"] == ["gae", "attnlrp"]
    assert {e["text"] for e in result["zero_shot"]} == set(TEXTS)
    assert (folder / "explain_gae.png").is_file() and (folder / "explain_attnlrp.png").is_file()
    loaded = vit.load(path)
    x = loaded.preprocess(cat)
    with np.load(folder / "attention.npz") as saved:
        np.testing.assert_allclose(saved["explain_gae"], explain_map("gae", loaded.model, x,
                                                                     text_target(loaded, TEXTS[1], TEXTS)), rtol=1e-5)
