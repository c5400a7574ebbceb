"""Protects the claim that a video model is analysed through ``viz.analysis`` as a photo model is, read from its
description: the capture that runs the fused kernel and recomputes each step's attention in chunks gives exactly
what the explicit forward's attention gives through ``viz.maps.video`` (each head's temporal and spatial distance,
its readout row, its entropy, the class probabilities, the token norms, V-JEPA 2's probe attention), and the
analysis' attention source (rows, columns, fused heads, the rollout through ``viz.maps.source``) equals the dense
matrices of every step built from the groups, for every family (joint, divided, probe)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import vit
from reference_models import assert_close
from video_references import FAMILIES, clips, reference
from viz.analysis import analyze
from viz.analysis.video import capture_clips, clip_analyses
from viz.maps.source import rollout_rows
from viz.maps.video import dense_step, distances, readout_row, spatial_distance, temporal_distance, video_rollout
from vit.architecture import BlockLayout
from vit.video_file import Clip, VideoInfo

FRAMES, SIZE = 4, 32


@pytest.fixture(scope="module", params=FAMILIES)
def family_model(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    reference(request.param, "small", FRAMES).save_pretrained(folder)
    return request.param, vit.load(folder)


def expected_readout(attention: np.ndarray, block) -> np.ndarray:
    """(H, T) each head's readout row, by hand from the dense step: the CLS row, else the mean of the patch rows."""
    dense = dense_step(attention, block)
    if block.prefix:
        return dense[:, 0]
    return dense[:, block.prefix:].mean(axis=1)


def test_capture_equals_the_explicit_forward(family_model):
    family, loaded = family_model
    model = loaded.model
    x = clips(2, FRAMES, SIZE, seed=3)
    with torch.no_grad():
        capture = model.forward_with_attention(x, return_token_norms=True)
    captured = capture_clips(model, x, keep=np.float32, statistics=True)
    arch = captured.architecture
    assert arch == model.architecture(SIZE, SIZE, FRAMES) == capture.architecture
    assert np.allclose(captured.probabilities, capture.output.softmax(-1).numpy(), rtol=1e-5, atol=1e-6)
    for b in range(2):
        attention = [a[b].numpy() for a in capture.attention]
        temporal, spatial = distances(attention, arch)
        assert np.allclose(captured.temporal[b], temporal, rtol=1e-5, atol=1e-5)
        assert np.allclose(captured.spatial[b], spatial, rtol=1e-5, atol=1e-4)
        for layer, (a, block) in enumerate(zip(attention, arch.blocks)):
            assert np.allclose(captured.readout_rows[b, layer], expected_readout(a, block), atol=1e-6)
            p = a.reshape(-1, *a.shape[-3:]) if a.ndim == 4 else a[None]      # (G, H, n, n)
            entropy = -(p * np.log(np.maximum(p, 1e-30))).sum(-1).mean(axis=(0, 2))
            assert np.allclose(captured.entropy[b, layer], entropy, rtol=1e-4, atol=1e-5)
        norms = torch.stack(capture.token_norms, dim=1)[b].numpy()
        assert np.allclose(captured.token_norms[b], norms, rtol=1e-5, atol=1e-5)
    if family == "vjepa2":
        assert np.allclose(captured.probe_attention, capture.probe_attention.numpy(), atol=1e-6)
    else:
        assert captured.probe_attention is None
    assert captured.temporal.shape == (2, arch.depth, arch.max_heads)
    if family == "timesformer":                                          # a time step reads 0 in space, and so on
        assert (captured.spatial[:, 0::2] == 0).all() and (captured.temporal[:, 1::2] == 0).all()
        assert (captured.temporal[:, 0::2] > 0).all()


