"""The analysis's post-processing runs in torch on the model's device, block by block and a chunk of query rows at a
time; the numpy functions in viz/maps are the definitions. These tests hold the two equal, on synthetic attention
with known answers (whole and cut into chunks of rows) and on a real forward pass, and check that the capture's loop
over the blocks is exactly ``forward_with_attention``."""
from __future__ import annotations

import importlib
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import vit
from PIL import Image
from viz.analysis import capture, model_input, postprocess
from viz.maps.distance import mean_attention_distance
from viz.maps.norms import artifact_mask, flag_high_norm
from viz.maps.rollout import FUSIONS, fuse_heads, rollout_map
from oracles import attention_entropy, attention_shares, key_mass

GRID, PREFIX, PATCH = (3, 4), 2, 16          # a non-square grid and two prefix tokens (CLS + DIST)
T = PREFIX + GRID[0] * GRID[1]


def random_attention(batch: int = 2, heads: int = 3, seed: int = 0) -> torch.Tensor:
    """(B, H, T, T) rows summing to 1, with exact zeros in places (as after a hard softmax)."""
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(batch, heads, T, T, generator=g) * 3
    scores[..., 0, 5] = -math.inf                     # one exact zero: 0 · ln 0 must count as 0
    return scores.softmax(dim=-1)


def tiny_model(**overrides) -> vit.VisionTransformer:
    torch.manual_seed(0)
    cfg = vit.ViTConfig(img_size=(48, 64), patch_size=16, embed_dim=32, depth=3, num_heads=4, mlp_dim=64,
                        num_classes=7, **overrides)
    return vit.VisionTransformer(cfg).eval()


