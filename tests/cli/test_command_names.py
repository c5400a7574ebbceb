"""Protects what a student reads first: every command's ``usage:`` line names the command as it was typed — the
installed command (``vit-viz``), the module (``python -m viz``) or the script (``python app.py``) — and a folder run
names the sub-folders it did not read."""
from __future__ import annotations

import subprocess
import sys

import pytest

from vit.command import COMMANDS, program

MAINS = {"vit-explorer": ("vit_explorer.server", "parse_args"), "vit-viz": ("viz.cli", "main"),
         "vit-train": ("vit.train.__main__", "main")}


def _usage(command: str, argv0: str, capsys, monkeypatch) -> str:
    module, function = MAINS[command]
    monkeypatch.setattr(sys, "argv", [argv0, "--help"])
    with pytest.raises(SystemExit) as exited:
        getattr(__import__(module, fromlist=[function]), function)(["--help"])
    assert exited.value.code == 0
    return capsys.readouterr().out.splitlines()[0]


@pytest.mark.parametrize("command", sorted(MAINS))
def test_the_usage_line_names_the_command_as_typed(command, capsys, monkeypatch):
    module = COMMANDS[command]
    assert _usage(command, f"/home/student/.venv/bin/{command}", capsys, monkeypatch).startswith(f"usage: {command} ")
    assert _usage(command, f"{command}.exe", capsys, monkeypatch).startswith(f"usage: {command} ")  # pip's on Windows
    as_module = _usage(command, f"/repo/{module.replace('.', '/')}/__main__.py", capsys, monkeypatch)
    assert as_module.startswith(f"usage: python -m {module} ")


def test_the_app_names_its_script(capsys, monkeypatch):
    assert _usage("vit-explorer", "app.py", capsys, monkeypatch).startswith("usage: python app.py ")
    monkeypatch.setattr(sys, "argv", ["vit-viz"])
    assert program("vit_explorer", "app.py") == "python -m vit_explorer"   # another command's name is not its own


@pytest.mark.slow
def test_running_a_module_prints_it(tmp_path):
    result = subprocess.run([sys.executable, "-m", "vit.train", "--help"], capture_output=True, text=True, timeout=300,
                            check=True)
    assert result.stdout.startswith("usage: python -m vit.train ")


def test_a_folder_run_names_the_sub_folders_it_skips(tmp_path, capsys):
    from PIL import Image

    from viz.cli import skipped_note
    from viz.folders.files import list_images, skipped_folders

    photos = tmp_path / "photos"
    (photos / "two_objects").mkdir(parents=True)
    (photos / "empty").mkdir()
    (photos / "deeper" / "inside").mkdir(parents=True)
    for path in (photos / "cat.png", photos / "two_objects" / "pair.png", photos / "deeper" / "inside" / "x.png"):
        Image.new("RGB", (8, 8)).save(path)
    assert [e.name for e in list_images([photos], ["a"])] == ["cat"]                  # the folder's own images
    assert skipped_folders([photos]) == [photos / "deeper", photos / "two_objects"]   # with images, at any depth
    assert skipped_folders([photos, photos / "two_objects"]) == [photos / "deeper"]   # named: read, not skipped
    assert skipped_folders([photos / "two_objects"]) == []
    note = skipped_note(skipped_folders([photos]))
    assert note.startswith("note: skipped 2 sub-folders with images: ") and str(photos / "two_objects") in note
    assert "name them on the command line" in note


def test_the_command_says_which_sub_folders_it_skipped(real_weights_dir, cat, tmp_path, capsys):
    from viz.cli import main

    photos = tmp_path / "photos"
    (photos / "two_objects").mkdir(parents=True)
    cat.save(photos / "cat.png")
    cat.save(photos / "two_objects" / "pair.png")
    argv = [str(photos), "--weights", str(real_weights_dir / "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors"),
            "--stats-only", "--out", str(tmp_path / "out")]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert f"note: skipped 1 sub-folder with images: {photos / 'two_objects'}" in err and "analysed 1 of 1" in err
    assert main(argv + ["--quiet"]) == 0 and "skipped" not in capsys.readouterr().err
