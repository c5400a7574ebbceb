"""Start ``python app.py`` in a child process on 127.0.0.1 and talk to it through gradio_client, as a user would.

The benchmark reads the serving process's peak RSS from /proc/<pid>/status; only a separate process
gives a number that belongs to the app alone.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class AppProcess:
    """``with AppProcess(weights) as app:`` serves ``app.py --weights weights`` until the block ends.

    ``app.pid`` is the serving process, ``app.url`` its address, ``app.client()`` a new gradio_client Client
    (a new client is a new session, with its own gr.State), ``app.temp_dir`` its Gradio cache. ``args``: more
    command-line flags (``["--public"]``); ``env``: more environment variables.
    """

    def __init__(self, weights: str | os.PathLike, startup_timeout: float = 180.0, log: str | os.PathLike | None = None,
                 args: tuple[str, ...] = (), env: dict[str, str] | None = None):
        self.weights, self.startup_timeout = str(weights), startup_timeout
        self.args, self.env = tuple(args), dict(env or {})
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log_path = Path(log) if log else None
        self.process: subprocess.Popen | None = None
        self.temp_dir: str | None = None
        self._log = None

    @property
    def pid(self) -> int:
        return self.process.pid

    def __enter__(self) -> "AppProcess":
        self.temp_dir = tempfile.mkdtemp(prefix="vit-explorer-app-")  # Gradio's file cache, this process's own
        env = {**os.environ, "VIT_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONUNBUFFERED": "1",
               "GRADIO_TEMP_DIR": self.temp_dir, **self.env}
        self._log = open(self.log_path, "wb") if self.log_path else None
        self.process = subprocess.Popen([sys.executable, str(REPO / "app.py"), "--weights", self.weights,
                                         "--host", "127.0.0.1", "--port", str(self.port), *self.args], cwd=REPO, env=env,
                                        stdout=self._log or subprocess.DEVNULL, stderr=subprocess.STDOUT)
        self._wait_until_serving()
        return self

    def _wait_until_serving(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"app.py exited with code {self.process.returncode} before serving "
                                   f"(log: {self.log_path or 'not kept'}).")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.5)
        self.__exit__(None, None, None)
        raise TimeoutError(f"app.py did not serve on port {self.port} within {self.startup_timeout:.0f} s.")

    def client(self, **kwargs):
        from gradio_client import Client
        return Client(self.url, verbose=False, **kwargs)

    def __exit__(self, *exc) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._log is not None:
            self._log.close()
        shutil.rmtree(self.temp_dir, ignore_errors=True)
