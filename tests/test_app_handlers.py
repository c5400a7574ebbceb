"""Protects the app's handlers (app.py) on real photos and real weights, without a browser: the analysis runs
once per photo and model (shared by sessions, bounded in bytes, computed again when dropped), controls and
clicks only re-render, bad input becomes a plain gr.Error."""
from __future__ import annotations

import base64

import gradio as gr
import numpy as np
import pytest
from gradio.data_classes import ImageData
from PIL import Image

import app
import app_server  # noqa: F401  (gives this process its own GRADIO_TEMP_DIR before the app is built)
from vit.cache import LRUCache
from viz import explorer, panels

CAT_CLASSES = {"Egyptian cat", "tabby", "tiger cat", "Persian cat", "Siamese cat", "lynx"}
AUGREG = "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors"
DEIT = "deit_tiny_patch16_224.pipevit_ln_fixedpoint.safetensors"
OUTPUTS = ("session", "top5", "summary", "rollout", "attention", "heads", "query_photo", "query_out", "query_in",
           "position", "distance", "norms", "norm_curves", "architecture", "filters")  # app.analyze's, in order


@pytest.fixture(scope="module")
def augreg(real_weights_dir) -> str:
    return str(real_weights_dir / AUGREG)


@pytest.fixture(scope="module")
def demo(augreg) -> gr.Blocks:
    return app.build_app(augreg)


@pytest.fixture(scope="module")
def photos(tmp_path_factory, cat, camera) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("photos")
    paths = {"cat": folder / "cat.jpg", "camera": folder / "camera.png", "notes": folder / "notes.jpg"}
    cat.save(paths["cat"], quality=95)
    camera.save(paths["camera"])
    paths["notes"].write_text("Remember to buy cat food.\n")
    return {k: str(v) for k, v in paths.items()}


def _analyze(*args, **kwargs) -> dict:
    return dict(zip(OUTPUTS, app.analyze(*args, **kwargs), strict=True))


@pytest.fixture(scope="module")
def cat_result(demo, photos, augreg) -> dict:
    return _analyze(photos["cat"], augreg)


def _cached(session: explorer.Session):
    """The analysis the server keeps for this session (computed again if it was dropped)."""
    return app.ANALYSES.get(session.key)


def _pixels(image: Image.Image) -> np.ndarray:
    return np.asarray(image.convert("RGB"), dtype=np.int16)


def _select(x: float, y: float) -> gr.SelectData:
    return gr.SelectData(target=None, data={"index": [x, y], "value": None})


def _controls(**changes) -> list:
    """The ten control values in app order, defaults as in the page, with ``changes``."""
    values = dict(fusion="mean", discard_ratio=0.9, start_layer=0, opacity=0.6, mask_artifacts=False, layer=11,
                  head=0, mean_of_heads=True, dino_mask=False, through_all_layers=False)
    values.update(changes)
    return list(values.values())


def test_cat_photo_is_classified_as_a_cat_with_every_panel(cat_result):
    top5, session, architecture = cat_result["top5"], cat_result["session"], cat_result["architecture"]
    assert len(top5) == 5 and list(top5)[0] in CAT_CLASSES and top5[list(top5)[0]] > 0.5
    a = _cached(session)
    assert list(top5.items()) == a.top_k(5)
    assert "197 tokens" in cat_result["summary"] and "12 blocks × 3 heads" in cat_result["summary"]
    images = [v for k, v in cat_result.items() if k not in ("session", "top5", "summary", "architecture")]
    assert len(images) == 11 and all(isinstance(im, Image.Image) and im.width > 100 for im in images)
    assert "| 224×224×3 |" in architecture and "| 197×192 |" in architecture and "3×197×197" in architecture
    assert "**Total: 5,717,416 parameters.**" in architecture
    assert a.attention.dtype == np.float16  # the cache stays small: maps + 3 fusions, token norms, the crop
    assert explorer.cached_bytes(a) == (12 * 3 + 3 * 12) * 197 * 197 * 2 + 12 * 197 * 4 + 224 * 224 * 3
    assert f"({explorer.cached_bytes(a) / 2**20:.1f} MB with their head-fused copies)" in architecture


def test_same_photo_and_model_reuse_the_cached_analysis(cat_result, photos, augreg):
    session = cat_result["session"]
    again = _analyze(photos["cat"], augreg, layer=3, session=session)
    assert again["session"].key == session.key and _cached(again["session"]) is _cached(session)  # no second forward
    assert not np.array_equal(_pixels(again["attention"]), _pixels(cat_result["attention"]))  # the layer-3 map


