"""A Swin on the page as a person uses it, in a real browser (headless Debian chromium through pip playwright, the
app served on 127.0.0.1 with a small random Swin, perturbed): the cat analysed, then every tab opened in turn, on a
desktop in English and on a 390 px phone in Chinese. The map tabs draw their pictures with the Swin's notes, a click
on the photo redraws the patch query, a click on a thumbnail of the heads grid selects that layer and head, the Model
and Learn tabs show its stages (the walk's step controls hidden: a Swin's walk is one page), Features and Inside say
why they need one sequence of tokens, Explain draws GAE through the windows, Trust states its pixel protocols; the phone needs no
sideways scrolling. Screenshots go to tests/artifacts/ (git-ignored)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import vit
from PIL import Image
from playwright.sync_api import Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from browser_setup import ARTIFACTS, TIMEOUT_MS, TOP1, app_in_browser, open_tab
from swin_references import small_swin
from viz.analysis import analyze
from viz.i18n import t
from viz.panels import query_label
from viz.panels.select import window_note
from viz.controls import AnalysisKey, Controls, Session
from viz.heads.view import heads_view

pytestmark = pytest.mark.slow   # a served app and a browser: about a minute

REPO = Path(__file__).resolve().parents[2]
DESKTOP = {"width": 1400, "height": 900}
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    path = vit.save_checkpoint(tmp_path_factory.mktemp("swin") / "small_swin.pt", small_swin(1), list("abcd"),
                               vit.Preprocess.for_crop(32), extra={"name": "small swin"})
    with app_in_browser(str(path)) as (url, browser):
        yield {"url": url, "browser": browser, "weights": str(path)}


def _thumbnail_centre(server, lang: str, narrow: bool, layer: int, head: int) -> tuple[float, float, int]:
    """(x, y) in pixels of the heads grid picture of the centre of (layer, head)'s thumbnail, and the picture's width:
    the grid's geometry does not depend on the photo's values, only on the model, the language and the screen."""
    a = analyze(vit.load(server["weights"]), Image.open(REPO / "examples" / "chelsea.jpg").convert("RGB"))
    s, image, _ = heads_view(Session(AnalysisKey("", "")), a, Controls(narrow=narrow), lang)
    x0, y0, x1, y1 = s.heads_layout.box(layer, head)
    return (x0 + x1) / 2, (y0 + y1) / 2, image.width


def _layer_note(server, lang: str, layer: int) -> str:
    """What the Attention tab says of ``layer``'s tokens and windows (its stage, grid, token size and windows)."""
    a = analyze(vit.load(server["weights"]), Image.open(REPO / "examples" / "chelsea.jpg").convert("RGB"))
    note = window_note(a, layer, lang)
    assert note is not None and a.architecture.block(layer).window is not None, note
    return note


def _open(page: Page, tab: str, lang: str) -> None:
    open_tab(page, tab, lang)


def _text(page: Page, elem_id: str, expected: str) -> None:
    """Wait until the element ``elem_id`` says ``expected``; the failure shows what it said instead."""
    try:
        page.wait_for_function("([id, text]) => { const e = document.querySelector('#' + id);"
                               " return e !== null && e.innerText.includes(text); }", arg=[elem_id, expected])
    except PlaywrightTimeout:
        shown = page.evaluate("id => document.querySelector('#' + id)?.innerText ?? null", elem_id)
        raise AssertionError(f"#{elem_id} never said {expected!r}; it says {shown!r}") from None


def _tour(server, locale: str, viewport: dict, shots: str) -> None:
    lang = "zh-CN" if locale == "zh-CN" else "en"
    page = server["browser"].new_context(locale=locale, viewport=viewport).new_page()
    page.set_default_timeout(TIMEOUT_MS)
    try:
        page.goto(server["url"])
        page.locator("#photo-input input[type=file]").set_input_files(str(REPO / "examples" / "chelsea.jpg"))
        page.wait_for_selector(TOP1)
        page.locator("#rollout-image img").first.wait_for()
        _text(page, "rollout-note", t("note.rollout_through", lang, query=query_label("mean", lang))[:12])
        page.screenshot(path=str(ARTIFACTS / f"swin-{shots}-rollout.png"), full_page=True)
        _open(page, "attention", lang)
        page.locator("#attention-image img").first.wait_for()
        _open(page, "heads", lang)
        page.locator("#heads-image img").first.wait_for()
        x, y, natural = _thumbnail_centre(server, lang, viewport is PHONE, 4, 1)
        shown = page.locator("#heads-image img").first
        scale = shown.bounding_box()["width"] / natural
        shown.click(position={"x": x * scale, "y": y * scale})
        said = t("note.head_info", lang, layer=4, head=1, distance=0, entropy=0, share=0, maximum=0)
        said = re.split("[:：]", said)[0]                # the text before the numbers, in either language's colon
        _text(page, "heads-info", said)
        _open(page, "attention", lang)
        _text(page, "attention-note", _layer_note(server, lang, 4))
        _open(page, "heads", lang)
        page.screenshot(path=str(ARTIFACTS / f"swin-{shots}-heads.png"), full_page=True)
        _open(page, "query", lang)
        before = page.locator("#query-out img").first.get_attribute("src")
        page.locator("#query-photo img").first.click(position={"x": 4, "y": 4})
        page.wait_for_function("old => { const i = document.querySelector('#query-out img');"
                               " return i !== null && i.src !== old; }", arg=before)
        _text(page, "query-note", "(0, 0)")
        page.screenshot(path=str(ARTIFACTS / f"swin-{shots}-query.png"), full_page=True)
        _open(page, "model", lang)
        _text(page, "architecture", "Swin v1")
        _open(page, "learn", lang)
        _text(page, "learn-text", t("learn.stages", lang)[:10])
        _text(page, "learn-table", t("swin.arch.merge", lang))
        for hidden in ("learn-about", "learn-steps", "learn-step", "learn-layer"):   # nothing to move on its one page
            assert page.locator(f"#{hidden}").is_hidden(), hidden
        page.screenshot(path=str(ARTIFACTS / f"swin-{shots}-learn.png"), full_page=True)
        _open(page, "features", lang)
        _text(page, "features-pca-note", t("one_sequence.features", lang)[:20])
        _open(page, "inside", lang)
        _text(page, "inside-line", t("one_sequence.inside", lang)[:20])
        _open(page, "explain", lang)
        page.locator("#explain-image img").first.wait_for()
        _text(page, "explain-line", "GAE")
        page.screenshot(path=str(ARTIFACTS / f"swin-{shots}-explain.png"), full_page=True)
        _open(page, "trust", lang)
        _text(page, "trust-cost", t("trust.pixels_only", lang)[:20])
        assert page.evaluate("() => document.documentElement.scrollWidth") <= viewport["width"] + 1
    finally:
        page.context.close()


def test_a_swin_on_a_desktop_in_english(server):
    _tour(server, "en-US", DESKTOP, "en-desktop")


def test_a_swin_on_a_phone_in_chinese(server):
    _tour(server, "zh-CN", PHONE, "zh-phone")
