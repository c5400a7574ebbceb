"""Protects the server's model cache (vit/model_cache.py): one load per checkpoint even when sessions ask at
once, a bounded number kept, failures not cached."""
from __future__ import annotations

import threading

import pytest

import vit
from vit.model_cache import ModelCache

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
    cache = ModelCache(loader, capacity=2)
    got, barrier = [], threading.Barrier(4)

    def ask():
        barrier.wait()
        got.append(cache.get(source))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert loader.calls == {source: 1}
    assert len(got) == 4 and all(m is got[0] for m in got)
    assert got[0].name == "vit_tiny_patch16_224.augreg_in21k_ft_in1k"


def test_least_recently_used_model_is_dropped(real_weights_dir):
    augreg, deit = str(real_weights_dir / AUGREG), str(real_weights_dir / DEIT)
    loader = CountingLoader()
    cache = ModelCache(loader, capacity=1)
    first = cache.get(augreg)
    assert cache.get(augreg) is first and loader.calls[augreg] == 1
    cache.get(deit)
    assert cache.sources() == [deit] and augreg not in cache
    assert cache.get(augreg) is not first and loader.calls[augreg] == 2  # loaded again after being dropped


def test_failed_load_is_reported_and_not_cached(tmp_path):
    bad = tmp_path / "notes.pth"
    bad.write_text("not a checkpoint")
    loader = CountingLoader()
    cache = ModelCache(loader, capacity=2)
    for attempt in (1, 2):
        with pytest.raises(ValueError, match="not a checkpoint"):
            cache.get(str(bad))
        assert loader.calls[str(bad)] == attempt
    assert cache.sources() == []


def test_prepare_runs_once_per_load(real_weights_dir):
    prepared = []
    cache = ModelCache(vit.load, prepare=lambda loaded: prepared.append(loaded.name) or loaded.name.upper(), capacity=2)
    source = str(real_weights_dir / AUGREG)
    assert cache.get(source) == cache.get(" " + source + " ") == "VIT_TINY_PATCH16_224.AUGREG_IN21K_FT_IN1K"
    assert prepared == ["vit_tiny_patch16_224.augreg_in21k_ft_in1k"]


def test_capacity_must_be_positive():
    with pytest.raises(ValueError, match="capacity must be at least 1"):
        ModelCache(vit.load, capacity=0)
