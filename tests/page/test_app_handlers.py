"""Protects the page's handlers (vit_explorer) on real photos and real weights, without a browser: the analysis runs
once per photo and model (shared by sessions, bounded in bytes, computed again when dropped), controls and
clicks only re-render, the API's handlers raise plain gr.Error messages while the page's leave every output as
it was with one warning, pictures follow the language, and the Learn, Explain and Compare tabs compute what
their libraries compute."""
from __future__ import annotations

import base64
import dataclasses
import os
from pathlib import Path

import gradio as gr
import numpy as np
import pytest
import torch
from gradio.data_classes import ImageData
from PIL import Image

import app_server  # noqa: F401  (gives this process its own GRADIO_TEMP_DIR before the app is built)
import vit
from vit.image_file import open_image
from vit_explorer import api, events, state, views
from vit_explorer.components import PhotoInput
from vit_explorer.controls import NAMES as CONTROL_NAMES
from vit_explorer.controls import ControlValues
from vit_explorer.server import parse_args
from vit_explorer.state import Pick
from vit_explorer.tabs import attention, compare, explain, heads, learn, query
from vit_explorer.tabs.explain import NO_CONTRAST, TOP1
from vit_explorer.texts import I18N
from walk_cases import CASES, hooked_shapes, quick_random_model
from viz.cache import Cache
from viz import panels
from viz.explain.explainer import explain_tensor
from viz.analysis.serve import ServedModel
from viz.i18n import t
from viz.attention.view import attention_map_panel
from viz.controls import AnalysisKey, DISPLAY_SIZE, Session
from viz.heads.grid import head_stats
from viz.heads.view import HEADS_WIDTH
from viz.learn.view import learn_step
from viz.query.view import QUERY_PHOTO_SCALE, query_map_panels
from viz.records import cached_bytes

CAT_CLASSES = {"Egyptian cat", "tabby", "tiger cat", "Persian cat", "Siamese cat", "lynx"}
AUGREG = "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors"
DEIT = "deit_tiny_patch16_224.pipevit_ln_fixedpoint.safetensors"
OUTPUTS = api.API_OUTPUTS


@pytest.fixture(scope="module")
def photos(tmp_path_factory, cat, camera) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("photos")
    paths = {"cat": folder / "cat.jpg", "camera": folder / "camera.png", "notes": folder / "notes.jpg",
             "tiny": folder / "tiny.png"}
    cat.save(paths["cat"], quality=95)
    camera.save(paths["camera"])
    cat.resize((60, 40)).save(paths["tiny"])
    paths["notes"].write_text("Remember to buy cat food.\n")
    return {k: str(v) for k, v in paths.items()}


def _analyze(*args, **kwargs) -> dict:
    return dict(zip(OUTPUTS, api.analyze(*args, **kwargs), strict=True))


@pytest.fixture(scope="module")
def cat_result(demo, photos, augreg_weights) -> dict:
    return _analyze(photos["cat"], augreg_weights)


def _cached(session: Session):
    """The analysis the server keeps for this session (computed again if it was dropped)."""
    return state.ANALYSES.get(session.key)


def _pixels(image: Image.Image) -> np.ndarray:
    return np.asarray(image.convert("RGB"), dtype=np.int16)


def _select(x: float, y: float) -> gr.SelectData:
    return gr.SelectData(target=None, data={"index": [x, y], "value": None})


def _controls(**changes) -> ControlValues:
    """The control values by name, defaults as in the page (the last of 12 layers, artifacts masked), with
    ``changes``."""
    return ControlValues(**{"layer": 11, **changes})


def _redraw(session, changed: str, **controls) -> dict:
    """What the page redraws when the control ``changed`` moves to these values."""
    return views.redraw(session, _controls(**controls), "en", changed)


# ---- the analysis and the API's handlers ---------------------------------------------------------------------------

