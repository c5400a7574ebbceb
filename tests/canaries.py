"""Files that say whether anything opened them: a FIFO canary, for the tests that prove a path is refused before it
is opened (checkpoints, the page, the attacks on a served app)."""
from __future__ import annotations

import os
import threading
from pathlib import Path

CANARY_BYTES = b"FIFO-CANARY-BYTES\n"


class FifoCanary:
    """A FIFO (named pipe) at ``path`` and a thread that waits to open it for writing. Opening a FIFO for writing
    returns only once a reader has opened it, so ``opened`` is set exactly when something opened the FIFO to read
    it; the thread then writes ``CANARY_BYTES`` and closes, so no reader is left blocked. ``close()`` releases the
    waiting thread (by opening the read end itself, which does not count) and removes the FIFO.

        with FifoCanary(tmp_path / "model.pt") as canary:
            ...                                   # hand canary.path to whatever must not open it
            assert not canary.opened.is_set()
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        os.mkfifo(self.path)
        self.opened = threading.Event()
        self._closing = False
        self._thread = threading.Thread(target=self._wait_for_a_reader, name=f"canary {self.path.name}", daemon=True)
        self._thread.start()

    def _wait_for_a_reader(self) -> None:
        with open(self.path, "wb", buffering=0) as fifo:     # blocks until a reader opens the FIFO
            if self._closing:
                return
            self.opened.set()
            try:
                fifo.write(CANARY_BYTES)
            except BrokenPipeError:                           # the reader has gone already
                pass

    def close(self) -> None:
        self._closing = True
        release = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)    # lets the writer's open return
        try:
            self._thread.join(timeout=10)
        finally:
            os.close(release)
        self.path.unlink(missing_ok=True)

    def __enter__(self) -> "FifoCanary":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
