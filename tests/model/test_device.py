"""``--device`` and ``--dtype``: auto is the CPU on this CUDA-less machine, cpu works, cuda fails with a message
that says what to use instead, in the CLI, training and the app alike."""
from __future__ import annotations

import pytest
import torch
from vit.device import DTYPES, pick_device, pick_dtype
from viz.cli import main as viz_main

from tiny_run import noise_images, statistics, tiny_checkpoint


def test_pick_device_on_a_machine_without_a_gpu():
    assert not torch.cuda.is_available()        # these tests describe this machine and CI: no GPU
    assert pick_device("auto") == torch.device("cpu") == pick_device("cpu")
    with pytest.raises(ValueError, match="--device cuda asked for a CUDA GPU, but torch sees none .*Use --device cpu"):
        pick_device("cuda")
    with pytest.raises(ValueError, match="--device cuda:1 asked for a CUDA GPU"):
        pick_device("cuda:1", local_rank=1)
    with pytest.raises(ValueError, match="Unknown --device 'tpu'! Expected auto, cpu, cuda, cuda:N or mps"):
        pick_device("tpu")
    with pytest.raises(ValueError, match="Unknown --device 'meta'"):
        pick_device("meta")
    if not torch.backends.mps.is_available():
        with pytest.raises(ValueError, match="Apple's Metal GPU"):
            pick_device("mps")
    assert [pick_dtype(name) for name in DTYPES] == [torch.float32, torch.bfloat16, torch.float16]
    with pytest.raises(ValueError, match="Unknown --dtype 'float64'"):
        pick_dtype("float64")


def test_cli_runs_on_cpu_and_auto_and_refuses_cuda(tmp_path, capsys):
    weights = tiny_checkpoint(tmp_path / "tiny.pt")
    noise_images(tmp_path / "images", 3)
    for device, dtype in (("cpu", "float32"), ("auto", "bfloat16")):
        out = tmp_path / device
        assert viz_main([str(tmp_path / "images"), "--weights", str(weights), "--out", str(out), "--stats-only",
                         "--device", device, "--dtype", dtype, "--quiet"]) == 0
        assert (statistics(out)["device"], statistics(out)["dtype"], statistics(out)["images"]) == ("cpu", dtype, 3)
    assert viz_main([str(tmp_path / "images"), "--weights", str(weights), "--device", "cuda"]) == 2
    assert "error: --device cuda asked for a CUDA GPU, but torch sees none" in capsys.readouterr().err


def test_training_and_the_app_take_the_same_device_flag(tmp_path, capsys):
    from vit.train.__main__ import main as train_main
    from synthetic_shapes import make_shapes_folder
    data = make_shapes_folder(tmp_path / "shapes", per_class=2)
    assert train_main(["--data", str(data), "--out", str(tmp_path / "x.pt"), "--device", "cuda"]) == 2
    assert "--device cuda asked for a CUDA GPU, but torch sees none" in capsys.readouterr().err
    from vit_explorer.server import parse_args
    from vit_explorer.state import SETTINGS
    assert parse_args([]).device == "auto" and parse_args(["--device", "cpu"]).device == "cpu"
    assert SETTINGS.device == torch.device("cpu")