def test_cat_photo_is_classified_as_a_cat_with_every_panel_at_display_size(cat_result):
    top5, session, architecture = cat_result["top5"], cat_result["session"], cat_result["architecture"]
    assert len(top5) == 5 and list(top5)[0] in CAT_CLASSES and top5[list(top5)[0]] > 0.5
    a = _cached(session)
    assert list(top5.items()) == a.top_k(5)
    assert "197 tokens" in cat_result["summary"] and "12 layers × 3 heads" in cat_result["summary"]
    images = [v for k, v in cat_result.items() if k not in ("session", "top5", "summary", "architecture")]
    assert len(images) == 11 and all(isinstance(im, Image.Image) and im.width > 100 for im in images)
    for name in ("rollout", "attention"):      # the photo at 640 pixels plus the colour bar, not the model's 224
        assert cat_result[name].height == DISPLAY_SIZE and cat_result[name].width > DISPLAY_SIZE
    assert 0.97 * HEADS_WIDTH <= cat_result["heads"].width <= HEADS_WIDTH   # fills the width
    assert "| 224×224×3 |" in architecture and "| 197×192 |" in architecture and "3×197×197" in architecture
    assert "**Total: 5,717,416 parameters.**" in architecture
    # the cache stays small: no L·H·T² maps, but what recomputes them (the float16 stream entering every layer, each
    # head's readout row and each row's log-sum-exp), the 3 head-fused copies (small enough to keep at 224), one
    # layer's float32 queries and keys, token norms, mean distances, the crop
    assert a.attention is None and a.stream.dtype == np.float16 and a.fused["mean"].dtype == np.float16
    assert cached_bytes(a) == (13 * 197 * 192 * 2 + 2 * 12 * 3 * 197 * 4 + 3 * 12 * 197 * 197 * 2
                                        + 2 * 197 * 192 * 4 + 12 * 197 * 4 + 12 * 3 * 4 + 224 * 224 * 3)


def test_same_photo_and_model_reuse_the_cached_analysis(cat_result, photos, augreg_weights):
    session = cat_result["session"]
    again = _analyze(photos["cat"], augreg_weights, layer=3, session=session)
    assert again["session"].key == session.key and _cached(again["session"]) is _cached(session)  # no second forward
    assert not np.array_equal(_pixels(again["attention"]), _pixels(cat_result["attention"]))  # the layer-3 map


@pytest.mark.slow
def test_another_model_runs_again(cat_result, photos, real_weights_dir):
    deit = str(real_weights_dir / DEIT)
    other = _analyze(photos["cat"], deit, session=cat_result["session"])
    assert _cached(other["session"]) is not _cached(cat_result["session"])
    assert other["session"].key == (photos["cat"], deit, "own", 0) and list(other["top5"])[0] in CAT_CLASSES


def test_grayscale_photo_is_classified(demo, photos, augreg_weights):
    assert list(_analyze(photos["camera"], augreg_weights)["top5"])[0] == "tripod"


def test_cleared_photo_clears_the_api_answer(demo, augreg_weights):
    assert api.analyze(None, augreg_weights) == (None,) * 15


def test_api_unreadable_upload_is_a_plain_error_and_the_next_one_works(demo, photos, augreg_weights):
    with pytest.raises(gr.Error, match="looks like a text file"):
        api.analyze(photos["notes"], augreg_weights)
    assert list(_analyze(photos["cat"], augreg_weights)["top5"])[0] in CAT_CLASSES


def test_api_unknown_model_is_a_plain_error(demo, photos, tmp_path):
    fake = tmp_path / "model.pth"
    fake.write_text("hello")
    with pytest.raises(gr.Error, match="Could not load the model .*model.pth.*not a checkpoint"):
        api.analyze(photos["cat"], str(fake))


def test_out_of_range_api_values_are_clamped(cat_result, photos, augreg_weights):
    wild = _analyze(photos["cat"], augreg_weights, layer=99, head=7, mean_of_heads=False, start_layer=-40,
                    discard_ratio=3.0, session=cat_result["session"])
    expected = attention_map_panel(_cached(cat_result["session"]), 11, 2, mask_artifacts=True,  # the default
                                          display=panels.Display(DISPLAY_SIZE, "en"))
    assert np.array_equal(_pixels(wild["attention"]), _pixels(expected.image))


