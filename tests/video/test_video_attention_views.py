"""Protects the Video tab's attention views (``viz.video.attention``) for every family (joint, divided, probe): the
readout's attention per frame, each head at a frame, and a clicked patch's row and column each equal the dense
attention of ``model.forward_with_attention`` at that step (one head and the mean of heads); a pixel of the chosen
frame's picture maps to the patch under it and to its stream token; each step says which kind it is."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import vit
from video_references import FAMILIES, reference
from viz.analysis import analyze
from viz.i18n import t
from viz.maps.video import dense_step
from viz.video.attention import CAPTION_HEIGHT, attention_note, clip_strip, heads_at_frame, heads_picture, \
    patch_at, patch_maps, patch_token, readout_frames, step_kind
from vit.video_file import Clip, VideoInfo

FRAMES, SIZE, CELL = 4, 32, 448


@pytest.fixture(scope="module", params=FAMILIES)
def analysed(request, tmp_path_factory):
    """(family, the analysis of one random clip with its queries and keys in float32, each step's dense attention
    from the explicit forward (H, T, T))."""
    folder = tmp_path_factory.mktemp(request.param)
    reference(request.param, "small", FRAMES).save_pretrained(folder)
    loaded = vit.load(folder)
    frames = np.random.default_rng(2).integers(0, 256, (FRAMES, SIZE, SIZE, 3), dtype=np.uint8)
    clip = Clip(frames, np.arange(FRAMES), np.arange(FRAMES) / 25.0, VideoInfo(FRAMES, 25.0, 0.16, SIZE, SIZE, "h264"))
    a = analyze(loaded, clip, np.float32)
    with torch.no_grad():
        capture = loaded.model.forward_with_attention(loaded.preprocess.clip_tensor(frames))
    dense = [dense_step(s[0].numpy(), block) for s, block in zip(capture.attention, capture.architecture.blocks)]
    return request.param, a, dense


def readout_of(dense: np.ndarray, prefix: int) -> np.ndarray:
    """(H, T) each head's readout row by hand: the CLS row, else the mean of the patch rows."""
    return dense[:, 0] if prefix else dense[:, prefix:].mean(axis=1)


def test_the_readout_per_frame_and_the_heads_grid_equal_the_dense_attention(analysed):
    family, a, dense = analysed
    arch = a.architecture
    P = arch.num_prefix
    for layer, d in enumerate(dense):
        rows = readout_of(d, P)[:, P:].reshape(-1, *arch.patch_shape)                  # (H, T', gh, gw)
        assert np.allclose(readout_frames(a, layer), rows.mean(0), atol=1e-6)
        assert np.allclose(readout_frames(a, layer, 1), rows[1], atol=1e-6)
        for frame in range(FRAMES):
            assert np.allclose(heads_at_frame(a, layer, frame), rows[:, frame // arch.tubelet], atol=1e-6)
    if family == "timesformer":                  # a time step: the CLS token keeps itself, its row has no patch
        assert step_kind(a, 0) == "time" and step_kind(a, 1) == "space"
        assert np.all(readout_frames(a, 0) == 0) and readout_frames(a, 1).sum() > 0.5
    else:
        assert {step_kind(a, layer) for layer in range(a.depth)} == {"joint"}


def test_a_clicked_patch_row_and_column_equal_the_dense_attention(analysed):
    _, a, dense = analysed
    arch = a.architecture
    P, (gh, gw) = arch.num_prefix, arch.grid
    frame, row, col = FRAMES - 1, gh - 1, 1
    token = patch_token(a, frame, row, col)
    assert token == P + ((frame // arch.tubelet) * gh + row) * gw + col
    for layer, d in enumerate(dense):
        for head in (None, 0, a.heads - 1):
            attends, attended = patch_maps(a, layer, head, token)
            h = d.mean(0) if head is None else d[head]
            assert np.allclose(attends, h[token, P:].reshape(arch.patch_shape), atol=1e-6)
            assert np.allclose(attended, h[P:, token].reshape(arch.patch_shape), atol=1e-6)


def test_a_pixel_of_the_chosen_frame_is_the_patch_under_it(analysed):
    _, a, _ = analysed
    gh, gw = a.architecture.grid
    side = CELL / gw
    for row, col in ((0, 0), (gh - 1, gw - 1), (1, gw - 2)):
        x, y = (col + 0.5) * side, CAPTION_HEIGHT + (row + 0.5) * side
        assert patch_at(a, x, y, CELL) == (row, col)
    for x, y in ((10, CAPTION_HEIGHT - 1), (-1, 100), (CELL, 100), (10, CAPTION_HEIGHT + CELL)):
        with pytest.raises(ValueError):
            patch_at(a, x, y, CELL)
    for frame, row, col in ((FRAMES, 0, 0), (-1, 0, 0), (0, gh, 0), (0, 0, -1)):
        with pytest.raises(ValueError):
            patch_token(a, frame, row, col)


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_the_pictures_and_the_note(analysed, lang):
    family, a, _ = analysed
    layer = a.depth - 1
    strip = clip_strip(a, readout_frames(a, layer), "x", lang, cell=64, columns=4, patch=(0, 0, 0))
    heads = heads_picture(a, layer, 0, lang, cell=64, columns=6)
    assert strip.width > FRAMES * 64 and strip.height >= 64 + 20 and heads.width > min(a.heads, 6) * 64
    note = attention_note(a, 0, None, lang, (1, 0, 1))
    kind = "time" if family == "timesformer" else "joint"
    assert note.startswith(t(f"video.step_{kind}", lang, step=0, last=a.depth - 1,
                             head=t("video.mean_of_heads", lang)))
    assert t("video.patch_note", lang, row=0, col=1, index=1, tau=1 // a.architecture.tubelet) in note
