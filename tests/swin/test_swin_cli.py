"""``python -m viz IMAGE --weights SWIN``: the files a Swin's run writes, the maps in attention.npz equal to the
library's definitions (``viz.maps.windows``, ``vit.explain``), ViT-only options refused in one sentence. A Swin's
folders run through the one data-set loop: tests/datasets (batches, torchrun, --resume, the statistics)."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import vit
from swin_references import small_swin
from tiny_run import noise_images
from viz.explain.explainer import explain
from viz.cli import main
from viz.maps import windows as hierarchy
from viz.maps.source import rollout_rows
from viz.maps.windows import WindowedAttention, mean_row

LABELS = ["a", "b", "c", "d"]


def rollout_map(attention, layouts, fusion: str = "mean"):
    """Rollout through windows and merges read by the mean of the last block's tokens, as the views compute it
    (``viz.maps.source.rollout_rows`` over a ``WindowedAttention``) -> (gh0, gw0)."""
    source = WindowedAttention(attention, layouts)
    return rollout_rows(source, mean_row(tuple(layouts[-1].grid)), fusion).reshape(tuple(layouts[0].grid))


@pytest.fixture(scope="module")
def swin_file(tmp_path_factory):
    """Our small three-stage Swin v1 (random, perturbed) at 32×32 as our checkpoint format."""
    path = tmp_path_factory.mktemp("swin") / "small_swin.pt"
    return vit.save_checkpoint(path, small_swin(1), LABELS, vit.Preprocess.for_crop(32), extra={"name": "small swin"})


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    return noise_images(tmp_path_factory.mktemp("images"), 3)


def test_one_image_writes_the_contract_files(swin_file, images, tmp_path):
    out = tmp_path / "out"
    methods = ["gae", "rollout", "gradcam", "attnlrp", "cp_lrp", "attention", "random"]
    assert main([str(images[0]), "--weights", str(swin_file), "--out", str(out), "--explain", ",".join(methods),
                 "--layer", "3", "--query", "5", "9", "--quiet"]) == 0
    folder = out / images[0].stem
    result = json.loads((folder / "result.json").read_text())
    loaded = vit.load(swin_file)
    x = loaded.preprocess.to_tensor(loaded.preprocess.crop_image(vit.image_file.open_image(images[0])))
    with torch.no_grad():
        probabilities = loaded.model(x).softmax(-1)[0].numpy()
    assert [e["label"] for e in result["top_k"]] == [LABELS[i] for i in np.argsort(-probabilities, kind="stable")]
    np.testing.assert_allclose([e["probability"] for e in result["top_k"]], np.sort(probabilities)[::-1], rtol=1e-5)
    assert result["architecture"] == "swin" and result["grid"] == [16, 16]
    assert [s["grid"] for s in result["stages"]] == [[16, 16], [8, 8], [4, 4]]
    assert [s["shifts"] for s in result["stages"]] == [[[0, 0], [2, 2]], [[0, 0], [2, 2]], [[0, 0], [0, 0]]]
    expected = {"input", "rollout", "attention", "threshold", "query_row", "query_column", "mean_distance",
                "token_norms", "token_norm_curves", "heads_stage0", "heads_stage1", "heads_stage2", "filters",
                "pos_similarity", "explanations", *(f"explain_{m}" for m in methods)}
    assert set(result["files"]) == {f"{n}.png" for n in expected} | {"attention.npz", "result.json"}
    assert all((folder / name).is_file() for name in result["files"])
    saved = np.load(folder / "attention.npz")
    capture = loaded.model.forward_with_attention(x)
    attention = [a[0].detach().numpy() for a in capture.attention]
    np.testing.assert_allclose(saved["rollout"], rollout_map(attention, capture.layouts), rtol=1e-5,
                               atol=1e-8)
    assert saved["rollout"].shape == (16, 16) and abs(saved["rollout"].sum() - 1) < 1e-5
    e = explain(loaded, vit.image_file.open_image(images[0]), methods=methods)
    for m in methods:
        assert saved[f"explain_{m}"].shape == (16, 16)
        np.testing.assert_allclose(saved[f"explain_{m}"], e.map(m), rtol=1e-5, atol=1e-7)
    # block 3 is stage 1's shifted block: the clicked patch (5, 9) lies in token (2, 4) of its 8×8 grid
    layout = capture.layouts[3]
    dense = hierarchy.expand(attention[3].mean(axis=1), layout)          # (64, 64)
    np.testing.assert_allclose(saved["query_row"].ravel(), dense[2 * 8 + 4], rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(saved["query_column"].ravel(), dense[:, 2 * 8 + 4], rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(saved["attention"].ravel(), dense.mean(axis=0), rtol=1e-5, atol=1e-8)
    for i, (a, lay) in enumerate(zip(attention, capture.layouts)):
        np.testing.assert_allclose(saved[f"attention_{i}"], a, rtol=1e-5, atol=1e-8)
        np.testing.assert_allclose(saved["mean_distance"][i, :a.shape[1]],
                                   hierarchy.attention_distance(a, lay, lay.token_size), rtol=1e-5)
    assert np.isnan(saved["mean_distance"][0, 1])                        # stage 0 has one head
    assert list(saved["layout_3"]) == [1, 1, 8, 8, 4, 4, 2, 2, 4]


@pytest.mark.parametrize("option, says", [
    (["--inside", "lens"], "--inside"), (["--features"], "--features"), (["--mask-artifacts"], "--mask-artifacts"),
    (["--query-rollout"], "--query-rollout"), (["--discard-ratio", "0.5"], "--discard-ratio"),
    (["--head", "1", "--layer", "0"], "Head 1 does not exist"),
    (["--explain", "gae", "--faithfulness"], "--perturbation mean_colour"),
    (["--explain", "grad_rollout"], "gae"),
])
def test_options_that_need_one_sequence_are_refused_in_one_sentence(swin_file, images, tmp_path, capsys, option, says):
    assert main([str(images[0]), "--weights", str(swin_file), "--out", str(tmp_path), "--quiet", *option]) == 2
    checked, *error = capsys.readouterr().err.strip().splitlines()   # the load's check first, then the refusal
    assert checked == f"{swin_file}: not verified (this explorer's own format: it is its own library)"
    assert len(error) == 1 and error[0].startswith("error:") and says in error[0]
    assert not any(tmp_path.iterdir())
