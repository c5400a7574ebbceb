"""Every limit that keeps one visitor from taking a server down, in one place (docs/app.md, "The limits of a public
server", lists each with its default and how to raise it).

Every server keeps the limits that also protect it from a mistake or a runaway client (the memory budget, request
bodies, the queues, sessions in bytes, echoes); a server others can reach (``public``: ``--public``, ``--host
0.0.0.0``, ``--share``) keeps as well those aimed at strangers: uploads per address, instant events per address,
closed sessions and unused uploads deleted within minutes, no server path in a message. ``LIMITS`` holds the values
the server runs with (``vit_explorer.server`` sets them at start-up, ``VIT_EXPLORER_LIMITS`` raises any).

What each limit bounds, and where it is kept:

- **memory** (``max_memory``, ``--max-memory``): the memory every job running at once may need at its peak, above
  what the server holds at rest (the model and the caches): ``vit_explorer.budget`` admits a job only when its peak,
  estimated from its shapes (``viz.analysis.peak``), fits;
- **request bodies** (``json_bytes``, ``inline_photo_bytes``, ``upload_bytes``, ``upload_files``,
  ``upload_bytes_per_client``): ``vit_explorer.intake``, before a body is read into memory;
- **sessions** (``sessions_memory``, ``closed_session_seconds``): ``vit_explorer.sessions``, bounded in bytes, the
  sessions that hold an analysis kept before those that hold nothing;
- **uploads on disk** (``unused_upload_seconds``): ``vit_explorer.sessions``, deleted with their sessions;
- **queues** (``QUEUES``, ``queued_bytes_per_client``): ``vit_explorer.fair``, per kind of work, for all visitors,
  per visitor's address and per page;
- **events that skip the queue** (``instant_per_second``, ``instant_burst``): ``vit_explorer.intake``, per address;
- **echoes** (``echo_chars``, ``typed_text_chars``, ``typed_texts``): ``vit_explorer.door``, what a message repeats
  of a visitor's text, and how much of CLIP's typed texts is read.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, fields

from vit.image_file import MAX_BYTES

GB = 2**30
MB = 2**20
PUBLIC_MAX_MEMORY = 6 * GB       # a 16 GB Hugging Face CPU Space: ~2.5 GB at rest (ViT-B/16 and full caches), 6 GB
                                 # of jobs, the rest for the allocator's slack and the system


@dataclass(frozen=True)
class Queue:
    """One kind of work's queue: how many of its events may wait at once, in all and per visitor's address."""
    waiting: int                 # events waiting, all visitors together
    per_client: int              # events waiting or running, one address
    per_session: int             # events waiting or running, one browser tab (one heavy job per visitor: 1)


# the kinds of work (Gradio's concurrency groups, vit_explorer.events and vit_explorer.heavy), and any other event
QUEUES: dict[str, Queue] = {
    "model": Queue(waiting=96, per_client=48, per_session=4),        # analyses, explanations, walks: one at a time
    "render": Queue(waiting=64, per_client=24, per_session=6),       # redraws from a cached analysis, four at once
    "trust": Queue(waiting=8, per_client=2, per_session=1),          # the heavy jobs (vit_explorer.heavy)
    "inside": Queue(waiting=8, per_client=2, per_session=1),
    "compare": Queue(waiting=8, per_client=2, per_session=1),
}
OTHER_QUEUE = Queue(waiting=64, per_client=16, per_session=4)         # the page's own small events (its language…)
HEAVY_KINDS = ("trust", "inside", "compare")                         # one of these at a time per browser tab


@dataclass
class Limits:
    """The values a server runs with (module docstring)."""
    public: bool = False
    max_memory: int = 0                       # bytes of jobs' peaks at once; 0: not set (``memory_default``)
    json_bytes: int = 8 * MB                  # one JSON request body (an event and its inline photo)
    inline_photo_bytes: int = 5 * MB          # a photo sent inline (a data: URL) in an event: within json_bytes
    queued_bytes_per_client: int = 64 * MB    # the bodies of one address's events waiting in the queue
    upload_bytes: int = MAX_BYTES + MB        # one upload request: one photo at the largest size and its framing
    upload_files: int = 4                     # files in one upload request (the page sends one)
    upload_bytes_per_client: int = 256 * MB   # bytes one address may upload in ``upload_window`` seconds
    upload_window: float = 600.0
    unused_upload_seconds: float = 300.0      # an upload no session uses is deleted after this (public)
    closed_session_seconds: float = 600.0     # a closed browser tab is forgotten after this, with its uploads (public)
    sessions_memory: int = 48 * MB            # the browser tabs' state: ~0.4 MB each (Gradio copies the page's config)
    instant_per_second: float = 10.0          # events that skip the queue, per address (a bucket of instant_burst)
    instant_burst: int = 40
    echo_chars: int = 60                      # a visitor's text repeated in a message: at most this many characters
    typed_text_chars: int = 300               # one of CLIP's typed texts (it reads 77 tokens of it)
    typed_texts: int = 32                     # CLIP's typed texts scored or explained at once

    @property
    def memory(self) -> int:
        """The memory budget of the jobs, in bytes."""
        return self.max_memory or memory_default(self.public)


def memory_default(public: bool) -> int:
    """``--max-memory``'s default: ``PUBLIC_MAX_MEMORY`` on a server others can reach; on one for this machine alone,
    three quarters of the machine's memory (a job that would need more is refused instead of swapping)."""
    if public:
        return PUBLIC_MAX_MEMORY
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * 3 // 4)
    except (ValueError, OSError, AttributeError):      # no sysconf (Windows): the public default
        return PUBLIC_MAX_MEMORY


