"""Which scripts this machine can draw: the pictures' Chinese texts need a CJK font, found among the usual families of
Linux, macOS and Windows (``CJK_FAMILIES``) through matplotlib's font manager; with none, pictures are drawn in
English (``picture_language``: ``viz.i18n.t`` gives a picture's text in that language, never tofu) and the page and
the console say once which font to install (``missing_font_message``). The font objects the drawing uses are
``viz.drawing.fonts``'.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from matplotlib import font_manager

from .languages import language

CJK_FAMILIES = (   # in order of preference: Linux, then macOS, then Windows
    "Noto Sans CJK SC", "Source Han Sans SC", "Noto Sans SC", "WenQuanYi Zen Hei", "WenQuanYi Micro Hei",
    "Droid Sans Fallback",
    "PingFang SC", "Hiragino Sans GB", "Heiti SC", "STHeiti", "Songti SC", "Arial Unicode MS",
    "Microsoft YaHei", "DengXian", "SimHei", "SimSun")


CJK_FILE_HINTS = ("cjk", "sourcehan", "wqy", "droidsansfallback", "pingfang", "hiragino", "stheiti", "songti",
                  "arial unicode", "msyh", "deng", "simhei", "simsun")  # file names worth adding to matplotlib's list


INSTALL_HINT = ("Noto Sans CJK SC (Debian/Ubuntu: sudo apt-get install fonts-noto-cjk; macOS and Windows "
                "ship PingFang SC and Microsoft YaHei)")


_WEIGHTS = (400, "normal", "regular", "book", "medium", 500)


@dataclass(frozen=True)
class FontFace:
    """One face of a font file: ``index`` picks it inside a .ttc collection (Pillow's ``index``)."""
    path: str
    index: int
    family: str


def _regular_face(entries) -> FontFace | None:
    found = {}
    for e in entries:
        if e.name in CJK_FAMILIES and e.style == "normal" and e.weight in _WEIGHTS:
            found.setdefault(e.name, FontFace(str(e.fname), int(getattr(e, "index", 0)), e.name))
    return next((found[name] for name in CJK_FAMILIES if name in found), None)


_SEARCH = threading.Lock()


@lru_cache(maxsize=1)
def cjk_font() -> FontFace | None:
    """The regular face of the first installed font of ``CJK_FAMILIES`` as matplotlib's font manager lists it,
    or None when this machine has none.

    matplotlib caches its list of system fonts; a font installed after that cache was written is added
    here from the system font folders (only files whose names hint at a CJK font)."""
    with _SEARCH:
        face = _regular_face(font_manager.fontManager.ttflist)
        if face is None:
            for path in font_manager.findSystemFonts():
                if any(hint in Path(path).name.lower() for hint in CJK_FILE_HINTS):
                    try:
                        font_manager.fontManager.addfont(path)
                    except (OSError, RuntimeError, ValueError):   # a broken file: skip it, keep looking
                        continue
            face = _regular_face(font_manager.fontManager.ttflist)
        return face


def can_draw_chinese() -> bool:
    """Whether pictures can be drawn with Chinese texts on this machine (a CJK font was found)."""
    return cjk_font() is not None


def picture_language(lang: str | None) -> str:
    """The language a picture for ``lang`` is drawn in: ``lang`` itself, or English when it is Chinese and no
    CJK font is installed (English labels rather than rows of missing-glyph boxes)."""
    lang = language(lang)
    return lang if lang == "en" or can_draw_chinese() else "en"


def missing_font_message() -> str | None:
    """One line for the console when Chinese pictures will have English labels; None when a CJK font is found."""
    if can_draw_chinese():
        return None
    return (f"No Chinese font found (looked for {', '.join(CJK_FAMILIES[:3])}, ...): pictures for Chinese "
            f"visitors get English labels. Install {INSTALL_HINT} to draw them in Chinese.")
