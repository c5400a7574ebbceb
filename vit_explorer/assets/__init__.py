"""The page's CSS and JavaScript, kept as files beside this module and read once at start-up:

- ``page.css``: the page's styles (passed to Gradio's ``launch``);
- ``set_locale.js``: the language switch's step in the browser (the event's ``js``);
- ``NARROW_SCREEN_JS``: whether the browser is phone-sized, read once at load (pictures are drawn for it).
"""
from __future__ import annotations

from pathlib import Path

FOLDER = Path(__file__).resolve().parent
CSS = (FOLDER / "page.css").read_text(encoding="utf-8")
HEAD = f"<style>\n{(FOLDER / 'frame.css').read_text(encoding='utf-8')}</style>"
SET_LOCALE_JS = (FOLDER / "set_locale.js").read_text(encoding="utf-8")
NARROW_MAX = 640    # CSS pixels: a window at most this wide gets pictures drawn for a phone (as page.css's layout)
NARROW_SCREEN_JS = f"() => window.innerWidth <= {NARROW_MAX}"
