"""Hide every CJK font from matplotlib, as on a laptop or Docker image without one (import before drawing).

``hide()`` removes the CJK faces from matplotlib's font list and from what ``findSystemFonts`` reports, and
forgets the fonts ``viz.drawing.fonts`` found already; ``restore()`` undoes it. Run a program with the fonts
hidden: ``python -c "import hide_cjk_fonts; hide_cjk_fonts.hide(); ..."`` with tests/ on the path.
"""
from __future__ import annotations

from matplotlib import font_manager

CJK_NAMES = ("cjk", "han sans", "hei", "song", "wenquanyi", "wqy", "droid sans fallback", "pingfang", "hiragino",
             "arial unicode", "yahei", "dengxian", "simsun")
_saved: dict = {}


def is_cjk(name: str) -> bool:
    return any(part in name.lower() for part in CJK_NAMES)


def hide() -> None:
    manager = font_manager.fontManager
    _saved.setdefault("ttflist", list(manager.ttflist))
    _saved.setdefault("find", font_manager.findSystemFonts)
    manager.ttflist = [e for e in manager.ttflist if not is_cjk(e.name) and not is_cjk(e.fname)]
    font_manager.findSystemFonts = lambda *a, **kw: [p for p in _saved["find"](*a, **kw) if not is_cjk(p)]
    _forget()


def restore() -> None:
    if _saved:
        font_manager.fontManager.ttflist = _saved.pop("ttflist")
        font_manager.findSystemFonts = _saved.pop("find")
    _forget()


def _forget() -> None:
    from viz.drawing import fonts
    from viz.i18n.fonts import cjk_font
    cjk_font.cache_clear()
    fonts._cjk_pil_font.cache_clear()
