"""Every command of both tutorials runs as written: the ```bash blocks of docs/tutorial.md, in order, as one bash
script (so `W=…` of the first block holds for the others), in a scratch copy of the repository (its folders linked,
fresh out/, data/ and weights/) with the real test weights at ../shared/weights as the text says; then the commands of
docs/zh-CN/tutorial.md that differ from the English ones (the pictures drawn with --lang zh-CN), in the same copy.
A fast test holds that the two tutorials have the same commands otherwise. Then every file either tutorial tells the
reader to look at (a backticked out/… or weights/… path) exists.

What the test changes, and why (nothing else; every appended flag is one the command documents, and a flag given
twice takes its last value, as docs/training.md says):

- `python app.py …` runs until the reader stops it: here it runs until it answers on its port (the port comes from
  $GRADIO_SERVER_PORT, which app.py honours), then it is stopped.
- `python -m vit.train.squares …` gets `--count 45`: 5 images per class instead of 67, written in a moment.
- `python -m vit.train …` gets `--epochs 2 --workers 0`: two epochs instead of 40 (minutes of training), loading in
  the process itself. The snapshots, metrics and checkpoints the later steps read are written all the same.
"""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TUTORIALS = {"en": REPO / "docs" / "tutorial.md", "zh-CN": REPO / "docs" / "zh-CN" / "tutorial.md"}
BASH_BLOCK = re.compile(r"^```bash\n(.*?)^```", re.M | re.S)
APP = "python app.py"
OVERRIDES = {                      # command prefix -> appended documented flags (see the docstring for why)
    "python -m vit.train.squares ": "--count 45",
    "python -m vit.train ": "--epochs 2 --workers 0",
}
WRITTEN = ("out", "data", "weights")   # what the tutorials write into: fresh in the scratch copy
LOOK_AT = re.compile(r"`((?:out|weights)/[^`$*…]+)`")   # paths the reader is told to open (no placeholders)
SERVE_BRIEFLY = r"""
serve_briefly() {   # start the app, wait until it answers on $GRADIO_SERVER_PORT, stop it
  "$@" & local pid=$!
  for _ in $(seq 600); do
    if ! kill -0 "$pid" 2>/dev/null; then wait "$pid"; echo "the app stopped before serving" >&2; return 1; fi
    if python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$GRADIO_SERVER_PORT/', timeout=2)" \
        2>/dev/null; then kill "$pid"; wait "$pid" || true; echo "served on port $GRADIO_SERVER_PORT"; return 0; fi
    sleep 0.5
  done
  kill "$pid"; echo "the app did not answer within 5 minutes" >&2; return 1
}
"""


def commands(tutorial: Path) -> list[str]:
    """The tutorial's bash blocks as logical lines (continuations joined), in order."""
    text = "\n".join(BASH_BLOCK.findall(tutorial.read_text(encoding="utf-8")))
    return text.replace("\\\n", " ").splitlines()


def as_run(line: str) -> str:
    """A logical line as the test runs it: the app served briefly, the training commands shortened."""
    command = line.lstrip()
    indent = line[:len(line) - len(command)]
    if command.startswith(APP):
        return f"{indent}serve_briefly {command}"
    for prefix, flags in OVERRIDES.items():
        if command.startswith(prefix):
            assert "#" not in command, f"a comment would swallow the appended flags: {line!r}"
            return f"{indent}{command} {flags}"
    return line


def scratch_copy(root: Path, weights: Path) -> Path:
    """root/repo: every top-level entry of the repository linked, except what the tutorials write;
    root/shared/weights: the real test weights (the tutorials' ../shared/weights)."""
    repo = root / "repo"
    repo.mkdir()
    for entry in REPO.iterdir():
        if entry.name not in WRITTEN and not entry.name.startswith("."):
            (repo / entry.name).symlink_to(entry)
    (repo / "weights").mkdir()
    (root / "shared").mkdir()
    (root / "shared" / "weights").symlink_to(weights.resolve())
    return repo


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def without_comments(line: str) -> str:
    return re.sub(r"\s+#.*$", "", line).rstrip()


def chinese_only() -> list[str]:
    """The Chinese tutorial's commands that are not, word for word, English ones (its pictures in Chinese)."""
    english = {without_comments(line) for line in commands(TUTORIALS["en"])}
    return [line for line in commands(TUTORIALS["zh-CN"]) if without_comments(line) not in english]


def test_the_tutorials_run_the_same_steps():
    """Both tutorials have the same commands, but for the Chinese pictures (--lang zh-CN) and the comments."""
    def plain(tutorial):
        return [without_comments(line.replace(" --lang zh-CN", "")) for line in commands(tutorial)
                if not line.lstrip().startswith("#")]
    english, chinese = plain(TUTORIALS["en"]), plain(TUTORIALS["zh-CN"])
    assert len(english) >= 15 and english == chinese
    different = chinese_only()
    assert len(different) >= 5 and all("--lang zh-CN" in line and line.startswith("python -m viz ")
                                       for line in different), different


