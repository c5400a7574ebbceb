"""The memory budget: a job runs only when its peak memory, estimated from its shapes before it runs
(``viz.analysis.peak``), fits what the jobs already running leave of ``Limits.memory`` (``--max-memory``).

    with BUDGET.reserve(need, lang):      # need: a Need, the job's peak and the sentence that says what would fit
        ...                               # the job; its bytes are given back when it ends

A job that could never fit (its peak alone is more than the budget) is refused at once with the sentence that names
the smallest change that would fit (a smaller input size, another method). One that fits but not now waits, as the
queue does, up to ``WAIT_SECONDS``, then is refused with "busy, try again in about N s"; while it waits it stops as
soon as its visitor leaves (``vit_explorer.heavy.check``). A thread holds one reservation: a job inside a job (an
analysis the explanation needs) asks only for what its reservation does not already cover.
"""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable

from viz.i18n import t

from . import heavy, limits
from .door import Refusal

WAIT_SECONDS = 60.0        # a job that fits the budget waits at most this long for the memory others hold


@dataclass(frozen=True)
class Need:
    """What a job needs: ``bytes`` at its peak, what it is (a catalogue key naming it, and its values), and
    ``advice(lang, capacity)``: the sentence that names the smallest change that would fit a budget of ``capacity``
    bytes (None: none would)."""
    bytes: int
    what: str                                   # catalogue key of the job's name ("job.explain", …)
    values: tuple = ()                          # ((field, value), …) for the name
    advice: Callable[[str, int], str | None] | None = None


class Budget:
    """The bytes the running jobs hold, at most ``limits.LIMITS.memory`` (module docstring)."""

    def __init__(self):
        self.held = 0
        self.peak_held = 0                      # the most ever held at once (what a test reads)
        self._changed = threading.Condition()
        self._mine = threading.local()

    @property
    def capacity(self) -> int:
        return limits.LIMITS.memory

    def refusal(self, need: Need, lang: str) -> Refusal | None:
        """The sentence refusing a job that could never fit, or None."""
        if need.bytes <= self.capacity:
            return None
        advice = need.advice(lang, self.capacity) if need.advice is not None else None
        return Refusal("message.memory_refused", lang, job=t(need.what, lang, **dict(need.values)),
                       need=need.bytes / 2**30, budget=self.capacity / 2**30,
                       advice=advice or t("message.memory_no_advice", lang))

    @contextmanager
    def reserve(self, need: Need, lang: str = "en"):
        if (refused := self.refusal(need, lang)) is not None:
            raise refused
        have = getattr(self._mine, "held", 0)
        more = max(0, need.bytes - have)
        if more:
            self._take(more, lang)
        self._mine.held = have + more
        try:
            yield need
        finally:
            self._mine.held = have
            if more:
                with self._changed:
                    self.held -= more
                    self._changed.notify_all()

    def _take(self, nbytes: int, lang: str) -> None:
        deadline = time.monotonic() + WAIT_SECONDS
        with self._changed:
            while self.held + nbytes > self.capacity:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Refusal("message.memory_busy", lang, seconds=max(1, round(WAIT_SECONDS / 2)))
                self._changed.wait(timeout=min(left, 1.0))
                heavy.check()                     # a visitor who left stops waiting
            self.held += nbytes
            self.peak_held = max(self.peak_held, self.held)


BUDGET = Budget()
