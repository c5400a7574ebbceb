"""docs/concepts.md's account of the Concepts tab says the numbers the tab uses: how many strongest latents, how many
of their top patches beside each map, how many patches a picked latent shows, the factor's range, and the phone's
layout (thumbnails beside a map, top patches a row)."""
from __future__ import annotations

from pathlib import Path

from viz.concepts import pictures, view
from vit_explorer.tabs import concepts

REPO = Path(__file__).resolve().parents[2]
PAGE = (REPO / "docs" / "concepts.md").read_text(encoding="utf-8").partition("## In the page")[2].partition("\n## ")[0]
WORDS = {2: "two", 4: "four", 7: "seven", 8: "8"}


def test_the_tabs_numbers():
    assert PAGE, "docs/concepts.md has no section 'In the page'"
    low, high = concepts.FACTORS
    assert f"the photo's {view.STRONGEST} strongest latents" in PAGE
    assert f"and {view.THUMBS} of its\n  strongest patches" in PAGE
    assert f"with its {view.TOP} strongest patches" in PAGE
    assert f"the factor ({low:g} to {high:g}; {low:g} switches it off)" in PAGE
    assert f"({WORDS[2]} thumbnails beside each map, the {view.TOP}\npatches {WORDS[pictures.NARROW_COLS]} a row" in PAGE