def test_another_model_runs_again(cat_result, photos, real_weights_dir):
    deit = str(real_weights_dir / DEIT)
    other = _analyze(photos["cat"], deit, session=cat_result["session"])
    assert _cached(other["session"]) is not _cached(cat_result["session"])
    assert other["session"].key == (photos["cat"], deit) and list(other["top5"])[0] in CAT_CLASSES


def test_grayscale_photo_is_classified(demo, photos, augreg):
    assert list(_analyze(photos["camera"], augreg)["top5"])[0] == "tripod"


def test_cleared_photo_clears_everything(demo, augreg):
    assert app.analyze(None, augreg) == (None,) * 15


def test_unreadable_upload_is_a_plain_error_and_the_next_one_works(demo, photos, augreg):
    with pytest.raises(gr.Error, match="looks like a text file"):
        app.analyze(photos["notes"], augreg)
    assert list(_analyze(photos["cat"], augreg)["top5"])[0] in CAT_CLASSES


def test_unknown_model_is_a_plain_error(demo, photos, tmp_path):
    fake = tmp_path / "model.pth"
    fake.write_text("hello")
    with pytest.raises(gr.Error, match="Could not load the model .*model.pth.*not a checkpoint"):
        app.analyze(photos["cat"], str(fake))


def test_out_of_range_api_values_are_clamped(cat_result, photos, augreg):
    wild = _analyze(photos["cat"], augreg, layer=99, head=7, mean_of_heads=False, start_layer=-40,
                    discard_ratio=3.0, session=cat_result["session"])
    expected = panels.attention_panel(_cached(cat_result["session"]), 11, 2)
    assert np.array_equal(_pixels(wild["attention"]), _pixels(expected))


def test_rollout_controls_rerender(cat_result):
    session = cat_result["session"]
    base = app.rerender_rollout(session, *_controls())
    assert np.array_equal(_pixels(base), _pixels(cat_result["rollout"]))
    for change in (dict(fusion="max"), dict(discard_ratio=0.0), dict(start_layer=6), dict(opacity=0.2),
                   dict(mask_artifacts=True)):
        assert not np.array_equal(_pixels(app.rerender_rollout(session, *_controls(**change))), _pixels(base)), change


def test_layer_and_head_follow_in_attention_heads_and_query(cat_result):
    session = cat_result["session"]
    _, attn_last, grid_last, out_last, _ = app.rerender_layer(session, *_controls())
    new_session, attn_3, grid_3, out_3, in_3 = app.rerender_layer(session, *_controls(layer=3, head=1,
                                                                                     mean_of_heads=False))
    assert new_session.key == session.key
    assert not np.array_equal(_pixels(attn_3), _pixels(attn_last))
    assert not np.array_equal(_pixels(grid_3), _pixels(grid_last))  # the selected thumbnail is framed
    assert not np.array_equal(_pixels(out_3), _pixels(out_last))
    expected_out, expected_in = panels.query_panels(_cached(session), *panels.default_query(_cached(session)), 3, 1,
                                                    alpha=0.6)
    assert np.array_equal(_pixels(out_3), _pixels(expected_out)) and np.array_equal(_pixels(in_3), _pixels(expected_in))


def test_clicking_a_thumbnail_selects_its_layer_and_head(cat_result):
    session = cat_result["session"]
    x0, y0, x1, y1 = session.heads_layout.box(4, 2)
    out = app.pick_head(_select((x0 + x1) / 2, (y0 + y1) / 2), session, *_controls())
    new_session, layer, head, mean, attention_image, _, _, _, tabs = out
    assert (layer, head, mean) == (4, 2, False)
    assert np.array_equal(_pixels(attention_image), _pixels(panels.attention_panel(_cached(session), 4, 2)))
    assert tabs.selected == "attention"
    assert app.pick_head(_select(1, 1), session, *_controls()) == (gr.skip(),) * 9  # on the labels: nothing


def test_clicking_the_photo_queries_that_patch(cat_result):
    session = cat_result["session"]
    scale = explorer.QUERY_PHOTO_SCALE  # the photo to click on is shown enlarged
    out = app.pick_patch(_select((4 * 16 + 3) * scale, (2 * 16 + 8) * scale), session, *_controls())  # row 2, col 4
    new_session, photo, attends_to, attended_by = out
    assert new_session.query == (2, 4)
    expected_out, expected_in = panels.query_panels(_cached(session), 2, 4, 11, None, alpha=0.6)
    assert np.array_equal(_pixels(attends_to), _pixels(expected_out))
    assert np.array_equal(_pixels(attended_by), _pixels(expected_in))
    rolled = app.rerender_query(new_session, *_controls(through_all_layers=True))
    assert not np.array_equal(_pixels(rolled[0]), _pixels(attends_to))


