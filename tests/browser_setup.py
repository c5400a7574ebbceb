"""How the browser tests drive a browser: Debian's chromium (never a downloaded one) headless through pip
playwright, how long a page may take, where screenshots go (tests/artifacts, git-ignored) and the top-1 class."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
TIMEOUT_MS = 90_000
TOP1 = "#top5 [data-testid=label-output-value]"


def require_chromium() -> None:
    """Fail (never skip, never download) when Debian's chromium is missing."""
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium); "
                    f"the test never downloads a browser.", pytrace=False)


@contextmanager
def app_in_browser(weights: str):
    """``python app.py --weights weights`` in a child process (app_server.running_app) and chromium launched
    headless: yields (url, browser); screenshots go to ARTIFACTS."""
    from app_server import running_app
    from playwright.sync_api import sync_playwright

    require_chromium()
    ARTIFACTS.mkdir(exist_ok=True)
    with running_app(weights) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield url, browser
        finally:
            browser.close()


def open_tab(page, tab: str, lang: str = "en") -> None:
    """Open one of the page's tabs as a visitor does: its section (``vit_explorer.tabs.SECTIONS``), then the tab."""
    from vit_explorer.tabs import TABS
    from viz.i18n import t

    section = next(entry.section for entry in TABS if entry.id == tab)
    page.get_by_role("tab", name=t(f"section.{section}", lang), exact=True).click()
    page.get_by_role("tab", name=t(f"tab.{tab}", lang), exact=True).click()


def tab_names(page, lang: str = "en") -> list[str]:
    """The names on the page's tab buttons, section by section (each section opened in turn), in the page's order;
    the first section is open again afterwards."""
    from vit_explorer.tabs import SECTIONS
    from viz.i18n import t

    names = []
    for section in SECTIONS:
        page.get_by_role("tab", name=t(f"section.{section}", lang), exact=True).click()
        buttons = page.locator(f"#tabs-{section} button[role=tab]")
        buttons.first.wait_for()
        names += [b.inner_text().strip() for b in buttons.all() if b.is_visible()]
    page.get_by_role("tab", name=t(f"section.{SECTIONS[0]}", lang), exact=True).click()
    return names


def tab_buttons(page):
    """Every section and tab button of the page that is visible now (the open section's tabs)."""
    return [b for b in page.locator("#sections button[role=tab]").all() if b.is_visible()]
