"""Heavy jobs: the page's events that run for seconds to minutes (a trust check, a look inside, a comparison, an
animation, a training run's snapshots), and the limits that keep them from stalling other visitors.

Each kind runs one at a time in its own concurrency group (``GROUPS``), apart from the analyses, so an analysis
waits for one model step at most (``state.MODEL_TURN``), never for a heavy job. At the door (``door``, Gradio's
validator of the event, which runs when the event asks to join the queue, before it is queued):

- a browser session has at most one heavy job waiting or running (a second is refused with a message);
- at most ``QUEUE_MAX`` heavy jobs wait at once, all visitors together (more are refused: "try again in a minute").

The stepwise jobs (the trust check, the inside views) are generators that yield after each step, so a job
cancelled by its visitor (or whose visitor has gone) stops at its next step: Gradio stops iterating it.

What is waiting and running is read from Gradio 6's queue (``Blocks._queue``: the events waiting per concurrency
group, and those running); ``tests/security`` proves the limits through the server, so a Gradio release that
changes these attributes fails there, not in production.
"""
from __future__ import annotations

import inspect
from typing import Callable

import gradio as gr
from gradio.context import LocalContext

from .door import Refusal

GROUPS = ("trust", "inside", "compare", "video")   # concurrency ids of the heavy jobs, one job at a time in each
QUEUE_MAX = 8                             # heavy jobs waiting at once, all visitors together


def event(group: str) -> dict:
    """An event's settings for a heavy job of ``group``: its own concurrency group, one at a time, one trigger
    while it runs, not in the API's description (``validator`` is added by ``Page.wire``)."""
    if group not in GROUPS:
        raise ValueError(f"Unknown heavy group {group!r}! Expected one of {GROUPS}.")
    return dict(concurrency_id=group, concurrency_limit=1, trigger_mode="once", api_visibility="private")


def waiting_and_running(blocks: gr.Blocks) -> tuple[list, list]:
    """(heavy events waiting in the queue, heavy events running), from Gradio's queue."""
    queue = blocks._queue
    waiting = [e for group in GROUPS if (q := queue.event_queue_per_concurrency_id.get(group)) is not None
               for e in q.queue]
    running = [e for job in queue.active_jobs if job for e in job if e.concurrency_id in GROUPS and e.alive]
    return waiting, running


def check(request: gr.Request | None, lang: str = "en") -> None:
    """Refuse a heavy job when its session already has one waiting or running, or too many wait."""
    blocks = LocalContext.blocks.get(None)
    if blocks is None or getattr(blocks, "_queue", None) is None:   # the handler called directly, not through a queue
        return
    waiting, running = waiting_and_running(blocks)
    session = getattr(request, "session_hash", None)
    if session is not None and any(e.session_hash == session for e in (*waiting, *running)):
        raise Refusal("message.heavy_one_at_a_time", lang)
    if len(waiting) >= QUEUE_MAX:
        raise Refusal("message.heavy_queue_full", lang)


def door(names: list[str]) -> Callable:
    """The validator of a heavy event whose inputs are the components ``names`` (in order): Gradio calls it with the
    same inputs when the event asks to join the queue; it refuses (``check``) or lets the event in."""
    def validator(request: gr.Request, *values):
        lang = dict(zip(names, values)).get("lang", "en")
        check(request, lang if isinstance(lang, str) else "en")
        return [gr.validate(True, "")] * len(values)

    validator.__signature__ = inspect.Signature(
        [inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=gr.Request),
         *(inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names)])
    validator.__annotations__ = {"request": gr.Request}
    return validator