def test_sessions_with_the_same_photo_and_model_share_one_analysis(cat_result, photos, augreg):
    """Two visitors clicking the same example photo: one forward pass, one cached analysis."""
    visitor = _analyze(photos["cat"], augreg)  # session None: a new visitor
    assert visitor["session"] is not cat_result["session"] and visitor["session"].key == cat_result["session"].key
    assert _cached(visitor["session"]) is _cached(cat_result["session"])
    assert np.array_equal(_pixels(visitor["rollout"]), _pixels(cat_result["rollout"]))


@pytest.fixture
def small_cache(monkeypatch):
    """The app's cache of analyses with room for one AugReg ViT-Ti analysis (5.5 MB), as on a busy server."""
    cache = LRUCache(app.analyze_key, capacity=8 * 2**20, weigh=explorer.cached_bytes)
    monkeypatch.setattr(app, "ANALYSES", cache)
    return cache


def test_analyses_are_bounded_in_bytes_and_recomputed_when_dropped(demo, photos, augreg, small_cache):
    cat = _analyze(photos["cat"], augreg)
    first = _cached(cat["session"])
    camera = _analyze(photos["camera"], augreg)
    assert small_cache.keys() == [camera["session"].key] and small_cache.weight <= small_cache.capacity
    # the cat's session re-renders after its analysis was dropped: computed again, the same pictures
    again = app.rerender_rollout(cat["session"], *_controls())
    assert np.array_equal(_pixels(again), _pixels(cat["rollout"]))
    assert small_cache.keys() == [cat["session"].key] and _cached(cat["session"]) is not first
    new_session, attention, *_ = app.rerender_layer(camera["session"], *_controls())
    assert np.array_equal(_pixels(attention), _pixels(camera["attention"]))


def test_dropped_analysis_of_a_vanished_photo_is_a_plain_error(demo, photos, augreg, small_cache, tmp_path):
    gone = tmp_path / "gone.jpg"
    Image.open(photos["cat"]).save(gone)
    session = _analyze(str(gone), augreg)["session"]
    _analyze(photos["camera"], augreg)  # drops the analysis of gone.jpg
    gone.unlink()
    with pytest.raises(gr.Error, match=r"does not exist \(any more\)\. Please upload it again"):
        app.rerender_rollout(session, *_controls())


def test_controls_before_any_photo_only_warn(demo):
    with pytest.warns(UserWarning, match="no analysed photo"):
        assert app.rerender_rollout(None, *_controls()) == gr.skip()


def test_model_change_fits_the_sliders(demo, real_weights_dir):
    deit = str(real_weights_dir / DEIT)
    current, picker, layer, head, start = app.change_model(deit, 2)
    assert current == deit and picker.value == deit and deit in picker.choices[-1]
    assert (layer.maximum, layer.value, head.maximum, head.value, start.maximum) == (11, 11, 2, 2, 11)
    with pytest.raises(gr.Error, match="Could not load the model 'no-such-model'"):
        app.change_model("no-such-model", 0)


def test_upload_component_passes_files_unopened(demo, tmp_path):
    component = app.PhotoInput(type="filepath", image_mode=None)
    text = tmp_path / "notes.jpg"
    text.write_text("not an image")
    assert component.preprocess(ImageData(path=str(text), orig_name="notes.jpg")) == str(text)
    assert component.preprocess(None) is None
    payload = b"\x89PNG\r\n\x1a\n broken on purpose"
    url = "data:image/png;base64," + base64.b64encode(payload).decode()
    saved = component.preprocess(ImageData(path=None, url=url))
    with open(saved, "rb") as f:
        assert f.read() == payload


def test_command_line_defaults_and_flags():
    args = app.parse_args([])
    assert (args.host, args.port, args.share, args.model, args.weights) == ("127.0.0.1", 7860, False, "default", None)
    args = app.parse_args(["--weights", "w.safetensors", "--port", "8000", "--host", "0.0.0.0", "--share"])
    assert (args.weights, args.port, args.host, args.share) == ("w.safetensors", 8000, "0.0.0.0", True)
    with pytest.raises(SystemExit):
        app.parse_args(["--weights", "a.pth", "--model", "vit_b_16"])
