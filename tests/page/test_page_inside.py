"""Protects the page's Inside tab (``vit_explorer.tabs.inside``): "Look inside" shows what ``viz.inside.job``
computes for the Explain tab's class (and contrast) on the analysed crop, step by step with progress, cached; a
click on the strip, the DLA table or the head-importance table, the layer slider and the language switch redraw
from the cache without the model; removing heads and patching from a second photo give the library's numbers; a
readout that is not linear (MAP) has no DLA and an approximate lens; every mistake is one message. (The model's turn
per step: tests/page/test_page_model_turn.py; in a browser: tests/browser/test_inside_browser.py.)"""
from __future__ import annotations

from types import SimpleNamespace

import gradio as gr
import numpy as np
import pytest
import torch
from PIL import Image
from skimage import data

import app_server  # noqa: F401  (gives this process its own GRADIO_TEMP_DIR before the app is built)
import tiny_models
from handler_steps import finished
import vit
from tiny_run import COLOURS, tiny_checkpoint
from vit.explain import ClassTarget
from vit.inside import ablate
from viz.inside.job import InsideJob
from viz.cache import Cache
from viz.i18n import t
from viz.inside import views
from vit_explorer import api, state
from vit_explorer.tabs import inside
from vit_explorer.tabs.explain import NO_CONTRAST, TOP1

DEPTH, HEADS = 3, 2


def quiet(fraction, desc=None) -> None:
    """A progress callback that ignores what it is told."""


def click(x: float, y: float) -> SimpleNamespace:
    """What Gradio hands a select handler: the pixel clicked."""
    return SimpleNamespace(index=[x, y])


def pixel(cells, row: int, column: int, box: int = 0) -> tuple[float, float]:
    """The centre of cell (row, column) of a picture's ``box``-th table, from its box and data limits."""
    (left, top, right, bottom), (x0, x1, y0, y1) = cells.boxes[box], cells.limits[box]
    return left + (column - x0) / (x1 - x0) * (right - left), top + (row - y1) / (y0 - y1) * (bottom - top)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> str:
    return str(tiny_checkpoint(tmp_path_factory.mktemp("inside") / "tiny.pt", depth=DEPTH, heads=HEADS))


@pytest.fixture(scope="module")
def photos(tmp_path_factory, cat) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("inside_photos")
    cat.save(folder / "cat.jpg", quality=95)
    Image.fromarray(data.coffee()).save(folder / "coffee.png")
    (folder / "notes.jpg").write_text("<!DOCTYPE html><html><body>Not a photo</body></html>")
    return {name: str(folder / name) for name in ("cat.jpg", "coffee.png", "notes.jpg")}


@pytest.fixture
def fresh(monkeypatch):
    """An empty cache of inside views (nothing from earlier tests)."""
    monkeypatch.setattr(state, "INSIDE", Cache(None, state.INSIDE_MEMORY))


def looked(model: str, photo: str, target=TOP1, contrast=NO_CONTRAST, lang="en"):
    session = api.analyze(photo, model)[0]
    return session, finished(inside.look_inside(session, target, contrast, "", False, lang, progress=quiet))


def crop_tensor(session) -> tuple[torch.nn.Module, torch.Tensor, tuple]:
    loaded = state.model_of(session.key).loaded
    return loaded.model, loaded.preprocess.to_tensor(state.ANALYSES.get(session.key).image), loaded.labels


def test_look_inside_runs_in_steps_with_progress_and_shows_the_librarys_report(tiny, photos, fresh):
    session = api.analyze(photos["cat.jpg"], tiny)[0]
    seen: list[float] = []
    values = finished(inside.look_inside(session, TOP1, NO_CONTRAST, "", False, "en",
                                progress=lambda f, desc=None: seen.append(f)))
    assert len(seen) == 1 + DEPTH and seen == sorted(seen) and seen[-1] == pytest.approx(1.0)

    model, x, labels = crop_tensor(session)
    same = InsideJob(model, x, labels=labels).result()              # the library on the crop the analysis saw
    report = state.INSIDE.get(values["inside_state"].key)
    np.testing.assert_array_equal(report.lens.target_rank, same.lens.target_rank)
    np.testing.assert_allclose(report.heads.delta, same.heads.delta, rtol=1e-5)
    assert report.dla.logit == pytest.approx(same.dla.logit) and report.target == same.target
    assert values["inside_lens_line"] == views.lens_line(same)
    assert values["inside_heads_line"] == views.heads_line(same) and values["inside_dla_line"] == views.dla_line(same)
    assert same.target["name"] in values["inside_line"]
    assert values["inside_state"].layer == views.first_layer(same) == values["inside_layer"].value
    for name in ("inside_lens", "inside_patch_lens", "inside_dla", "inside_sources", "inside_heads"):
        assert isinstance(values[name], Image.Image) and np.asarray(values[name]).std() > 10, name

    again: list[float] = []
    finished(inside.look_inside(session, TOP1, NO_CONTRAST, "", False, "en",
                                progress=lambda f, desc=None: again.append(f)))
    assert again == [] and len(state.INSIDE) == 1                   # from the cache: no step ran