# ---- the page: errors leave it whole ----------------------------------------------------------------------------

def _page(photo, model, session=None, lang="en", **controls) -> dict:
    return views.page_analyze(None, photo, model, _controls(**controls), session, lang)


def test_a_bad_upload_warns_once_and_changes_nothing_but_the_photo_back(cat_result, photos, augreg_weights):
    good = _page(photos["cat"], augreg_weights)
    with pytest.warns(UserWarning, match="looks like a text file") as warned:
        refused = _page(photos["notes"], augreg_weights, session=good["session"])
    assert len(warned) == 1
    assert refused == {"photo": photos["cat"]}             # the previous photo back; every other output untouched
    page = events.Page(I18N, state.MODELS.get(augreg_weights))
    names = [*api.API_OUTPUTS, "photo", "model", "lang", "preprocess", "input_size", *CONTROL_NAMES]
    page.components.update({n: n for n in names})
    handler = page.wire(views.page_analyze, [*api.API_OUTPUTS, "photo"])["fn"]
    controls = _controls()
    values = handler(None, photos["notes"], augreg_weights, *(getattr(controls, n) for n in CONTROL_NAMES), good["session"],
                     "en", "own", 224)
    assert values[:-1] == (gr.skip(),) * len(api.API_OUTPUTS) and values[-1] == photos["cat"]


def test_a_refused_model_warns_once_and_only_the_picker_goes_back(cat_result, photos, augreg_weights, tmp_path):
    fake = tmp_path / "holiday.pth"
    fake.write_text("not weights")
    with pytest.warns(UserWarning, match="not a checkpoint") as warned:
        values = views.switch_model(str(fake), augreg_weights, photos["cat"], cat_result["session"], _controls(), "en")
    assert len(warned) == 1 and list(values) == ["model"] and values["model"].value == augreg_weights


def test_the_same_photo_again_changes_nothing(cat_result, photos, augreg_weights):
    good = _page(photos["cat"], augreg_weights)
    assert _page(photos["cat"], augreg_weights, session=good["session"]) == {}


def test_controls_before_any_photo_only_warn(demo):
    with pytest.warns(UserWarning, match="Give a photo first"):
        assert _redraw(None, "fusion") == {}
    with pytest.warns(UserWarning):
        assert _redraw(None, "layer") == {}


def test_the_api_and_the_page_say_the_same_sentence_for_the_same_mistake(demo, augreg_weights):
    """No photo: the page's warning and the API's error are one catalogue text; so are a bad model path and an
    unknown preprocessing (both through ``state.served``)."""
    with pytest.warns(UserWarning) as page:
        _redraw(None, "fusion")
    with pytest.raises(gr.Error) as api_error:
        api.explain(None)
    assert str(page[0].message) == api_error.value.message == t("message.no_analysis", "en")
    for bad in (dict(model="no/such/model.pth"), dict(preprocess="stretch")):
        with pytest.raises(gr.Error) as from_page:
            state.served(bad.get("model", augreg_weights), "en", bad.get("preprocess", "own"))
        with pytest.raises(gr.Error) as from_api:
            api.explain(__file__, model=bad.get("model", augreg_weights), preprocess=bad.get("preprocess", "own"))
        assert from_page.value.message == from_api.value.message


# ---- the page: language, maps, clicks --------------------------------------------------------------------------

def test_pictures_and_texts_follow_the_language(cat_result, photos, augreg_weights):
    en = _page(photos["cat"], augreg_weights)
    zh = views.switch_language("zh-CN", en["session"], photos["cat"], _controls())
    assert zh["lang"] == "zh-CN" and "词元" in zh["summary"] and "Token" not in zh["summary"]
    assert zh["tab_learn"].label == t("tab.learn", "zh-CN")
    assert zh["top5"] == en["top5"]                                         # the same analysis
    for name in ("rollout", "attention", "heads", "distance", "position", "norm_curves"):
        assert not np.array_equal(_pixels(zh[name]), _pixels(en[name])) or zh[name].size != en[name].size, name
    assert "伪影" in zh["attention_note"] and "artifact" in en["attention_note"]


