"""Protects the installable package: pyproject.toml states the same dependencies as requirements*.txt (a Space
installs those), and a wheel built from the clone gives `import vit, viz, vit_explorer` from another folder with its
data files (the example photos, the documents the page links to), and the three commands `vit-explorer`, `vit-viz`,
`vit-train`, each naming itself in its usage line."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
COMMANDS = {"vit-explorer": "python -m vit_explorer", "vit-viz": "python -m viz", "vit-train": "python -m vit.train"}


def requirements(name: str) -> list[str]:
    """The requirement lines of a requirements file, comments and `-r` includes left out, spaces removed."""
    lines = (REPO / name).read_text().splitlines()
    return [re.sub(r"\s+", "", line.split("#")[0]) for line in lines
            if line.split("#")[0].strip() and not line.startswith("-r")]


def test_pyproject_states_the_requirements_files_dependencies():
    assert PYPROJECT["project"]["dependencies"] == requirements("requirements.txt")
    assert PYPROJECT["project"]["optional-dependencies"]["test"] == requirements("requirements-test.txt")
    assert "-r requirements.txt" in (REPO / "requirements-test.txt").read_text()


def test_the_three_commands_are_the_modules_people_run():
    scripts = PYPROJECT["project"]["scripts"]
    assert set(scripts) == set(COMMANDS)
    for command, target in scripts.items():
        module, function = target.split(":")
        assert callable(getattr(__import__(module, fromlist=[function]), function)), command


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The project built as a wheel and installed (without its dependencies, which this venv has) under a prefix."""
    folder = tmp_path_factory.mktemp("package")
    clone = folder / "clone"     # built from a copy: setuptools writes build/ and *.egg-info beside the sources
    shutil.copytree(REPO, clone, ignore=shutil.ignore_patterns(".git", ".venv", "__pycache__", "artifacts", "build",
                                                               "*.egg-info", "out", "data", "weights"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(folder / "dist"), str(clone)],
                   check=True, capture_output=True, timeout=600)
    wheel = next((folder / "dist").glob("*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--prefix", str(folder / "prefix"),
                    str(wheel)], check=True, capture_output=True, timeout=600)
    return folder


def _site(prefix: Path) -> Path:
    return next(prefix.glob("lib/python*/site-packages"))


@pytest.mark.slow
def test_the_wheel_holds_the_packages_and_their_data(installed):
    names = zipfile.ZipFile(next((installed / "dist").glob("*.whl"))).namelist()
    for needed in ("vit/model.py", "vit/imagenet_classes.txt", "vit/clip/bpe_simple_vocab_16e6.txt.gz",
                   "viz/cli/__init__.py", "vit_explorer/server.py", "vit_explorer/assets/page.css",
                   "vit_explorer/assets/set_locale.js"):
        assert needed in names, needed
    assert not [n for n in names if n.startswith(("tests/", "bench/", "docs/", "app.py"))]
    examples = installed / "prefix" / "share" / "vit-attention-explorer" / "examples"
    assert sorted(p.name for p in examples.glob("*.jpg")) == sorted(p.name for p in (REPO / "examples").glob("*.jpg"))
    video = sorted(p.relative_to(examples).as_posix() for p in (examples / "video").rglob("*") if p.is_file())
    assert video == sorted(p.relative_to(REPO / "examples").as_posix() for p in (REPO / "examples" / "video").rglob("*")
                           if p.is_file())                         # the Video tab's example model and clips
    from vit_explorer.site import DOCS

    docs = installed / "prefix" / "share" / "vit-attention-explorer" / "docs"   # what the page's links open
    assert {f"{name}.md" for name in DOCS} <= {p.name for p in docs.glob("*.md")}


@pytest.mark.slow
def test_the_installed_copy_imports_from_another_folder_and_runs_its_commands(installed, tmp_path):
    site = _site(installed / "prefix")
    env = {**os.environ, "PYTHONPATH": str(site)}
    where = subprocess.run([sys.executable, "-c", "import vit, viz, vit_explorer, vit.labels as l; "
                            "print(vit.__file__); print(viz.__file__); print(vit_explorer.__file__); "
                            "print(len(l.imagenet_labels()))"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    *files, classes = where.stdout.split()
    assert all(Path(f).is_relative_to(site) for f in files) and classes == "1000"
    for command, module in COMMANDS.items():
        script = installed / "prefix" / "bin" / command
        result = subprocess.run([sys.executable, str(script), "--help"], cwd=tmp_path, env=env, capture_output=True,
                                text=True, timeout=300)
        assert result.returncode == 0, (command, result.stderr)
        assert result.stdout.startswith(f"usage: {command} "), (command, result.stdout[:200])   # its own name
