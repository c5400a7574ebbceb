"""The first minutes of a newcomer: an offline start says how to start (naming --weights and the checkpoints on
this machine), the benchmark names itself and its requirements."""
from __future__ import annotations

import pytest

import subprocess
import sys
from pathlib import Path

from vit_explorer.server import startup_failure
import vit
from vit.checkpoints.load import checkpoints_on_this_machine, shared_weights_dir

REPO = Path(__file__).resolve().parents[2]


def test_an_offline_start_names_weights_and_the_checkpoints_here(tmp_path, monkeypatch, real_weights_dir):
    monkeypatch.setenv("VIT_OFFLINE", "1")
    monkeypatch.setenv("VIT_WEIGHTS_DIR", str(tmp_path / "empty"))      # no weights/ and no torch hub copy
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    try:
        vit.load("default")
    except FileNotFoundError as err:
        error = err
    else:
        raise AssertionError("vit.load('default') loaded without any checkpoint on the machine")
    assert "--weights PATH" in str(error)
    message = startup_failure("default", error)
    here = checkpoints_on_this_machine()
    assert shared_weights_dir().resolve() == real_weights_dir.resolve() and len(here) >= 2
    for path in here:
        line = next(line for line in message.splitlines() if path.name in line)
        assert line.strip().startswith("python app.py --weights ") and Path(line.split("--weights ")[1]).resolve() == \
            path.resolve()                                              # a line to copy, that works from here
    assert "Cannot start: the model 'default' did not load." in message and "无法启动" in message
    monkeypatch.setattr("vit.checkpoints.load.shared_weights_dir", lambda: tmp_path / "nothing")
    alone = startup_failure("default", error)                       # nothing on the machine at all
    assert "vit_b_16-c867db91.pth" in alone and "python app.py --weights PATH" in alone


@pytest.mark.slow
def test_python_app_py_offline_stops_with_that_message(tmp_path):
    env = {"VIT_OFFLINE": "1", "VIT_WEIGHTS_DIR": str(tmp_path), "TORCH_HOME": str(tmp_path), "PATH": "/usr/bin:/bin",
           "HOME": str(tmp_path), "MPLCONFIGDIR": str(tmp_path)}
    result = subprocess.run([sys.executable, "app.py"], cwd=REPO, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 1
    assert "python app.py --weights ../shared/weights/vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors" in \
        result.stderr


def test_the_benchmark_calls_itself_by_its_command():
    result = subprocess.run([sys.executable, "-m", "bench.run", "--help"], cwd=REPO, capture_output=True, text=True,
                            check=True)
    assert result.stdout.startswith("usage: python -m bench.run")
    bench = (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert bench.index("pip install -r requirements-test.txt") < bench.index("python -m bench.run")
