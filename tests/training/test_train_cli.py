"""The training command line protects: flags reach the run, bad input gets a message (not a traceback),
--resume refuses to silently change the run, and vit/ stays free of matplotlib and gradio at import."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import vit
from synthetic_shapes import make_shapes_folder
from vit.train.__main__ import main
from vit.train.options import merge_resumed, parse_args, resolve
from vit.train.trainer import RunFiles

pytestmark = pytest.mark.slow   # training runs in child processes

REPO = Path(__file__).resolve().parents[2]


def test_flags_are_parsed_and_only_given_ones_count_as_explicit():
    opts, explicit = parse_args(["--data", "d", "--out", "w/x.pt", "--variant", "small", "--img-size", "48x64",
                                 "--patch-size", "8", "--depth", "2", "--embed-dim", "96", "--heads", "3",
                                 "--epochs", "5", "--lr", "1e-3", "--drop-path", "0.2", "--seed", "7"])
    assert explicit == {"data", "out", "variant", "img_size", "patch_size", "depth", "embed_dim", "num_heads",
                        "epochs", "lr", "drop_path", "seed"}
    assert opts.img_size == (48, 64) and opts.num_heads == 3 and opts.batch_size == 64 and opts.warmup_epochs == 2.0
    resolved = resolve(opts, "folder", None)
    assert resolved.variant == "small" and resolved.patch_size == 8 and resolved.lr == 1e-3


def test_defaults_depend_on_the_data_and_the_checkpoint():
    opts, _ = parse_args(["--data", "d", "--out", "x.pt"])
    assert resolve(opts, "folder", None).img_size == (224, 224) and resolve(opts, "folder", None).patch_size == 16
    assert resolve(opts, "folder", None).lr == 5e-4
    assert resolve(parse_args(["--out", "x", "--variant", "tiny-8"])[0], "cifar10", None).patch_size == 8
    ckpt = vit.variant("tiny", img_size=384)
    tuned = resolve(parse_args(["--out", "x", "--init", "c.pt"])[0], "folder", ckpt)
    assert tuned.img_size == (384, 384) and tuned.patch_size == 16 and tuned.lr == 1e-4
    with pytest.raises(ValueError, match="--depth, --heads only apply to training from scratch"):
        resolve(parse_args(["--out", "x", "--init", "c.pt", "--depth", "2", "--heads", "2"])[0], "folder", ckpt)
    with pytest.raises(ValueError, match="--patch-size cannot change"):
        resolve(parse_args(["--out", "x", "--init", "c.pt", "--patch-size", "8"])[0], "folder", ckpt)


def test_variant_and_init_are_exclusive(capsys):
    with pytest.raises(SystemExit):
        parse_args(["--out", "x.pt", "--variant", "tiny", "--init", "c.pt"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_resume_keeps_the_saved_settings_and_refuses_changed_ones():
    saved, _ = parse_args(["--data", "old", "--out", "w/a.pt", "--epochs", "9", "--lr", "3e-4"])
    saved = resolve(saved, "folder", None).to_dict()
    given, explicit = parse_args(["--out", "w/a.pt", "--resume", "--data", "moved", "--workers", "0"])
    merged = merge_resumed(saved, given, explicit)
    assert (merged.data, merged.workers, merged.epochs, merged.lr, merged.resume) == ("moved", 0, 9, 3e-4, True)
    given, explicit = parse_args(["--out", "w/a.pt", "--resume", "--epochs", "12", "--lr", "3e-4"])
    with pytest.raises(ValueError, match=r"--epochs \(saved 9, got 12\)"):
        merge_resumed(saved, given, explicit)


def test_bad_input_gets_a_message_and_exit_code_2(tmp_path, capsys):
    assert main(["--data", str(tmp_path / "nowhere"), "--out", str(tmp_path / "x.pt")]) == 2
    assert "error: Training data not found" in capsys.readouterr().err
    assert main(["--out", str(tmp_path / "x.pt"), "--resume"]) == 2
    assert "Nothing to resume" in capsys.readouterr().err
    data = make_shapes_folder(tmp_path / "shapes", per_class=2)
    assert main(["--data", str(data), "--out", str(tmp_path / "x.pt"), "--variant", "nope"]) == 2
    assert "error: Unknown ViT variant 'nope'" in capsys.readouterr().err
    assert main(["--data", str(data), "--out", str(tmp_path / "x.pt"), "--device", "tpu"]) == 2
    assert "error: Unknown --device 'tpu'" in capsys.readouterr().err
    assert not (tmp_path / "x.pt").exists()


def test_run_files_sit_next_to_the_output():
    files = RunFiles.next_to("weights/cats.pt")
    assert files == RunFiles(Path("weights/cats.pt"), Path("weights/cats.last.pt"),
                             Path("weights/cats.metrics.csv"), Path("weights/cats.curves.png"))
    with pytest.raises(ValueError, match="--out must name a .pt file"):
        RunFiles.next_to("weights/cats")


def test_python_m_vit_train_runs_end_to_end(tmp_path):
    """The real command in a fresh interpreter, one epoch; it prints how to open the result in the app."""
    data = make_shapes_folder(tmp_path / "shapes", per_class=4)
    out = tmp_path / "weights" / "shapes.pt"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "vit.train", "--data", str(data), "--out", str(out), "--img-size",
                           "32", "--patch-size", "8", "--depth", "1", "--embed-dim", "32", "--heads", "2",
                           "--epochs", "1", "--workers", "0"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"python app.py --weights {out}" in done.stdout
    assert "epoch 1/1" in done.stderr  # the progress bar
    assert vit.load(str(out)).labels == sorted(p.name for p in data.iterdir())
    assert sorted(p.name for p in out.parent.iterdir()) == ["shapes.curves.png", "shapes.last.pt",
                                                             "shapes.metrics.csv", "shapes.pt"]


def test_vit_train_imports_no_matplotlib_or_gradio_and_draws_curves_without_pyplot(tmp_path):
    code = ("import sys, vit, vit.train, vit.train.__main__\n"
            "assert not {'matplotlib', 'gradio'} & set(sys.modules), 'imported at start'\n"
            "from vit.train.report import write_curves\n"
            "row = dict(epoch=1, train_loss=1.0, val_loss=0.9, train_acc=0.5, val_acc=0.6)\n"
            f"write_curves({str(tmp_path / 'c.png')!r}, [row, {{**row, 'epoch': 2}}], 'run')\n"
            "assert 'matplotlib.pyplot' not in sys.modules and 'gradio' not in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