def test_a_contrast_class_makes_every_number_a_difference(tiny, photos, fresh):
    session, values = looked(tiny, photos["cat.jpg"], COLOURS[1], COLOURS[3])
    report = state.INSIDE.get(values["inside_state"].key)
    model, x, labels = crop_tensor(session)
    with torch.no_grad():
        logits = model(x)[0]
    assert report.contrast["name"] == COLOURS[3] and f"{COLOURS[1]} − {COLOURS[3]}" in values["inside_line"]
    assert report.dla.logit == pytest.approx(float(logits[1] - logits[3]), abs=1e-5)


def test_the_preprocessing_choice_is_another_input_with_its_own_views(tiny, photos, fresh):
    own = api.analyze(photos["coffee.png"], tiny)[0]
    squashed = api.analyze(photos["coffee.png"], tiny, preprocess="squash")[0]
    reports = {}
    for session in (own, squashed):
        values = finished(inside.look_inside(session, TOP1, NO_CONTRAST, "", False, "en", progress=quiet))
        reports[session.key.preprocess] = state.INSIDE.get(values["inside_state"].key)
        model, x, labels = crop_tensor(session)                     # the crop this preprocessing gives
        assert reports[session.key.preprocess].dla.logit == pytest.approx(InsideJob(model, x, labels=labels)
                                                                          .result().dla.logit)
    assert len(state.INSIDE) == 2 and reports["own"].dla.logit != reports["squash"].dla.logit


def test_clicks_and_the_slider_redraw_without_the_model(tiny, photos, fresh):
    session, values = looked(tiny, photos["cat.jpg"])
    shown, report = values["inside_state"], state.INSIDE.get(values["inside_state"].key)
    photo = np.asarray(state.ANALYSES.get(session.key).image.convert("RGB"))
    taken = state.MODEL_TURN.taken

    out = inside.click_dla(click(*pixel(shown.dla, 1, 1)), shown, session, "en")
    assert out["inside_state"].head == (1, 1) and out["inside_sources_note"] == ""
    np.testing.assert_array_equal(np.asarray(out["inside_sources"]),
                                  np.asarray(views.sources_view(report, 1, 1, photo)))
    mlp = inside.click_dla(click(*pixel(shown.dla, 0, HEADS)), shown, session, "en")
    assert mlp == {"inside_sources_note": t("note.inside_mlp", "en")}
    assert inside.click_dla(click(1, 1), shown, session, "en") == {}           # the corner: no cell

    out = inside.click_lens(click(*pixel(shown.lens, 0.5, 0)), shown, session, "en")
    assert out["inside_layer"] == 0 and out["inside_state"].layer == 0
    np.testing.assert_array_equal(np.asarray(out["inside_patch_lens"]),
                                  np.asarray(views.patch_lens_view(report, 0, photo)))
    assert inside.pick_layer(2, shown, session, "en")["inside_state"].layer == 2

    out = inside.click_heads(click(*pixel(shown.heads, 2, 1, box=1)), shown, [], session, "en")
    assert out["inside_ablate"] == ["2.1"] and out["inside_state"].picked == ((2, 1),)
    out = inside.click_heads(click(*pixel(shown.heads, 2, 1)), out["inside_state"], ["0.0", "2.1"], session, "en")
    assert out["inside_ablate"] == ["0.0"] and out["inside_state"].picked == ((0, 0),)
    assert state.MODEL_TURN.taken == taken                          # nothing ran the model


def test_removing_heads_gives_the_librarys_change_and_top5(tiny, photos, fresh):
    session, values = looked(tiny, photos["cat.jpg"])
    out = finished(inside.ablate_heads(session, values["inside_state"], ["2.1", "0.0"], "en", progress=quiet))
    model, x, _ = crop_tensor(session)
    with torch.no_grad():
        before = model(x)[0]
        after = ablate(model, x, [(0, 0), (2, 1)])[0]
    target = int(before.argmax())
    table = out["inside_ablation"]
    assert "without 0.0, 2.1" in table and f"{float(after[target] - before[target]):+.2f}" in table
    first = next(line for line in table.splitlines() if line.startswith("| 1 |")).split("|")
    assert COLOURS[target] in first[2] and COLOURS[int(after.argmax())] in first[3]
    assert out["inside_state"].ablated == ("ablated", *values["inside_state"].key[1:], ((0, 0), (2, 1)))