LIMITS = Limits()       # read as limits.LIMITS.<name> where it is needed: start-up and tests change its fields
ENVIRONMENT = "VIT_EXPLORER_LIMITS"    # "sessions_memory=64M,upload_files=2": any limit, without editing this file


def from_environment(text: str | None = None) -> dict:
    """The limits a server's environment sets (``VIT_EXPLORER_LIMITS``: name=value pairs separated by commas; sizes
    such as 64M, seconds and counts as numbers); ValueError naming an unknown limit or a value that is no number."""
    text = os.environ.get(ENVIRONMENT, "") if text is None else text
    known = {f.name: f.type for f in fields(Limits) if f.name != "public"}
    changes = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = part.partition("=")
        name = name.strip()
        if name not in known:
            raise ValueError(f"Unknown limit {name!r} in {ENVIRONMENT}! Expected one of {', '.join(known)}.")
        value = value.strip()
        if known[name] == "float":
            changes[name] = float(value)
        elif value[-1:].lower() in "kmgt" and value[:-1].replace(".", "", 1).isdigit():
            changes[name] = size_arg(value)
        else:
            changes[name] = int(value)
    return changes


def apply_environment() -> None:
    """Set the limits ``VIT_EXPLORER_LIMITS`` names (start-up)."""
    for name, value in from_environment().items():
        setattr(LIMITS, name, value)


def size_arg(text: str) -> int:
    """A size in bytes, or a number with K, M, G or T (powers of 1024): "6G", "512M", "1.5G"; ValueError else."""
    units = {"k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
    value = str(text).strip().lower().removesuffix("b").removesuffix("i")
    factor = units.get(value[-1:], 1) if value else 1
    number = value[:-1] if value[-1:] in units else value
    try:
        size = int(float(number) * factor)
    except ValueError:
        raise ValueError(f"expected a size such as 6G or 512M but got {text!r}") from None
    if size < 0:
        raise ValueError(f"expected a size such as 6G or 512M but got {text!r}")
    return size


def memory_arg(text: str) -> int:
    """``--max-memory``'s value (``size_arg``), at least 64M."""
    size = size_arg(text)
    if size < 64 * MB:
        raise ValueError(f"expected at least 64M (a job needs its model's pass) but got {text!r}")
    return size
