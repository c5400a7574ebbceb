"""The app served on 127.0.0.1 (a free port) inside the test process, for the API and browser tests.

Gradio names output files by a content hash under one machine-wide folder and deletes them when an app
closes, so a test run beside another one (or beside a running app) could lose the files it is about to
download. This process therefore gets a folder of its own, set before Gradio is first imported.
"""
from __future__ import annotations

import os
import socket
import tempfile
from contextlib import contextmanager

os.environ.setdefault("GRADIO_TEMP_DIR", tempfile.mkdtemp(prefix="vit-explorer-tests-"))

import app  # noqa: E402  (after GRADIO_TEMP_DIR, which Gradio reads on import)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running_app(weights: str):
    """Build the app with ``weights`` as its model, serve it as ``python app.py`` would, yield its URL."""
    demo = app.build_app(weights)
    port = free_port()
    app.launch(demo, "127.0.0.1", port, prevent_thread_lock=True, quiet=True)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        demo.close()
