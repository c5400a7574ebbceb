"""Protects "re-render only what changed": a display or map control redraws exactly the pictures that depend on it
(counted by the draw calls of the map tabs' views, where each tab calls its slice's), never all of them to throw
most away, and the event of each control lists only those pictures as its outputs."""
from __future__ import annotations

import pytest

import app_server  # noqa: F401  (gives this process its own GRADIO_TEMP_DIR before the app is built)
from vit_explorer import api, views
from vit_explorer.controls import CONTROLS, ControlValues
from vit_explorer.tabs import attention, heads, query, rollout
from viz import explorer

AUGREG = "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors"
VIEWS = {"rollout": (rollout, "rollout_view"), "attention": (attention, "attention_view"),
         "heads": (heads, "heads_view"), "query": (query, "query_views")}
EVERY = set(VIEWS)
# (changed control, other values) -> the pictures drawn again
EXPECTED = [
    ("fusion", {}, {"rollout"}),
    ("discard_ratio", {}, {"rollout"}),
    ("start_layer", {}, {"rollout"}),
    ("fusion", {"rolled": True}, {"rollout", "query"}),           # the patch query is rolled out too
    ("opacity", {}, EVERY),
    ("mask_artifacts", {}, EVERY),
    ("patch_true", {}, EVERY),
    ("shared_scale", {}, {"attention", "heads", "query"}),         # the heads grid: one scale or one per layer
    ("shared_scale", {"rolled": True}, {"attention", "heads"}),
    ("layer", {}, {"attention", "query"}),                         # the mean of heads: no head framed in the grid
    ("layer", {"mean_heads": False}, {"attention", "heads", "query"}),
    ("head", {"mean_heads": False}, {"attention", "heads", "query"}),
    ("mean_heads", {"mean_heads": False}, {"attention", "heads", "query"}),
    ("dino_mask", {"dino_mask": True}, {"attention"}),
    ("rolled", {"rolled": True}, {"query"}),
    ("layer", {"rolled": True}, {"attention"}),
]


@pytest.fixture(scope="module")
def session(real_weights_dir, cat, tmp_path_factory):
    photo = tmp_path_factory.mktemp("redraw") / "cat.jpg"
    cat.save(photo, quality=95)
    return api.analyze(str(photo), str(real_weights_dir / AUGREG))[0]


@pytest.fixture
def drawn(monkeypatch) -> list[str]:
    """The views drawn, in order (each view counted once per call, whether a tab redraws it or ``viz.explorer``
    draws it for a new photo)."""
    calls = []
    for name, (tab, function) in VIEWS.items():
        original = getattr(tab, function)
        counted = lambda *a, _n=name, _f=original, **k: calls.append(_n) or _f(*a, **k)  # noqa: E731
        monkeypatch.setattr(tab, function, counted)
        monkeypatch.setattr(explorer, function, counted)
    return calls


@pytest.mark.parametrize("changed, values, expected", EXPECTED, ids=[f"{c}-{v}" for c, v, _ in EXPECTED])
def test_a_control_redraws_only_the_pictures_it_affects(session, drawn, changed, values, expected):
    redrawn = views.redraw(session, ControlValues(layer=11, **values), "en", changed)
    assert sorted(drawn) == sorted(expected)                       # each picture drawn once, no other one
    pictures = {"rollout": "rollout", "attention": "attention", "heads": "heads", "query": "query_out"}
    assert {name for name, output in pictures.items() if output in redrawn} == expected


def test_each_controls_event_outputs_only_what_it_may_redraw():
    assert views.redrawn_by("fusion") == ["session", "rollout", "rollout_note", "query_out", "query_in", "query_note"]
    assert views.redrawn_by("dino_mask") == ["session", "attention", "attention_note"]
    assert views.redrawn_by("rolled") == ["session", "query_out", "query_in", "query_note"]
    every = views.redrawn_by("opacity")
    assert {"rollout", "attention", "heads", "query_out"} <= set(every) and "distance" not in every
    for name in CONTROLS:                                          # every control redraws something
        assert len(views.redrawn_by(name)) > 1, name


def test_a_new_photo_draws_every_picture_once(session, drawn, real_weights_dir):
    """The new analysis's pictures: each view once (none drawn twice, none thrown away)."""
    views.views(session, views.state.MODELS.get(str(real_weights_dir / AUGREG)),
                views.state.ANALYSES.get(session.key), ControlValues(layer=11).for_analysis(
                    views.state.ANALYSES.get(session.key)), "en")
    assert sorted(drawn) == sorted(EVERY)


def test_the_opacity_and_a_top5_click_explain_only_while_the_explain_tab_is_open(session, monkeypatch):
    """Both live outside the Explain tab: with it closed they run no model pass (it is drawn when opened)."""
    from vit_explorer import state
    from vit_explorer.tabs import explain

    asked = []
    monkeypatch.setattr(state, "explained", lambda *a: asked.append(a) or pytest.fail("explained a closed tab"))
    assert explain.explain_if_open("rollout", session, "gae", explain.TOP1, explain.NO_CONTRAST, "", False, 0.3,
                                   "en") == {} and not asked
    monkeypatch.undo()
    shown = explain.explain_if_open(explain.ID, session, "gae", explain.TOP1, explain.NO_CONTRAST, "", False, 0.3, "en")
    assert shown["explain_picture"].width > 200 and "GAE" in shown["explain_line"]
