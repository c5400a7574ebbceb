"""Attention on demand (``viz.analysis.recompute``): an analysis that keeps only the residual stream, the readout rows
and the rows' log-sum-exp gives every view the numbers of the full capture (``viz.maps.source``): rollout (every
fusion, discard, start layer, masking), each layer's attention and its threshold mask, the heads grid and its
entropies, the patch query (one layer or rolled out, masked or not), the mean distances, the depth animation and the
page's panels; on every family and token layout, at a non-square size, and on the real ViT-Ti at 224 and 224×320.
And its memory grows with the tokens: at a token count where L·H·T² float32 probabilities would take 268 MB, one
analysis needs a fraction of that."""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import vit
from tiny_models import FAMILIES, tiny
from viz import panels
from viz.compare import animate
from viz.analysis import analyses, analyze, capture
from viz.maps.attention import threshold_mask
from viz.attention.view import attention_layers
from viz.heads.grid import head_stats

FUSIONS = ("mean", "max", "min")


@pytest.fixture
def no_fused_copies(monkeypatch):
    """On demand without the head-fused copies (what a large input gets): every fused matrix is recomputed."""
    import importlib
    monkeypatch.setattr(importlib.import_module("viz.analysis.capture"), "FUSED_BYTES", 0)


def both(model, x: torch.Tensor):
    """(the full capture's analysis, the on-demand one) of one image, both float32."""
    loaded = SimpleNamespace(model=model, labels=(), name="m")
    full = analyses(loaded, capture(model, x, np.float32), [None])[0]
    kept = analyses(loaded, capture(model, x, np.float32, on_demand=True), [None])[0]
    assert full.attention is not None and kept.attention is None and kept.source is not None
    return full, kept


def close(ours, theirs, what: str, rtol: float = 1e-5) -> None:
    """max |ours - theirs| <= rtol · max |theirs| (float32 rows recomputed from the same stream)."""
    ours, theirs = np.asarray(ours, dtype=np.float64), np.asarray(theirs, dtype=np.float64)
    assert ours.shape == theirs.shape, what
    scale = max(np.abs(theirs).max(), 1e-12)
    assert np.abs(ours - theirs).max() <= rtol * scale, f"{what}: {np.abs(ours - theirs).max() / scale:.2e}"


def every_view(full, kept, drop: np.ndarray, ratio: float, rtol: float = 1e-5, discard_rtol: float = 1e-5) -> None:
    """Every view of the two analyses agrees (``drop``: patches to leave out, ``ratio``: a norm ratio that flags
    some, so the masked views drop tokens)."""
    L, H = full.depth, full.heads
    assert (kept.depth, kept.heads) == (L, H)
    for fusion in FUSIONS:
        for discard, start in ((0.0, 0), (0.9, 1)):
            for mask in (False, True):
                tol = rtol if discard == 0 else discard_rtol
                close(panels.rollout_of(kept, fusion, discard, start, mask, ratio),
                      panels.rollout_of(full, fusion, discard, start, mask, ratio), f"rollout {fusion} {discard}", tol)
    for head in (None, *range(H)):
        for mask in (None, drop):
            close(panels.readout_rows_of(kept, head, mask), panels.readout_rows_of(full, head, mask), "rows", rtol)
            for layer in range(L):
                attention = panels.attention_of(kept, layer, head, mask)
                close(attention, panels.attention_of(full, layer, head, mask), f"attention {layer} {head}", rtol)
                np.testing.assert_array_equal(threshold_mask(attention, 0.6),
                                              threshold_mask(panels.attention_of(full, layer, head, mask), 0.6))
                for rolled in (False, True) if layer == 0 else (False,):
                    for out, ref in zip(panels.query_maps(kept, 1, 2, layer, head, rolled, "max", 0.5, 0, mask),
                                        panels.query_maps(full, 1, 2, layer, head, rolled, "max", 0.5, 0, mask)):
                        close(out, ref, f"query {layer} {head} {rolled}", rtol if not rolled else discard_rtol)
    for mask in (False, True):
        close(head_stats(kept, mask, ratio).entropy_bits, head_stats(full, mask, ratio).entropy_bits,
              "entropy", rtol)
        close(attention_layers(kept, None, mask, ratio), attention_layers(full, None, mask, ratio),
              "layers", rtol)
    close(panels.readout_rows_all(kept, drop), panels.readout_rows_all(full, drop), "heads grid", rtol)
    close(panels.mean_distance_of(kept), panels.mean_distance_of(full), "distance", rtol)
    close(panels.mean_distance_of(kept, True), panels.mean_distance_of(full, True), "renormalised distance", rtol)
    for layer in range(L):
        close(animate.rollout_through(kept, layer, "mean", 0.0), animate.rollout_through(full, layer, "mean", 0.0),
              f"animation frame {layer}", rtol)


def some_patches(grid: tuple[int, int]) -> np.ndarray:
    drop = np.zeros(grid, dtype=bool)
    drop[0, 0] = drop[-1, 1] = True
    return drop


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_view_on_demand_equals_the_full_capture(family, no_fused_copies):
    model = tiny(**FAMILIES[family])
    size = (32, 32) if family == "beit" else (32, 40)                        # BEiT's relative bias: its own grid
    full, kept = both(model, torch.randn(1, 3, *size, generator=torch.Generator().manual_seed(3)))
    every_view(full, kept, some_patches(full.grid), ratio=1.02)


