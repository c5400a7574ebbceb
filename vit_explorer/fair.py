"""Queues that stay fair: every event that joins Gradio's queue passes ``FairQueue.push`` first, which refuses it,
with one sentence in the visitor's language, when its kind of work already has too much waiting.

The kinds are Gradio's concurrency groups (``vit_explorer.events``: "model", "render"; ``vit_explorer.heavy``: one
per heavy job), and any other event its own. Each has a ``limits.Queue``: how many of its events may wait, all
visitors together; how many one visitor's address may have waiting or running (so a flood of new browser sessions
from one address fills its own share, not the queue: another visitor is served after at most a few of its jobs);
how many one browser session may have (one heavy job per visitor); and the bytes of the bodies one address has
waiting (``Limits.queued_bytes_per_client``). Within a kind the addresses take turns (``_take_turns``): a new event
waits behind the events of lower rounds only, so a visitor's first event is served after at most one event of each
other address, however many one address has queued. A refusal says when to try again, from how long the event's
function has taken so far and how much waits before it ("busy, try again in about N s").

Nothing is created for a refused event: its function is found without looking the session up (Gradio's lookup makes
a session for a new id). The visitor's address is the connection's, or the one a trusted proxy names (uvicorn's
``FORWARDED_ALLOW_IPS``). The session's address is remembered for ``vit_explorer.sessions``. Every warning an
event shows passes ``door.readable`` here (no long echo of what a visitor typed).
"""
from __future__ import annotations

import math

from gradio import queueing

from viz.i18n import language, language_from_header, t

from . import heavy, limits
from .door import readable

UNKNOWN_SECONDS = 5.0          # an event's duration before it has run once


def address_of(request) -> str:
    client = getattr(request, "client", None)
    return getattr(client, "host", None) or "unknown"


def body_bytes(request) -> int:
    """The bytes of a request's body (its Content-Length; what a waiting event holds in memory)."""
    headers = getattr(request, "headers", None)
    try:
        return int(headers.get("content-length", 0)) if headers is not None else 0
    except ValueError:
        return 0


class FairQueue(queueing.Queue):
    """Gradio's queue, with ``push`` refusing what would overfill a kind of work (module docstring)."""

    async def push(self, body, request, username):
        fn = self.blocks.fns.get(body.fn_index) if body.fn_index is not None else None
        if fn is not None and body.session_hash:
            address = address_of(request)
            refusal = self.refusal(fn, body.session_hash, address, self._language(body.session_hash, request), request)
            if refusal is not None:
                return False, refusal, "error"
            owned_by = getattr(self.blocks.state_holder, "owned_by", None)
            if owned_by is not None:
                owned_by(body.session_hash, address)
        joined = await super().push(body, request, username)
        if joined[0]:
            self._take_turns(joined[1])
        return joined

    def _take_turns(self, event_id: str) -> None:
        """Put a new event where the visitors' addresses take turns: its round is how many events of its address
        already wait in its kind's queue, and it waits behind every event of a lower or equal round only (a flood
        from one address queues behind the first event of each other address)."""
        event = self.event_ids_to_events.get(event_id)
        queue = self.event_queue_per_concurrency_id.get(getattr(event, "concurrency_id", None))
        if event is None or queue is None or event not in queue.queue:
            return
        waiting = queue.queue
        waiting.remove(event)
        address = address_of(event.request)
        event.round = sum(1 for e in waiting if address_of(e.request) == address)
        at = next((i for i, e in enumerate(waiting) if getattr(e, "round", 0) > event.round), len(waiting))
        waiting.insert(at, event)

    def log_message(self, event_id, log, title, level, duration=10, visible=True):
        """A warning or note of a running event, said as a visitor reads it (``door.readable``: no long echo)."""
        super().log_message(event_id, readable(str(log)), title, level, duration, visible)

    # ---- what is waiting and running ----------------------------------------------------------------------------

    def waiting(self, kind: str) -> list:
        queue = self.event_queue_per_concurrency_id.get(kind)
        return list(queue.queue) if queue is not None else []

    def running(self, kind: str | None = None) -> list:
        return [e for job in self.active_jobs if job for e in job
                if e.alive and (kind is None or e.concurrency_id == kind)]

    def refusal(self, fn, session: str, address: str, lang: str, request=None) -> str | None:
        """The sentence that refuses ``fn`` for ``session`` from ``address``, or None when it may join."""
        kind = fn.concurrency_id
        rules = limits.QUEUES.get(kind, limits.OTHER_QUEUE)
        waiting, running = self.waiting(kind), self.running(kind)
        mine = [e for e in (*waiting, *running) if e.session_hash == session]
        if kind in limits.HEAVY_KINDS:
            heavy_jobs = [e for k in limits.HEAVY_KINDS for e in (*self.waiting(k), *self.running(k))]
            if any(e.session_hash == session for e in heavy_jobs):
                return t("message.heavy_one_at_a_time", lang)
            if sum(len(self.waiting(k)) for k in limits.HEAVY_KINDS) >= heavy.QUEUE_MAX:
                return t("message.heavy_queue_full", lang)
        if len(mine) >= rules.per_session:
            return t("message.busy_session", lang, seconds=self.seconds(fn, kind, len(mine)))
        theirs = [e for e in (*waiting, *running) if address_of(e.request) == address]
        if len(theirs) >= rules.per_client or \
                sum(body_bytes(e.request) for e in waiting if address_of(e.request) == address) + \
                body_bytes(request) > limits.LIMITS.queued_bytes_per_client:
            return t("message.busy_address", lang, seconds=self.seconds(fn, kind, len(theirs)))
        if len(waiting) >= rules.waiting:
            return t("message.busy", lang, seconds=self.seconds(fn, kind, len(waiting)))
        return None

    def seconds(self, fn, kind: str, ahead: int) -> int:
        """About how long until one more event of ``kind`` could run: what waits before it, at the pace ``fn`` has
        kept so far, over the kind's concurrency."""
        took = self.process_time_per_fn[fn].avg_time if fn in self.process_time_per_fn else 0
        queue = self.event_queue_per_concurrency_id.get(kind)
        slots = max(1, getattr(queue, "concurrency_limit", 1) or 1)
        return max(1, min(600, math.ceil((ahead + 1) * (took or UNKNOWN_SECONDS) / slots)))

    def _language(self, session: str, request) -> str:
        """The page's language of the session when it has one (never made here), else the browser's."""
        state = self.blocks.state_holder.session_data.get(session)
        lang_state = getattr(self.blocks, "lang_state", None)
        if state is not None and lang_state is not None and lang_state._id in state.state_data:
            try:
                return language(state.state_data[lang_state._id])
            except (TypeError, ValueError):
                pass
        headers = getattr(request, "headers", None)
        return language_from_header(headers.get("accept-language") if headers is not None else None)


def install(blocks) -> None:
    """Make the queue ``blocks.queue()`` set up a ``FairQueue`` (nothing has joined it yet)."""
    blocks._queue.__class__ = FairQueue