def test_patching_from_a_second_photo_gives_both_logits(tiny, photos, fresh):
    session, values = looked(tiny, photos["cat.jpg"])
    out = finished(inside.patch_from(session, values["inside_state"], photos["coffee.png"], "en", progress=quiet))
    model, x, _ = crop_tensor(session)
    loaded = state.model_of(session.key).loaded
    x2 = loaded.preprocess.to_tensor(loaded.preprocess.crop_image(Image.open(photos["coffee.png"]).convert("RGB")))
    with torch.no_grad():
        here, there = model(x)[0], model(x2)[0]
    target = int(there.argmax())
    line = out["inside_patch_line"]
    assert COLOURS[target] in line and "coffee" in line
    assert f"{float(here[target]):.2f}" in line and f"{float(there[target]):.2f}" in line
    assert isinstance(out["inside_patch"], Image.Image)
    with pytest.raises(gr.Error, match="HTML"):
        finished(inside.patch_from(session, out["inside_state"], photos["notes.jpg"], "en", progress=quiet))
    session, values = looked(tiny, photos["cat.jpg"], COLOURS[4])               # a class picked in the Explain tab
    out = finished(inside.patch_from(session, values["inside_state"], photos["coffee.png"], "en", progress=quiet))
    assert state.INSIDE.get(out["inside_state"].patched).patched.target == {"index": 4, "name": COLOURS[4]}


def test_every_mistake_is_one_plain_message(tiny, photos, fresh):
    session, values = looked(tiny, photos["cat.jpg"])
    shown = values["inside_state"]
    with pytest.raises(gr.Error, match="Look inside"):
        finished(inside.ablate_heads(session, None, ["0.0"], "en", progress=quiet))
    with pytest.raises(gr.Error, match="Look inside"):
        finished(inside.patch_from(session, None, photos["coffee.png"], "en", progress=quiet))
    with pytest.raises(gr.Error, match="Pick the heads"):
        finished(inside.ablate_heads(session, shown, [], "en", progress=quiet))
    with pytest.raises(gr.Error, match="No head 9.0"):
        finished(inside.ablate_heads(session, shown, ["9.0"], "en", progress=quiet))
    with pytest.raises(gr.Error, match="Could not look inside"):
        finished(inside.look_inside(session, "a zebra", NO_CONTRAST, "", False, "en", progress=quiet))
    other = api.analyze(photos["coffee.png"], tiny)[0]              # another photo: the shown views are not its
    with pytest.raises(gr.Error, match="Look inside"):
        inside.click_dla(click(*pixel(shown.dla, 0, 0)), shown, other, "en")
    state.INSIDE.clear()                                             # dropped from the cache: run it again
    with pytest.raises(gr.Error, match="Look inside"):
        inside.click_dla(click(*pixel(shown.dla, 0, 0)), shown, session, "en")


def test_a_new_photo_clears_the_views_and_the_language_switch_redraws_them(tiny, photos, fresh):
    served = SimpleNamespace(depth=DEPTH, heads=HEADS, architecture=SimpleNamespace(one_sequence=True))   # no line why
    cleared = inside.show(SimpleNamespace(new=True, served=served, lang="en"))
    assert set(cleared) == set(inside.SHOWS) and cleared["inside_state"] is None and cleared["inside_dla"] is None
    assert cleared["inside_lens_line"] == "" and len(cleared["inside_ablate"].choices) == DEPTH * HEADS
    assert inside.show(SimpleNamespace(new=False, served=served, lang="en")) == {}

    session, values = looked(tiny, photos["cat.jpg"])
    shown = finished(inside.ablate_heads(session, values["inside_state"], ["1.0"], "en",
                                         progress=quiet))["inside_state"]
    shown = finished(inside.patch_from(session, shown, photos["coffee.png"], "en", progress=quiet))["inside_state"]
    taken = state.MODEL_TURN.taken
    chinese = inside.relabel("zh-CN", shown, session)
    assert "读出" in chinese["inside_lens_line"] and "去掉 1.0" in chinese["inside_ablation"]
    assert "修补" in chinese["inside_patch_line"] and isinstance(chinese["inside_dla"], Image.Image)
    assert not np.array_equal(np.asarray(chinese["inside_heads"]), np.asarray(values["inside_heads"]))
    assert state.MODEL_TURN.taken == taken
    assert inside.relabel("zh-CN", None, session) == {}


def test_a_readout_that_is_not_linear_has_no_dla_and_an_approximate_lens(tmp_path, photos, fresh):
    model = tiny_models.tiny(0, **tiny_models.FAMILIES["siglip"], depth=DEPTH)
    path = vit.save_checkpoint(tmp_path / "siglip.pt", model, COLOURS[:5], vit.Preprocess.for_crop(32))
    session, values = looked(str(path), photos["cat.jpg"])
    assert values["inside_dla"] is None and values["inside_dla_line"] == t("inside.line.no_dla", "en")
    assert values["inside_lens_note"] == t("note.inside_lens_approximate", "en")
    assert isinstance(values["inside_heads"], Image.Image) and values["inside_state"].dla is None
    assert inside.click_dla(click(10, 10), values["inside_state"], session, "en") == {}
    m, x, labels = crop_tensor(session)
    assert InsideJob(m, x, ClassTarget(0), labels=labels, views=("lens",)).result().lens.approximate
