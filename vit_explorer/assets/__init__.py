"""The page's CSS and JavaScript, kept as files beside this module and read once at start-up:

- ``page.css``: the page's styles (passed to Gradio's ``launch``);
- ``set_locale.js``: the language switch's step in the browser (the event's ``js``).
"""
from __future__ import annotations

from pathlib import Path

FOLDER = Path(__file__).resolve().parent
CSS = (FOLDER / "page.css").read_text(encoding="utf-8")
SET_LOCALE_JS = (FOLDER / "set_locale.js").read_text(encoding="utf-8")
