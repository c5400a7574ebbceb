"""Timing and memory measurement for the benchmark: interleaved medians, and RSS read from /proc.

The benchmark machine is a shared 2-core CPU whose load changes from second to second, so contenders are
timed in interleaved rounds (A, B, C, A, B, C, …) after a warm-up, and compared through their medians:
a slow spell then hits every contender alike instead of one of them.
"""
from __future__ import annotations

import ctypes
import statistics
import time
from dataclasses import dataclass
from typing import Callable


def interleaved(contenders: dict[str, Callable[[], object]], rounds: int, warmup: int = 1,
                rounds_of: dict[str, int] | None = None, clock: Callable[[], float] = time.perf_counter
                ) -> dict[str, list[float]]:
    """Seconds per call of every contender, timed round-robin: ``rounds`` rounds after ``warmup`` untimed ones.

    ``rounds_of`` gives slow contenders fewer rounds (they take part in the first n rounds only); ``clock``: wall
    time, or ``time.process_time`` for the CPU time this process spent (what a call computes, whatever else runs).
    """
    rounds_of = rounds_of or {}
    for _ in range(warmup):
        for fn in contenders.values():
            fn()
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for r in range(rounds):
        for name, fn in contenders.items():
            if r >= rounds_of.get(name, rounds):
                continue
            t0 = clock()
            fn()
            times[name].append(clock() - t0)
    return times


def median(seconds: list[float]) -> float:
    return statistics.median(seconds)


def synchronized(fn: Callable[[], object], device) -> Callable[[], object]:
    """``fn`` that returns only when the ``device`` (a torch.device) has finished its work (CUDA runs
    asynchronously)."""
    if device.type != "cuda":
        return fn

    def run():
        import torch

        fn()
        torch.cuda.synchronize(device)
    return run


def proc_status_kb(field: str, pid: int | str = "self") -> int:
    """A memory field of /proc/<pid>/status in KiB: "VmRSS" (now) or "VmHWM" (peak since start or reset)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(f"{field} not in /proc/{pid}/status")


def reset_peak_rss() -> None:
    """Set this process's VmHWM back to its current RSS (Linux: write 5 to /proc/self/clear_refs)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def release_free_memory() -> None:
    """Give the memory malloc holds but does not use back to the OS (glibc's malloc_trim; no-op elsewhere), so
    that a peak measured next counts what ``fn`` needs, not what earlier calls happened to leave free."""
    trim = getattr(ctypes.CDLL(None), "malloc_trim", None)
    if trim is not None:
        trim(0)


def peak_rss_delta_mb(fn: Callable[[], object]) -> tuple[float, object]:
    """(MiB the peak RSS rose above the RSS before ``fn``, fn's result)."""
    release_free_memory()
    reset_peak_rss()
    before = proc_status_kb("VmRSS")
    result = fn()
    return (proc_status_kb("VmHWM") - before) / 1024, result


# --- the table every bench command prints: one Row per measure (bench.run, bench.trust and bench.inside share this
# one class, whichever of them runs as __main__) ---

@dataclass
class Row:
    measure: str
    value: str
    target: str = ""
    met: bool | None = None

    def cells(self) -> list[str]:
        verdict = "" if self.met is None else ("yes" if self.met else "**no**")
        return [self.measure, self.value, self.target, verdict]


def table(rows: list[Row], header=("measure", "value", "target", "met")) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    lines += ["| " + " | ".join(r.cells() if isinstance(r, Row) else r) + " |" for r in rows]
    return "\n".join(lines)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds >= 0.1 else f"{seconds * 1000:.1f} ms"
