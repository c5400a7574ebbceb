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


def test_the_app_says_where_it_runs_and_how_to_share_with_its_own_flag():
    from vit_explorer.server import running_lines

    lines = running_lines("http://127.0.0.1:7860/", None)
    assert "open http://127.0.0.1:7860/ in a browser" in lines
    assert "在浏览器中打开 http://127.0.0.1:7860/" in lines
    assert "--share" in lines and "share=True" not in lines and "launch()" not in lines
    shared = running_lines("http://127.0.0.1:7860/", "https://abc.gradio.live", share=True)
    assert "https://abc.gradio.live" in shared and "start it with" not in shared
    assert "start it with" not in running_lines("http://127.0.0.1:7860/", None, share=True)   # Gradio said why not


@pytest.mark.slow
def test_python_app_py_prints_its_own_lines_not_gradios(real_weights_dir, tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {"VIT_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "MPLCONFIGDIR": str(tmp_path),
           "GRADIO_TEMP_DIR": str(tmp_path / "gradio"), "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONUNBUFFERED": "1"}
    weights = real_weights_dir / "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors"
    app = subprocess.Popen([sys.executable, "app.py", "--weights", str(weights), "--port", str(port)], cwd=REPO,
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        printed = []
        for line in app.stdout:                       # until the app says it runs (or stops: the loop ends)
            printed.append(line)
            if "python app.py --share" in line:
                break
        text = "".join(printed)
        assert f"The explorer is running: open http://127.0.0.1:{port}/" in text, text
        assert "share=True" not in text and "launch()" not in text, text
    finally:
        app.kill()
        app.wait(timeout=60)