def test_every_cls_view_notes_the_dominating_artifacts_and_masks_them(cat_result, photos, augreg_weights):
    en = _page(photos["cat"], augreg_weights)
    for note in ("rollout_note", "attention_note", "heads_note"):
        assert "high-norm artifact tokens" in en[note], note
    masked = _redraw(en["session"], "mask_artifacts", mask_artifacts=True, dino_mask=True)
    for note in ("rollout_note", "attention_note", "heads_note"):
        assert "masked" in masked[note], note
    assert not np.array_equal(_pixels(masked["attention"]), _pixels(en["attention"]))


def test_display_options_change_every_map(cat_result):
    session = cat_result["session"]
    base = _redraw(session, "opacity")
    for change in (dict(patch_true=True), dict(opacity=0.2), dict(shared_scale=True, layer=3)):
        other = _redraw(session, next(iter(change)), **change)
        assert not np.array_equal(_pixels(other["attention"]), _pixels(base["attention"])), change
    assert not np.array_equal(_pixels(_redraw(session, "patch_true", patch_true=True)["rollout"]),
                              _pixels(base["rollout"]))


def test_the_head_slider_rests_while_the_mean_of_heads_is_shown():
    assert attention.rest_head(True)["head"].interactive is False
    assert attention.rest_head(False)["head"].interactive is True


def test_clicking_a_thumbnail_tells_layer_head_distance_and_entropy(cat_result):
    session = _redraw(cat_result["session"], "opacity")["session"]
    x0, y0, x1, y1 = session.heads_layout.box(4, 2)
    out = heads.pick_head(_select((x0 + x1) / 2, (y0 + y1) / 2), session, _controls(), "en")
    layer, head, mean, attention_image, info = (out["layer"], out["head"].value, out["mean_heads"], out["attention"],
                                                out["heads_info"])
    assert (layer, head, mean) == (4, 2, False)
    a = _cached(session)
    stats = head_stats(a, mask_artifacts=True)                # the page masks artifacts by default
    assert info == t("note.head_info", "en", layer=4, head=2, distance=float(stats.mean_distance[4, 2]),
                     entropy=float(stats.entropy_bits[4, 2]), share=float(stats.entropy_share[4, 2]),
                     maximum=float(stats.max_bits[4]))
    expected = attention_map_panel(a, 4, 2, mask_artifacts=True,
                                          display=panels.Display(DISPLAY_SIZE, "en"))
    assert np.array_equal(_pixels(attention_image), _pixels(expected.image))
    assert heads.pick_head(_select(1, 1), session, _controls(), "en") == {}  # on the labels: nothing


