"""Protects the Inside tab as a person uses it, in a real browser (headless Debian chromium through pip playwright,
the app served on 127.0.0.1 with the real AugReg ViT-Ti): on a desktop in English and on a 390 px phone in Chinese,
"Look inside" draws the lens, DLA and head importance with their lines in the page's language; a click on a head of
the DLA table shows what that head moved; a click on the head-importance table picks the head and "Remove them"
shows the new top-5 beside the old; a second photo's upload draws the patching; the phone needs no sideways
scrolling. Screenshots go to tests/artifacts/ (git-ignored) for people to look at."""
from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page

from browser_setup import ARTIFACTS, TIMEOUT_MS, TOP1, app_in_browser, open_tab
from viz.i18n import t
from viz.inside import views
from vit_explorer import state  # after app_server: it gives the process its own GRADIO_TEMP_DIR first

pytestmark = pytest.mark.slow   # a served app, a browser and the inside views of a real model: about a minute

REPO = Path(__file__).resolve().parents[2]
DESKTOP = {"width": 1400, "height": 900}
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def server(real_weights_dir):
    folder = REPO / "examples"          # the photos docs/inside.md works through: its screenshot shows its numbers
    with app_in_browser(str(real_weights_dir / "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors")) as (url, browser):
        yield {"url": url, "browser": browser, "folder": folder}


def _open_inside(server, locale: str, viewport: dict) -> Page:
    """The page with the cat analysed, the Inside tab open and looked inside (its lines drawn)."""
    lang = "zh-CN" if locale == "zh-CN" else "en"
    page = server["browser"].new_context(locale=locale, viewport=viewport).new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(server["url"])
    page.locator("#photo-input input[type=file]").set_input_files(str(server["folder"] / "chelsea.jpg"))
    page.wait_for_selector(TOP1)
    open_tab(page, "inside", lang)
    page.locator("#inside-button").click()
    page.wait_for_function("() => document.querySelector('#inside-heads-line').innerText.trim().length > 0")
    for name in ("inside-lens", "inside-patch-lens", "inside-dla", "inside-sources", "inside-heads"):
        page.locator(f"#{name} img").first.wait_for()
    return page


def _src(page: Page, elem_id: str) -> str | None:
    img = page.locator(f"#{elem_id} img").first
    return img.get_attribute("src") if img.count() else None


def _click_cell(page: Page, elem_id: str, cells, row: float, column: int, box: int = 0) -> None:
    """Click the centre of a table's cell: its picture pixel (from the server's ``Cells``) scaled to the picture as
    the browser shows it."""
    (left, top, right, bottom), (x0, x1, y0, y1) = cells.boxes[box], cells.limits[box]
    x = left + (column - x0) / (x1 - x0) * (right - left)
    y = top + (row - y1) / (y0 - y1) * (bottom - top)
    img = page.locator(f"#{elem_id} img").first
    scale = img.bounding_box()["width"] / img.evaluate("i => i.naturalWidth")
    img.click(position={"x": x * scale, "y": y * scale})


def _report():
    """The views' report the server cached for the cat (one photo, one model, its top-1)."""
    key = [k for k in state.INSIDE.keys() if k[0] == "views"][-1]
    return state.INSIDE.get(key)


def _no_sideways_scrolling(page: Page) -> None:
    assert page.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"] + 1


def _clicks_and_removal(page: Page, lang: str, narrow: bool = False) -> None:
    """A head of the DLA table shows its sources; a head of the importance table is picked and removed (the tables
    as drawn for the page's screen: ``narrow`` on a phone)."""
    report = _report()
    layer, head = views.default_head(report)
    other = (layer, (head + 1) % report.dla.heads.shape[1])
    before = _src(page, "inside-sources")
    _click_cell(page, "inside-dla", views.dla_view(report, (layer, head), lang, narrow).cells, *other)
    page.wait_for_function("old => { const i = document.querySelector('#inside-sources img');"
                           " return i !== null && i.src !== old; }", arg=before)
    delta = report.heads.delta
    costly = divmod(int(delta.argmin()), delta.shape[1])
    _click_cell(page, "inside-heads", views.heads_view(report, (), lang, narrow).cells, *costly)
    name = f"{costly[0]}.{costly[1]}"
    page.wait_for_function("name => document.querySelector('#inside-ablate').innerText.includes(name)", arg=name)
    page.locator("#inside-ablate-button").click()
    page.wait_for_function("name => document.querySelector('#inside-ablation').innerText.includes(name)", arg=name)
    assert page.locator("#inside-ablation table tbody tr").count() == 5


def test_inside_on_a_desktop_in_english(server):
    page = _open_inside(server, "en-US", DESKTOP)
    try:
        assert "ranks" in page.locator("#inside-lens-line").inner_text()
        assert "logit" in page.locator("#inside-dla-line").inner_text()
        _clicks_and_removal(page, "en")
        page.locator("#inside-other input[type=file]").set_input_files(str(server["folder"] / "coffee.jpg"))
        page.wait_for_function("() => document.querySelector('#inside-patch-line').innerText.includes('coffee')")
        page.locator("#inside-patch img").first.wait_for()
        page.locator("#inside-button").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "inside-en-desktop.png"), full_page=True)
    finally:
        page.context.close()


def test_inside_on_a_phone_in_chinese(server):
    page = _open_inside(server, "zh-CN", PHONE)
    try:
        assert "读出" in page.locator("#inside-lens-line").inner_text()
        assert t("picture.inside_dla", "zh-CN") in page.locator("#inside-dla").inner_text()
        _no_sideways_scrolling(page)
        lens = page.locator("#inside-lens img").first.bounding_box()
        assert lens["x"] >= 0 and lens["x"] + lens["width"] <= PHONE["width"] + 1          # the strip fits the screen
        _clicks_and_removal(page, "zh-CN", narrow=True)
        _no_sideways_scrolling(page)
        page.screenshot(path=str(ARTIFACTS / "inside-zh-phone.png"), full_page=True)
    finally:
        page.context.close()


@pytest.mark.parametrize("locale, viewport, name", [("zh-CN", DESKTOP, "inside-zh-desktop.png"),
                                                    ("en-US", PHONE, "inside-en-phone.png")])
def test_inside_in_the_other_language_and_size(server, locale, viewport, name):
    page = _open_inside(server, locale, viewport)      # the views from the cache: no model runs again
    try:
        lang = "zh-CN" if locale == "zh-CN" else "en"
        line = t("inside.line.target", lang, target=_report().target["name"]).replace("**", "")
        assert page.locator("#inside-line").inner_text().strip() == line
        if viewport is PHONE:
            _no_sideways_scrolling(page)
        page.screenshot(path=str(ARTIFACTS / name), full_page=True)
    finally:
        page.context.close()
