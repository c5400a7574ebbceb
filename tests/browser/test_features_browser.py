"""Protects the Features tab as a person uses it, in a real browser (headless Debian chromium through pip playwright,
the app served on 127.0.0.1 with the real AugReg ViT-Ti): on a desktop in English and on a 390 px phone in Chinese,
opening the tab draws the PCA colours with their line, the photo to click and the similarity map; a click on the
photo draws another similarity map; a second photo's upload draws the matches with their line, in the page's
language; the phone needs no sideways scrolling. Screenshots go to tests/artifacts/ (git-ignored)."""
from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page

from browser_setup import ARTIFACTS, TIMEOUT_MS, TOP1, app_in_browser, open_tab
from viz.i18n import t

pytestmark = pytest.mark.slow   # a served app and a browser: about a minute

REPO = Path(__file__).resolve().parents[2]
DESKTOP = {"width": 1400, "height": 900}
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def server(real_weights_dir):
    with app_in_browser(str(real_weights_dir / "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors")) as (url, browser):
        yield {"url": url, "browser": browser, "folder": REPO / "examples"}


def _src(page: Page, elem_id: str) -> str | None:
    img = page.locator(f"#{elem_id} img").first
    return img.get_attribute("src") if img.count() else None


def _features(server, locale: str, viewport: dict) -> Page:
    """The page with the cat analysed and the Features tab open and drawn."""
    lang = "zh-CN" if locale == "zh-CN" else "en"
    page = server["browser"].new_context(locale=locale, viewport=viewport).new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(server["url"])
    page.locator("#photo-input input[type=file]").set_input_files(str(server["folder"] / "chelsea.jpg"))
    page.wait_for_selector(TOP1)
    open_tab(page, "features", lang)
    for name in ("features-pca", "features-photo", "features-similarity"):
        page.locator(f"#{name} img").first.wait_for()
    page.wait_for_function("() => document.querySelector('#features-pca-note').innerText.includes('%')")
    return page


def _click_and_match(page: Page, server, match_word: str) -> None:
    """A click on the photo's top-left patch redraws the similarity; the coffee photo gets the matches."""
    before = _src(page, "features-similarity")
    page.locator("#features-photo img").first.click(position={"x": 6, "y": 6})
    page.wait_for_function("old => { const i = document.querySelector('#features-similarity img');"
                           " return i !== null && i.src !== old; }", arg=before)
    page.locator("#features-other input[type=file]").set_input_files(str(server["folder"] / "coffee.jpg"))
    page.wait_for_function("word => document.querySelector('#features-match-note').innerText.includes(word)",
                           arg=match_word)
    page.locator("#features-match img").first.wait_for()


def test_features_on_a_desktop_in_english(server):
    page = _features(server, "en-US", DESKTOP)
    try:
        assert "red, green, blue" in page.locator("#features-pca-note").inner_text()
        assert t("picture.features_similarity", "en") in page.locator("#features-similarity").inner_text()
        _click_and_match(page, server, "Best match")
        page.locator("#features-layer").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "features-en-desktop.png"), full_page=True)
    finally:
        page.context.close()


def test_features_on_a_phone_in_chinese(server):
    page = _features(server, "zh-CN", PHONE)
    try:
        assert "主成分" in page.locator("#features-pca-note").inner_text()
        assert t("picture.features_pca", "zh-CN") in page.locator("#features-pca").inner_text()
        assert page.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"] + 1
        _click_and_match(page, server, "最佳匹配")
        assert page.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"] + 1
        page.screenshot(path=str(ARTIFACTS / "features-zh-phone.png"), full_page=True)
    finally:
        page.context.close()
