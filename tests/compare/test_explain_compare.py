"""Protects ``python -m viz IMAGE --weights A --compare B --out DIR --explain gae``: the class map of the same
target in both models is one more row of compare.png and ``"explain"`` in compare.json, with the same
statistics as compare's other maps, while every existing key of compare.json stays as it was.

Real checkpoints (AugReg ViT-Ti and DeiT-Ti, the same ImageNet classes) on the cat photo.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from viz.explain.explainer import explain
from viz.cli import main
from viz.cli.compare import explanation_pairs
from viz.cli.explain import ExplainRequest
from viz.compare import compare
from viz.compare.side import compare_side

AUGREG = "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors"
DEIT = "deit_tiny_patch16_224.pipevit_ln_fixedpoint.safetensors"
EXISTING_KEYS = {"image", "models", "alignment", "attention", "differences", "files"}   # compare.json before --explain


@pytest.mark.slow
def test_compare_with_explain_adds_the_class_map_of_both_models(real_weights_dir, cat, tmp_path):
    import vit
    cat.save(tmp_path / "chelsea.png")
    out = tmp_path / "out"
    argv = [str(tmp_path / "chelsea.png"), "--weights", str(real_weights_dir / AUGREG), "--compare",
            str(real_weights_dir / DEIT), "--quiet"]
    assert main(argv + ["--out", str(out), "--explain", "gae", "--target", "tabby"]) == 0
    record = json.loads((out / "chelsea" / "compare.json").read_text())
    assert set(record) == EXISTING_KEYS | {"explain"}                    # the existing keys stay
    assert record["attention"] == {"layer_a": 11, "layer_b": 11, "head": None}
    assert set(record["differences"]["maps"]) == {"rollout", "attention", "gae: tabby"}   # a row of compare.png
    explained = record["explain"]
    assert explained["methods"] == ["gae"] and explained["target"]["name"] == "tabby"
    assert explained["target"]["a"] == explained["target"]["b"] == {"index": 281, "name": "tabby"}
    assert explained["readout"] == {"a": "cls", "b": "cls"}
    stats = explained["difference"]["gae"]
    assert stats["title"] == "gae: tabby" and record["differences"]["maps"]["gae: tabby"] == {
        k: v for k, v in stats.items()}
    assert 0 < stats["total_variation"] < 1 and -1 <= stats["correlation"] <= 1
    # the numbers are compare's statistics of the two models' own GAE maps for class 281
    a, b = (vit.load(str(real_weights_dir / n)) for n in (AUGREG, DEIT))
    sides = compare_side(a, cat), compare_side(b, cat)
    maps = {"gae: tabby": tuple(explain(m, cat, 281, ["gae"]).map("gae") for m in (a, b))}
    c = compare(cat, *sides, extra_maps=maps)
    assert c.maps["gae: tabby"].stats()["total_variation"] == pytest.approx(stats["total_variation"], rel=1e-5)
    with Image.open(out / "chelsea" / "compare.png") as png:
        assert png.format == "PNG" and png.height > 1300                  # 5 rows: top-k, rollout, attention, gae, text
    # the default target is A's top-1 class, found by name in B
    _, top1 = explanation_pairs(a, b, sides, ExplainRequest(["gae"]))
    assert top1["target"]["a"]["name"] == record["models"][0]["top_k"][0]["label"] == top1["target"]["b"]["name"]


def test_a_model_without_cls_token_compares_its_probe_not_its_first_patch(tmp_path, cat):
    """Two tiny SigLIP towers with a 5-class head: compare's attention row is each model's probe map (token 0 is a
    patch there), and --explain's rows read the probe too."""
    import torch

    import vit
    from vit.explain import ClassTarget
    from viz.maps.readout import readout_attention_map

    def siglip(seed):
        torch.manual_seed(seed)
        model = vit.VisionTransformer(vit.ViTConfig(embed_dim=32, depth=2, num_heads=2, mlp_dim=64, num_classes=5,
                                                    img_size=64, patch_size=16, class_token=False, readout="map"))
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.1 * torch.randn_like(p))
        path = tmp_path / f"siglip{seed}.pt"
        vit.save_checkpoint(path, model.eval(), [f"class {i}" for i in range(5)], vit.Preprocess(64, 64))
        return vit.load(path)

    a, b = siglip(0), siglip(1)
    sides = compare_side(a, cat), compare_side(b, cat)
    request = ExplainRequest(["gae", "attention"], ClassTarget(2, "class 2"))
    maps, record = explanation_pairs(a, b, sides, request)
    assert record["readout"] == {"a": "map", "b": "map"} and record["target"]["b"] == {"index": 2, "name": "class 2"}
    c = compare(cat, *sides, extra_maps=maps)
    assert c.maps["attention"].title.startswith("MAP probe attention")
    an = sides[0].analysis
    probe_map = readout_attention_map(an.attention, an.num_prefix, an.grid, "map", an.probe_attention)
    # the attention row of A and the explanation's "attention" map of A are both the probe's map
    same = compare(cat, sides[0], sides[0], extra_maps={"probe": (probe_map, probe_map)})
    np.testing.assert_allclose(same.maps["attention"].a, same.maps["probe"].a, rtol=1e-5)
    np.testing.assert_allclose(maps["attention: class 2"][0], probe_map, rtol=1e-5)
