"""Protects the Video tab as a visitor uses it, in chromium, in English and Chinese, on a desktop and a 390 px phone:
the toy video model (trained on the moving squares, offered from the weights folder) chosen, a clip uploaded, the
analysis shows the chosen frame with its rollout, the summary in the page's language and a frame slider over the 8
sampled frames; the clip's top-1 class offered for a class map, whose Grad-CAM per frame draws the strip and the
chosen frame, then checked: its deletion and insertion curves over the tubelets and the note with its verdict; moving
the slider draws another frame of both; nothing is wider than the phone. And a visitor with no clip
and no weights: an example clip pressed, the step views shown, a patch of the chosen frame clicked, another step
chosen, in both languages on a desktop and on the phone (screenshots in tests/artifacts/)."""
from __future__ import annotations

from contextlib import contextmanager

import pytest

from browser_setup import ARTIFACTS, TIMEOUT_MS, app_in_browser, open_tab
from video_clips import moving_squares_toy
from viz.i18n import t

pytestmark = pytest.mark.slow   # a toy trained, a served app and a browser

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def server(real_weights_dir, tmp_path_factory):
    weights, data = moving_squares_toy(tmp_path_factory.mktemp("squares"))
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("VIT_WEIGHTS_DIR", str(weights.parent))          # the toy is offered in the Model lists
    try:
        with app_in_browser(str(real_weights_dir / "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors")) as (
                url, browser):
            yield {"url": url, "browser": browser, "clip": data / "left" / "0000.mp4", "model": weights.name}
    finally:
        monkeypatch.undo()


@contextmanager
def video_tab(server, locale: str, viewport: dict):
    """A visitor's browser tab in ``locale`` at ``viewport``, on the page's Video tab: yields (page, its language)."""
    lang = "zh-CN" if locale == "zh-CN" else "en"
    context = server["browser"].new_context(locale=locale, viewport=viewport)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    try:
        page.goto(server["url"])
        page.locator("#photo-input").wait_for()
        open_tab(page, "video", lang)
        yield page, lang
    finally:
        context.close()


def shown(page, picture: str) -> None:
    """Wait for the picture's image: scrolled to first (the page's pictures load lazily, off screen never)."""
    page.locator(f"{picture} img").wait_for(state="attached")
    page.locator(picture).scroll_into_view_if_needed()
    page.locator(f"{picture} img").wait_for()


@pytest.mark.parametrize("locale, viewport", [("en-US", DESKTOP), ("zh-CN", PHONE), ("en-US", PHONE),
                                              ("zh-CN", DESKTOP)])
def test_a_visitor_analyses_a_clip_and_moves_through_its_frames(server, locale, viewport):
    with video_tab(server, locale, viewport) as (page, lang):
        box = page.locator("#video-model input")
        box.click()
        box.fill(server["model"])
        box.press("Enter")
        page.locator("#video-file input[type=file]").set_input_files(str(server["clip"]))
        page.locator("#video-button").click()
        page.locator("#video-picture img").wait_for()
        summary = t("video.summary", lang, frames=8, total=8, seconds=1.0, top="").split("：" if lang != "en" else ":")[0]
        page.wait_for_function("line => document.querySelector('#video-note').innerText.includes(line)", arg=summary)
        page.wait_for_function("() => document.querySelector('#video-class input').value !== ''")
        page.locator("#video-classmap-button").click()
        shown(page, "#video-classmap-strip")
        shown(page, "#video-classmap-frame")
        title = t("video.method.gradcam", lang)
        page.wait_for_function("line => document.querySelector('#video-classmap-note').innerText.includes(line)",
                               arg=title)
        page.locator("#video-check-button").click()
        shown(page, "#video-check-picture")
        page.wait_for_function("line => document.querySelector('#video-check-note').innerText.includes(line)",
                               arg=f"{title}{'：' if lang != 'en' else ':'}")
        checked = page.locator("#video-check-picture img").bounding_box()
        assert checked["width"] <= viewport["width"], checked
        first = page.locator("#video-picture img").get_attribute("src")
        explained = page.locator("#video-classmap-frame img").get_attribute("src")
        slider = page.locator("#video-frame input[type=range]")
        assert slider.get_attribute("max") == "7"
        slider.fill("5")
        page.wait_for_function("src => document.querySelector('#video-picture img').getAttribute('src') !== src",
                               arg=first)
        page.wait_for_function("src => document.querySelector('#video-classmap-frame img').getAttribute('src') !== "
                               "src", arg=explained)
        shown(page, "#video-strip")
        shown(page, "#video-distance")
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= viewport["width"] + 1, width
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"video-{lang}-{viewport['width']}.png"), full_page=True)
        page.locator("#video-classmap-about").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / f"video-classmap-{lang}-{viewport['width']}.png"))
        page.locator("#video-check-about").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / f"video-check-{lang}-{viewport['width']}.png"))
        page.locator("#video-check-picture").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / f"video-check-picture-{lang}-{viewport['width']}.png"))


@pytest.mark.parametrize("locale, viewport", [("en-US", DESKTOP), ("zh-CN", DESKTOP), ("en-US", PHONE),
                                              ("zh-CN", PHONE)])
def test_a_visitor_presses_an_example_and_clicks_a_patch(server, locale, viewport):
    """No clip and no weights of one's own: one press on an example clip (the bundled moving-squares toy on a square
    moving right) gives the analysis and one step's views; a click on the chosen frame gives that patch's row and
    column over every frame, captioned in the page's language; another step redraws them."""
    with video_tab(server, locale, viewport) as (page, lang):
        page.locator("#video-examples button:has-text('→ 1')").click()
        shown(page, "#video-readout")
        shown(page, "#video-heads")
        summary = t("video.summary", lang, frames=8, total=8, seconds=1.0, top="right")
        page.wait_for_function("line => document.querySelector('#video-note').innerText.includes(line)", arg=summary)
        joint = t("video.step_joint", lang, step=2, last=2, head=t("video.mean_of_heads", lang))
        page.wait_for_function("line => document.querySelector('#video-attention-note').innerText.includes(line)",
                               arg=joint)
        picture = page.locator("#video-picture img")
        picture.scroll_into_view_if_needed()
        box = picture.bounding_box()
        top = 20 / 468 * box["height"]                                    # the caption line above the frame
        page.mouse.click(box["x"] + 0.6 * box["width"], box["y"] + top + 0.4 * (box["height"] - top))
        shown(page, "#video-patch-row")
        shown(page, "#video-patch-column")
        clicked = t("video.patch_note", lang, row=1, col=2, index=0, tau=0)
        page.wait_for_function("line => document.querySelector('#video-attention-note').innerText.includes(line)",
                               arg=clicked)
        row = page.locator("#video-patch-row img").get_attribute("src")
        page.locator("#video-step input[type=range]").fill("1")
        page.wait_for_function("src => document.querySelector('#video-patch-row img').getAttribute('src') !== src",
                               arg=row)
        again = t("video.step_joint", lang, step=1, last=2, head=t("video.mean_of_heads", lang))
        page.wait_for_function("line => document.querySelector('#video-attention-note').innerText.includes(line)",
                               arg=again)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= viewport["width"] + 1, width
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"video-attention-{lang}-{viewport['width']}.png"), full_page=True)
