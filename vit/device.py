"""Which device and which number format a model runs in: ``--device`` and ``--dtype`` of the app, the CLI and training.

``pick_device("auto")`` is the CUDA GPU when torch sees one, else the CPU (Apple's ``mps`` is only used when named:
some of the operations the maps need are slow or missing there). A named device that this machine does not have
fails here, with a message that says what to use instead, before any file is read.

``--dtype`` is the format of the *forward pass*: ``float32`` (the default, and the tested reference), or
``bfloat16`` / ``float16`` under ``torch.autocast``: the matrix products run in 16 bits while the residual stream
stays float32 (on CUDA autocast also keeps softmax and LayerNorm in float32; on the CPU they run in 16 bits too).
The maps are then reduced in float32 as always. Both 16-bit formats are accepted on every device (the CPU runs
them correctly); on a CPU without 16-bit matrix units they are several times slower than float32 (see
docs/datasets.md), so they are meant for GPUs.
"""
from __future__ import annotations

import contextlib

import torch

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def pick_device(name: str = "auto", local_rank: int | None = None) -> torch.device:
    """``"auto"`` -> ``cuda`` when available, else ``cpu``; ``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"mps"`` -> that
    device, checked to exist (ValueError saying what to use instead).

    ``local_rank``: under ``torchrun`` each process of a machine takes its own GPU, ``cuda:<local_rank>``, when
    the name does not say which one.
    """
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        device = torch.device(name)
    except RuntimeError as e:
        raise ValueError(f"Unknown --device {name!r}! Expected auto, cpu, cuda, cuda:N or mps. ({e})") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"--device {name} asked for a CUDA GPU, but torch sees none (torch {torch.__version__}, "
                             f"CUDA build: {torch.version.cuda or 'no'})! Use --device cpu or --device auto.")
        if device.index is None and local_rank is not None:
            device = torch.device("cuda", local_rank % torch.cuda.device_count())
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ValueError(f"--device {name} does not exist! This machine has {torch.cuda.device_count()} "
                             f"CUDA device(s): cuda:0 … cuda:{torch.cuda.device_count() - 1}.")
    elif device.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"--device {name} asked for Apple's Metal GPU, but torch sees none! Use --device cpu.")
    elif device.type not in ("cpu", "cuda", "mps"):
        raise ValueError(f"Unknown --device {name!r}! Expected auto, cpu, cuda, cuda:N or mps.")
    return device


def pick_dtype(name: str = "float32") -> torch.dtype:
    """``--dtype`` name -> torch dtype of the forward pass (ValueError for anything but the three in ``DTYPES``)."""
    if name not in DTYPES:
        raise ValueError(f"Unknown --dtype {name!r}! Expected one of {', '.join(DTYPES)}.")
    return DTYPES[name]


def forward_precision(device: torch.device, dtype: torch.dtype):
    """Context for a forward pass in ``dtype`` on ``device``: nothing for float32, else ``torch.autocast``."""
    if dtype == torch.float32:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dtype)
