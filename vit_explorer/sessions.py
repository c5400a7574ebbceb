"""The browser sessions: bounded in bytes, the ones that hold a visitor's work kept before those that hold nothing,
and the uploads deleted with the sessions that used them.

Gradio keeps each browser tab's state (the ``gr.State`` values: which analysis it shows, what was clicked) in a
``StateHolder`` that forgets the oldest session past a count, and any request with a new session id makes one (an
event that skips the queue, a tab opened): a hundred fresh ids used to erase everyone's work. ``Sessions`` is that
holder bounded by memory instead (``Limits.sessions_memory``; a session weighs the copy of the page's config Gradio
makes for it, measured once, and its states). When they pass it, it forgets first the sessions that hold no work (no
state holding an object: nothing analysed, only the page's language or open tab), least recently used first; only
then sessions with work, taking first from the visitor's address that holds the most. A session whose event is
waiting or running is never forgotten. A flood of new ids forgets the flood.

A browser tab that was closed (its heartbeat ended, and no event of it came since) is forgotten after
``Limits.closed_session_seconds`` on a public server (Gradio keeps it an hour), and the photos it used go with it: an upload is deleted once no session remembered
uses it, or after ``Limits.unused_upload_seconds`` when none ever did (Gradio's own ``delete_cache`` keeps the rest
of its cache, the pictures sent to visitors, an hour). Which session used which upload is said by the door
(``used``, called by ``vit_explorer.door.uploaded_photo``).
"""
from __future__ import annotations

import logging
import os
import threading
import time
import tracemalloc
from collections import Counter
from contextvars import ContextVar

from gradio.context import LocalContext
from gradio.state_holder import SessionState, StateHolder

from viz.cache import nbytes

from . import limits

log = logging.getLogger(__name__)
SWEEP_SECONDS = 15.0             # how often closed sessions and unused uploads are looked for
SESSION: ContextVar[str | None] = ContextVar("session", default=None)   # the session whose event is being processed


def holds_work(state: SessionState) -> bool:
    """Whether a session holds a visitor's work: a state holding an object (an analysis's ``Session``, what a tab
    shows), not only strings and numbers (the page's language, the open tab) or nothing."""
    return any(value is not None and not isinstance(value, (str, int, float, bool))
               for value in state.state_data.values())


def measured_weight(blocks) -> int:
    """Bytes one new session costs: the copy of the page's config Gradio makes for it (tracemalloc, once)."""
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        session = SessionState(blocks)
        weight = tracemalloc.get_traced_memory()[0] - before
        del session
    finally:
        if started:
            tracemalloc.stop()
    return max(weight, 1)


