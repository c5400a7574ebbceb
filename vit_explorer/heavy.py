"""Heavy jobs: the page's events that run for seconds to minutes (a trust check, a look inside, a comparison, an
animation, a training run's snapshots), and what stops any job whose visitor has gone.

Each kind runs one at a time in its own concurrency group (``GROUPS``), apart from the analyses, so an analysis
waits for one model step at most (``state.MODEL_TURN``), never for a heavy job. When one joins the queue
(``vit_explorer.fair``): a browser session has at most one heavy job waiting or running, and at most ``QUEUE_MAX``
wait at once, all visitors together.

**Stopped at the next step.** Gradio stops iterating a generator handler when its event is cancelled or its visitor
leaves (the trust check and the inside views yield after each step), but a plain handler runs on in its thread after
Gradio has let its event go. So every step of every job asks ``still_wanted``: the model's turn (``state.ModelTurn``)
and the memory budget (``vit_explorer.budget``) raise ``Stopped`` when the event they run for was cancelled, its
visitor's page was closed or its stream dropped; nothing of a stopped job is cached.

What is waiting and running is read from Gradio 6's queue (``Blocks._queue``: the events per concurrency group,
those running, the events by id); ``tests/security`` proves the limits through the server, so a Gradio release that
changes these attributes fails there, not in production.
"""
from __future__ import annotations

from gradio.context import LocalContext

from .door import Refusal

GROUPS = ("trust", "inside", "compare", "video")   # concurrency ids of the heavy jobs, one job at a time in each
QUEUE_MAX = 8                             # heavy jobs waiting at once, all visitors together


class Stopped(Refusal):
    """The job's visitor cancelled it or left: it stops here (a gr.Error, so that nothing of it is cached and the
    page's handler says no more)."""

    def __init__(self, lang: str = "en"):
        super().__init__("message.job_stopped", lang)


def event(group: str) -> dict:
    """An event's settings for a heavy job of ``group``: its own concurrency group, one at a time, one trigger
    while it runs, not in the API's description."""
    if group not in GROUPS:
        raise ValueError(f"Unknown heavy group {group!r}! Expected one of {GROUPS}.")
    return dict(concurrency_id=group, concurrency_limit=1, trigger_mode="once", api_visibility="private")


def still_wanted() -> bool:
    """Whether the event this thread runs for is still wanted: True outside an event (a script, a test), False once it
    was cancelled (Gradio forgets it), its page was closed or its stream of messages dropped."""
    blocks = LocalContext.blocks.get(None)
    event_id = LocalContext.event_id.get(None)
    queue = getattr(blocks, "_queue", None)
    if event_id is None or queue is None:
        return True
    found = queue.event_ids_to_events.get(event_id)
    return found is not None and found.alive and not found.closed


def check() -> None:
    """``Stopped`` when the event this thread runs for is no longer wanted (``still_wanted``)."""
    if not still_wanted():
        raise Stopped()