def test_clicking_the_photo_queries_that_patch(cat_result):
    session = cat_result["session"]
    scale = QUERY_PHOTO_SCALE  # the photo to click on is shown enlarged
    picked = query.pick_patch(_select((4 * 16 + 3) * scale, (2 * 16 + 8) * scale), session, _controls(),
                              "en")   # row 2, col 4
    new_session, attends_to, attended_by = picked["session"], picked["query_out"], picked["query_in"]
    assert new_session.query == (2, 4)
    out, into = query_map_panels(_cached(session), 2, 4, 11, None, mask_artifacts=True,
                                        display=panels.Display(DISPLAY_SIZE // 2, "en"))
    assert np.array_equal(_pixels(attends_to), _pixels(out.image))
    assert np.array_equal(_pixels(attended_by), _pixels(into.image))
    rolled = _redraw(new_session, "rolled", rolled=True)
    assert not np.array_equal(_pixels(rolled["query_out"]), _pixels(attends_to))


def test_the_crop_is_outlined_and_a_tiny_upload_gets_a_note(demo, photos, augreg_weights):
    cat = _page(photos["cat"], augreg_weights)
    assert "224×224" in cat["crop_note"] and cat["crop"].size == (320, 213)
    tiny = _page(photos["tiny"], augreg_weights)
    assert "60×40" in tiny["crop_note"] and "enlarged" in tiny["crop_note"]


def test_sessions_with_the_same_photo_and_model_share_one_analysis(cat_result, photos, augreg_weights):
    visitor = _analyze(photos["cat"], augreg_weights)  # session None: a new visitor
    assert visitor["session"] is not cat_result["session"] and visitor["session"].key == cat_result["session"].key
    assert _cached(visitor["session"]) is _cached(cat_result["session"])


@pytest.fixture
def small_cache(monkeypatch):
    """The app's cache of analyses with room for one AugReg ViT-Ti analysis (4.1 MB), as on a busy server."""
    cache = Cache(state.analyze_key, capacity=6 * 2**20, weigh=cached_bytes)
    monkeypatch.setattr(state, "ANALYSES", cache)
    return cache


def test_analyses_are_bounded_in_bytes_and_recomputed_when_dropped(demo, photos, augreg_weights, small_cache):
    cat = _analyze(photos["cat"], augreg_weights)
    first = _cached(cat["session"])
    camera = _analyze(photos["camera"], augreg_weights)
    assert small_cache.keys() == [camera["session"].key] and small_cache.weight <= small_cache.capacity
    again = _redraw(cat["session"], "fusion")["rollout"]
    assert np.array_equal(_pixels(again), _pixels(cat["rollout"]))
    assert small_cache.keys() == [cat["session"].key] and _cached(cat["session"]) is not first


def test_dropped_analysis_of_a_vanished_photo_is_a_plain_error(demo, photos, augreg_weights, small_cache, tmp_path):
    gone = tmp_path / "gone.jpg"
    Image.open(photos["cat"]).save(gone)
    session = _analyze(str(gone), augreg_weights)["session"]
    _analyze(photos["camera"], augreg_weights)  # drops the analysis of gone.jpg
    gone.unlink()
    with pytest.raises(gr.Error, match=r"does not exist \(any more\)\. Please upload it again"):
        _redraw(session, "fusion")


def test_model_change_fits_the_sliders(demo, augreg_weights, real_weights_dir):
    deit = str(real_weights_dir / DEIT)
    values = views.switch_model(deit, augreg_weights, None, None, _controls(head=2), "en")
    current, picker, layer, head, start = (values[k] for k in ("current_model", "model", "layer", "head", "start_layer"))
    assert current == deit and picker.value == deit and deit in picker.choices[-1]
    assert (layer.maximum, layer.value, head.maximum, head.value, start.maximum) == (11, 11, 2, 2, 11)
    with pytest.warns(UserWarning, match="Could not load the model 'no-such-model'"):
        assert views.switch_model("no-such-model", augreg_weights, None, None, _controls(), "en")["model"].value == augreg_weights


# ---- Learn -----------------------------------------------------------------------------------------------------

class _Models:
    """A stand-in for state.MODELS holding one served model under one name."""
    def __init__(self, name, served):
        self.name, self.served = name, served

    def get(self, name):
        assert name == self.name, name
        return self.served


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow) if c == "ViT-B/16" else c for c in CASES])
def test_the_learn_tab_shows_the_models_real_tensor_shapes(case, monkeypatch, real_weights_dir, photos, cat):
    loaded = vit.load(real_weights_dir / AUGREG)
    if CASES[case] is not None:
        model = quick_random_model(vit.variant(CASES[case]["variant"]))
        loaded = dataclasses.replace(loaded, model=model,
                                     preprocess=dataclasses.replace(loaded.preprocess, crop=CASES[case]["crop"]),
                                     config=model.cfg)
    monkeypatch.setattr(state, "MODELS", _Models("m", ServedModel(loaded, None)))
    monkeypatch.setattr(state, "WALKS", Cache(state.walk_key, 1))
    session = Session(AnalysisKey(photos["cat"], "m"))
    seen, _ = hooked_shapes(loaded.model, loaded.preprocess(cat))
    H, W = loaded.preprocess.crop
    N, D = seen["embeddings"][0]
    P = loaded.model.patch_embed.proj.kernel_size[0]
    T = seen["embedded"][0][0]
    expected = [f"{H}×{W}×3", f"{N}×{3 * P * P}", str(3 * P * P), f"{N}×{D}", f"{T}×{D}", f"{T}×{D}",
                "×".join(map(str, seen["layers"][0])), str(seen["norm"][0][-1]), str(seen["logits"][0][0])]
    table = learn.show(session, 1, 5, "en")["learn_table"]
    assert [row.rsplit("`", 2)[1] for row in table.splitlines()[2:]] == expected
    for step, shape in enumerate(expected, start=1):
        text, picture = learn_step(state.WALKS.get(session.key), step, 5, "zh-CN")
        assert f"`{shape}`" in text and picture.width > 200


