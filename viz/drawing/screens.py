"""The two screens the page's pictures are drawn for, and the rule that keeps their text readable on both.

A picture's text is drawn in image pixels and the browser shows the picture scaled to its box: text of ``s``
pixels in a picture ``w`` pixels wide, shown ``shown`` CSS pixels wide, reads ``s · shown / w`` CSS pixels. On a
390 px phone a full-width picture gets ``PHONE_WIDTH`` CSS pixels (the browser tests measure it), so a picture for
a narrow screen is drawn with text of at least ``MIN_TEXT · w / PHONE_WIDTH`` pixels and with fewer columns (the
heads grid in bands of layers, the methods in rows, the trust figure's panels one under the other). The page
tells the server which screen it is on once, at load (``narrow``); the CLI and the API draw for a wide screen.

matplotlib figures: text of ``pt`` points in a figure ``inches`` wide reads ``pt · shown / (72 · inches)`` CSS
pixels whatever the dpi, so a narrow figure is ``NARROW_INCHES`` wide with no text below ``MIN_POINTS``.
"""
from __future__ import annotations

import math

PHONE_WIDTH = 360        # CSS pixels of a full-width picture on a 390 px wide phone
MIN_TEXT = 11            # the smallest text a picture may show, in CSS pixels
NARROW_INCHES = 3.6      # width of a narrow matplotlib figure (at 100 dpi: PHONE_WIDTH pixels)
NARROW_DPI = 150         # its dpi: sharper on a phone's dense screen, the same text size there
MIN_POINTS = 8           # the smallest text of a figure, in points (8 pt at 100 dpi: 11.1 pixels)


def shown_width(width: int, enlarged: bool, box: int = PHONE_WIDTH) -> float:
    """CSS pixels a picture ``width`` pixels wide is shown at in a ``box`` CSS pixels wide: the box's width when
    the page enlarges it to fill its box, else its own width at most."""
    return float(box) if enlarged else float(min(width, box))


def shown_text(size: float, width: int, enlarged: bool, box: int = PHONE_WIDTH) -> float:
    """CSS pixels that text of ``size`` image pixels reads in a picture ``width`` pixels wide (``shown_width``)."""
    return size * shown_width(width, enlarged, box) / width


def text_for(width: int, box: int = PHONE_WIDTH) -> int:
    """The smallest text size in image pixels that reads ``MIN_TEXT`` CSS pixels when a picture ``width`` pixels
    wide fills a ``box`` CSS pixels wide."""
    return math.ceil(MIN_TEXT * width / box)


def wrap(text: str, points: float, inches: float) -> str:
    """``text`` broken into lines that fit ``inches`` at ``points`` (about 0.6 of a point per point of an ASCII
    character, a whole one for a CJK character): at spaces, and anywhere in a run of Chinese, which has none.
    Lines already broken (``\\n``) stay broken."""
    room = inches * 72.0 / points                     # in em (``_em``)
    lines = []
    for paragraph in text.split("\n"):
        line, width = "", 0.0
        for piece in (part for word in _pieces(paragraph) for part in _split(word, room)):
            w = _em(piece)
            if line and width + w > room:
                lines.append(line.rstrip())
                line, width = piece.lstrip(), _em(piece.lstrip())
            else:
                line, width = line + piece, width + w
        lines.append(line.rstrip())
    return "\n".join(lines)


def _split(word: str, room: float) -> list[str]:
    """A word wider than a whole line (a file name) cut into pieces that fit one."""
    if _em(word) <= room:
        return [word]
    pieces, current = [], ""
    for ch in word:
        if current and _em(current + ch) > room:
            pieces.append(current)
            current = ""
        current += ch
    return pieces + [current]


def _em(text: str) -> float:
    """Width of ``text`` in em: a CJK character 1, another about 0.6 (a wide Latin letter of DejaVu Sans)."""
    return sum(1.0 if ord(ch) > 0x2e7f else 0.6 for ch in text)


OPENING, CLOSING = "（“《「(", "）”》」，。：；、！？)"   # kept with the character after / before them


def _pieces(text: str) -> list[str]:
    """Where a line may break: before each space-led word, and between CJK characters (never after an opening or
    before a closing mark)."""
    pieces, current = [], ""
    for ch in text:
        cjk = ord(ch) > 0x2e7f
        if ch in CLOSING and (current or pieces):
            if current:
                current += ch
            else:
                pieces[-1] += ch
        elif ch == " " or (cjk and not current.endswith(tuple(OPENING))):
            if current:
                pieces.append(current)
            current = ch
            if cjk and ch not in OPENING:
                pieces.append(current)
                current = ""
        else:
            current += ch
    return pieces + ([current] if current else [])
