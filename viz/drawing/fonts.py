"""Fonts for the pictures' texts: English keeps the fonts it always had, Chinese gets an installed CJK font (which one,
and whether there is one: ``viz.i18n.fonts``).

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

from functools import lru_cache

from matplotlib import font_manager
from matplotlib.figure import Figure
from matplotlib.text import Text
from PIL import ImageFont

from ..i18n.fonts import cjk_font, picture_language

LATIN_FAMILY = "DejaVu Sans"   # matplotlib's default: English figures keep exactly their old look


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
