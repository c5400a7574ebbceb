"""The front pages and the manual hold together: every relative link and #anchor in README.md, README.zh-CN.md and
docs/**/*.md resolves, and each README stays a front page (at most 300 lines).

Anchors follow GitHub's rules for headings: the heading's text (inline code and emphasis marks dropped, link texts
kept), lower-cased, every character that is not a letter, digit, '_', '-' or space dropped (CJK characters are
letters and stay), each space turned into '-', and a repeated anchor suffixed -1, -2, …. A link into another kind of
file may name lines as GitHub does (#L12 or #L12-L20); they must exist."""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FRONT_PAGES = (REPO / "README.md", REPO / "README.zh-CN.md")
PAGES = (*FRONT_PAGES, *sorted((REPO / "docs").rglob("*.md")))
MAX_FRONT_PAGE_LINES = 300

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
MD_LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HTML_LINK = re.compile(r"<(?:img|a)\b[^>]*?\b(?:src|href)=\"([^\"]+)\"", re.I)
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)
HTML_ANCHOR = re.compile(r"<a\b[^>]*?\b(?:name|id)=\"([^\"]+)\"", re.I)
LINES = re.compile(r"L(\d+)(?:-L(\d+))?")
EXTERNAL = ("http://", "https://", "mailto:")


def without_code_blocks(text: str) -> str:
    """The page with its fenced code blocks removed (a link inside code is not a link)."""
    return FENCE.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", heading)               # images: no text
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)              # links: their text
    text = text.replace("`", "").replace("*", "")
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@lru_cache(maxsize=None)
def anchors(page: Path) -> frozenset[str]:
    """Every anchor GitHub gives a Markdown page: its headings' (deduplicated) and explicit HTML anchors."""
    text = without_code_blocks(page.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    found = set(HTML_ANCHOR.findall(text))
    for _, heading in HEADING.findall(text):
        base = slug(heading)
        count = seen.get(base, 0)
        found.add(base if count == 0 else f"{base}-{count}")
        seen[base] = count + 1
    return frozenset(found)


def links(page: Path) -> list[str]:
    text = without_code_blocks(page.read_text(encoding="utf-8"))
    return [target for _, target in MD_LINK.findall(text)] + HTML_LINK.findall(text)


def problem(page: Path, target: str) -> str | None:
    """Why ``target`` (a link on ``page``) does not resolve, or None when it does."""
    if target.startswith(EXTERNAL):
        return None
    path, _, anchor = target.partition("#")
    file = (page.parent / path).resolve() if path else page
    if not file.exists():
        return f"{file.relative_to(REPO) if file.is_relative_to(REPO) else file} does not exist"
    if not anchor:
        return None
    if file.suffix == ".md":
        return None if anchor in anchors(file) else f"{file.name} has no heading with the anchor #{anchor}"
    lines = LINES.fullmatch(anchor)
    if lines is None:
        return f"#{anchor} is neither a heading nor a line range (#L12, #L12-L20)"
    first, last = int(lines.group(1)), int(lines.group(2) or lines.group(1))
    count = len(file.read_text(encoding="utf-8").splitlines())
    return None if 1 <= first <= last <= count else f"{file.name} has {count} lines, not {first}–{last}"


def test_the_anchor_rule_is_githubs():
    assert slug("The `python -m viz` command") == "the-python--m-viz-command"
    assert slug("The position-embedding ablation (ViT paper, Appendix D.4)") == \
        "the-position-embedding-ablation-vit-paper-appendix-d4"
    assert slug("Maps without a CLS token: SigLIP's probe and the mean of the patches") == \
        "maps-without-a-cls-token-siglips-probe-and-the-mean-of-the-patches"
    assert slug("2. 对照公式 (1)–(4) 读 `vit/model.py`") == "2-对照公式-14-读-vitmodelpy"
    assert slug("**Bold** and [a link](x.md)") == "bold-and-a-link"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_and_anchor_resolves(page):
    found = links(page)
    broken = [f"{target}: {why}" for target in found if (why := problem(page, target))]
    assert not broken, f"{page.relative_to(REPO)} has broken links:\n" + "\n".join(broken)


def test_the_manual_is_linked_from_both_front_pages():
    for readme in FRONT_PAGES:
        linked = {(readme.parent / t.partition("#")[0]).resolve() for t in links(readme) if not t.startswith(EXTERNAL)}
        missing = [p.relative_to(REPO) for p in PAGES if p not in FRONT_PAGES and p.resolve() not in linked]
        assert not missing, f"{readme.name} links to no {', '.join(map(str, missing))}"


@pytest.mark.parametrize("readme", FRONT_PAGES, ids=lambda p: p.name)
def test_the_readme_is_a_front_page(readme):
    lines = len(readme.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_FRONT_PAGE_LINES, (f"{readme.name} has {lines} lines: a front page has at most "
                                           f"{MAX_FRONT_PAGE_LINES}; move the details into docs/ and link to them")