class Sessions(StateHolder):
    """Gradio's ``StateHolder``, bounded by memory (module docstring); ``used`` and ``sweep`` for the uploads."""

    def __init__(self):
        super().__init__()
        self.weight = 400 * 2**10            # bytes of one session's config copy (measured in ``set_blocks``)
        self.owners: dict[str, str] = {}      # session -> the visitor's address that made it (``vit_explorer.fair``)
        self.uploads: dict[str, set[str]] = {}  # session -> the uploaded files it used
        self.closed_since: dict[str, float] = {}  # session -> when it was first seen closed (time.time())
        self.forgotten = 0                   # sessions forgotten to make room (what a test reads)
        self._lock = threading.RLock()
        self._swept = 0.0

    def set_blocks(self, blocks) -> None:
        super().set_blocks(blocks)
        self.capacity = 2**62                # the count no longer bounds anything: ``_make_room`` does
        self.weight = measured_weight(blocks)

    # ---- making room ---------------------------------------------------------------------------------------------

    def __getitem__(self, session_id: str) -> SessionState:
        with self._lock:
            new = session_id not in self.session_data
            state = super().__getitem__(session_id)
            if new:
                self._make_room(keep=session_id)
            return state

    def weigh(self, state: SessionState) -> int:
        return self.weight + sum(nbytes(v) for v in state.state_data.values())

    def total(self) -> int:
        with self._lock:
            return sum(self.weigh(s) for s in self.session_data.values())

    def _busy(self) -> set[str]:
        """Sessions with an event waiting or running (never forgotten)."""
        queue = getattr(getattr(self, "blocks", None), "_queue", None)
        pending = dict(getattr(queue, "pending_event_ids_session", {}) or {})
        return {session for session, events in pending.items() if events}

    def _make_room(self, keep: str) -> None:
        budget = limits.LIMITS.sessions_memory
        weights = {sid: self.weigh(s) for sid, s in self.session_data.items()}
        total = sum(weights.values())
        if total <= budget:
            return
        busy = self._busy() | {keep}
        idle = [sid for sid in self.session_data if sid not in busy]        # least recently used first
        empty = [sid for sid in idle if not holds_work(self.session_data[sid])]
        worked = [sid for sid in idle if holds_work(self.session_data[sid])]
        for sid in empty:
            if total <= budget:
                return
            total -= weights[sid]
            self.forget(sid)
        held = Counter(self.owners.get(sid, "") for sid in worked)
        while total > budget and worked:
            most = max(held, key=held.get)                # the address holding the most sessions gives one up
            sid = next(s for s in worked if self.owners.get(s, "") == most)
            worked.remove(sid)
            held[most] -= 1
            total -= weights[sid]
            self.forget(sid)

    def forget(self, session_id: str) -> None:
        """Drop a session, its states and what it remembered; its uploads go at the next sweep when no other session
        uses them."""
        with self._lock:
            self.delete_state(session_id)
            self.session_data.pop(session_id, None)
            self.time_last_used.pop(session_id, None)
            self.owners.pop(session_id, None)
            self.closed_since.pop(session_id, None)
            self.forgotten += 1
            gone = self.uploads.pop(session_id, set())
        self._delete_unused(gone, unused_for=0.0)

    def owned_by(self, session_id: str, address: str) -> None:
        """Remember which visitor's address made a session (its first queued event)."""
        with self._lock:
            self.owners.setdefault(session_id, address)

    # ---- uploads ---------------------------------------------------------------------------------------------------

    def used(self, session_id: str, path: str) -> None:
        """The session used this uploaded file (a photo it analysed): the file stays while the session is kept."""
        with self._lock:
            self.uploads.setdefault(session_id, set()).add(path)

    def in_use(self) -> set[str]:
        with self._lock:
            return {path for sid, paths in self.uploads.items() if sid in self.session_data for path in paths}

    def _delete_unused(self, paths, unused_for: float) -> None:
        """Delete the uploads among ``paths`` that no remembered session uses, older than ``unused_for`` seconds
        (public servers only: a server for this machine alone leaves its cache to Gradio)."""
        if not limits.LIMITS.public or not paths:
            return
        keep = self.in_use()
        now = time.time()
        upload_set = getattr(getattr(self, "blocks", None), "upload_file_set", set())
        for path in list(paths):
            if path in keep:
                continue
            try:
                if now - os.lstat(path).st_ctime < unused_for:
                    continue
                os.remove(path)
            except FileNotFoundError:
                pass
            except OSError as err:
                log.info("An upload could not be deleted: %s", err)
                continue
            upload_set.discard(path)
            try:
                os.rmdir(os.path.dirname(path))          # Gradio's folder named by the file's hash, now empty
            except OSError:
                pass

    # ---- Gradio calls this every second ----------------------------------------------------------------------------

    def delete_all_expired_state(self) -> None:
        super().delete_all_expired_state()
        now = time.time()
        if now - self._swept < SWEEP_SECONDS:
            return
        self._swept = now
        self.sweep(now)

    def sweep(self, now: float | None = None) -> None:
        """Forget the sessions closed for longer than ``Limits.closed_session_seconds`` (public servers), and delete the
        uploads nobody uses."""
        now = time.time() if now is None else now
        if limits.LIMITS.public:
            with self._lock:
                for sid, state in list(self.session_data.items()):
                    if not getattr(state, "is_closed", False):
                        continue
                    since = self.closed_since.setdefault(sid, now)
                    used = self.time_last_used.get(sid)
                    if used is not None and used.timestamp() > since:     # used again since: the page came back
                        state.is_closed = False
                        self.closed_since.pop(sid)
                busy = self._busy()
                expired = [sid for sid, since in self.closed_since.items()
                           if now - since > limits.LIMITS.closed_session_seconds and sid not in busy]
            for sid in expired:
                self.forget(sid)
        upload_set = getattr(getattr(self, "blocks", None), "upload_file_set", set())
        self._delete_unused(set(upload_set), unused_for=limits.LIMITS.unused_upload_seconds)


def install(blocks) -> Sessions:
    """Put a ``Sessions`` in place of the launched app's state holder, keeping any session already made."""
    app = blocks.server_app
    old = app.state_holder
    sessions = Sessions()
    sessions.set_blocks(blocks)
    with old.lock:
        sessions.session_data.update(old.session_data)
        sessions.time_last_used.update(old.time_last_used)
        app.state_holder = sessions
    return sessions


def current() -> Sessions | None:
    """The sessions of the app whose event is running in this thread, if it has them."""
    blocks = LocalContext.blocks.get(None)
    app = getattr(blocks, "server_app", None)
    holder = getattr(app, "state_holder", None)
    return holder if isinstance(holder, Sessions) else None


def current_session() -> str | None:
    """The session id of the event being processed (``SESSION``, set by ``door.Explorer.process_api`` while its inputs
    are read and its handler runs; None outside an event)."""
    return SESSION.get() or getattr(LocalContext.request.get(None), "session_hash", None)