def test_the_learn_step_buttons_stay_inside_the_walk():
    assert learn.step_by(1)(9) == 9 and learn.step_by(-1)(1) == 1 and learn.step_by(1)(3) == 4


# ---- Explain -----------------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_explain_follows_the_class_and_the_method_and_equals_the_library(cat_result, augreg_weights):
    session = cat_result["session"]
    top1 = explain.explain(session, "gae", TOP1, NO_CONTRAST, "", False, 0.6, "en")
    tabby = explain.explain(session, "gae", "tabby", NO_CONTRAST, "", False, 0.6, "en")
    gradcam = explain.explain(session, "gradcam", "tabby", NO_CONTRAST, "", False, 0.6, "en")
    contrast = explain.explain(session, "gae", "tabby", "tiger cat", "", False, 0.6, "en")
    assert list(cat_result["top5"])[0] in top1["explain_line"] and "tabby" in tabby["explain_line"]
    assert "tiger cat" in contrast["explain_line"]
    pictures = [_pixels(v["explain_picture"]) for v in (top1, tabby, gradcam, contrast)]
    for i in range(4):
        for j in range(i):
            assert not np.array_equal(pictures[i], pictures[j]), (i, j)
    loaded = state.MODELS.get(augreg_weights).loaded
    x = loaded.preprocess.to_tensor(_cached(session).image)
    expected = explain_tensor(loaded.model, x, vit.explain.class_target(loaded.labels, "tabby"), ["gae"],
                              loaded.labels).map("gae")
    got = state.EXPLANATIONS.get((session.key.photo, augreg_weights, "own", Pick("tabby"))).maps["gae"]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    assert tabby["methods_row"].width > 5 * 140                                # every method side by side


@pytest.mark.slow
def test_explain_endpoint_returns_the_picture_and_the_numbers(cat_result, photos, augreg_weights):
    picture, numbers = api.explain(photos["cat"], "gradcam", "281")
    assert numbers["target"] == {"index": 281, "name": "tabby"} and numbers["grid"] == [14, 14]
    assert np.asarray(numbers["map"]).shape == (14, 14) and 0 < numbers["probability"] < 1
    assert isinstance(picture, Image.Image)
    with pytest.raises(gr.Error, match="Unknown method 'magic'"):
        api.explain(photos["cat"], "magic", "tabby")
    with pytest.raises(gr.Error, match="Unknown class 'unicorn'"):
        api.explain(photos["cat"], "gae", "unicorn")


def test_typed_texts_without_a_text_tower_are_one_plain_message(cat_result):
    with pytest.raises(gr.Error, match="no text tower"):
        explain.zero_shot(cat_result["session"], "a photo of a cat", "en")


