"""Protects the server's caches (viz/cache.py): one load per checkpoint even when sessions ask at once, a
bounded number of models kept, analyses bounded by their bytes, failures not cached."""
from __future__ import annotations

import threading

import pytest

import vit
from viz.cache import Cache

AUGREG = "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors"
DEIT = "deit_tiny_patch16_224.pipevit_ln_fixedpoint.safetensors"


class CountingLoader:
    """vit.load, counting calls per source."""

    def __init__(self):
        self.calls: dict[str, int] = {}
        self._lock = threading.Lock()

    def __call__(self, source: str):
        with self._lock:
            self.calls[source] = self.calls.get(source, 0) + 1
        return vit.load(source)


def test_concurrent_requests_share_one_load(real_weights_dir):
    source = str(real_weights_dir / AUGREG)
    loader = CountingLoader()
    cache = Cache(loader, capacity=2, weigh=lambda model: 1)
    got, barrier = [], threading.Barrier(4)

    def ask():
        barrier.wait()
        got.append(cache.get(source))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not any(t.is_alive() for t in threads), "a request never got the model"
    assert loader.calls == {source: 1}
    assert len(got) == 4 and all(m is got[0] for m in got)
    assert got[0].name == "vit_tiny_patch16_224.augreg_in21k_ft_in1k"


def test_least_recently_used_model_is_dropped(real_weights_dir):
    augreg, deit = str(real_weights_dir / AUGREG), str(real_weights_dir / DEIT)
    loader = CountingLoader()
    cache = Cache(loader, capacity=1, weigh=lambda model: 1)
    first = cache.get(augreg)
    assert cache.get(augreg) is first and loader.calls[augreg] == 1
    cache.get(deit)
    assert cache.keys() == [deit] and augreg not in cache
    assert cache.get(augreg) is not first and loader.calls[augreg] == 2  # loaded again after being dropped


def test_failed_load_is_reported_and_not_cached(tmp_path):
    bad = tmp_path / "notes.pth"
    bad.write_text("not a checkpoint")
    loader = CountingLoader()
    cache = Cache(loader, capacity=2, weigh=lambda model: 1)
    for attempt in (1, 2):
        with pytest.raises(ValueError, match="not a checkpoint"):
            cache.get(str(bad))
        assert loader.calls[str(bad)] == attempt
    assert cache.keys() == []


def test_weighed_entries_are_kept_while_they_fit():
    """Capacity in bytes: the least recently used values go until the rest fits; the newest always stays."""
    cache = Cache(lambda n: bytes(n), capacity=100, weigh=len)
    cache.get(40), cache.get(30), cache.get(20)
    assert cache.keys() == [40, 30, 20] and cache.weight == 90
    cache.get(40)                      # used again: now the most recent
    cache.get(25)                      # 115 > 100: the least recently used (30) goes
    assert cache.keys() == [20, 40, 25] and cache.weight == 85
    cache.get(150)                     # heavier than the capacity alone: kept, everything else dropped
    assert cache.keys() == [150] and cache.weight == 150
    cache.get(1)
    assert cache.keys() == [1] and cache.weight == 1


def test_capacity_must_be_positive():
    with pytest.raises(ValueError, match="capacity must be positive but got 0!"):
        Cache(vit.load, capacity=0)


def test_a_cache_without_computation_looks_stores_and_computes_what_it_is_told():
    """The trust checks' store (get/put, as viz.trust.job.TrustJob uses it) and the drawings keyed by an
    object the key cannot hold (get(key, compute), as viz.panels' display photos and heads grids use it)."""
    cache = Cache(None, capacity=100, weigh=len)
    assert cache.get("a") is None and "a" not in cache
    cache.put("a", b"x" * 60)
    assert cache.get("a") == b"x" * 60
    calls = []
    assert cache.get("b", lambda: calls.append(1) or b"y" * 50) == b"y" * 50
    assert cache.get("b", lambda: calls.append(1) or b"z") == b"y" * 50 and calls == [1]   # computed once
    assert cache.keys() == ["b"] and cache.weight == 50                   # 60 + 50 > 100: "a" went


def test_values_are_weighed_by_the_bytes_they_hold():
    import numpy as np
    from PIL import Image

    from vit.architecture import Architecture
    from viz.cache import nbytes
    from viz.records import Analysis

    image = Image.new("RGB", (20, 10))
    assert nbytes(np.zeros((4, 5), np.float16)) == 40 and nbytes(image) == 600
    a = Analysis(image=image, probabilities=np.zeros(3, np.float32), labels=("a", "b", "c"),
                 attention=np.zeros((2, 1, 5, 5), np.float16), token_norms=np.zeros((2, 5), np.float32),
                 architecture=Architecture.plain(2, 1, (2, 2), 5))
    assert nbytes(a) >= 600 + 12 + 100 + 40 and nbytes({"k": (image, image)}) >= 1200
