"""Protects the page as a person uses it, in a real browser: headless Debian chromium driven by pip playwright
(never a downloaded browser), one app per module served on 127.0.0.1 with the real AugReg ViT-Ti (the cat must
be a cat). On a desktop (1400×900) and a phone (390×844), with the browser's language English or Chinese:
the tabs and labels speak that language and the pictures are drawn in it, the switch changes the language
without losing the analysis, a bad upload or a bad model path leaves every result as it was with exactly one
message, the phone shows the result right after the upload and every tab without a menu, and the Explain and
Learn tabs answer their controls. Screenshots are kept in tests/artifacts/ (git-ignored) for people to look at.
"""
from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image
from playwright.sync_api import Page

from browser_setup import ARTIFACTS, TIMEOUT_MS, TOP1, app_in_browser, open_tab, tab_buttons, tab_names
from vit_explorer import state  # after app_server: it gives the process its own GRADIO_TEMP_DIR first
from vit_explorer.controls import ControlValues
from vit_explorer.tabs import SECTIONS, TAB_IDS
from viz.i18n import t
from viz.rollout.view import rollout_view

pytestmark = pytest.mark.slow   # a real browser against a served app

CAT_CLASSES = {"Egyptian cat", "tabby", "tiger cat", "Persian cat", "Siamese cat", "lynx"}
DESKTOP = {"width": 1400, "height": 900}
PHONE = {"width": 390, "height": 844}
TABS = TAB_IDS   # the page's tabs, in order


@pytest.fixture(scope="module")
def server(real_weights_dir, tmp_path_factory, cat):
    folder = tmp_path_factory.mktemp("browser")
    cat.save(folder / "cat.jpg", quality=95)
    (folder / "notes.jpg").write_text("<!DOCTYPE html><html><body>Not a photo</body></html>")
    (folder / "holiday.pth").write_text("not weights")
    with app_in_browser(str(real_weights_dir / "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors")) as (url, browser):
        yield {"url": url, "browser": browser, "folder": folder}


def _open(server, locale: str, viewport: dict, upload: bool = True) -> Page:
    context = server["browser"].new_context(locale=locale, viewport=viewport)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(server["url"])
    page.locator("#photo-input").wait_for()
    if upload:
        page.locator("#photo-input input[type=file]").set_input_files(str(server["folder"] / "cat.jpg"))
        page.wait_for_selector(TOP1)
        page.wait_for_selector("#rollout-image img")
    return page


@pytest.fixture(scope="module")
def english(server):
    page = _open(server, "en-US", DESKTOP)
    yield page
    page.context.close()


def _src(page: Page, elem_id: str) -> str | None:
    img = page.locator(f"#{elem_id} img").first
    return img.get_attribute("src") if img.count() else None


def _wait_for_new_src(page: Page, elem_id: str, old: str | None) -> str:
    page.wait_for_function("([id, old]) => { const img = document.querySelector(`#${id} img`);"
                           " return img !== null && img.complete && img.src !== old; }", arg=[elem_id, old])
    return _src(page, elem_id)


def _picture(page: Page, src: str) -> np.ndarray:
    response = page.request.get(src)
    assert response.ok, (src, response.status)
    return np.asarray(Image.open(io.BytesIO(response.body())).convert("RGB")).astype(int)


def _toasts(page: Page) -> int:
    return page.locator("[data-testid=toast-body]").count()