# ---- Compare -------------------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_compare_two_checkpoints_and_animate_through_depth(cat_result, photos, real_weights_dir):
    session = cat_result["session"]
    compared = compare.compare(session, str(real_weights_dir / DEIT), compare.AS_A, "en", _controls())
    assert compared["comparison"].width > 800
    assert [label.split(" (Δ")[0] for label in compared["top5_a"]] == list(cat_result["top5"])
    animated = compare.animate(session, "attention", "en", _controls())
    with Image.open(animated["animation_file"]) as gif:
        assert gif.n_frames == 12
    phone = compare.compare(session, str(real_weights_dir / DEIT), compare.AS_A, "zh-CN", _controls(narrow=True))
    assert phone["comparison"].width < 600 < phone["comparison"].height          # drawn for a phone: one column


def test_compare_without_a_second_checkpoint_says_what_to_choose(cat_result, real_weights_dir, monkeypatch):
    """Pressed with no B (or with A itself made the same way): the note under the button lists the checkpoints on
    this machine and the other way, this model with another preprocessing; nothing runs."""
    session = cat_result["session"]
    monkeypatch.setattr(compare, "compare_side", lambda *a: pytest.fail("compared without a B"))
    for model_b in (None, "", session.key.model):
        said = compare.compare(session, model_b, compare.AS_A, "en", _controls())
        assert list(said) == ["compare_note"]                               # every result left as it was
        assert said["compare_note"].startswith(t("message.compare_choose", "en", options="").split("\n")[0])
        assert f"`{real_weights_dir / DEIT}`" in said["compare_note"]       # the test weights beside the clone
        assert "B: photo → model input" in said["compare_note"]
    chinese = compare.compare(session, None, compare.AS_A, "zh-CN", _controls())["compare_note"]
    assert chinese.startswith("请先选择用来比较的第二个检查点")
    assert str(real_weights_dir / DEIT) in [c for c, _ in compare.offer_second()["model_b"].choices]
    monkeypatch.setattr(state.SETTINGS, "any_model", False)           # a public server: only its listed models
    assert [c for c, _ in compare.offer_second()["model_b"].choices] == state.model_choices()
    assert str(real_weights_dir / DEIT) not in compare.compare(session, None, compare.AS_A, "en",
                                                               _controls())["compare_note"]


@pytest.mark.slow
def test_compare_a_model_with_itself_through_another_preprocessing(cat_result):
    """B can be A's checkpoint with its input made another way: the squashed photo against the model's own crop."""
    session = cat_result["session"]
    compared = compare.compare(session, session.key.model, "squash", "en", _controls())
    assert compared["comparison"].width > 800 and "(Δ" in next(iter(compared["top5_b"]))


def test_upload_component_passes_uploaded_files_unopened(demo, tmp_path):
    """An upload reaches the handler as a path, unopened (the handler's decoder says what is wrong with it); a file
    outside the upload folder never does (tests/security/test_door.py: the refusals)."""
    component = PhotoInput(type="filepath", image_mode=None)
    text = Path(component.GRADIO_CACHE) / "test-upload" / "notes.jpg"
    text.parent.mkdir(parents=True, exist_ok=True)
    text.write_text("not an image")
    assert component.preprocess(ImageData(path=str(text), orig_name="notes.jpg")) == os.path.realpath(text)
    outside = tmp_path / "notes.jpg"
    outside.write_text("not an image")
    with pytest.raises(gr.Error, match="Only photos uploaded to this page"):
        component.preprocess(ImageData(path=str(outside), orig_name="notes.jpg"))
    assert component.preprocess(None) is None
    payload = b"\x89PNG\r\n\x1a\n broken on purpose"
    url = "data:image/png;base64," + base64.b64encode(payload).decode()
    saved = component.preprocess(ImageData(path=None, url=url))
    with open(saved, "rb") as f:
        assert f.read() == payload


