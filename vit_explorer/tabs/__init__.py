"""THE table of the page's tabs: each tab is one module here, its Gradio side (its layout builder and its handlers
side by side), beside its slice in viz (``viz/NAME/``: its Gradio-free view and its texts), and one ``Tab`` entry
below, in one of the sections the page groups its tabs in (``SECTIONS``). The sections and tabs
(``vit_explorer.layout``), the drawing of a new analysis and of a control change (``vit_explorer.views``), the lazy
renderer and the tab selection (``vit_explorer.events``) all read ``TABS``.

A new tab: its slice ``viz/NAME/`` (``view.py``, and ``texts.py`` with its name ``tab.NAME``), ``tabs/NAME.py`` with
``build(page)`` (its layout, every component added to the page by name) and whichever handlers it needs, and one
entry below, in the section it belongs to:

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

from . import (attention, compare, concepts, distance, explain, features, heads, inside, learn, model, norms, position,
               query, rollout, trust, video)


@dataclass(frozen=True)
class Tab:
    """One tab of the page."""
    id: str                                       # the gr.Tab's id; its label is the text "tab.<id>"
    section: str                                  # the section it is shown in (``SECTIONS``)
    build: Callable                               # build(page): its layout, inside its gr.Tab
    outputs: tuple[str, ...]                      # what its own handlers fill (the lazy renderer's outputs for it)
    shows: tuple[str, ...] = ()                   # what ``show`` fills for a new photo, model or language
    show: Callable | None = None                  # show(shown) -> {output: value}
    draw: Callable | None = None                  # draw(session, analysis, controls, lang) -> {output: value}
    uses: Callable | None = None                  # uses(ControlValues) -> the control names ``draw`` depends on
    lazy: Callable | None = None                  # its handler when it is open (Learn, Explain)
    wire: Callable | None = None                  # wire(page): its own events


# The sections the tabs are grouped in, in the page's order; each one's name is the text "section.<id>"
SECTIONS = ("look", "why", "inside", "learn")

TABS: tuple[Tab, ...] = (
    # where it looks
    Tab("rollout", "look", rollout.build, rollout.OUTPUTS, rollout.OUTPUTS, rollout.show, rollout.draw, rollout.uses),
    Tab("attention", "look", attention.build, attention.OUTPUTS, attention.OUTPUTS, attention.show, attention.draw,
        attention.uses, wire=attention.wire),
    Tab("heads", "look", heads.build, heads.OUTPUTS, heads.OUTPUTS, heads.show, heads.draw, heads.uses,
        wire=heads.wire),
    Tab("query", "look", query.build, query.DRAWN, query.OUTPUTS, query.show, query.draw, query.uses,
        wire=query.wire),
    Tab("video", "look", video.build, video.OUTPUTS, wire=video.wire),
    # why this class
    Tab(explain.ID, "why", explain.build, explain.OUTPUTS, explain.SHOWS, explain.show, lazy=explain.explain,
        wire=explain.wire),
    Tab("trust", "why", trust.build, trust.OUTPUTS, trust.SHOWS, trust.show, wire=trust.wire),
    # inside the model
    Tab(inside.ID, "inside", inside.build, inside.OUTPUTS, inside.SHOWS, inside.show, wire=inside.wire),
    Tab(features.ID, "inside", features.build, features.OUTPUTS, lazy=features.show, wire=features.wire),
    Tab(concepts.ID, "inside", concepts.build, concepts.OUTPUTS, lazy=concepts.show, wire=concepts.wire),
    Tab("distance", "inside", distance.build, distance.OUTPUTS, distance.OUTPUTS, distance.show),
    Tab("norms", "inside", norms.build, norms.OUTPUTS, norms.OUTPUTS, norms.show),
    Tab("position", "inside", position.build, position.OUTPUTS, position.OUTPUTS, position.show),
    # learn and compare
    Tab("learn", "learn", learn.build, learn.OUTPUTS, lazy=learn.show, wire=learn.wire),
    Tab("model", "learn", model.build, model.OUTPUTS, model.OUTPUTS, model.show),
    Tab("compare", "learn", compare.build, compare.OUTPUTS, wire=compare.wire),
)
if tuple(dict.fromkeys(tab.section for tab in TABS)) != SECTIONS:   # each section's tabs side by side, in order
    raise RuntimeError("The tabs of TABS must come section by section, in the order of SECTIONS.")
TAB_IDS = tuple(tab.id for tab in TABS)
