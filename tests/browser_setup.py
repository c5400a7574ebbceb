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
