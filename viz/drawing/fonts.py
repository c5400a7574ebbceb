"""Fonts for the pictures' texts: English keeps the fonts it always had, Chinese gets an installed CJK font.

Pillow's bundled font and matplotlib's DejaVu Sans have no Chinese glyphs: drawn with them, Chinese text
becomes a row of identical missing-glyph boxes ("tofu"). Chinese texts are drawn with the first CJK font that
matplotlib's font manager can find among the usual families of Linux, macOS and Windows (``CJK_FAMILIES``), so
matplotlib Figures and Pillow drawings use the very same file and face (the SC face of a .ttc collection holds
the Simplified Chinese glyph forms). A Hugging Face Space installs Noto Sans CJK SC from ``packages.txt``.

With none of them installed, nothing fails: ``picture_language`` says pictures are drawn in English
(``viz.i18n.t`` then gives pictures their English texts, never tofu), and the page tells Chinese visitors once
which font to install. English pictures never look for a CJK font.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from matplotlib import font_manager
from matplotlib.figure import Figure
from matplotlib.text import Text
from PIL import ImageFont

from ..i18n import language

CJK_FAMILIES = (   # in order of preference: Linux, then macOS, then Windows
    "Noto Sans CJK SC", "Source Han Sans SC", "Noto Sans SC", "WenQuanYi Zen Hei", "WenQuanYi Micro Hei",
    "Droid Sans Fallback",
    "PingFang SC", "Hiragino Sans GB", "Heiti SC", "STHeiti", "Songti SC", "Arial Unicode MS",
    "Microsoft YaHei", "DengXian", "SimHei", "SimSun")
CJK_FILE_HINTS = ("cjk", "sourcehan", "wqy", "droidsansfallback", "pingfang", "hiragino", "stheiti", "songti",
                  "arial unicode", "msyh", "deng", "simhei", "simsun")  # file names worth adding to matplotlib's list
LATIN_FAMILY = "DejaVu Sans"   # matplotlib's default: English figures keep exactly their old look
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


def pil_font(size: int = 12, lang: str = "en", text: str = "") -> ImageFont.FreeTypeFont:
    """The font Pillow draws a language's ``text`` with at ``size`` pixels: the CJK face for Chinese (it has
    Latin letters and digits too); for English, and for Chinese without a CJK font, Pillow's bundled font
    (what the pictures always used), or matplotlib's DejaVu Sans when ``text`` holds a character the bundled
    font lacks (it has no ×, →, –)."""
    if picture_language(lang) != "en":
        return _cjk_pil_font(size)
    if all(_bundled_font_has(ch) for ch in text):
        return _bundled_pil_font(size)
    return _latin_pil_font(size)


@lru_cache(maxsize=16)
def _bundled_pil_font(size: int) -> ImageFont.FreeTypeFont:
    return ImageFont.load_default(size=size)


@lru_cache(maxsize=16)
def _cjk_pil_font(size: int) -> ImageFont.FreeTypeFont:
    face = cjk_font()
    return ImageFont.truetype(face.path, size, index=face.index)


@lru_cache(maxsize=16)
def _latin_pil_font(size: int) -> ImageFont.FreeTypeFont:
    path = font_manager.findfont(font_manager.FontProperties(family=LATIN_FAMILY), fallback_to_default=False)
    return ImageFont.truetype(str(path), size)


def glyph_mask(font: ImageFont.FreeTypeFont, ch: str) -> tuple[tuple[int, int], bytes]:
    """The bitmap Pillow draws for one character (size and bytes), to compare glyphs."""
    mask = font.getmask(ch)
    return mask.size, bytes(mask)


MISSING_CHAR = "\U0010fffd"   # a private-use code point no font maps: it is drawn as the font's .notdef glyph


@lru_cache(maxsize=1024)
def _bundled_font_has(ch: str) -> bool:
    """Whether Pillow's bundled font has a glyph for ``ch`` (it is not drawn as the .notdef box)."""
    if ch.isspace():
        return True
    font = _bundled_pil_font(20)
    return glyph_mask(font, ch) != glyph_mask(font, MISSING_CHAR)


def figure_families(lang: str = "en") -> list[str] | None:
    """matplotlib font families for a language: None (the default) for English and for Chinese without a CJK
    font; DejaVu Sans with the CJK family as fallback for Chinese, so Latin letters and digits look as in the
    English figures."""
    if picture_language(lang) == "en":
        return None
    return [LATIN_FAMILY, cjk_font().family]


def use_language_font(fig: Figure, lang: str = "en") -> Figure:
    """Set the font of every text already in ``fig`` for ``lang`` (call it after all texts are added).

    Tick labels matplotlib creates later while drawing are numbers, which the default font draws."""
    families = figure_families(lang)
    if families is not None:
        for text in fig.findobj(Text):
            text.set_fontfamily(families)
    return fig