def _shot(page: Page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


# ---- language ----------------------------------------------------------------------------------------------------

def test_english_page_has_english_tabs_and_labels_and_a_cat_on_top(english):
    assert english.locator(TOP1).inner_text().strip() in CAT_CLASSES
    assert "197" in english.locator("#summary").inner_text()
    assert tab_names(english, "en") == [t(f"tab.{name}", "en") for name in TABS]
    assert english.get_by_text(t("control.opacity", "en"), exact=True).count() >= 1
    _shot(english, "app-en-desktop.png")


def test_chinese_browser_gets_chinese_tabs_labels_and_pictures(server):
    page = _open(server, "zh-CN", DESKTOP)
    try:
        assert tab_names(page, "zh-CN") == [t(f"tab.{name}", "zh-CN") for name in TABS]
        for key in ("control.opacity", "control.mask_artifacts", "label.model", "label.top5"):
            assert page.get_by_text(t(key, "zh-CN"), exact=True).count() >= 1, key
        assert "词元" in page.locator("#summary").inner_text()
        # the rollout picture was drawn in Chinese on the server: it equals the Chinese rendering (whose CJK
        # glyphs tests/pictures/test_i18n.py checks against the missing-glyph box) and differs from the English one
        got = _picture(page, _src(page, "rollout-image"))
        zh, en = min(_server_rollouts(), key=lambda pair: _difference(got, pair[0]))
        width = min(zh.shape[1], en.shape[1])
        assert _difference(got, zh) < 3 < np.abs(zh[:, 640:width] - en[:, 640:width]).mean()   # the colour bar's text
        _shot(page, "app-zh-desktop.png")
    finally:
        page.context.close()


def _server_rollouts() -> list[tuple[np.ndarray, np.ndarray]]:
    """(Chinese, English) rollout pictures of every analysis the server holds, drawn on the server."""
    pairs = []
    for key in state.ANALYSES.keys():
        a = state.ANALYSES.get(key)
        controls = ControlValues(layer=11).for_analysis(a)
        pairs.append(tuple(np.asarray(rollout_view(a, controls, lang)[0].convert("RGB")).astype(int)
                           for lang in ("zh-CN", "en")))
    return pairs


def _difference(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).mean()) if a.shape == b.shape else float("inf")


def test_the_switch_changes_the_language_and_keeps_the_analysis(server):
    page = _open(server, "en-US", DESKTOP)
    try:
        top = _classes(page)
        before = _src(page, "rollout-image")
        page.locator("#language").get_by_text("中文").click()
        page.wait_for_function("name => [...document.querySelectorAll('#sections button[role=tab]')]"
                               ".some(b => b.innerText.trim() === name)", arg=t("tab.rollout", "zh-CN"))
        _wait_for_new_src(page, "rollout-image", before)
        assert tab_names(page, "zh-CN") == [t(f"tab.{name}", "zh-CN") for name in TABS]
        assert _classes(page) == top                                 # the same analysis, nothing lost
        page.wait_for_function("() => document.querySelector('#summary').innerText.includes('词元')")
        _shot(page, "app-switched-to-zh.png")
        page.locator("#language").get_by_text("English").click()
        page.wait_for_function("name => [...document.querySelectorAll('#sections button[role=tab]')]"
                               ".some(b => b.innerText.trim() === name)", arg="Rollout")
    finally:
        page.context.close()


def _wait_until_idle(page: Page) -> None:
    """Until no event is running (Gradio marks running outputs "pending"/"generating") and a moment more."""
    page.wait_for_function("() => document.querySelectorAll('.pending, .generating, .translucent').length === 0")
    page.wait_for_timeout(500)


def _classes(page: Page) -> list[str]:
    """The top-5 as shown (classes and percentages), without the box's label."""
    return page.locator("#top5").inner_text().splitlines()[1:]


# ---- errors leave the page whole -----------------------------------------------------------------------------------

def _state(page: Page) -> dict:
    """What must not change: the top-5, the layer slider and the pictures, as element screenshots (the message
    closed first: it lies over the top-5)."""
    for close in page.locator("[data-testid=toast-close]").all():
        close.click()
    page.locator("[data-testid=toast-body]").first.wait_for(state="detached")
    _wait_until_idle(page)
    open_tab(page, "attention", "en")
    page.locator("#attention-image img").wait_for()
    return {"top5": page.locator("#top5").screenshot(), "summary_model": page.locator("#model-picker input").input_value(),
            "layer": page.locator("#layer-slider input[type=number]").input_value(),
            "attention": page.locator("#attention-image img").screenshot(),
            "rollout_src": _src(page, "rollout-image"), "attention_src": _src(page, "attention-image"),
            "classes": _classes(page)}


