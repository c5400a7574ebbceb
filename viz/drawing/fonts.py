"""Fonts for the pictures' texts: English keeps the fonts it always had, Chinese gets a packaged CJK font.

Pillow's bundled font and matplotlib's DejaVu Sans have no Chinese glyphs: drawn with them, Chinese text
becomes a row of identical missing-glyph boxes ("tofu"). The CJK font is Noto Sans CJK SC from Debian's
``fonts-noto-cjk`` (listed in ``packages.txt`` for a Hugging Face Space; ``tests/run.sh`` installs it), found
through matplotlib's font manager, so matplotlib Figures and Pillow drawings use the very same file and face
(the SC face of a .ttc collection holds the Simplified Chinese glyph forms).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from matplotlib import font_manager
from matplotlib.figure import Figure
from matplotlib.text import Text
from PIL import ImageFont

from ..i18n import language

CJK_FAMILIES = ("Noto Sans CJK SC", "Source Han Sans SC", "Noto Sans SC")  # in order of preference
LATIN_FAMILY = "DejaVu Sans"   # matplotlib's default: English figures keep exactly their old look


class FontNotFoundError(RuntimeError):
    """No CJK font is installed where matplotlib's font manager looks."""


@dataclass(frozen=True)
class FontFace:
    """One face of a font file: ``index`` picks it inside a .ttc collection (Pillow's ``index``)."""
    path: str
    index: int
    family: str


def _regular_face(entries) -> FontFace | None:
    found = {}
    for e in entries:
        if e.name in CJK_FAMILIES and e.style == "normal" and e.weight in (400, "normal", "regular"):
            found.setdefault(e.name, FontFace(str(e.fname), int(getattr(e, "index", 0)), e.name))
    return next((found[name] for name in CJK_FAMILIES if name in found), None)


@lru_cache(maxsize=1)
def cjk_font() -> FontFace:
    """The regular face of the first installed font of ``CJK_FAMILIES``, as matplotlib's font manager lists it.

    matplotlib caches its list of system fonts; a font installed after that cache was written is added
    here from the system font folders. FontNotFoundError says how to install one."""
    face = _regular_face(font_manager.fontManager.ttflist)
    if face is None:
        for path in font_manager.findSystemFonts():
            if "cjk" in Path(path).name.lower() or "sourcehan" in Path(path).name.lower():
                font_manager.fontManager.addfont(path)
        face = _regular_face(font_manager.fontManager.ttflist)
    if face is None:
        raise FontNotFoundError(
            f"No Chinese font found! Expected one of {CJK_FAMILIES} among matplotlib's fonts. Install Debian's "
            f"fonts-noto-cjk (sudo apt-get install fonts-noto-cjk; a Hugging Face Space installs it from "
            f"packages.txt).")
    return face


def pil_font(size: int = 12, lang: str = "en", text: str = "") -> ImageFont.FreeTypeFont:
    """The font Pillow draws a language's ``text`` with at ``size`` pixels: the CJK face for Chinese (it has
    Latin letters and digits too); for English Pillow's bundled font (what the pictures always used), or
    matplotlib's DejaVu Sans when ``text`` holds a character the bundled font lacks (it has no ×, →, –)."""
    if language(lang) != "en":
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
    """matplotlib font families for a language: None (the default) for English; DejaVu Sans with the CJK family
    as fallback for Chinese, so Latin letters and digits look as in the English figures."""
    if language(lang) == "en":
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
