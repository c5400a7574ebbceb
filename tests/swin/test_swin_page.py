"""The page on a Swin, a model of stages and windows: a Swin checkpoint opens, every map tab shows what the views
compute from its description (``vit.architecture``: each block's grid and windows) on the analysis the page cached,
the controls redraw, Explain and Trust run its methods and pixel protocols, the Model and Learn tabs show its stages
with this photo's shapes, the tabs that need one sequence of tokens say why in one sentence in the visitor's
language, and Compare puts a Swin beside a ViT on the same photo."""
from __future__ import annotations

import gradio as gr
import numpy as np
import pytest
import vit

import app_server  # noqa: F401  (gives this process its own GRADIO_TEMP_DIR before the app is built)
from handler_steps import finished
from swin_references import small_swin
from text_sizes import recording, shown_text
from tiny_run import tiny_checkpoint
from vit_explorer import state, views
from vit_explorer.controls import ControlValues
from vit_explorer.tabs import compare, explain, features, heads, inside, learn, trust
from vit_explorer.tabs.explain import NO_CONTRAST, TOP1
from viz import panels
from viz.drawing import screens
from viz.i18n import t
from viz.maps import windows
from viz.norms import view as norms_view
from viz.attention.view import attention_view
from viz.controls import NARROW_SIZE
from viz.distance.view import distance_view
from viz.heads.view import heads_view
from viz.norms.view import norms_grid_panel, token_norm_curves_panel
from viz.query.view import query_views
from viz.rollout.view import rollout_view

LABELS = ["a", "b", "c", "d"]


