"""Protects the page's Features tab (``vit_explorer.tabs.features``): opening it shows the library's PCA colours and
similarity (``viz.features``) of the analysed crop at the last layer and the centre patch; the layer slider, the
foreground option, a click on the photo and a second photo redraw from the cached analyses with the library's
numbers; a second photo that is no photo is one message and nothing changes; the texts follow the language."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import gradio as gr
from PIL import Image
from skimage import data

import app_server  # noqa: F401  (gives this process its own GRADIO_TEMP_DIR before the app is built)
from tiny_run import tiny_checkpoint
from viz.features import foreground_rgb, patch_features, patch_similarity, pca_rgb
from viz.features.view import MAP_SIZE, PHOTO_SIZE
from viz.i18n import t
from vit_explorer import api, state
from vit_explorer.tabs import features

DEPTH = 3


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> str:
    return str(tiny_checkpoint(tmp_path_factory.mktemp("features") / "tiny.pt", size=64, depth=DEPTH))


@pytest.fixture(scope="module")
def photos(tmp_path_factory, cat) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("features_photos")
    cat.save(folder / "cat.jpg", quality=95)
    Image.fromarray(data.coffee()).save(folder / "coffee.png")
    (folder / "notes.jpg").write_text("<!DOCTYPE html><html><body>Not a photo</body></html>")
    return {name: str(folder / name) for name in ("cat.jpg", "coffee.png", "notes.jpg")}


def opened(model: str, photo: str, lang: str = "en", patch_true: bool = True):
    session = api.analyze(photo, model)[0]
    return session, features.show(session, None, DEPTH - 1, False, 0.6, patch_true, lang)


def colours(picture: Image.Image, grid: tuple[int, int]) -> np.ndarray:
    """The colour at the centre of every patch of a patch-true picture -> (gh, gw, 3) in [0, 1]."""
    pixels = np.asarray(picture, dtype=np.float32) / 255.0
    h, w = pixels.shape[:2]
    rows = ((np.arange(grid[0]) + 0.5) * h / grid[0]).astype(int)
    cols = ((np.arange(grid[1]) + 0.5) * w / grid[1]).astype(int)
    return pixels[rows][:, cols]


def test_opening_the_tab_shows_the_librarys_pca_and_similarity(tiny, photos):
    session, shown = opened(tiny, photos["cat.jpg"])
    a = state.analysis(session.key)
    assert a.stream is not None and a.stream.dtype == np.float16            # the page keeps it in 16 bits
    assert shown["features_state"].query == (a.grid[0] // 2, a.grid[1] // 2)
    assert shown["features_layer"].value == DEPTH - 1
    rgb, pca = pca_rgb(patch_features(a, DEPTH - 1), a.grid)
    np.testing.assert_allclose(colours(shown["features_pca"], a.grid), rgb, atol=1 / 255 + 1e-6)
    assert max(shown["features_pca"].size) == MAP_SIZE and max(shown["features_photo"].size) == PHOTO_SIZE
    assert f"{100 * pca.explained_variance_ratio[0]:.1f}%" in shown["features_pca_note"]
    assert shown["features_match"] is None and shown["features_match_note"] == t("note.features_other_first", "en")


def test_layer_foreground_click_and_second_photo(tiny, photos):
    session, shown = opened(tiny, photos["cat.jpg"])
    a = state.analysis(session.key)
    kept = shown["features_state"]
    drawn = features.redraw(kept, session, 0, True, 0.6, True, "en")        # layer 0, foreground, patch-true
    rgb, mask, pca = foreground_rgb(patch_features(a, 0), a.grid)
    np.testing.assert_allclose(colours(drawn["features_pca"], a.grid), rgb, atol=1 / 255 + 1e-6)
    photo = shown["features_photo"]
    x, y = (1.5 * photo.width / a.grid[1], 2.5 * photo.height / a.grid[0])   # the centre of patch (2, 1)
    clicked = features.pick_patch(SimpleNamespace(index=[x, y]), kept, session, 0, False, 0.6, False, "en")
    assert clicked["features_state"].query == (2, 1)
    matched = features.add_other(photos["coffee.png"], clicked["features_state"], session, 0, False, 0.6, False, "en")
    other = state.analysis(session.key._replace(photo=photos["coffee.png"]))
    similarity = patch_similarity(patch_features(a, 0), a.grid, 2, 1, patch_features(other, 0), other.grid)
    best = np.unravel_index(np.argmax(similarity), similarity.shape)
    assert matched["features_match_note"] == t("note.features_match", "en", row=best[0], col=best[1],
                                               value=float(similarity[best]))
    assert matched["features_state"].other == photos["coffee.png"]


def test_a_second_file_that_is_no_photo_is_one_message(tiny, photos):
    session, shown = opened(tiny, photos["cat.jpg"])
    with pytest.raises(gr.Error):
        features.add_other(photos["notes.jpg"], shown["features_state"], session, DEPTH - 1, False, 0.6, False, "en")


def test_the_tab_speaks_chinese(tiny, photos):
    session, shown = opened(tiny, photos["cat.jpg"], "zh-CN")
    assert "主成分" in shown["features_pca_note"] and shown["features_match_note"] == t("note.features_other_first",
                                                                                       "zh-CN")


def test_a_new_photo_starts_at_its_centre_and_keeps_the_second_photo(tiny, photos):
    session, shown = opened(tiny, photos["cat.jpg"])
    kept = features.add_other(photos["coffee.png"], shown["features_state"], session, 1, False, 0.6, False,
                              "en")["features_state"]
    new_session = api.analyze(photos["coffee.png"], tiny)[0]
    again = features.show(new_session, kept, 1, False, 0.6, False, "en")
    a = state.analysis(new_session.key)
    assert again["features_state"].key == new_session.key and again["features_state"].other == photos["coffee.png"]
    assert again["features_state"].query == (a.grid[0] // 2, a.grid[1] // 2)
    assert features.redraw(kept, new_session, 1, False, 0.6, False, "en") == {}   # another analysis: nothing drawn
