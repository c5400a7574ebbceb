"""Protects a long-running server's memory: over 300 analyses in a row through the API, each from a new session and
of 60 different photos, leave the serving process's RSS flat after warm-up (the median of its last samples
within 40 MB of the first ones: one transient allocation read at a sample is not a leak); the cache of analyses (shared by
all sessions) stays within its bytes, the dropped analyses really freed; the per-session state is bounded in bytes
(``vit_explorer.sessions``: ``Limits.sessions_memory``), the least recently used sessions forgotten first."""
from __future__ import annotations

import gc
import statistics
import weakref

import pytest
from gradio_client import Client
from PIL import Image, ImageOps
from skimage import data

from vit_explorer import limits, state
from vit_explorer.layout import build_app
from vit_explorer.server import launch
from viz.cache import Cache
from api_client import AUGREG, CAT_CLASSES, analyze, top5
from app_server import free_port
from bench.app_process import AppProcess
from bench.measure import proc_status_kb
from viz.controls import Session
from viz.records import cached_bytes

pytestmark = pytest.mark.slow   # a 300-analysis soak against a server process

# the sessions' memory full (~0.4 MB each: Gradio's copy of the page's config) and the cache of analyses (48 ViT-Ti),
# malloc steady
WARM_UP = limits.Limits().sessions_memory // (400 * 2**10) + 20
ANALYSES = WARM_UP + 200
MAX_GROWTH_MB = 40   # between the median of the first five samples and of the last five
SAMPLES = 5          # a leak raises every later sample; a transient allocation still held when one is read, one
CROPS = 12           # different photos per skimage picture: 5 × 12 = 60, more than the cache holds


@pytest.fixture(scope="module")
def photos(tmp_path_factory) -> list[str]:
    """60 different photos: the cat, camera, astronaut, coffee and rocket, each cropped 12 ways (the first uncropped)."""
    folder = tmp_path_factory.mktemp("soak")
    paths = []
    for i in range(CROPS):
        for name, pixels in (("cat", data.chelsea()), ("camera", data.camera()), ("astronaut", data.astronaut()),
                             ("coffee", data.coffee()), ("rocket", data.rocket())):
            paths.append(str(folder / f"{name}_{i}.jpg"))
            ImageOps.crop(Image.fromarray(pixels), (4 * i, 3 * i, 2 * i, i)).save(paths[-1], quality=90)
    return paths


def test_rss_stays_flat_over_300_analyses(real_weights_dir, photos, tmp_path):
    with AppProcess(real_weights_dir / AUGREG, log=tmp_path / "app.log") as server:
        client = Client(server.url, verbose=False, download_files=False)  # the server still writes every panel
        rss_mb = []
        for i in range(ANALYSES):
            client.reset_session()  # a new visitor and a photo not in the cache: one forward pass each time
            analyze(client, photos[i % len(photos)])
            if i + 1 >= WARM_UP and (i + 1) % 10 == 0:
                rss_mb.append(proc_status_kb("VmRSS", server.pid) / 1024)
        assert top5(analyze(client, photos[0]))[0][0] in CAT_CLASSES  # still right at the end
        assert top5(analyze(client, photos[1]))[0][0] == "tripod"
    growth = statistics.median(rss_mb[-SAMPLES:]) - statistics.median(rss_mb[:SAMPLES])
    print(f"server RSS after warm-up {rss_mb[0]:.0f} MB, max {max(rss_mb):.0f} MB over {ANALYSES} analyses, "
          f"median growth {growth:.0f} MB")
    assert growth < MAX_GROWTH_MB, f"RSS grew by {growth:.0f} MB after warm-up: {[round(r) for r in rss_mb]}"


def _session_state(demo, session_hash: str) -> Session | None:
    """The Session the server keeps in gr.State for this browser session, if any."""
    if session_hash not in demo.state_holder.session_data:
        return None
    values = demo.state_holder.session_data[session_hash].state_data.values()
    return next((v for v in values if isinstance(v, Session)), None)


def test_analyses_beyond_the_budget_and_sessions_beyond_capacity_are_dropped_and_freed(real_weights_dir, photos,
                                                                                    monkeypatch):
    """The production caches, made small: room for 3 ViT-Ti analyses (4.1 MB each) and 4 sessions."""
    cache = Cache(state.analyze_key, 14 * 2**20, weigh=cached_bytes)
    monkeypatch.setattr(state, "ANALYSES", cache)
    demo = build_app(str(real_weights_dir / AUGREG))
    port = free_port()
    launch(demo, "127.0.0.1", port, prevent_thread_lock=True, quiet=True)
    sessions = demo.state_holder
    monkeypatch.setattr(limits.LIMITS, "sessions_memory", int(4.5 * sessions.weight))   # room for 4 sessions
    try:
        analyses, hashes = [], []
        for photo in photos[:6]:
            client = Client(f"http://127.0.0.1:{port}/", verbose=False)  # a new visitor each time
            analyze(client, photo)
            hashes.append(client.session_hash)
            analyses.append(weakref.ref(cache.get(_session_state(demo, client.session_hash).key)))
        gc.collect()
        assert len(cache.keys()) == 3 and cache.weight <= cache.capacity
        assert [k[0] for k in cache.keys()] == [_session_state(demo, h).key[0] for h in hashes[3:]]
        alive = [ref() is not None for ref in analyses]
        assert alive == [False] * 3 + [True] * 3, "a dropped analysis (its attention maps) is still in memory"
        assert sessions.total() <= limits.LIMITS.sessions_memory and len(sessions.session_data) <= 4
        kept = [_session_state(demo, h) is not None for h in hashes]
        assert kept == [False] * 2 + [True] * 4  # the least recently used sessions went first
    finally:
        demo.close()