@pytest.fixture(scope="module")
def swin_path(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("swin") / "small_swin.pt"
    return str(vit.save_checkpoint(path, small_swin(1), LABELS, vit.Preprocess.for_crop(32),
                                   extra={"name": "small swin"}))


@pytest.fixture(scope="module")
def photo(tmp_path_factory, cat) -> str:
    path = tmp_path_factory.mktemp("photo") / "cat.jpg"
    cat.save(path, quality=95)
    return str(path)


def opened(photo: str, model: str, lang: str = "en", **controls) -> dict:
    return views.page_analyze(None, photo, model, ControlValues(**controls), None, lang)


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_a_swin_opens_and_its_map_tabs_show_its_windows(photo, swin_path, lang):
    page = opened(photo, swin_path, lang, layer=3)
    session = page["session"]
    a = state.analysis(session.key, lang)
    assert not a.architecture.one_sequence and a.depth == 6 and a.architecture.heads == (1, 1, 2, 2, 2, 2)
    loaded = state.model_of(session.key).loaded
    capture = loaded.model.forward_with_attention(loaded.preprocess.to_tensor(a.image))
    for mine, theirs in zip(a.maps.attention, capture.attention):
        np.testing.assert_allclose(mine, theirs[0].detach().numpy(), rtol=1e-5, atol=1e-7)
    assert list(page["top5"]) == [label for label, _ in a.top_k(5)]
    assert "small swin" in page["summary"] and "16×16, 8×8, 4×4" in page["summary"]
    for name in ("rollout", "attention", "heads", "query_out", "query_in", "distance", "norms", "norm_curves"):
        assert page[name].width > 100 and page[name].height > 60, name
    assert page["rollout_note"] == t("note.rollout_through", lang, query=panels.query_label("mean", lang))
    assert page["attention_note"] == t("note.layer_windows", lang, stage=1, grid="8×8", window="4×4", shift=2,
                                       pixels=4)
    assert "(4, 4)" in page["query_note"] and "8×8" in page["query_note"]      # patch (8, 8): stage 1's token (4, 4)
    assert len(session.heads_layout.grids) == 3                                # the stacked heads grids: one per stage
    assert page["position"].size == (420, 200)                                  # the sentence why, as a picture
    assert "|" in page["architecture"] and "8 × 4×4" not in page["architecture"]
    assert "4 × 4×4" in page["architecture"] and "1 × 4×4" in page["architecture"]   # stage 1: 4 windows, stage 2: 1


def test_the_controls_redraw_the_chosen_block_and_head(photo, swin_path):
    page = opened(photo, swin_path, layer=0)
    session = page["session"]
    a = state.analysis(session.key)
    redrawn = views.redraw(session, ControlValues(layer=4, head=1, mean_heads=False), "en", "layer")
    assert redrawn["attention_note"] == t("note.layer_windows", "en", stage=2, grid="4×4", window="4×4", shift=0,
                                          pixels=8)
    # the map drawn is the average pool's row of block 4, head 1
    block = a.architecture.blocks[4]
    expected = windows.rows_through(windows.mean_row((4, 4)), a.maps.attention[4][:, 1], block).reshape(4, 4)
    np.testing.assert_allclose(panels.attention_of(a, 4, 1), expected, rtol=1e-6)
    # a head past stage 0's one head is clamped to its last
    assert views.redraw(session, ControlValues(layer=0, head=1, mean_heads=False), "en", "head") is not None
    assert ControlValues(layer=0, head=1, mean_heads=False).for_analysis(a).head == 0


def _select(x: float, y: float) -> gr.SelectData:
    return gr.SelectData(target=None, data={"index": [x, y], "value": None})


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_clicking_a_thumbnail_selects_that_layer_and_head(photo, swin_path, lang):
    page = opened(photo, swin_path, lang)
    session = page["session"]
    a = state.analysis(session.key, lang)
    placement = session.heads_layout
    for layer in range(a.depth):                     # every thumbnail's centre reads back as its (layer, head)
        for head in range(a.architecture.heads[layer]):
            x0, y0, x1, y1 = placement.box(layer, head)
            assert x1 < page["heads"].width and y1 < page["heads"].height
            assert placement.cell_at((x0 + x1) / 2, (y0 + y1) / 2) == (layer, head)
    x0, y0, x1, y1 = placement.box(4, 1)
    out = heads.pick_head(_select((x0 + x1) / 2, (y0 + y1) / 2), session, ControlValues(), lang)
    assert (out["layer"], out["head"].value, out["head"].interactive, out["mean_heads"]) == (4, 1, True, False)
    # the Attention and Patch query tabs follow: block 4 (stage 2, 4×4 tokens), head 1
    c = ControlValues(layer=4, head=1, mean_heads=False).for_analysis(a)
    expected, note = attention_view(a, c, lang)
    assert out["attention_note"] == note == t("note.layer_windows", lang, stage=2, grid="4×4", window="4×4",
                                                shift=0, pixels=8)
    assert np.array_equal(np.asarray(out["attention"]), np.asarray(expected))
    assert "4×4" in out["query_note"]
    query_out = query_views(out["session"], a, c, lang)[0]
    assert np.array_equal(np.asarray(out["query_out"]), np.asarray(query_out))
    # the line on the head: its distance, and the entropy of the pool's row through block 4's head 1 over 16 tokens
    block = a.architecture.blocks[4]
    pool = windows.rows_through(windows.mean_row((4, 4)), a.maps.attention[4][:, 1], block).astype(np.float64)
    entropy = float(-(pool * np.log2(pool)).sum())
    assert out["heads_info"] == t("note.head_info", lang, layer=4, head=1,
                                  distance=float(panels.mean_distance_of(a)[4, 1]), entropy=entropy,
                                  share=entropy / 4.0, maximum=4.0)
    # the grid frames the chosen thumbnail in green, and a click on a stage's title selects nothing
    framed = np.asarray(out["heads"])
    assert tuple(framed[y0 - 1, (x0 + x1) // 2]) == (0, 200, 0)
    assert tuple(np.asarray(page["heads"])[y0 - 1, (x0 + x1) // 2]) != (0, 200, 0)
    assert heads.pick_head(_select(2, 2), out["session"], ControlValues(), lang) == {}


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_a_swins_pictures_read_on_a_phone_and_its_narrow_grid_answers_clicks(photo, swin_path, lang, monkeypatch):
    page = opened(photo, swin_path, lang, narrow=True)
    session = page["session"]
    a = state.analysis(session.key, lang)
    c = ControlValues(narrow=True, layer=4, head=1, mean_heads=False).for_analysis(a)
    drawn = {"rollout": lambda: rollout_view(a, c, lang)[0],
             "attention": lambda: attention_view(a, c, lang)[0],
             "heads": lambda: heads_view(session, a, c, lang)[1],
             "query": lambda: query_views(session, a, c, lang)[0],
             "distance": lambda: distance_view(a, lang, narrow=True),
             "norms": lambda: norms_grid_panel(a, lang=lang, narrow=True),
             "norm curves": lambda: token_norm_curves_panel(a, lang=lang, narrow=True)}
    small = {}
    with recording(monkeypatch) as sizes:
        for name, draw in drawn.items():
            sizes.clear()
            image = draw()
            if (shown := shown_text(sizes, image.width)) < screens.MIN_TEXT - 0.05:
                small[name] = (round(shown, 1), image.width, min(sizes.pixels))
    assert not small, f"text below {screens.MIN_TEXT} px on a {screens.PHONE_WIDTH} px picture: {small}"
    assert page["rollout"].height == page["attention"].height == NARROW_SIZE   # the page drew for a phone
    # the stages' grids in bands of a few layers, and clicks still find each thumbnail
    banded, picture, _ = heads_view(session, a, c, lang)
    for layer in range(a.depth):
        for head in range(a.architecture.heads[layer]):
            x0, y0, x1, y1 = banded.heads_layout.box(layer, head)
            assert x1 < picture.width and y1 < picture.height
            assert banded.heads_layout.cell_at((x0 + x1) / 2, (y0 + y1) / 2) == (layer, head)
    x0, y0, x1, y1 = banded.heads_layout.box(4, 1)
    assert tuple(np.asarray(picture)[y0 - 1, (x0 + x1) // 2]) == (0, 200, 0)          # the chosen head, framed


@pytest.mark.parametrize("narrow", [False, True])
def test_a_swins_token_norms_put_each_block_on_its_own_scale_under_a_colour_bar(photo, swin_path, narrow,
                                                                                  monkeypatch):
    """The norms grow from stage to stage, so each block's thumbnail spans its own smallest to largest norm, written
    under the block's number, a token of a coarser stage drawn over the patches it covers."""
    a = state.analysis(opened(photo, swin_path, "en", narrow=narrow)["session"].key, "en")
    drawn = []
    grid = norms_view.banded_grid
    monkeypatch.setattr(norms_view, "banded_grid", lambda maps, *args, **kw: drawn.append((maps, args, kw)) or
                        grid(maps, *args, **kw))
    norms_view.norms_grid_panel(a, lang="en", narrow=narrow)
    maps, args, kw = drawn[-1]                                 # drawn again when the bar's label needs the room
    labels = args[1]
    for layer, (norms, block) in enumerate(zip(a.token_norms, a.architecture.blocks)):
        low, high = float(np.min(norms)), float(np.max(norms))
        assert maps[0, layer].min() == 0.0 and maps[0, layer].max() == 1.0
        assert labels[layer].endswith(f"{low:.3g}–{high:.3g}")
        factor = a.grid[0] // block.grid[0]                         # each token over the factor × factor patches
        assert (maps[0, layer][::factor, ::factor] == maps[0, layer][factor - 1::factor, factor - 1::factor]).all()
    assert kw["value_range"] == (0.0, 1.0)


def test_explain_and_trust_run_the_swins_methods(photo, swin_path):
    session = opened(photo, swin_path)["session"]
    shown = explain.explain(session, "gae", TOP1, NO_CONTRAST, "", False, 0.6, "en")
    assert "explain_picture" in shown and "GAE" in shown["explain_line"]
    cost = views.views(session, state.model_of(session.key), state.analysis(session.key),
                       ControlValues().for_analysis(state.analysis(session.key)), "en")["trust_cost"]
    assert t("trust.pixels_only", "en") in cost
    result = finished(trust.check(session, TOP1, "", False, False, trust.FAST, "en"))
    assert "mean colour" in result["trust_table"].lower() or "mean_colour" in result["trust_table"]


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_tabs_that_need_one_sequence_of_tokens_say_why(photo, swin_path, lang):
    session = opened(photo, swin_path, lang)["session"]
    assert features.show(session, None, 0, False, 0.6, False, lang)["features_pca_note"] == \
        t("one_sequence.features", lang)
    assert opened(photo, swin_path, lang)["inside_line"] == t("one_sequence.inside", lang)   # said before a click
    for run, key in ((lambda: features.redraw(None, session, 0, False, 0.6, False, lang), "one_sequence.features"),
                     (lambda: finished(inside.look_inside(session, TOP1, NO_CONTRAST, "", False, lang)),
                      "one_sequence.inside")):
        with pytest.raises(gr.Error) as refused:
            run()
        assert refused.value.message == t(key, lang)
    walk = learn.show(session, 1, 0, lang)
    assert walk["learn_text"] == t("learn.stages", lang) and "|" in walk["learn_table"]
    assert walk["learn_picture"].size == (640, 640)


def test_the_walks_steps_hide_for_a_swin_and_come_back_for_a_vit(photo, swin_path, tmp_path):
    vit_path = str(tiny_checkpoint(tmp_path / "tiny.pt", size=32, patch=8, depth=3, heads=2))
    to_swin = views.switch_model(swin_path, vit_path, photo, None, ControlValues(), "en")
    assert learn.FITTED == ("learn_about", "learn_steps", "step", "learn_layer")
    assert [to_swin[name].visible for name in learn.FITTED] == [False] * 4   # how to step, Back/Next, step, layer
    assert to_swin["learn_layer"].maximum == 5
    assert learn.show(to_swin["session"], 4, 2, "en")["learn_text"] == t("learn.stages", "en")   # one page: no steps
    to_vit = views.switch_model(vit_path, swin_path, photo, to_swin["session"], ControlValues(), "en")
    assert [to_vit[name].visible for name in learn.FITTED] == [True] * 4
    assert (to_vit["learn_layer"].maximum, to_vit["learn_layer"].value) == (2, 2)


def test_compare_puts_a_swin_beside_a_vit(photo, swin_path, tmp_path):
    vit_path = str(tiny_checkpoint(tmp_path / "tiny.pt", size=32, patch=8, depth=3, heads=2))
    session = opened(photo, swin_path)["session"]
    shown = compare.compare(session, vit_path, compare.AS_A, "en", ControlValues())
    assert shown["comparison"].width > 200 and list(shown["top5_a"])[0].startswith(
        state.analysis(session.key).top_k(1)[0][0])
    # and the other way round: a ViT's page compares with a Swin
    session_vit = opened(photo, vit_path)["session"]
    assert compare.compare(session_vit, swin_path, compare.AS_A, "en", ControlValues())["comparison"].width > 200
    # attention through depth on one grid needs one sequence of tokens: one sentence
    with pytest.raises(gr.Error) as refused:
        compare.animate(session, "attention", "en", ControlValues())
    assert refused.value.message == t("one_sequence.animate", "en")
