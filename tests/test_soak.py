"""Protects a long-running server's memory: 300 analyses in a row through the API, each from a new session, leave
the serving process's RSS flat after warm-up; and the per-session caches (one analysis per browser session,
kept in gr.State) are bounded by the app's LRU of sessions (``state_session_capacity=app.MAX_SESSIONS``), the
dropped ones really freed."""
from __future__ import annotations

import gc
import weakref

import pytest
from gradio_client import Client
from PIL import Image
from skimage import data

import app
from api_client import AUGREG, CAT_CLASSES, analyze, top5
from app_server import free_port
from bench.app_process import AppProcess
from bench.measure import proc_status_kb
from viz.explorer import Session

ANALYSES = 300
WARM_UP = 100        # 3× app.MAX_SESSIONS (32): the session cache is full and malloc has reached its steady state
MAX_GROWTH_MB = 50


@pytest.fixture(scope="module")
def photos(tmp_path_factory) -> list[str]:
    folder = tmp_path_factory.mktemp("soak")
    paths = []
    for name, pixels in (("cat", data.chelsea()), ("astronaut", data.astronaut()), ("coffee", data.coffee()),
                         ("rocket", data.rocket()), ("camera", data.camera())):
        paths.append(str(folder / f"{name}.jpg"))
        Image.fromarray(pixels).save(paths[-1], quality=90)
    return paths


def test_rss_stays_flat_over_300_analyses(real_weights_dir, photos, tmp_path):
    with AppProcess(real_weights_dir / AUGREG, log=tmp_path / "app.log") as server:
        client = Client(server.url, verbose=False, download_files=False)  # the server still writes every panel
        rss_mb = []
        for i in range(ANALYSES):
            client.reset_session()  # a new visitor: a new session and a new cached analysis each time
            result = analyze(client, photos[i % len(photos)])
            if i + 1 >= WARM_UP and (i + 1) % 20 == 0:
                rss_mb.append(proc_status_kb("VmRSS", server.pid) / 1024)
        assert top5(result)[0][0] == "tripod"  # still right at the end (the 300th photo is the camera)
        assert top5(analyze(client, photos[0]))[0][0] in CAT_CLASSES
    growth = max(rss_mb) - rss_mb[0]
    print(f"server RSS after warm-up {rss_mb[0]:.0f} MB, max {max(rss_mb):.0f} MB over {ANALYSES} analyses")
    assert growth < MAX_GROWTH_MB, f"RSS grew by {growth:.0f} MB after warm-up: {[round(r) for r in rss_mb]}"


def _session_state(demo, session_hash: str) -> Session | None:
    """The viz.explorer.Session the server keeps in gr.State for this browser session, if any."""
    if session_hash not in demo.state_holder.session_data:
        return None
    values = demo.state_holder.session_data[session_hash].state_data.values()
    return next((v for v in values if isinstance(v, Session)), None)


def test_sessions_beyond_capacity_are_dropped_and_freed(real_weights_dir, photos, monkeypatch):
    capacity = 3
    monkeypatch.setattr(app, "MAX_SESSIONS", capacity)  # the production LRU, made small to test quickly
    demo = app.build_app(str(real_weights_dir / AUGREG))
    port = free_port()
    app.launch(demo, "127.0.0.1", port, prevent_thread_lock=True, quiet=True)
    try:
        analyses, hashes = [], []
        for i in range(capacity + 3):
            client = Client(f"http://127.0.0.1:{port}/", verbose=False)  # a new visitor each time
            analyze(client, photos[i % len(photos)])
            hashes.append(client.session_hash)
            analyses.append(weakref.ref(_session_state(demo, client.session_hash).analysis))
        gc.collect()
        assert demo.state_session_capacity == capacity and len(demo.state_holder.session_data) <= capacity
        kept = [_session_state(demo, h) is not None for h in hashes]
        assert kept == [False] * 3 + [True] * capacity  # the least recently used sessions went first
        alive = [ref() is not None for ref in analyses]
        assert alive == kept, "a dropped session's analysis (its attention maps) is still in memory"
    finally:
        demo.close()