def test_command_line_defaults_and_flags():
    args = parse_args([])
    assert (args.host, args.port, args.share, args.public, args.model, args.weights, args.device) == \
        ("127.0.0.1", 7860, False, False, "default", None, "auto")
    args = parse_args(["--weights", "w.safetensors", "--port", "8000", "--host", "0.0.0.0", "--share", "--public",
                       "--device", "cpu"])
    assert (args.weights, args.port, args.host, args.share, args.public, args.device) == \
        ("w.safetensors", 8000, "0.0.0.0", True, True, "cpu")
    with pytest.raises(SystemExit):
        parse_args(["--weights", "a.pth", "--model", "vit_b_16"])


# ---- CLIP: typed texts ------------------------------------------------------------------------------------------

def test_clip_texts_are_scored_and_explained(demo, photos, clip_path, cat):
    from vit.clip import zero_shot
    page = _page(photos["cat"], clip_path)
    assert page["clip_box"].visible is True
    texts = "a photo of a cat, a photo of a dog\na red cup"
    scored = explain.zero_shot(page["session"], texts, "en")["zero_shot"]
    loaded = state.MODELS.get(clip_path).loaded
    expected = zero_shot(loaded, open_image(photos["cat"]), ["a photo of a cat", "a photo of a dog", "a red cup"])
    np.testing.assert_allclose(list(scored.values()), expected[0].numpy(), rtol=1e-5)
    cat_map = explain.explain(page["session"], "gae", TOP1, NO_CONTRAST, texts, True, 0.6, "en")
    dog_map = explain.explain(page["session"], "gae", TOP1, NO_CONTRAST, "a photo of a dog, a photo of a cat",
                              True, 0.6, "en")
    assert "a photo of a cat" in cat_map["explain_line"] and "a photo of a dog" in dog_map["explain_line"]
    assert not np.array_equal(_pixels(cat_map["explain_picture"]), _pixels(dog_map["explain_picture"]))


def test_a_model_picked_in_the_page_can_still_be_explained(cat_result, photos, real_weights_dir):
    """Page handlers run in inference mode; the models they load must still take a backward pass."""
    deit = str(real_weights_dir / DEIT)
    switched = views.switch_model(deit, "x", photos["cat"], None, _controls(), "en")
    explained = explain.explain(switched["session"], "gae", "tabby", NO_CONTRAST, "", False, 0.6, "en")
    assert "tabby" in explained["explain_line"] and isinstance(explained["explain_picture"], Image.Image)


def test_a_snapshot_folder_opens_on_the_last_snapshot_and_the_slider_scrubs_through_it(cat_result, tmp_path):
    """The Compare tab's snapshot slider (issue 17): one frame per snapshot of a training run, on the session's
    photo, equal to what viz.dynamics draws; a folder that is no run gives one warning-level error."""
    from vit.model import ViTConfig, VisionTransformer
    from vit.train.build import scratch_preprocess
    from vit.train.snapshots import save_snapshot
    from viz.compare.snapshots import load_series
    from viz.compare.dynamics import DynamicsView

    folder = tmp_path / "run.snapshots"
    for epoch in (0, 1, 2):
        torch.manual_seed(epoch)
        model = VisionTransformer(ViTConfig(img_size=16, patch_size=4, embed_dim=16, depth=2, num_heads=2, mlp_dim=32,
                                            num_classes=2))
        save_snapshot(folder, model, ["a", "b"], scratch_preprocess((16, 16)), epoch, 0.5, 0.5 + epoch / 10, "learned")
    session = cat_result["session"]
    opened = compare.open_snapshots(session, str(folder), "en")
    assert opened["snapshot"].maximum == 2 and opened["snapshot"].value == 2
    view = DynamicsView(load_series(folder, open_image(session.key[0])))
    for index in (0, 2):
        got = compare.show_snapshot(session, str(folder), index, "en")["snapshot_picture"]
        assert np.array_equal(_pixels(got), _pixels(view.frame(index))), index
    assert not np.array_equal(_pixels(compare.show_snapshot(session, str(folder), 0, "en")["snapshot_picture"]),
                              _pixels(opened["snapshot_picture"]))
    with pytest.raises(gr.Error, match="Could not open the snapshots"):
        compare.open_snapshots(session, str(tmp_path / "nothing here"), "en")
