"""Protects the page's choice of how a photo becomes the model's input (own, crop, squash), on a wide real photo
with the real AugReg ViT-Ti: the top-5 is the library's for that mode, the outline of what the model saw, its note
and the summary follow the mode in both languages, and every cache key holds the mode, so two visitors with
different modes never share an analysis, an explanation, a walk or a comparison. /analyze and /explain take the
mode as their last input, "own" by default."""
from __future__ import annotations

import gradio as gr
import numpy as np
import pytest
from PIL import Image
from skimage import data

import app_server  # noqa: F401  (gives this process its own GRADIO_TEMP_DIR before the app is built)
import vit
from vit.image_file import open_image
from vit_explorer import api, state, views
from vit_explorer.controls import ControlValues
from vit_explorer.state import Pick
from vit_explorer.tabs import compare, explain, learn
from vit_explorer.tabs.explain import NO_CONTRAST, TOP1
from viz import explorer, panels
from viz.explain.explainer import explain_tensor
from viz.analysis.capture import analyze
from viz.i18n import t

DEIT = "deit_tiny_patch16_224.pipevit_ln_fixedpoint.safetensors"
CONTROLS = ControlValues(layer=11)


@pytest.fixture(scope="module")
def wide(tmp_path_factory) -> str:
    """skimage's coffee, 600×400: AugReg's own pipeline cuts away a third of it, a squash keeps all of it."""
    path = tmp_path_factory.mktemp("preprocess_photos") / "coffee.png"
    Image.fromarray(data.coffee()).save(path)
    return str(path)


@pytest.fixture(scope="module")
def shown(demo, wide, augreg_weights) -> dict:
    """The page after a new photo (own, the default), then after the control switched it to squash, per language."""
    out = {}
    for lang in ("en", "zh-CN"):
        own = views.page_analyze(None, wide, augreg_weights, CONTROLS, None, lang)
        out[lang] = {"own": own, "squash": views.switch_preprocess("squash", own["session"], CONTROLS, lang),
                     "crop": views.switch_preprocess("crop", own["session"], CONTROLS, lang)}
    return out


def _library_top5(augreg_weights: str, photo: str, mode: str) -> list[tuple[str, float]]:
    return analyze(vit.load(augreg_weights, preprocess=mode), open_image(photo)).top_k(5)


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_the_top5_outline_note_and_summary_follow_the_mode(shown, wide, augreg_weights, lang):
    own, squash = shown[lang]["own"], shown[lang]["squash"]
    assert own["session"].key == (wide, augreg_weights, "own", 0) and squash["session"].key == (wide, augreg_weights, "squash", 0)
    for page, mode in ((own, "own"), (squash, "squash")):
        expected = _library_top5(augreg_weights, wide, mode)
        assert list(page["top5"]) == [label for label, _ in expected]
        np.testing.assert_allclose(list(page["top5"].values()), [p for _, p in expected], rtol=1e-5)
    assert list(own["top5"]) != list(squash["top5"])   # 5th: soup bowl (own), espresso maker (squash)
    assert own["crop_note"] == t("note.crop", lang, crop="224×224")
    assert squash["crop_note"] == t("note.stretched", lang, crop="224×224")
    assert t("summary.crop", lang) in own["summary"] and t("summary.squashed", lang) in squash["summary"]
    assert t("summary.crop", lang) not in squash["summary"]
    photo = np.asarray(Image.open(wide).convert("RGB").resize(own["crop"].size, Image.Resampling.BICUBIC), np.int16)
    edge = (slice(20, -20), slice(8, 30))                 # left of AugReg's 248 -> 224 crop (it starts at x = 75/600)
    seen_own, seen_squash = (np.asarray(p["crop"], np.int16)[edge] for p in (own, squash))
    assert np.abs(seen_squash - photo[edge]).max() <= 2   # squash: the whole photo is seen, nothing dimmed
    assert seen_own.mean() < 0.5 * photo[edge].mean()     # own: cut away, dimmed


def test_crop_is_the_checkpoints_own_crop_and_says_so(shown):
    own, crop = shown["en"]["own"], shown["en"]["crop"]
    assert list(crop["top5"].items()) == list(own["top5"].items())      # AugReg already crops: the same input
    assert crop["crop_note"] == own["crop_note"]
    assert crop["summary"].split(" · ")[0] == own["summary"].split(" · ")[0]     # the same words, another timing
    assert state.ANALYSES.get(crop["session"].key) is not state.ANALYSES.get(own["session"].key)   # its own key


