"""Protects the Trust tab's thorough check as a student uses it, in a real browser (Debian chromium, pip
playwright, the AugReg ViT-Ti on scikit-image's cat, served on 127.0.0.1): the cost of fast and thorough is on the
page before anything runs; choosing thorough runs the four ways of removing patches with a progress bar that
names the one running; every method gets its verdict in words, the gains under each way and the protocols'
agreement; the AUC tables open below; the Chinese page says the same in Chinese. Screenshots on a desktop
(1400×900) and a 390 px phone, in both languages, are kept in tests/artifacts/ for people to look at.
"""
from __future__ import annotations


import pytest
from playwright.sync_api import Page

from browser_setup import ARTIFACTS, TIMEOUT_MS, TOP1, app_in_browser, open_tab
from viz.i18n import t

DESKTOP = {"width": 1400, "height": 900}
PHONE = {"width": 390, "height": 844}
LOCALES = {"en": "en-US", "zh-CN": "zh-CN"}
pytestmark = pytest.mark.slow      # a thorough check of 8 methods on a CPU: about a minute


@pytest.fixture(scope="module")
def server(real_weights_dir, tmp_path_factory, cat):
    folder = tmp_path_factory.mktemp("trust_browser")
    cat.save(folder / "cat.jpg", quality=95)
    with app_in_browser(str(real_weights_dir / "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors")) as (url, browser):
        yield {"url": url, "browser": browser, "photo": folder / "cat.jpg"}


def _trust_tab(server, lang: str, viewport: dict) -> Page:
    """A new visitor in ``lang`` who uploads the cat and opens the Trust tab."""
    page = server["browser"].new_context(locale=LOCALES[lang], viewport=viewport).new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(server["url"])
    page.locator("#photo-input input[type=file]").set_input_files(str(server["photo"]))
    page.wait_for_selector(TOP1)
    open_tab(page, "trust", lang)
    return page


def _thorough(page: Page, lang: str, progress: list[str] | None = None) -> str:
    """Choose thorough, run it, return the verdicts' text once the figure is drawn."""
    page.get_by_label(t("choice.trust_thorough", lang), exact=True).check()
    page.locator("#trust-button").click()
    if progress is not None:    # the progress bar names the way of removing patches that runs now
        road = f"{t('trust.progress', lang)} · ROAD"
        page.wait_for_function("text => document.body.innerText.includes(text)", arg=road, timeout=5 * TIMEOUT_MS)
        progress.append(road)
    agreement = t("trust.agreement", lang, n=4, pairs="", mean="").split("?")[0].split("？")[0].strip("* ")
    page.wait_for_function("text => document.querySelector('#trust-table').innerText.includes(text)",
                           arg=agreement, timeout=5 * TIMEOUT_MS)
    page.wait_for_function("() => { const img = document.querySelector('#trust-image img');"
                           " return img !== null && img.complete && img.naturalWidth > 0; }")
    return page.locator("#trust-table").inner_text()


def _shot(page: Page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


def test_the_thorough_check_in_english_on_a_desktop_and_a_phone(server):
    desktop = _trust_tab(server, "en", DESKTOP)
    try:
        cost = desktop.locator("#trust-cost").inner_text()
        assert "fast about" in cost and "thorough about" in cost and "ROAD" in cost   # the price before the choice
        progress: list[str] = []
        text = _thorough(desktop, "en", progress)
        assert progress, "no progress naming ROAD was shown while the thorough check ran"
        assert "thorough" in text and "all 4 ways of removing patches" in text
        names = tuple(f"{t(f'method.{m}', 'en')}:" for m in ("gae", "rollout", "attnlrp", "gradcam"))
        verdicts = [line for line in text.splitlines() if line.startswith(names)]   # each method named for people
        assert len(verdicts) == 4 and all(("✓" in v) or ("?" in v) or ("≈" in v) or ("✗" in v) for v in verdicts)
        assert "Kendall τ" in text and "tokens–ROAD" in text
        header = [c.inner_text().strip() for c in desktop.locator("#trust-table thead th").all()]
        assert header[1:5] == ["tokens", "mean colour", "blur", "ROAD"]
        desktop.locator("#trust-more").get_by_text(t("label.trust_aucs", "en")).click()   # the AUC tables open
        desktop.wait_for_function("() => document.querySelector('#trust-aucs')?.innerText.includes('deletion AUC')")
        assert "±" in desktop.locator("#trust-aucs").inner_text()
        _shot(desktop, "trust-thorough-en-desktop.png")
    finally:
        desktop.context.close()
    phone = _trust_tab(server, "en", PHONE)     # the same photo, model and class: served from the cache
    try:
        _thorough(phone, "en")
        _shot(phone, "trust-thorough-en-phone.png")
    finally:
        phone.context.close()


def test_the_thorough_check_speaks_chinese_on_a_phone_and_a_desktop(server):
    for viewport, name in ((PHONE, "phone"), (DESKTOP, "desktop")):
        page = _trust_tab(server, "zh-CN", viewport)
        try:
            assert "快速约" in page.locator("#trust-cost").inner_text()
            text = _thorough(page, "zh-CN")
            assert "全面" in text and "肯德尔 τ" in text and "词元–ROAD" in text
            assert "在这张照片上可信" in text or "取决于图块如何移除" in text
            _shot(page, f"trust-thorough-zh-{name}.png")
        finally:
            page.context.close()
