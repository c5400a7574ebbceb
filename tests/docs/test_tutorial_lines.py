"""The tutorials' line references into vit/model.py point at the code they name, so they cannot rot unnoticed.

A reference is a link whose text is inline code and whose target is vit/model.py#L<a> or #L<a>-L<b>:

- text naming a class or function (`Block.forward`, `VisionTransformer.embed`) must link exactly its definition,
  from its `def`/`class` line to its last line;
- any other text is a line of code (`x = self.norm(x)`), which must be on line <a> (a range starts there).

After an edit of vit/model.py, this test names every reference that moved."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "vit" / "model.py"
TUTORIALS = {"en": REPO / "docs" / "tutorial.md", "zh-CN": REPO / "docs" / "zh-CN" / "tutorial.md"}
REFERENCE = re.compile(r"\[`([^`]+)`\]\(((?:\.\./)+vit/model\.py)#L(\d+)(?:-L(\d+))?\)")
FEWEST = 10   # the equations (1)-(4) and attention need at least this many references


def definitions() -> dict[str, tuple[int, int]]:
    """Qualified name ("Block.forward") -> (first line, last line) of every class and function in vit/model.py."""
    spans = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.ClassDef, ast.FunctionDef)):
                name = f"{prefix}{child.name}"
                spans[name] = (child.lineno, child.end_lineno)
                visit(child, name + ".")

    visit(ast.parse(MODEL.read_text(encoding="utf-8")), "")
    return spans


def references(tutorial: Path) -> list[tuple[str, int, int]]:
    """(code text, first line, last line) of every reference in a tutorial, each checked to target vit/model.py."""
    found = []
    for text, target, first, last in REFERENCE.findall(tutorial.read_text(encoding="utf-8")):
        assert (tutorial.parent / target).resolve() == MODEL, f"{target} is not vit/model.py"
        found.append((text, int(first), int(last or first)))
    return found


@pytest.mark.parametrize("lang", TUTORIALS)
def test_every_line_reference_points_at_the_code_it_names(lang):
    lines = MODEL.read_text(encoding="utf-8").splitlines()
    spans = definitions()
    found = references(TUTORIALS[lang])
    assert len(found) >= FEWEST, f"the {lang} tutorial has {len(found)} references into vit/model.py"
    wrong = []
    for text, first, last in found:
        if text in spans:
            if (first, last) != spans[text]:
                wrong.append(f"`{text}` is lines {spans[text][0]}-{spans[text][1]}, not {first}-{last}")
        elif text not in lines[first - 1]:
            at = [i + 1 for i, line in enumerate(lines) if text in line]
            wrong.append(f"`{text}` is not on line {first} (it is on {at or 'no line'})")
    assert not wrong, f"docs/{TUTORIALS[lang].relative_to(REPO / 'docs')} points at moved code:\n" + "\n".join(wrong)


def test_both_tutorials_point_at_the_same_code():
    assert references(TUTORIALS["en"]) == references(TUTORIALS["zh-CN"])