def test_the_source_equals_the_dense_steps(family_model):
    family, loaded = family_model
    model = loaded.model
    x = clips(1, FRAMES, SIZE, seed=4)
    with torch.no_grad():
        capture = model.forward_with_attention(x)
    frames = np.zeros((FRAMES, SIZE, SIZE, 3), np.uint8)
    clip = Clip(frames, np.arange(FRAMES), np.arange(FRAMES) / 25.0, VideoInfo(FRAMES, 25.0, FRAMES / 25, SIZE, SIZE,
                                                                                  "h264"))
    a = clip_analyses(loaded, capture_clips(model, x), [clip])[0]
    arch = a.architecture
    assert a.clip is clip and a.temporal_distance.shape == (arch.depth, arch.max_heads) and a.num_prefix == (
        0 if family in ("videomae", "vjepa2") else 1)
    attention = [t[0].numpy() for t in capture.attention]
    T = arch.blocks[0].num_tokens
    some = np.array([0, 5, T - 1])
    for layer, (attn, block) in enumerate(zip(attention, arch.blocks)):
        dense = dense_step(attn, block)
        head = layer % arch.max_heads
        assert np.allclose(a.maps.rows(layer, head, some), dense[head, some], atol=1e-6)
        assert np.allclose(a.maps.rows(layer, None, some), dense[:, some].mean(0), atol=1e-6)
        assert np.allclose(a.maps.columns(layer, head, some), dense[head][:, some], atol=1e-6)
        assert np.allclose(a.maps.fused(layer), dense.mean(0), atol=1e-6)
        assert np.allclose(a.maps.fused(layer, "max"), dense_step(attn.max(axis=-3, keepdims=True), block)[0],
                           atol=1e-6)
    probe = None if a.probe_attention is None else a.probe_attention
    row = readout_row(arch, probe)
    for ratio in (0.0, 0.5):
        ours = rollout_rows(a.maps, row, discard_ratio=ratio, protect=np.flatnonzero(row) if ratio else ())
        direct = video_rollout(attention, arch, row, discard_ratio=ratio)
        assert np.allclose(ours[arch.num_prefix:].reshape(arch.patch_shape), direct, atol=1e-6)


def test_analyze_sends_a_clip_to_the_video_capture(family_model):
    """``viz.analysis.analyze`` reads the model's description: a video model's clip goes through the video capture,
    on the frames exactly as its preprocessing normalises them."""
    _, loaded = family_model
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (FRAMES, SIZE, SIZE, 3), dtype=np.uint8)
    clip = Clip(frames, np.arange(FRAMES) * 2, np.arange(FRAMES) * 0.08, VideoInfo(8, 25.0, 0.32, SIZE, SIZE, "h264"))
    a = analyze(loaded, clip)
    x = loaded.preprocess.clip_tensor(frames)
    with torch.no_grad():
        logits = loaded.model(x)
    assert_close(torch.from_numpy(a.probabilities)[None], logits.softmax(-1), "probabilities of the analysed clip")
    assert a.architecture.video and a.clip is clip and np.array_equal(np.asarray(a.image), frames[0])


@pytest.mark.parametrize("step", ["joint", "time", "space"])
@pytest.mark.parametrize("budget", [1, 3 * 2**10, 2**30])
def test_reductions_in_chunks_equal_the_direct_computation(step, budget, monkeypatch):
    """The reductions the capture folds into one read of each chunk of probabilities (both distances through one
    table, the readout row, the head mean, the log-sum-exps from each row's own entry, the entropy) equal the direct
    computation on the whole softmax of hand-built queries and keys, in one chunk, a few rows at a time or one row at
    a time; a row whose own entry underflows (a query far from its own key) keeps its exact log-sum-exp."""
    from viz.analysis import video as module
    monkeypatch.setattr(module, "CHUNK_BYTES", budget)
    block = BlockLayout(0, 0, 0, heads=3, grid=(2, 3), token_size=16, prefix=1, frames=4, tubelet=2,
                        attends="all" if step == "joint" else step)
    G, n = block.groups().shape
    B, H, Dh = 2, 3, 8
    gen = torch.Generator().manual_seed(7)
    q, k, v = (torch.randn(B * G, H, n, Dh, generator=gen) for _ in range(3))
    q[0, 1, 1], k[0, 1, 1] = 30.0, -30.0                  # its own logit 1800 below the others: p < 1e-30
    reducer = module._Reducer(block, "cls", 0.5, True, torch.float32, "cpu")
    heads, out = reducer.attend(q, k, v)
    logits = (q @ k.transpose(-2, -1)) * 0.5
    p = logits.softmax(-1)
    assert p[0, 1, 1, 1] < 1e-30
    assert torch.allclose(heads, p @ v, atol=1e-5)
    assert torch.allclose(out["lse"].reshape(B * G, H, n), logits.logsumexp(-1), rtol=1e-6, atol=1e-4)
    groups = p.reshape(B, G, H, n, n).numpy()
    entropy = -(groups * np.log(np.maximum(groups, 1e-30))).sum(-1).mean(axis=(1, 3))
    assert np.allclose(out["entropy"].numpy(), entropy, rtol=1e-5, atol=1e-6)
    assert np.allclose(out["fused"].numpy(), groups.mean(axis=2), atol=1e-6)
    for b in range(B):
        assert np.allclose(out["temporal"][b].numpy(), temporal_distance(groups[b], block), rtol=1e-5, atol=1e-6)
        assert np.allclose(out["spatial"][b].numpy(), spatial_distance(groups[b], block), rtol=1e-5, atol=1e-5)
        assert np.allclose(out["readout"][b].numpy(), expected_readout(groups[b], block), atol=1e-6)
