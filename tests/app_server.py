"""The app served on 127.0.0.1 (a free port) inside the test process, for the API and browser tests.

Gradio names output files by a content hash under one machine-wide folder and deletes them when an app
closes, so a test run beside another one (or beside a running app) could lose the files it is about to
download. Importing this module gives the process a folder of its own ($GRADIO_TEMP_DIR, which Gradio reads
when components are built and when an app launches), so import it before building any app.
"""
from __future__ import annotations

import atexit
import os
import shutil
import socket
import tempfile
from contextlib import contextmanager

from vit_explorer.layout import build_app
from vit_explorer.server import launch

if "GRADIO_TEMP_DIR" not in os.environ:
    os.environ["GRADIO_TEMP_DIR"] = tempfile.mkdtemp(prefix="vit-explorer-tests-")
    atexit.register(shutil.rmtree, os.environ["GRADIO_TEMP_DIR"], ignore_errors=True)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running_app(weights: str):
    """Build the app with ``weights`` as its model, serve it as ``python app.py`` would, yield its URL."""
    demo = build_app(weights)
    port = free_port()
    launch(demo, "127.0.0.1", port, prevent_thread_lock=True, quiet=True)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        demo.close()
