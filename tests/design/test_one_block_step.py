"""The block's arithmetic lives in one place, ``vit.model.Block.step``: every pass (the plain forward, capture, the
views inside the model, the explanations, the trust checks' shorter sequences) runs it, so a new family is a config
record and a key table, never an edit of several loops.

Checked in the source of every product module (vit/, viz/, vit_explorer/, bench/, app.py): a call that builds a
residual branch or reads a block's pieces (``norm1(``, ``ls1(``, ``attn.merge(`` …) appears only inside
``Block.step`` and ``Block.attention_input`` (a Swin's in ``vit.swin.SwinBlock.forward``, TimeSformer's divided block in
``vit.video.DividedBlock.step``, SAM's in ``vit.sam.SamBlock.step``); nothing else calls
``Attention.mix`` on a block's attention."""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PRODUCT = [REPO / "app.py", *sorted((REPO / "vit").rglob("*.py")), *sorted((REPO / "viz").rglob("*.py")),
           *sorted((REPO / "vit_explorer").rglob("*.py")), *sorted((REPO / "bench").rglob("*.py"))]
BLOCK_PIECES = {"norm1", "norm2", "ls1", "ls2", "drop_path"}     # called as x.norm2(...), self.ls1(...), …
ATTENTION_PIECES = {"merge", "mix"}                              # called on a block's attention: x.attn.merge(...)
ALLOWED = {("vit/model.py", "Block.step"), ("vit/model.py", "Block.attention_input"),
           ("vit/swin.py", "SwinBlock.forward"),    # a Swin's block: its own architecture, its computation in one place
           ("vit/video.py", "DividedBlock.step"),   # TimeSformer's block: time attention, space attention, MLP
           ("vit/sam.py", "SamBlock.step")}         # SAM's block: windowed or global attention, then the MLP


def calls_outside_the_step() -> list[str]:
    """'file:line function: call' for every call of a block piece outside the allowed functions."""
    found = []
    for path in PRODUCT:
        rel = str(path.relative_to(REPO))

        def visit(node: ast.AST, where: str) -> None:
            for child in ast.iter_child_nodes(node):
                name = where
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    name = f"{where}.{child.name}" if where else child.name
                if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute):
                    attr, owner = child.func.attr, child.func.value
                    on_attn = isinstance(owner, ast.Attribute) and owner.attr == "attn"
                    if (attr in BLOCK_PIECES or (attr in ATTENTION_PIECES and on_attn)) and (rel, where) not in ALLOWED:
                        found.append(f"{rel}:{child.lineno} {where or '<module>'}: .{attr}(")
                visit(child, name)

        visit(ast.parse(path.read_text(encoding="utf-8"), rel), "")
    return found


def test_no_module_re_implements_the_block():
    assert not calls_outside_the_step(), "the block's arithmetic outside Block.step:\n" + "\n".join(
        calls_outside_the_step())


def test_the_check_finds_a_re_implementation(tmp_path, monkeypatch):
    """The check is not vacuous: a loop written the old way is found."""
    loop = tmp_path / "loop.py"
    loop.write_text("def run(block, x, heads):\n    x = x + block.drop_path(block.ls1(block.attn.merge(heads)))\n"
                    "    return x + block.ls2(block.mlp(block.norm2(x)))\n")
    monkeypatch.setitem(globals(), "PRODUCT", [loop])
    monkeypatch.setitem(globals(), "REPO", tmp_path)
    assert [f.split(" ", 1)[1] for f in calls_outside_the_step()] == [
        "run: .drop_path(", "run: .ls1(", "run: .merge(", "run: .ls2(", "run: .norm2("]
