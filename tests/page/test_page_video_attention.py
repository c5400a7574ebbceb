"""Protects the Video tab's attention views through its handlers (``vit_explorer.tabs.video``), on a public server
listing only a photo model: the bundled moving-squares toy is offered in the Video tab (and not in the photo tabs'
Model box); after an analysis the step slider, the head choice and the pictures come from the cached analysis and
equal the slice's drawings (``viz.video.attention``); a click on the chosen frame gives that patch's row and column;
no handler takes the model's turn; every hostile event value is refused with one sentence."""
from __future__ import annotations

import math
import shutil
from pathlib import Path

import gradio as gr
import numpy as np
import pytest

import app_server  # noqa: F401  (gives this process its own GRADIO_TEMP_DIR before any app is built)
import vit
from tiny_models import tiny
from vit_explorer import state
from vit_explorer.tabs import video as tab
from viz.i18n import t
from viz.video.attention import CAPTION_HEIGHT, clip_strip, head_label, heads_picture, patch_maps, patch_token, \
    readout_frames

TOY = "moving_squares_toy.pt"


@pytest.fixture
def server(tmp_path, monkeypatch):
    """A public server listing a tiny photo model; the right-moving example clip uploaded."""
    photo_model = vit.save_checkpoint(tmp_path / "photos.pt", tiny(), list("abcde"), vit.Preprocess(32, 32))
    uploads = tmp_path / "uploads"
    (uploads / "beef").mkdir(parents=True)
    clip = shutil.copy(Path(state.EXAMPLES_DIR) / "video" / "clips" / "right" / "0000.mp4", uploads / "beef" / "c.mp4")
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(uploads))
    monkeypatch.setenv("VIT_WEIGHTS_DIR", str(tmp_path / "no-weights"))
    monkeypatch.setattr(state.SETTINGS, "models", [str(Path(photo_model).resolve())])
    monkeypatch.setattr(state.SETTINGS, "any_model", False)
    tab.analyse(TOY, str(clip), "en")
    return str(clip)


def select(x: float, y: float) -> gr.SelectData:
    return gr.SelectData(target=None, data={"index": [x, y], "value": None})


def same(picture, expected) -> bool:
    return np.array_equal(np.asarray(picture), np.asarray(expected))


def test_the_toy_is_offered_in_the_video_tab_only(server):
    assert TOY in state.video_models() and TOY not in state.model_choices()
    assert state.model_source(TOY, "en", state.video_models()) == str(Path(state.EXAMPLES_DIR) / "video" / TOY)
    with pytest.raises(gr.Error):
        state.model_source(TOY, "en")                        # the photo tabs' guard does not open it
    assert len(state.example_clips()) == 8


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_the_step_views_come_from_the_cached_analysis(server, lang):
    taken = state.MODEL_TURN.taken
    out = tab.show_attention(TOY, server, lang)
    a, _ = state.VIDEOS.find(tab.video_key(TOY, server, lang))
    assert set(out) == set(tab.ATTENTION_OUTPUTS) and out["video_patch"] is None
    assert (out["video_step"].maximum, out["video_step"].value) == (2, 2)
    assert out["video_head"].choices[0] == (t("video.mean_of_heads", lang), -1) and len(out["video_head"].choices) == 5
    where = t("video.where", lang, step=2, head=head_label(None, lang))
    assert same(out["video_readout"], clip_strip(a, readout_frames(a, 2), t("video.colorbar_readout", lang,
                                                                            where=where), lang, cell=tab.STRIP_CELL))
    assert same(out["video_heads"], heads_picture(a, 2, 0, lang, cell=tab.STRIP_CELL))
    step = tab.show_step(TOY, server, 5, 1, 3, None, lang)
    assert same(step["video_heads"], heads_picture(a, 1, 5, lang, cell=tab.STRIP_CELL))
    assert step["video_patch_row"] is None and t("video.step_joint", lang, step=1, last=2,
                                                  head=head_label(3, lang)) in step["video_attention_note"]
    side = tab.FRAME_SIZE / 4
    clicked = tab.pick_patch(select(2.5 * side, CAPTION_HEIGHT + 1.5 * side), TOY, server, 5, 1, 3, lang)
    assert set(clicked) == {"video_patch", *tab.PATCH_OUTPUTS} and clicked["video_patch"] == (5, 1, 2)
    row, column = patch_maps(a, 1, 3, patch_token(a, 5, 1, 2))
    where = t("video.where", lang, step=1, head=head_label(3, lang))
    assert same(clicked["video_patch_row"], clip_strip(a, row, t("video.colorbar_row", lang, where=where), lang,
                                                       cell=tab.STRIP_CELL, patch=(5, 1, 2)))
    assert same(clicked["video_patch_column"], clip_strip(a, column, t("video.colorbar_column", lang, where=where),
                                                          lang, cell=tab.STRIP_CELL, patch=(5, 1, 2)))
    again = tab.show_step(TOY, server, 5, 1, 3, (5, 1, 2), lang)       # another step keeps the clicked patch
    assert same(again["video_patch_row"], clicked["video_patch_row"])
    assert same(tab.show_heads(TOY, server, 7, 1, 3, lang)["video_heads"], heads_picture(a, 1, 7, lang,
                                                                                          cell=tab.STRIP_CELL))
    assert state.MODEL_TURN.taken == taken


BAD_STEPS = [3, -1, 1.5, "1", math.nan, math.inf, None, True, [1]]
BAD_HEADS = [4, -2, 0.5, "0", math.nan, [0], {"h": 1}]
BAD_CLICKS = [(-5, 100), (100, 1e9), (10, CAPTION_HEIGHT - 1), ("a", "b"), (math.nan, 50), (100, CAPTION_HEIGHT + 448)]
BAD_PATCHES = [(0, 4, 0), (8, 0, 0), (0, 0, -1), (0, 0), "0,0,0", (0.5, 0, 0)]


def refused(fn, *args) -> str:
    with pytest.raises(gr.Error) as error:
        fn(*args)
    return error.value.message


def test_hostile_event_values_get_one_sentence(server):
    for step in BAD_STEPS:
        assert refused(tab.show_step, TOY, server, 0, step, -1, None, "en") == t("message.video_bad_step", "en"), step
    for head in BAD_HEADS:
        assert refused(tab.show_step, TOY, server, 0, 1, head, None, "zh-CN") == t("message.video_bad_head", "zh-CN")
    for x, y in BAD_CLICKS:
        assert refused(tab.pick_patch, select(x, y), TOY, server, 0, 1, -1, "en") == t("message.video_bad_click",
                                                                                       "en"), (x, y)
    for data in ({"index": None, "value": None}, {"index": [1], "value": None}, {"index": "12", "value": None}):
        assert refused(tab.pick_patch, gr.SelectData(None, data), TOY, server, 0, 1, -1, "en") == t(
            "message.video_bad_click", "en")
    for patch in BAD_PATCHES:
        assert refused(tab.show_step, TOY, server, 0, 1, -1, patch, "en") == t("message.video_bad_click", "en")
    for frame in (8, -1, 2.5, "3"):
        assert refused(tab.show_heads, TOY, server, frame, 1, -1, "en") == t("message.video_bad_click", "en")
    state.VIDEOS.clear()
    assert refused(tab.show_step, TOY, server, 0, 1, -1, None, "en") == t("message.video_none", "en")
    assert refused(tab.pick_patch, select(10, 30), TOY, server, 0, 1, -1, "en") == t("message.video_none", "en")
