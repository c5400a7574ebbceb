"""A bounded cache of values computed once per key, shared by every session of a server.

The app keeps two: loaded checkpoints (a ViT-B/16 takes a few hundred MB and a second or more to load)
and the analyses of (photo, model) pairs (a ViT-B/16 analysis holds 14 MB of attention maps). A request
for a value that is being computed waits for that computation instead of starting a second one, and the
most recently used values are kept while their total weight (1 per model, bytes per analysis) fits the
capacity.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable, Hashable


class LRUCache:
    """``get(key)`` -> ``compute(key)``, computed once per key and kept while the most recently used values'
    total ``weigh(value)`` fits ``capacity``. The newest value is kept even if it alone weighs more (the
    cache then holds just it). Errors of ``compute`` propagate and nothing is cached for them."""

    def __init__(self, compute: Callable[[Hashable], Any], capacity: float,
                 weigh: Callable[[Any], float] = lambda value: 1):
        if capacity <= 0:
            raise ValueError(f"capacity must be positive but got {capacity}!")
        self._compute, self._weigh, self.capacity = compute, weigh, capacity
        self._entries: OrderedDict[Hashable, tuple[Any, float]] = OrderedDict()  # key -> (value, weight)
        self._computing: dict[Hashable, threading.Lock] = {}
        self._lock = threading.Lock()  # guards _entries and _computing, never held while computing

    def get(self, key: Hashable) -> Any:
        with self._lock:
            if (found := self._lookup(key)) is not None:
                return found[0]
            gate = self._computing.setdefault(key, threading.Lock())
        with gate:  # one computation per key; later callers wait here and then find the entry
            with self._lock:
                if (found := self._lookup(key)) is not None:
                    return found[0]
            try:
                value = self._compute(key)
            finally:
                with self._lock:
                    self._computing.pop(key, None)
            weight = self._weigh(value)
            with self._lock:
                self._entries[key] = (value, weight)
                while len(self._entries) > 1 and self._total() > self.capacity:
                    self._entries.popitem(last=False)
            return value

    def _lookup(self, key: Hashable) -> tuple[Any, float] | None:
        """(value, weight) marked as just used, or None; call with the lock held."""
        if key not in self._entries:
            return None
        self._entries.move_to_end(key)
        return self._entries[key]

    def _total(self) -> float:
        """Total weight of the values kept; call with the lock held."""
        return sum(weight for _, weight in self._entries.values())

    @property
    def weight(self) -> float:
        """Total weight of the values kept."""
        with self._lock:
            return self._total()

    def clear(self) -> None:
        """Forget every value (computations under way still finish and are kept)."""
        with self._lock:
            self._entries.clear()

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._entries

    def keys(self) -> list[Hashable]:
        """Keys in memory, least recently used first."""
        with self._lock:
            return list(self._entries)
