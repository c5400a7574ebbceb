"""Protects the direction of the dependencies, vit/ <- viz/ <- vit_explorer <- app.py: the model library imports
neither the maps (viz), the page (vit_explorer), Gradio nor matplotlib; the maps import neither the page nor Gradio;
only the page and app.py import Gradio. Checked in the source (every import statement of every module, those inside
functions included) and at run time (importing every module of a package in a fresh interpreter loads none of
what it must not)."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FORBIDDEN = {   # package -> the top-level modules none of its modules may import
    "vit": {"viz", "vit_explorer", "app", "gradio", "gradio_client", "matplotlib"},
    "viz": {"vit_explorer", "app", "gradio", "gradio_client"},
}
GRADIO_ALLOWED = {"vit_explorer", "app"}    # the only product modules that may import Gradio


def modules(package: str) -> list[Path]:
    return sorted((REPO / package).rglob("*.py"))


def imported(path: Path) -> set[str]:
    """The top-level names of every absolute import in the file (relative ones stay in their package)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", FORBIDDEN)
def test_no_module_imports_against_the_direction(package):
    wrong = {str(path.relative_to(REPO)): sorted(imported(path) & FORBIDDEN[package]) for path in modules(package)}
    assert not {k: v for k, v in wrong.items() if v}


def test_only_the_page_and_app_py_import_gradio():
    product = [REPO / "app.py", *modules("vit"), *modules("viz"), *modules("vit_explorer")]
    importers = {path.relative_to(REPO).parts[0].removesuffix(".py") for path in product
                 if imported(path) & {"gradio", "gradio_client"}}
    assert "vit_explorer" in importers and importers <= GRADIO_ALLOWED


def _loaded_after_importing_every_module(package: str) -> set[str]:
    """Top-level modules in sys.modules after a fresh interpreter imports every module of ``package``."""
    code = ("import importlib, pkgutil, sys\n"
            f"import {package}\n"
            f"for m in pkgutil.walk_packages({package}.__path__, '{package}.'):\n"
            "    if not m.name.endswith('__main__'):\n"
            "        importlib.import_module(m.name)\n"
            "print(' '.join(sorted({name.split('.')[0] for name in sys.modules})))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


@pytest.mark.parametrize("package", FORBIDDEN)
def test_importing_a_package_loads_nothing_against_the_direction(package):
    loaded = _loaded_after_importing_every_module(package)
    assert package in loaded and not loaded & FORBIDDEN[package]
