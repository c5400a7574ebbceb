"""Loaded checkpoints shared by every session of a server, bounded, each loaded once.

A ViT-B/16 takes a few hundred MB and a second or more to load, so a server keeps the models people
picked in one place: a request for a model that is already loading waits for that load instead of
starting a second one, and only the ``capacity`` most recently used models stay in memory.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable


class ModelCache:
    """``get(source)`` -> ``prepare(load(source))``, computed once per source and kept for the ``capacity``
    most recently used sources. Errors of ``load``/``prepare`` propagate and nothing is cached for them."""

    def __init__(self, load: Callable[[str], Any], prepare: Callable[[Any], Any] = lambda loaded: loaded,
                 capacity: int = 2):
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1 but got {capacity}!")
        self._load, self._prepare, self.capacity = load, prepare, capacity
        self._entries: OrderedDict[str, Any] = OrderedDict()
        self._loading: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()  # guards _entries and _loading, never held while loading

    def get(self, source: str) -> Any:
        key = str(source).strip()
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
            gate = self._loading.setdefault(key, threading.Lock())
        with gate:  # one load per source; later callers wait here and then find the entry
            with self._lock:
                if key in self._entries:
                    self._entries.move_to_end(key)
                    return self._entries[key]
            try:
                entry = self._prepare(self._load(key))
            finally:
                with self._lock:
                    self._loading.pop(key, None)
            with self._lock:
                self._entries[key] = entry
                while len(self._entries) > self.capacity:
                    self._entries.popitem(last=False)
            return entry

    def __contains__(self, source: str) -> bool:
        with self._lock:
            return str(source).strip() in self._entries

    def sources(self) -> list[str]:
        """Sources in memory, least recently used first."""
        with self._lock:
            return list(self._entries)