def _assert_unchanged(before: dict, after: dict) -> None:
    """The same pictures (the same files served), classes, slider and model; the element screenshots equal up to
    the browser's anti-aliasing and a block's 1-pixel border (under 1 % of the pixels differ visibly)."""
    for name, value in before.items():
        if isinstance(value, bytes):
            a, b = (np.asarray(Image.open(io.BytesIO(x)).convert("RGB")).astype(int) for x in (value, after[name]))
            assert a.shape == b.shape, name
            assert (np.abs(a - b).sum(axis=-1) > 30).mean() < 0.01, name
        else:
            assert after[name] == value, name


def test_a_bad_upload_shows_one_message_and_keeps_every_result(server):
    page = _open(server, "en-US", DESKTOP)
    try:
        before = _state(page)
        page.locator("#photo-input input[type=file]").set_input_files(str(server["folder"] / "notes.jpg"))
        page.get_by_text("HTML", exact=False).first.wait_for()
        page.wait_for_timeout(2500)                                # any second message would have come by now
        assert _toasts(page) == 1
        assert page.get_by_text("Error", exact=True).count() == 0   # no "Error" pill on a result or a control
        _shot(page, "app-bad-upload.png")
        _assert_unchanged(before, _state(page))
    finally:
        page.context.close()


def test_a_bad_model_path_shows_one_message_and_keeps_every_result(server):
    page = _open(server, "en-US", DESKTOP)
    try:
        before = _state(page)
        picker = page.locator("#model-picker input")
        picker.click()
        picker.fill(str(server["folder"] / "holiday.pth"))
        picker.press("Enter")
        page.get_by_text("is not a checkpoint").first.wait_for()
        page.wait_for_function("before => document.querySelector('#model-picker input').value === before",
                               arg=before["summary_model"])
        page.wait_for_timeout(1500)
        assert _toasts(page) == 1
        assert page.get_by_text("Error", exact=True).count() == 0
        _assert_unchanged(before, _state(page))
    finally:
        page.context.close()


# ---- phone -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_phone_shows_the_result_after_the_upload_and_every_tab_without_scrolling_sideways(server, locale):
    page = _open(server, locale, PHONE)
    try:
        page.evaluate("window.scrollTo(0, 0)")
        for selector in ("#top5", "#rollout-image img"):
            box = page.locator(selector).first.bounding_box()
            assert box["y"] + min(box["height"], 200) < 2 * PHONE["height"], (selector, box)
        lang = "zh-CN" if locale == "zh-CN" else "en"
        assert page.locator("#sections .overflow-menu button").filter(visible=True).count() == 0   # no "⋯" menu
        names = tab_names(page, lang)
        assert names == [t(f"tab.{name}", lang) for name in TABS]
        for section in SECTIONS:                         # every section's bar and its tabs fit the phone's width
            page.get_by_role("tab", name=t(f"section.{section}", lang), exact=True).click()
            for tab in tab_buttons(page):
                assert tab.bounding_box()["x"] + tab.bounding_box()["width"] <= PHONE["width"] + 1
        page.get_by_role("tab", name=t(f"section.{SECTIONS[0]}", lang), exact=True).click()
        _shot(page, f"app-phone-{lang}.png")
        open_tab(page, "query", lang)
        photo = page.locator("#query-photo img").first
        photo.wait_for()
        box = photo.bounding_box()
        photo.click(position={"x": box["width"] * 0.3, "y": box["height"] * 0.35})
        page.locator("#query-out img").first.wait_for()
        photo.scroll_into_view_if_needed()
        out = page.locator("#query-out img").first.bounding_box()
        assert out["y"] + out["height"] / 2 - box["y"] < PHONE["height"]   # the click and its answer on one screen
        _shot(page, f"app-phone-query-{lang}.png")
        open_tab(page, "model", lang)
        table = page.locator("#architecture table").first
        table.wait_for()
        widths = table.evaluate("t => [...t.querySelectorAll('td')].map(td => td.scrollWidth <= td.clientWidth + 1)")
        assert all(widths)                                                       # no cell squeezed into broken words
    finally:
        page.context.close()


# ---- the tabs' controls ------------------------------------------------------------------------------------------