def test_rows_columns_and_fused_matrices_of_the_source():
    model = tiny(num_reg_tokens=2)
    full, kept = both(model, torch.randn(1, 3, 32, 40))
    T = full.attention.shape[-1]
    every = np.arange(T)
    distance = kept.source.mean_distance(full.patch_size)                  # every head's rows recomputed for it
    close(distance, panels.mean_distance_of(full), "distance")
    for layer in range(full.depth):
        for head in (None, 0, 1):
            close(kept.maps.rows(layer, head, every), full.maps.rows(layer, head, every), "rows")
            close(kept.maps.columns(layer, head, [3, 7]), full.maps.columns(layer, head, [3, 7]), "columns")
        for fusion in FUSIONS:
            close(kept.source._fuse(layer, fusion), full.maps.fused(layer, fusion), f"fused {fusion}")
    np.testing.assert_allclose(kept.maps.rows(1, None, every).sum(axis=1), 1.0, rtol=1e-6)
    assert sorted(kept.source._distance) == list(range(full.depth))        # summed while fusing: read, not recomputed
    close(kept.source.mean_distance(full.patch_size), distance, "distance summed while fusing", 1e-6)


def test_columns_of_peaked_attention_whose_small_entries_underflow():
    """Logits so large that most probabilities underflow to 0 (the rows' log-sum-exp then comes from each row's
    largest entry): the columns are still the full capture's."""
    model = tiny()
    with torch.no_grad():
        for block in model.blocks:
            block.attn.qkv.weight.mul_(12.0)
    full, kept = both(model, torch.randn(1, 3, 32, 40))
    assert (full.attention == 0).mean() > 0.3
    T = full.attention.shape[-1]
    for layer in range(full.depth):
        for head in (None, 0, 1):
            close(kept.maps.columns(layer, head, np.arange(T)), full.maps.columns(layer, head, np.arange(T)), "columns",
                  1e-4)


@pytest.mark.parametrize("size", [(224, 224), pytest.param((224, 320), marks=pytest.mark.slow)])
def test_the_real_vit_ti_on_the_cat(real_weights_dir, cat, size, no_fused_copies):
    """The AugReg ViT-Ti, at 224 and at a non-square size; a 0.9 discard may zero another of two near-equal entries
    when rounding differs in the last bit, which moves the rollout by up to 1e-3 of its largest value."""
    loaded = vit.load(real_weights_dir / "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors")
    if size != (224, 224):                                            # what --input-size does
        loaded = dataclasses.replace(loaded, own_preprocess=loaded.own_preprocess.at_size(size)).with_preprocess("own")
    full = analyze(loaded, cat)
    kept = analyze(loaded, cat, on_demand=True)
    assert full.grid == (size[0] // 16, size[1] // 16)
    every_view(full, kept, panels.artifact_drop(full, True), ratio=3.0, rtol=1e-4, discard_rtol=1e-3)


def test_the_page_keeps_a_float16_stream_close_to_the_full_capture(real_weights_dir, cat):
    """What the page keeps (float16): its maps stay within about 1e-3 of their largest value (the rounding of the
    stream moves the logits), its kept values (readout rows, distances) are the forward's own."""
    loaded = vit.load(real_weights_dir / "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors")
    full = analyze(loaded, cat)
    kept = analyze(loaded, cat, np.float16, on_demand=True)
    close(panels.attention_of(kept, 11), panels.attention_of(full, 11), "attention", 1e-6)       # kept, float32
    close(panels.mean_distance_of(kept), panels.mean_distance_of(full), "distance", 1e-6)
    for out, ref in zip(panels.query_maps(kept, 6, 3, 5, None), panels.query_maps(full, 6, 3, 5, None)):
        close(out, ref, "patch query", 5e-3)
    close(panels.rollout_of(kept), panels.rollout_of(full), "rollout", 5e-3)


MEMORY = """
import json, resource, sys
import numpy as np, torch
import vit
import importlib
capture_module = importlib.import_module("viz.analysis.capture")     # the module: the package exports the function
capture_module.CHUNK_BYTES = 4 * 2**20
capture = capture_module.capture
torch.manual_seed(0)
model = vit.VisionTransformer(vit.ViTConfig(img_size=256, patch_size=4, embed_dim=16, depth=2, num_heads=2,
                                            mlp_dim=32, num_classes=3)).eval()
x = torch.randn(1, 3, 256, 256)
def rss():
    with open("/proc/self/status") as f:
        return {l.split(":")[0]: int(l.split()[1]) * 1024 for l in f if l.startswith(("VmRSS", "VmHWM"))}
capture(model, torch.randn(1, 3, 32, 32), np.float32, on_demand=True)            # warm up torch's kernels
before = rss()["VmRSS"]
got = capture(model, x, np.float32, on_demand=sys.argv[1] == "on_demand")
print(json.dumps({"rise": rss()["VmHWM"] - before, "tokens": got.token_norms.shape[-1]}))
"""


@pytest.mark.slow
def test_memory_grows_with_the_tokens_not_their_square():
    """A tiny-width model on 64×64 patches (T = 4,097): its L·H·T² float32 probabilities are 268 MB. Analysed on
    demand in a fresh process, the peak resident memory rises by less than 64 MB over what it was before (the full
    capture, for comparison, by more than the 268 MB it keeps)."""
    rises = {}
    for mode in ("on_demand", "full"):
        result = subprocess.run([sys.executable, "-c", MEMORY, mode], capture_output=True, text=True, check=True,
                                timeout=600)
        rises[mode] = json.loads(result.stdout.strip().splitlines()[-1])
    T = rises["full"]["tokens"]
    quadratic = 2 * 2 * T * T * 4
    assert T == 4097 and quadratic > 256 * 2**20                     # 268 MB
    assert rises["full"]["rise"] > quadratic
    assert rises["on_demand"]["rise"] < 64 * 2**20, rises
