"""How the browser tests drive a browser: Debian's chromium (never a downloaded one) headless through pip
playwright, how long a page may take, where screenshots go (tests/artifacts, git-ignored) and the top-1 class."""
from __future__ import annotations

from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
TIMEOUT_MS = 90_000
TOP1 = "#top5 [data-testid=label-output-value]"