def test_moving_the_layer_slider_changes_the_attention_image(english):
    open_tab(english, "attention", "en")
    before = _wait_for_new_src(english, "attention-image", None)
    slider = english.locator("#layer-slider input[type=range]")
    slider.focus()
    english.keyboard.press("ArrowLeft")  # layer 11 -> layer 10, as a person dragging the slider
    after = _wait_for_new_src(english, "attention-image", before)
    assert english.locator("#layer-slider input[type=number]").input_value() == "10"
    assert not np.array_equal(_picture(english, after), _picture(english, before))
    assert english.locator("#head-slider input[type=range]").is_disabled()   # mean of heads: the Head slider rests
    english.locator("#mean-heads input").uncheck()
    english.wait_for_function("() => !document.querySelector('#head-slider input[type=range]').disabled")


def test_clicking_a_thumbnail_tells_its_layer_head_distance_and_entropy(english):
    open_tab(english, "heads", "en")
    grid = english.locator("#heads-image img").first
    grid.wait_for()
    box = grid.bounding_box()
    assert box["width"] > 0.8 * 1400 * 0.9                         # the grid fills the page's width
    grid.click(position={"x": box["width"] * 0.5, "y": box["height"] * 0.5})
    english.wait_for_function("() => document.querySelector('#heads-info').innerText.includes('bits')")
    info = english.locator("#heads-info").inner_text()
    assert "layer" in info and "head" in info and "pixels" in info and "bits" in info
    _shot(english, "app-heads.png")


def test_explain_picks_a_class_and_a_method_and_the_picture_changes(english):
    open_tab(english, "explain", "en")
    first = _wait_for_new_src(english, "explain-image", None)
    english.locator("#method input").click()
    english.get_by_role("option", name=t("method_title.gradcam", "en"), exact=True).first.click()
    second = _wait_for_new_src(english, "explain-image", first)
    assert not np.array_equal(_picture(english, first), _picture(english, second))
    english.locator("#top5 button, #top5 [data-testid=label-output-value]").first.wait_for()
    english.locator("#top5").get_by_text("tabby", exact=True).click()
    english.wait_for_function("() => document.querySelector('#explain-line').innerText.includes('tabby')")
    third = _wait_for_new_src(english, "explain-image", second)
    assert not np.array_equal(_picture(english, third), _picture(english, second))
    _shot(english, "app-explain.png")


def test_learn_walks_through_the_steps_with_the_models_shapes(english):
    open_tab(english, "learn", "en")
    english.wait_for_function("() => document.querySelector('#learn-table').innerText.includes('197×192')")
    first = _wait_for_new_src(english, "learn-picture", None)
    english.locator("#learn-next").click()
    english.wait_for_function("() => document.querySelector('#learn-text').innerText.includes('196×768')")
    _wait_for_new_src(english, "learn-picture", first)
    _shot(english, "app-learn.png")


def test_clicking_a_patch_shows_where_it_attends(english):
    open_tab(english, "query", "en")
    before = _wait_for_new_src(english, "query-out", None)
    photo = english.locator("#query-photo img").first
    box = photo.bounding_box()
    photo.click(position={"x": box["width"] * 0.3, "y": box["height"] * 0.35})  # the cat's left eye
    after = _wait_for_new_src(english, "query-out", before)
    assert not np.array_equal(_picture(english, after), _picture(english, before))


def test_trust_checks_every_map_on_demand_in_both_languages(english, server):
    open_tab(english, "trust", "en")
    english.locator("#trust-button").click()
    english.wait_for_function("() => document.querySelector('#trust-table').innerText.includes('deletion AUC')")
    _wait_for_new_src(english, "trust-image", None)
    rows = english.locator("#trust-table tbody tr").all()
    assert {r.locator("td").first.inner_text().strip() for r in rows} >= \
        {t(f"method.{m}", "en") for m in ("gae", "attnlrp", "gradcam", "random")}
    _shot(english, "app-trust.png")
    phone = _open(server, "zh-CN", PHONE)                # the same photo, model and class: served from the cache
    try:
        open_tab(phone, "trust", "zh-CN")
        phone.locator("#trust-button").click()
        phone.wait_for_function("() => document.querySelector('#trust-table').innerText.includes('删除 AUC')")
        _wait_for_new_src(phone, "trust-image", None)
        _shot(phone, "app-trust-phone-zh.png")
    finally:
        phone.context.close()