def test_fused_heads_equal_the_numpy_definition():
    maps = random_attention()
    fused = postprocess.fuse_heads(maps)
    for fusion in FUSIONS:
        expected = fuse_heads(maps.numpy(), fusion)   # per image: (H, T, T) is an (L, T, T) stack for numpy
        np.testing.assert_allclose(fused[fusion].numpy(), expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(fused["max"].numpy(), maps.numpy().max(axis=1))       # max and min exactly


def in_chunks(function, maps: torch.Tensor, cuts=(0, 3, 8, T), **kw) -> torch.Tensor:
    """``function`` summed over the chunks of query rows cut at ``cuts`` (``kw``: ``rows=True`` passes each chunk's
    distance rows and ``start`` as the capture does)."""
    total = 0
    for start, stop in zip(cuts[:-1], cuts[1:]):
        chunk = maps[:, :, start:stop]
        if kw.get("rows"):
            rows = postprocess.distance_rows(PREFIX, GRID, PATCH, start, stop, "cpu")
            total = total + (function(chunk, rows) if kw.get("plain") else function(chunk, rows, PREFIX, start))
        else:
            total = total + function(chunk)
    return total


def test_mean_distance_equals_the_numpy_definition_and_a_hand_computed_case():
    maps = random_attention()
    N = GRID[0] * GRID[1]
    rows = postprocess.distance_rows(PREFIX, GRID, PATCH, 0, T, "cpu")
    assert postprocess.distance_rows(PREFIX, GRID, PATCH, 0, T, "cpu") is rows    # made once per layout, then shared
    expected = mean_attention_distance(maps.numpy(), PREFIX, GRID, PATCH)   # (B, H) as numpy's (L, H)
    np.testing.assert_allclose(postprocess.distance_sum(maps, rows).numpy() / N, expected, rtol=1e-5)
    np.testing.assert_allclose(in_chunks(postprocess.distance_sum, maps, rows=True, plain=True).numpy() / N, expected,
                               rtol=1e-5)
    renormalised = mean_attention_distance(maps.numpy(), PREFIX, GRID, PATCH, True)
    np.testing.assert_allclose(postprocess.renormalised_distance_sum(maps, rows, PREFIX, 0).numpy() / N, renormalised,
                               rtol=1e-5)
    np.testing.assert_allclose(in_chunks(postprocess.renormalised_distance_sum, maps, rows=True).numpy() / N,
                               renormalised, rtol=1e-5)
    # every patch looks at its right-hand neighbour (16 px away) with weight 1/2, at CLS with 1/2:
    # distance 8 px where there is a right neighbour (9 of 12 patches), 0 on the last column -> 6 px
    hand = torch.zeros(1, 1, T, T)
    hand[..., :, 0] = 1.0
    for i in range(N):
        if i % GRID[1] < GRID[1] - 1:
            hand[0, 0, PREFIX + i] = 0.0
            hand[0, 0, PREFIX + i, 0] = 0.5
            hand[0, 0, PREFIX + i, PREFIX + i + 1] = 0.5
    assert postprocess.distance_sum(hand, rows).item() / N == pytest.approx(6.0, rel=1e-5)
    # renormalised over patches: the neighbours' 16 px on 9 patches, the last column's rows have no patch mass
    assert postprocess.renormalised_distance_sum(hand, rows, PREFIX, 0).item() / N == pytest.approx(16.0 * 9 / 12,
                                                                                                      rel=1e-5)


def test_entropy_and_key_mass_equal_the_numpy_definitions():
    maps = random_attention()
    B, H = maps.shape[:2]
    entropy = attention_entropy(maps.numpy())
    np.testing.assert_allclose(postprocess.entropy_sum(maps).numpy() / T, entropy, rtol=1e-5)
    np.testing.assert_allclose(in_chunks(postprocess.entropy_sum, maps).numpy() / T, entropy, rtol=1e-5)
    np.testing.assert_allclose(postprocess.key_mass_sum(maps).numpy() / (H * T), key_mass(maps.numpy()), rtol=1e-5,
                               atol=1e-8)
    np.testing.assert_allclose(in_chunks(postprocess.key_mass_sum, maps).numpy() / (H * T), key_mass(maps.numpy()),
                               rtol=1e-5, atol=1e-8)
    assert np.isfinite(postprocess.entropy_sum(maps).numpy()).all()       # the exact zero did not give NaN


def test_entropy_and_shares_of_hand_made_attention():
    uniform = np.full((1, 2, T, T), 1.0 / T)
    np.testing.assert_allclose(attention_entropy(uniform), math.log(T), rtol=1e-5)                  # ln T: the largest
    one_hot = np.zeros((1, 1, T, T))
    one_hot[..., 0] = 1.0                                                                # everyone looks at CLS
    np.testing.assert_allclose(attention_entropy(one_hot), 0.0)
    high = np.zeros(GRID, dtype=bool)
    high[0, 0] = True
    prefix, flagged = attention_shares(uniform, PREFIX, GRID, high)
    np.testing.assert_allclose(prefix, PREFIX / T, rtol=1e-5)
    np.testing.assert_allclose(flagged, 1 / T, rtol=1e-5)
    prefix, flagged = attention_shares(one_hot, PREFIX, GRID, high)
    np.testing.assert_allclose((prefix, flagged), ([1.0], [0.0]))


def test_our_block_loop_is_forward_with_attention():
    model = tiny_model(distilled=True)
    x = torch.randn(2, 3, 48, 64)
    got = capture(model, x, np.float32)
    with torch.inference_mode():
        logits, attn, norms, probe = model.forward_with_attention(x, return_token_norms=True)
    np.testing.assert_array_equal(got.probabilities, logits.softmax(-1).numpy())
    np.testing.assert_array_equal(got.attention, attn.numpy())
    np.testing.assert_array_equal(got.token_norms, norms.numpy())
    assert probe is None and got.probe_attention is None


def test_capture_equals_the_numpy_definitions_on_a_real_forward():
    model = tiny_model(num_reg_tokens=2)
    x = torch.randn(2, 3, 48, 64)
    got = capture(model, x, np.float32, statistics=True, distance_renormalise=True)
    with torch.inference_mode():
        logits, attn, norms = model.forward_with_attention(x, return_token_norms=True)[:3]
    attn = attn.numpy()
    p, grid = 3, (3, 4)                                        # CLS + 2 registers, 48×64 px in 16-px patches
    assert (got.num_prefix, got.grid) == (p, grid)
    np.testing.assert_allclose(got.probabilities, logits.softmax(-1).numpy(), rtol=1e-5)
    np.testing.assert_array_equal(got.attention, attn)
    np.testing.assert_array_equal(got.token_norms, norms.numpy())
    for b in range(2):
        for fusion in FUSIONS:
            np.testing.assert_allclose(got.fused[fusion][b], fuse_heads(attn[b], fusion), rtol=1e-5, atol=1e-8)
        np.testing.assert_allclose(got.mean_distance[b], mean_attention_distance(attn[b], p, grid, 16), rtol=1e-5)
        np.testing.assert_allclose(got.mean_distance_renormalised[b],
                                   mean_attention_distance(attn[b], p, grid, 16, renormalise=True), rtol=1e-5)
        np.testing.assert_allclose(got.entropy[b], attention_entropy(attn[b]), rtol=1e-5)
        np.testing.assert_allclose(got.key_mass[b], key_mass(attn[b]), rtol=1e-5, atol=1e-8)
        # rollout (computed at render time from the head-fused maps) is the rollout of the attention
        np.testing.assert_allclose(rollout_map(got.attention[b], p, grid),
                                   rollout_map(attn[b], p, grid), rtol=1e-5)
        flags = flag_high_norm(got.token_norms[b], p, grid)
        assert artifact_mask(flags).shape == grid
    half = capture(model, x, np.float16)
    assert half.attention.dtype == np.float16 and half.fused["mean"].dtype == np.float16
    np.testing.assert_array_equal(half.attention, attn.astype(np.float16))   # converted once, from float32
    bare = capture(model, x, None)                             # statistics only: no map is kept
    assert bare.attention is None and bare.fused == {} and bare.entropy is None
    np.testing.assert_array_equal(bare.mean_distance, got.mean_distance)


def test_model_input_is_bitwise_the_preprocessing():
    preprocess = vit.Preprocess(resize=70, crop=(48, 64))
    rng = np.random.default_rng(0)
    crops = [preprocess.crop_image(Image.fromarray(rng.integers(0, 256, (90, 120, 3), np.uint8)))
             for _ in range(3)]
    pixels = torch.stack([torch.from_numpy(np.array(c)) for c in crops])
    batch = model_input(pixels, preprocess, torch.device("cpu"))
    assert torch.equal(batch, torch.cat([preprocess.to_tensor(c) for c in crops]))


def test_bfloat16_forward_changes_the_maps_little(cat):
    """--dtype bfloat16 (autocast) against float32 on the same photo: the maps move by about a percent of their
    largest value (docs/datasets.md's table gives the numbers for the real ViT-Ti). On the CPU, autocast keeps softmax
    in bfloat16 too, so rows sum to 1 only to bfloat16's precision (8 bits of mantissa)."""
    from viz.analysis import analyze
    loaded = SimpleNamespace(model=tiny_model(), preprocess=vit.Preprocess.for_crop((48, 64)),
                             labels=[], name="tiny")
    a32 = analyze(loaded, cat)
    a16 = analyze(loaded, cat, dtype=torch.bfloat16)
    assert a16.attention.dtype == np.float32
    np.testing.assert_allclose(a16.attention.sum(-1), 1.0, atol=2 ** -7)
    assert np.abs(a16.attention - a32.attention).max() < 0.05 * a32.attention.max()
    assert np.abs(a16.probabilities - a32.probabilities).max() < 0.02


def test_on_demand_with_the_fused_kernel_is_the_plain_forward(monkeypatch):
    """Large inputs on demand (head-fused copies not kept, a CLS readout): the blocks run the fused kernel, so the
    tokens and the output are the plain forward's bit for bit; the rows' log-sum-exps and CLS rows are those of the
    explicit softmax, the mean distances left to the first view."""
    module = importlib.import_module("viz.analysis.capture")
    monkeypatch.setattr(module, "FUSED_BYTES", 0)
    model = tiny_model(num_reg_tokens=2)
    x = torch.randn(2, 3, 48, 64)
    got = capture(model, x, np.float32, on_demand=True)
    explicit = capture(model, x, np.float32)
    with torch.inference_mode():
        logits = model(x)
    np.testing.assert_array_equal(got.probabilities, logits.softmax(-1).numpy())
    assert got.mean_distance is None and got.fused == {}
    np.testing.assert_allclose(got.readout_rows, explicit.attention[:, :, :, 0], rtol=1e-5, atol=1e-7)
    with torch.inference_mode():
        for layer, block in enumerate(model.blocks):                                       # the logits by hand
            q, k, _ = block.attn.project(block.attention_input(torch.from_numpy(got.stream[:, layer])))
            lse = ((q * block.attn.scale) @ k.transpose(-2, -1)).logsumexp(dim=-1)
            np.testing.assert_allclose(got.logsumexp[:, layer], lse.numpy(), rtol=1e-5, atol=1e-5)


def test_rows_reduced_in_chunks_or_at_once_give_the_same_arrays(monkeypatch):
    """Large maps come a chunk of query rows at a time (``CHUNK_BYTES``): one row, five rows and all rows at once
    agree (the whole block is the model's own call, the chunks its rows)."""
    module = importlib.import_module("viz.analysis.capture")   # the module (the package exports the function)
    model = tiny_model()
    x = torch.randn(2, 3, 48, 64)
    row_bytes = 2 * 4 * 13 * 4                                 # B · H · T · 4 bytes, T = 1 + 3·4
    results = []
    for budget in (2 ** 30, row_bytes, 5 * row_bytes):
        monkeypatch.setattr(module, "CHUNK_BYTES", budget)
        results.append(capture(model, x, np.float16, statistics=True, distance_renormalise=True, on_demand=False))
        results.append(capture(model, x, np.float32, on_demand=True))
    for other in results[2:]:
        first = results[0] if other.attention is not None else results[1]
        for name in ("attention", "token_norms", "mean_distance", "entropy", "key_mass", "mean_distance_renormalised",
                     "readout_rows", "logsumexp", "stream"):
            if getattr(first, name) is not None:
                np.testing.assert_allclose(getattr(other, name), getattr(first, name), rtol=1e-5, atol=1e-7,
                                           err_msg=name)
        for fusion in FUSIONS:
            np.testing.assert_allclose(other.fused[fusion], first.fused[fusion], rtol=1e-3, atol=1e-6)
