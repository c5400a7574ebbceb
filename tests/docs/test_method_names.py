"""docs/explain.md's table of the names the page gives each explanation method is the catalogue's: the method box's
title and the pictures' short name, in English and Chinese, for every method of viz.explain.METHODS."""
from __future__ import annotations

import re
from pathlib import Path

from viz.explain import METHODS
from viz.i18n import t

REPO = Path(__file__).resolve().parents[2]
EXPLAIN = (REPO / "docs" / "explain.md").read_text(encoding="utf-8")
ROW = re.compile(r"^\| `(\w+)` \| (.+?) \| (.+?) \|$", re.M)


def both(key: str) -> str:
    """A name as the table writes it: "English · 中文", or one name where both languages use it."""
    english, chinese = t(key, "en"), t(key, "zh-CN")
    return english if english == chinese else f"{english} · {chinese}"


def test_the_method_names_are_the_pages():
    section = EXPLAIN[EXPLAIN.index("## In the page"):EXPLAIN.index("## From Python")]
    rows = {name: (box, short) for name, box, short in ROW.findall(section)}
    assert set(rows) == set(METHODS), "docs/explain.md's table of method names lost or gained a row"
    for name, (box, short) in rows.items():
        assert box == both(f"method_title.{name}"), f"{name}: the docs say {box!r}, the method box does not"
        assert short == both(f"method.{name}"), f"{name}: the docs say {short!r}, the pictures do not"
