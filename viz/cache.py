"""THE cache of the explorer: values computed once per key, shared by every visitor, bounded in bytes.

Every cache of the page is one ``Cache``: loaded models, analyses, explanations, trust checks, guided walks,
snapshot series (``vit_explorer.state``), and the drawings the page's panels reuse, display-size photos and
heads grids (``viz.panels``). A request for a value that is being computed waits for that computation instead
of starting a second one; the most recently used values are kept while their total weight fits the capacity.

    models = Cache(load, capacity=800 * 2**20, weigh=lambda served: served.nbytes)
    models.get("vit_b_16")               # computed once, then found
    photos = Cache(None, 12 * 2**20)     # no default computation: get(key, compute) or get(key) -> None
"""
from __future__ import annotations

import dataclasses
import sys
import threading
from collections import OrderedDict
from typing import Any, Callable, Hashable


def nbytes(value: Any) -> int:
    """Memory a cached value holds, in bytes, counting what dominates: numpy arrays (``.nbytes``), PIL images
    (width × height × bands), objects that report their own ``nbytes``, and the fields, items and elements of
    dataclasses, dicts, lists and tuples; anything else as ``sys.getsizeof`` says."""
    if isinstance(value, (str, bytes, int, float, bool)) or value is None:
        return sys.getsizeof(value)
    size = getattr(value, "nbytes", None)
    if isinstance(size, int):
        return size
    if hasattr(value, "getbands") and hasattr(value, "size"):          # a PIL image
        width, height = value.size
        return width * height * len(value.getbands())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sum(nbytes(getattr(value, f.name)) for f in dataclasses.fields(value))
    if isinstance(value, dict):
        return sum(nbytes(k) + nbytes(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return sum(nbytes(v) for v in value)
    return sys.getsizeof(value)


class Cache:
    """``get(key)`` -> ``compute(key)``, computed once per key and kept while the most recently used values'
    total ``weigh(value)`` (bytes; default ``nbytes``) fits ``capacity``. The newest value is kept even if it
    alone weighs more (the cache then holds just it). Errors of ``compute`` propagate and nothing is cached for
    them. ``compute`` may be None: then ``get(key, compute)`` says how to compute each value (when the key
    alone does not hold what is needed), and ``get(key)`` only looks (None when absent); ``find(key)`` only looks
    whatever ``compute`` is; ``put`` stores."""

    def __init__(self, compute: Callable[[Hashable], Any] | None, capacity: float,
                 weigh: Callable[[Any], float] = nbytes):
        if capacity <= 0:
            raise ValueError(f"capacity must be positive but got {capacity}!")
        self._compute, self._weigh, self.capacity = compute, weigh, capacity
        self._entries: OrderedDict[Hashable, tuple[Any, float]] = OrderedDict()  # key -> (value, weight)
        self._computing: dict[Hashable, threading.Lock] = {}
        self._lock = threading.Lock()  # guards _entries and _computing, never held while computing

    def get(self, key: Hashable, compute: Callable[[], Any] | None = None) -> Any:
        """The value of ``key``: found, or computed now by ``compute()`` (else the cache's ``compute(key)``)
        and kept; None when it is absent and there is nothing to compute it with."""
        with self._lock:
            if (found := self._lookup(key)) is not None:
                return found[0]
            if compute is None and self._compute is None:
                return None
            gate = self._computing.setdefault(key, threading.Lock())
        with gate:  # one computation per key; later callers wait here and then find the entry
            with self._lock:
                if (found := self._lookup(key)) is not None:
                    return found[0]
            try:
                value = compute() if compute is not None else self._compute(key)
            finally:
                with self._lock:
                    self._computing.pop(key, None)
            self.put(key, value)
            return value

    def find(self, key: Hashable) -> Any:
        """The value of ``key`` when it is kept (marked as just used), else None; never computes it."""
        with self._lock:
            found = self._lookup(key)
        return None if found is None else found[0]

    def put(self, key: Hashable, value: Any) -> None:
        """Keep ``value`` under ``key`` (replacing what was there) as the most recently used; drop the least
        recently used values until the rest fits."""
        weight = self._weigh(value)
        with self._lock:
            self._entries[key] = (value, weight)
            self._entries.move_to_end(key)
            while len(self._entries) > 1 and self._total() > self.capacity:
                self._entries.popitem(last=False)

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

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def keys(self) -> list[Hashable]:
        """Keys in memory, least recently used first."""
        with self._lock:
            return list(self._entries)