@pytest.mark.slow
def test_every_command_of_both_tutorials_runs(tmp_path, real_weights_dir):
    lines = commands(TUTORIALS["en"])
    assert sum(line.lstrip().startswith(APP) for line in lines) == 1, "one app start, in 'Before you start'"
    assert all(any(line.lstrip().startswith(p) for line in lines) for p in OVERRIDES), "an override lost its command"
    repo = scratch_copy(tmp_path, real_weights_dir)
    script = "set -euo pipefail\n" + SERVE_BRIEFLY + "\n".join(as_run(line) for line in lines + chinese_only()) + "\n"
    (tmp_path / "tutorial.sh").write_text(script, encoding="utf-8")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "GRADIO_SERVER_PORT": str(free_port()), "GRADIO_TEMP_DIR": str(tmp_path / "gradio"),
           "GRADIO_ANALYTICS_ENABLED": "False", "MPLCONFIGDIR": str(tmp_path / "matplotlib"),
           "VIT_WEIGHTS_DIR": str(repo / "weights"), "VIT_OFFLINE": "1"}
    env.pop("GRADIO_SERVER_NAME", None)
    result = subprocess.run(["bash", str(tmp_path / "tutorial.sh")], cwd=repo, env=env, capture_output=True,
                            text=True, timeout=1500)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"a tutorial command failed:\n{output[-4000:]}"
    assert "served on port" in result.stdout                                  # Before you start: the app
    assert re.search(r"224×224×3\s+.*\n\s+196×768\s+.*\n\s+197×768", result.stdout)   # step 1: the shapes
    assert "torch.Size([1, 197, 192]) True" in result.stdout                 # step 2: equation (1) by hand
    for lang, tutorial in TUTORIALS.items():
        missing = [path for path in LOOK_AT.findall(tutorial.read_text(encoding="utf-8"))
                   if not (repo / path).exists()]
        assert not missing, f"the {lang} tutorial tells the reader to look at files no command wrote: {missing}"


FIRST_SESSIONS = {"en": (REPO / "README.md", "## A first session"),
                  "zh-CN": (REPO / "README.zh-CN.md", "## 第一次使用")}


def first_session(lang: str) -> list[str]:
    """The command lines of a README's first session (its first bash block after the heading)."""
    path, heading = FIRST_SESSIONS[lang]
    text = path.read_text(encoding="utf-8")
    return BASH_BLOCK.search(text, text.index(heading)).group(1).replace("\\\n", " ").splitlines()


def test_the_readmes_first_session_needs_one_terminal():
    """`W` is set first and the app, which keeps its terminal until Ctrl+C, comes last: every line runs in one
    terminal, one after the other; both READMEs run the same commands (the Chinese one draws in Chinese)."""
    for lang in FIRST_SESSIONS:
        lines = [without_comments(line) for line in first_session(lang)]
        assert lines[0].startswith("W=") and lines[-1].startswith(APP) and not any(
            line.startswith(APP) for line in lines[:-1]), lines
    assert [line.replace(" --lang zh-CN", "") for line in map(without_comments, first_session("zh-CN"))] == \
        [without_comments(line) for line in first_session("en")]


@pytest.mark.slow
def test_the_readmes_first_session_runs_in_one_terminal(tmp_path, real_weights_dir):
    repo = scratch_copy(tmp_path, real_weights_dir)
    script = "set -euo pipefail\n" + SERVE_BRIEFLY + "\n".join(as_run(line) for line in first_session("zh-CN")) + "\n"
    (tmp_path / "session.sh").write_text(script, encoding="utf-8")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "GRADIO_SERVER_PORT": str(free_port()), "GRADIO_TEMP_DIR": str(tmp_path / "gradio"),
           "GRADIO_ANALYTICS_ENABLED": "False", "MPLCONFIGDIR": str(tmp_path / "matplotlib"), "VIT_OFFLINE": "1"}
    env.pop("GRADIO_SERVER_NAME", None)
    result = subprocess.run(["bash", str(tmp_path / "session.sh")], cwd=repo, env=env, capture_output=True,
                            text=True, timeout=1200)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"a command of the first session failed:\n{output[-4000:]}"
    assert (repo / "out" / "cat" / "chelsea" / "result.json").is_file()
    assert (repo / "out" / "examples" / "summary").is_dir() and "served on port" in result.stdout
    assert "skipped 1 sub-folder with images" in result.stderr           # examples/two_objects, said out loud
