"""One run over many processes, started by ``torchrun`` (``python -m torch.distributed.run``), on one or many machines.

torchrun starts the same command N times and tells each process who it is through environment variables
(``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``/``MASTER_PORT``). Each process analyses its own share of
the images (``viz.folders.loader.shard``); the processes meet only at the start (resume) and at the end, where
their statistics are added up with one all-reduce: ``gloo`` on CPUs, ``nccl`` between GPUs. Without torchrun
(no ``WORLD_SIZE``) everything here is a no-op for one process.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist


@dataclass(frozen=True)
class Processes:
    rank: int = 0                 # this process, 0 … world - 1 (0 writes the summary and shows progress)
    world: int = 1                # processes in the run
    local_rank: int = 0           # this process on its machine (picks its GPU)
    device: torch.device = torch.device("cpu")   # where the collective operations' tensors live

    @property
    def main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world > 1


def launched_by_torchrun() -> bool:
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def local_rank() -> int | None:
    return int(os.environ["LOCAL_RANK"]) if launched_by_torchrun() else None


def start(device: torch.device) -> Processes:
    """Join the process group torchrun set up (nccl for a CUDA ``device``, else gloo); one process otherwise."""
    if not launched_by_torchrun():
        return Processes(device=device)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    backend = "nccl" if device.type == "cuda" else "gloo"
    if not dist.is_initialized():
        dist.init_process_group(backend=backend)
    return Processes(dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_RANK", 0)),
                     device if backend == "nccl" else torch.device("cpu"))


def finish(processes: Processes) -> None:
    if processes.distributed and dist.is_initialized():
        dist.destroy_process_group()


def barrier(processes: Processes) -> None:
    if processes.distributed:
        dist.barrier()


def sum_int64(processes: Processes, values: np.ndarray) -> np.ndarray:
    """Element-wise sum of an int64 vector over all processes (the same vector comes back to each)."""
    if not processes.distributed:
        return values
    tensor = torch.from_numpy(np.ascontiguousarray(values, dtype=np.int64)).to(processes.device)
    dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor.cpu().numpy()


def gather_objects(processes: Processes, value) -> list:
    """Every process's ``value`` (small, picklable: names, shapes, messages), in rank order."""
    if not processes.distributed:
        return [value]
    values = [None] * processes.world
    dist.all_gather_object(values, value)
    return values