def test_two_visitors_with_different_modes_never_share_an_analysis(shown, wide, augreg_weights):
    own, squash = shown["en"]["own"]["session"].key, shown["en"]["squash"]["session"].key
    a_own, a_squash = state.ANALYSES.get(own), state.ANALYSES.get(squash)
    assert a_own is not a_squash and {own, squash} <= set(state.ANALYSES.keys())
    squash_input = vit.load(augreg_weights, preprocess="squash").preprocess.crop_image(open_image(wide))
    assert a_squash.image.tobytes() == squash_input.tobytes() != a_own.image.tobytes()
    visitor = views.page_analyze(None, wide, augreg_weights, CONTROLS, None, "en", "own")    # another visitor, own mode
    assert state.ANALYSES.get(visitor["session"].key) is a_own                    # the first visitor's: no forward


@pytest.mark.slow
def test_explanations_walks_and_comparisons_follow_the_mode(shown, wide, augreg_weights, real_weights_dir, monkeypatch):
    own, squash = shown["en"]["own"]["session"], shown["en"]["squash"]["session"]
    for session in (own, squash):
        explain.explain(session, "gae", TOP1, NO_CONTRAST, "", False, 0.6, "en")
    maps = {s.key.preprocess: state.EXPLANATIONS.get((*s.key, Pick())).maps["gae"] for s in (own, squash)}
    loaded = state.model_of(squash.key).loaded
    x = loaded.preprocess.to_tensor(state.ANALYSES.get(squash.key).image)
    expected = explain_tensor(loaded.model, x, None, ["gae"], loaded.labels).map("gae")
    np.testing.assert_allclose(maps["squash"], expected, rtol=1e-5, atol=1e-6)
    assert not np.allclose(maps["squash"], maps["own"])

    steps = {s.key.preprocess: learn.show(s, 1, 11, "en")["learn_text"] for s in (own, squash)}
    assert t("walk.squash.text", "en", size="224×224", shape="224×224×3") in steps["squash"]
    assert t("walk.crop.text", "en", resize=248, shape="224×224×3") in steps["own"]

    sides, real = [], compare.compare_side

    def side(loaded, *args):
        sides.append(loaded.preprocess_choice)
        return real(loaded, *args)
    monkeypatch.setattr(compare, "compare_side", side)
    compare.compare(squash, str(real_weights_dir / DEIT), compare.AS_A, "en", CONTROLS)
    assert sides == ["squash", "squash"]                  # B's input is made the way A's is


@pytest.mark.slow
def test_the_api_takes_the_mode_last_with_own_as_default(demo, wide, augreg_weights):
    outputs = api.API_OUTPUTS
    default = dict(zip(outputs, api.analyze(wide, augreg_weights)))
    squashed = dict(zip(outputs, api.analyze(wide, augreg_weights, preprocess="squash")))
    assert default["session"].key.preprocess == "own" and t("summary.crop", "en") in default["summary"]
    assert squashed["session"].key.preprocess == "squash" and t("summary.squashed", "en") in squashed["summary"]
    assert api.ANALYZE_INPUTS[-1] == api.EXPLAIN_INPUTS[-1] == "preprocess"
    _, own_numbers = api.explain(wide, "gae")
    _, squash_numbers = api.explain(wide, "gae", preprocess="squash")
    assert own_numbers["probability"] != squash_numbers["probability"]
    with pytest.raises(gr.Error, match=r"Unknown preprocessing 'stretch': expected one of own, crop, squash"):
        api.analyze(wide, augreg_weights, preprocess="stretch")


def test_a_stretched_photo_of_a_square_input_is_named_and_a_square_one_is_whole():
    p = vit.Preprocess.for_crop(224, 0.9)
    assert explorer.input_kind(p) == "summary.crop" and explorer.input_kind(None) == "summary.crop"
    assert explorer.input_kind(p.choose("squash")) == "summary.squashed"
    deit_hf = vit.Preprocess(resize=(256, 256), crop=(224, 224), resize_mode="squash")    # squash 256², crop 224
    assert explorer.input_kind(deit_hf) == "summary.stretched_crop"
    _, note = panels.crop_panel(Image.new("RGB", (300, 300)), p.choose("squash"), lang="zh-CN")
    assert note == t("note.whole", "zh-CN", crop="224×224")        # a square photo squashed: nothing cut away
