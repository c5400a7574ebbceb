"""Protects the preprocessing control as a person uses it, in a real browser (headless Debian chromium, the real
AugReg ViT-Ti, skimage's 600×400 coffee photo): switching from the checkpoint's own pipeline to "squash" in English
and in Chinese, on a desktop (1400×900) and a phone (390×844), the outline of what the model saw covers the whole
photo, the note says it was stretched, the summary says "squashed" and the top-5 becomes the library's for a
squash. Screenshots go to tests/artifacts/ for people to look at."""
from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image
from playwright.sync_api import Page
from skimage import data

import vit
from browser_setup import ARTIFACTS, TIMEOUT_MS, TOP1, app_in_browser
from viz.analysis.capture import analyze
from viz.i18n import t

pytestmark = pytest.mark.slow

AUGREG = "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors"
DESKTOP = {"width": 1400, "height": 900}
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def coffee() -> Image.Image:
    return Image.fromarray(data.coffee())


@pytest.fixture(scope="module")
def server(real_weights_dir, tmp_path_factory, coffee):
    folder = tmp_path_factory.mktemp("browser_preprocess")
    coffee.save(folder / "coffee.png")
    with app_in_browser(str(real_weights_dir / AUGREG)) as (url, browser):
        yield {"url": url, "browser": browser, "photo": folder / "coffee.png"}


@pytest.fixture(scope="module")
def library_top5(real_weights_dir, coffee) -> dict[str, list[str]]:
    """The classes the library gives for each mode (own: 248 -> 224 crop; squash: the whole photo at 224×224)."""
    loaded = vit.load(real_weights_dir / AUGREG)
    return {mode: [label for label, _ in analyze(loaded.with_preprocess(mode), coffee).top_k(5)]
            for mode in ("own", "squash")}


def _classes(page: Page) -> list[str]:
    """The top-5 classes as listed under the top-1 (names only, in order)."""
    return [row.inner_text().strip() for row in page.locator("#top5 dl.label dt").all()]


def _crop_picture(page: Page) -> np.ndarray:
    src = page.locator("#crop-image img").first.get_attribute("src")
    response = page.request.get(src)
    assert response.ok, (src, response.status)
    return np.asarray(Image.open(io.BytesIO(response.body())).convert("RGB")).astype(int)


def _shot(page: Page, name: str, viewport: str) -> None:
    """The whole page on a desktop; on a phone the screen that ends with what the model saw and its note."""
    if viewport == "phone":
        page.locator("#crop-note").scroll_into_view_if_needed()
        page.wait_for_function("() => { const img = document.querySelector('#crop-image img');"
                               " return img !== null && img.complete && img.naturalWidth > 0; }")
    page.screenshot(path=str(ARTIFACTS / name), full_page=viewport == "desktop")


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_switching_to_squash_shows_the_whole_photo_stretched_and_the_squash_top5(server, library_top5, coffee,
                                                                                  locale, viewport):
    lang = "zh-CN" if locale == "zh-CN" else "en"
    context = server["browser"].new_context(locale=locale, viewport=DESKTOP if viewport == "desktop" else PHONE)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    try:
        page.goto(server["url"])
        page.locator("#photo-input input[type=file]").set_input_files(str(server["photo"]))
        page.wait_for_selector(TOP1)
        page.wait_for_function("note => document.querySelector('#crop-note').innerText.trim() === note",
                               arg=t("note.crop", lang, crop="224×224"))
        assert _classes(page) == library_top5["own"]
        assert t("summary.crop", lang) in page.locator("#summary").inner_text()
        own = _crop_picture(page)
        control = page.locator("#preprocess")
        assert control.get_by_text(t("control.preprocess", lang), exact=True).count() == 1
        assert control.get_by_text(t("help.preprocess", lang), exact=True).count() == 1
        _shot(page, f"preprocess-own-{lang}-{viewport}.png", viewport)

        control.get_by_text(t("choice.squash", lang), exact=True).click()
        page.wait_for_function("note => document.querySelector('#crop-note').innerText.trim() === note",
                               arg=t("note.stretched", lang, crop="224×224"))
        page.wait_for_function("word => document.querySelector('#summary').innerText.includes(word)",
                               arg=t("summary.squashed", lang))
        page.wait_for_function("([first, fifth]) => { const rows = [...document.querySelectorAll('#top5 dl.label dt')];"
                               " return rows.length === 5 && rows[0].innerText.trim() === first"
                               " && rows[4].innerText.trim() === fifth; }",
                               arg=[library_top5["squash"][0], library_top5["squash"][4]])
        assert _classes(page) == library_top5["squash"] != library_top5["own"]
        squash = _crop_picture(page)
        assert squash.shape == own.shape
        photo = np.asarray(coffee.resize(own.shape[1::-1], Image.Resampling.BICUBIC)).astype(int)
        edge = (slice(20, -20), slice(8, 30))           # left of the own crop: dimmed there, seen with squash
        assert own[edge].mean() < 0.5 * photo[edge].mean()
        assert np.abs(squash[edge] - photo[edge]).mean() < 12   # the photo itself, up to the served file's compression
        _shot(page, f"preprocess-squash-{lang}-{viewport}.png", viewport)
        if viewport == "phone":                         # nothing wider than the phone
            assert page.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"] + 1
    finally:
        context.close()
