"""Protects how viz/ is sorted: three kinds of part, each importing only from the kinds before it, and no cycle
among them (viz/__init__.py's list):

- what every tab shares (records, cache, i18n, drawing, maps, analysis, panels, controls, folders): none of them
  imports a tab's slice or a front end;
- one slice per tab of the page (rollout, attention, heads, ... compare): none imports a front end;
- the front ends (explorer, cli, dataset, and the entries: ``python -m viz.dynamics``, every ``__main__.py``).

Every import statement of every module counts, those inside functions included, relative ones resolved. The shared
parts' own order is checked too: the import graph between viz's parts has no cycle.
"""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VIZ = REPO / "viz"
SHARED = {"records", "cache", "i18n", "drawing", "maps", "analysis", "panels", "controls", "folders"}
SLICES = {"rollout", "attention", "heads", "query", "distance", "norms", "position", "model", "learn", "features",
          "explain", "trust", "inside", "compare", "concepts", "video"}
FRONT_ENDS = {"explorer", "cli", "dataset", "dynamics", "__main__"}
KIND = {**{p: 0 for p in SHARED}, **{p: 1 for p in SLICES}, **{p: 2 for p in FRONT_ENDS}}


def part(path: Path) -> str:
    """The part of viz a module belongs to: its sub-package, or its own name for a top-level module; a package's
    ``__main__.py`` is an entry, a front end whatever package it is in."""
    if path.name == "__main__.py":
        return "__main__"
    return path.relative_to(VIZ).parts[0].removesuffix(".py")


def imported_parts(path: Path) -> set[str]:
    """The parts of viz a module imports (absolute ``viz.X`` and relative imports resolved)."""
    package = path.relative_to(REPO).with_suffix("").parts[:-1]       # ("viz", "maps") for viz/maps/source.py
    if path.name == "__init__.py":
        package = path.relative_to(REPO).parts[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                names = [".".join(base + ((node.module,) if node.module else ()))]
                if not node.module:                                    # from . import a, b: each a module
                    names = [".".join(base + (alias.name,)) for alias in node.names]
            elif node.module:
                names = [node.module]
        for name in names:
            bits = name.split(".")
            if bits[0] == "viz" and len(bits) > 1:
                found.add(bits[1])
    return found


def arrows() -> dict[tuple[str, str], list[str]]:
    """(from part, to part) -> the modules that import across it."""
    out: dict[tuple[str, str], list[str]] = {}
    for path in sorted(VIZ.rglob("*.py")):
        if path == VIZ / "__init__.py":          # the package's root imports every slice's texts: above all parts
            continue
        here = part(path)
        for there in imported_parts(path) - {here}:
            out.setdefault((here, there), []).append(str(path.relative_to(REPO)))
    return out


def test_every_part_of_viz_is_one_of_the_three_kinds():
    parts = {part(p) for p in VIZ.rglob("*.py") if p != VIZ / "__init__.py"}
    assert parts <= set(KIND), f"parts of viz of no kind: {sorted(parts - set(KIND))}"


def test_no_part_imports_a_later_kind():
    up = {f"{a} -> {b}": modules for (a, b), modules in arrows().items() if KIND[b] > KIND[a]}
    assert not up, up


def test_the_parts_import_one_another_without_a_cycle():
    graph: dict[str, set[str]] = {}
    for a, b in arrows():
        graph.setdefault(a, set()).add(b)
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path + [node, nxt]
            if state.get(nxt) is None and (cycle := visit(nxt, path + [node])):
                return cycle
        state[node] = 2
        return None

    for node in sorted(graph):
        if state.get(node) is None:
            cycle = visit(node, [])
            assert cycle is None, f"an import cycle between viz's parts: {' -> '.join(cycle)}: " + \
                str({f"{a} -> {b}": arrows()[(a, b)] for a, b in zip(cycle, cycle[1:])})
