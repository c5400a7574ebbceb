"""THE table of the page's tabs: each tab is one module (its layout builder and its handlers side by side) and one
``Tab`` entry here. The Tabs (``vit_explorer.layout``), the drawing of a new analysis and of a control change
(``vit_explorer.views``), the lazy renderer and the tab selection (``vit_explorer.events``) all read ``TABS``.

A new tab: write ``tabs/NAME.py`` with ``build(page)`` (its layout, every component added to the page by name)
and whichever handlers it needs, add its name and label to the catalogue (``tab.NAME`` in ``viz/i18n/page.py``),
and add one entry below:

- ``shows`` + ``show``: what it shows for every new photo, model or language (``show(shown)`` -> {output: value},
  from a ``views.Shown``);
- ``draw`` + ``uses``: a map redrawn when a display or map control changes (``draw(session, analysis, controls,
  lang)``), for the controls ``uses(values)`` names;
- ``lazy``: drawn only while it is open (its handler fills ``outputs``), and again after a new photo, model or
  language;
- ``wire(page)``: its own events.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from . import (attention, compare, distance, explain, features, heads, inside, learn, model, norms, position, query,
               rollout, trust)


@dataclass(frozen=True)
class Tab:
    """One tab of the page."""
    id: str                                       # the gr.Tab's id; its label is the text "tab.<id>"
    build: Callable                               # build(page): its layout, inside its gr.Tab
    outputs: tuple[str, ...]                      # what its own handlers fill (the lazy renderer's outputs for it)
    shows: tuple[str, ...] = ()                   # what ``show`` fills for a new photo, model or language
    show: Callable | None = None                  # show(shown) -> {output: value}
    draw: Callable | None = None                  # draw(session, analysis, controls, lang) -> {output: value}
    uses: Callable | None = None                  # uses(ControlValues) -> the control names ``draw`` depends on
    lazy: Callable | None = None                  # its handler when it is open (Learn, Explain)
    wire: Callable | None = None                  # wire(page): its own events


TABS: tuple[Tab, ...] = (
    Tab("rollout", rollout.build, rollout.OUTPUTS, rollout.OUTPUTS, rollout.show, rollout.draw, rollout.uses),
    Tab("attention", attention.build, attention.OUTPUTS, attention.OUTPUTS, attention.show, attention.draw,
        attention.uses, wire=attention.wire),
    Tab("heads", heads.build, heads.OUTPUTS, heads.OUTPUTS, heads.show, heads.draw, heads.uses, wire=heads.wire),
    Tab("query", query.build, query.DRAWN, query.OUTPUTS, query.show, query.draw, query.uses, wire=query.wire),
    Tab(features.ID, features.build, features.OUTPUTS, lazy=features.show, wire=features.wire),
    Tab("learn", learn.build, learn.OUTPUTS, lazy=learn.show, wire=learn.wire),
    Tab(explain.ID, explain.build, explain.OUTPUTS, explain.SHOWS, explain.show, lazy=explain.explain,
        wire=explain.wire),
    Tab("compare", compare.build, compare.OUTPUTS, wire=compare.wire),
    Tab("position", position.build, position.OUTPUTS, position.OUTPUTS, position.show),
    Tab("distance", distance.build, distance.OUTPUTS, distance.OUTPUTS, distance.show),
    Tab("norms", norms.build, norms.OUTPUTS, norms.OUTPUTS, norms.show),
    Tab("model", model.build, model.OUTPUTS, model.OUTPUTS, model.show),
    Tab("trust", trust.build, trust.OUTPUTS, trust.SHOWS, trust.show, wire=trust.wire),
    Tab(inside.ID, inside.build, inside.OUTPUTS, inside.SHOWS, inside.show, wire=inside.wire),
)
TAB_IDS = tuple(tab.id for tab in TABS)
