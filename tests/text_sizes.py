"""Records the text sizes a picture is drawn with, in image pixels, to check what they read on a phone
(``viz.drawing.screens``): every Pillow text goes through ``viz.drawing.render.font`` (recorded at the size it asks
for) and every matplotlib text is drawn by an Agg canvas (recorded at fontsize · dpi / 72 pixels as the canvas draws
the figure); caches of drawn labels are emptied before each picture, so each one records its own texts."""
from __future__ import annotations

import functools
import sys
from contextlib import contextmanager

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Text

from viz.cache import Cache
from viz.drawing import render, screens


class Sizes:
    """The text sizes, in image pixels, of what was drawn since the last ``clear``."""

    def __init__(self):
        self.pixels: list[float] = []

    def clear(self) -> None:
        self.pixels.clear()
        _empty_caches()


def _empty_caches() -> None:
    """Every drawing cache of viz (labels, colour-bar strips, plot backdrops, grids): each picture records its own
    texts."""
    for name, module in list(sys.modules.items()):
        if not name.startswith("viz"):
            continue
        for value in vars(module).values():
            if isinstance(value, functools._lru_cache_wrapper):
                value.cache_clear()
            elif isinstance(value, Cache):
                value.clear()


@contextmanager
def recording(monkeypatch):
    sizes = Sizes()
    pil_font = render.pil_font

    def recorded_font(size=12, lang="en", text=""):
        sizes.pixels.append(float(size))
        return pil_font(size, lang, text)

    draw = FigureCanvasAgg.draw

    def recorded_draw(canvas, *args, **kwargs):
        result = draw(canvas, *args, **kwargs)
        fig = canvas.figure
        sizes.pixels += [text.get_fontsize() * fig.dpi / 72 for text in fig.findobj(Text)
                         if text.get_visible() and text.get_text().strip()]
        return result

    monkeypatch.setattr(render, "pil_font", recorded_font)
    monkeypatch.setattr(FigureCanvasAgg, "draw", recorded_draw)
    yield sizes


def shown_text(sizes: Sizes, width: int) -> float:
    """The smallest text of the picture just drawn, in CSS pixels on the phone."""
    assert sizes.pixels, "no text was recorded: nothing to check"
    return screens.shown_text(min(sizes.pixels), width, enlarged=False)
