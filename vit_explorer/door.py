"""The door: what a visitor sends is checked here before anything is opened, written, loaded or run, and whatever
the server cannot read gets one human message in the visitor's language, never a Python error's text.

- **Photos come only from uploads** (``uploaded_photo``, called by every ``components.PhotoInput``): a file is
  accepted only when, resolved with its symlinks followed, it is a regular file inside Gradio's upload folder
  (where uploads, pasted photos and the example photos are kept). Anything else (a server path, a URL) is refused
  before it is opened, with one message whatever the path: nobody learns whether a file exists, how large it is or
  what it holds. Gradio 6.31 checks this for file payloads that carry its ``gradio.FileData`` mark, but an image
  payload without the mark goes to the component as it is (``tests/security`` keeps an eye on that gap).
- **An inline photo** (a ``data:`` URL, as a pasted image may arrive) is refused before it is written when it holds
  more than an upload may (``inline_photo``).
- **Numbers**: NaN and infinities are refused before any component sees them (``Explorer.process_api``).
- **What the page cannot read** (a payload of the wrong shape, event data that is not what the event sends, a value
  no component accepts): one message, and the error is logged on the server for whoever runs it.
- **Echoes**: a message never repeats more than ``Limits.echo_chars`` characters of what a visitor typed, nor a
  number of more than ``LONG_NUMBER`` digits, nor (on a public server) where a file lies on the server (``readable``:
  every error and warning of an event passes it).

``Refusal`` is the gr.Error these raise: a catalogue message, said in the language of the visitor's page.
The models' guard is ``vit_explorer.state.model_source``; the limits on heavy jobs are ``vit_explorer.heavy``.
"""
from __future__ import annotations

import logging
import math
import os
import re
import stat
from contextvars import ContextVar
from pathlib import Path

import gradio as gr
from gradio import processing_utils
from gradio.exceptions import InvalidPathError
from gradio.utils import get_upload_folder

from viz.i18n import language, t

from . import limits, sessions

log = logging.getLogger(__name__)
LONG_NUMBER = 16              # digits a message repeats of a number at most (then "…")
MESSAGE_CHARS = 3000          # the longest message said, whatever it repeats
TYPED: ContextVar[tuple[str, ...]] = ContextVar("typed", default=())   # the running event's long texts
SERVER_PATH = re.compile(r"(?<![\w.:/~-])(?:/[\w.@+~-]+)+/([\w.@+~-]+)")      # /a/b/name -> name (not a URL's)


class Refusal(gr.Error):
    """A gr.Error whose text is the catalogue message ``key`` (filled with ``values``) in ``lang``. ``str()`` is
    the text itself (Gradio's queue answers a refused event with ``str(error)``), and ``Explorer`` says it again
    in the language of the visitor's page."""

    def __init__(self, key: str, lang: str = "en", **values):
        self.key, self.values = key, values
        super().__init__(readable(t(key, lang, **values)), print_exception=False)

    def __str__(self) -> str:
        return self.message

    def said_in(self, lang: str) -> "Refusal":
        return Refusal(self.key, lang, **self.values)


# ---- echoes ------------------------------------------------------------------------------------------------------

def shortened(text: str) -> str:
    """``text`` cut to ``Limits.echo_chars`` characters, "…" saying that it was."""
    return text[:limits.LIMITS.echo_chars] + "…"


def readable(message: str, typed: tuple[str, ...] | None = None) -> str:
    """A message as a visitor reads it: each long text of theirs it repeats (``typed``, default the running event's,
    ``TYPED``) cut to ``Limits.echo_chars`` characters, any other run of more than twice that many characters
    without a space cut too, numbers to ``LONG_NUMBER`` digits, the whole to ``MESSAGE_CHARS``; on a public server
    a path of the server's said by its file's name alone."""
    limit = limits.LIMITS.echo_chars
    for text in sorted(TYPED.get() if typed is None else typed, key=len, reverse=True):
        if len(text) > limit and text in message:
            message = message.replace(text, shortened(text))
    if limits.LIMITS.public:                      # a server path says where things lie: its file's name is enough
        message = SERVER_PATH.sub(lambda m: m.group(1), message)
    message = re.sub(r"\S{%d,}" % (2 * limit + 1), lambda m: shortened(m.group()), message)
    message = re.sub(r"\d{%d,}" % (LONG_NUMBER + 1), lambda m: m.group()[:LONG_NUMBER] + "…", message)
    return message if len(message) <= MESSAGE_CHARS else message[:MESSAGE_CHARS] + "…"


def long_texts(value, found: set | None = None) -> set:
    """Every string in a payload longer than ``Limits.echo_chars`` (and its stripped form): what an echo cuts."""
    found = set() if found is None else found
    if isinstance(value, str):
        if len(value) > limits.LIMITS.echo_chars:
            found.update({value, value.strip()})
    elif isinstance(value, dict):
        for v in value.values():
            long_texts(v, found)
    elif isinstance(value, (list, tuple)):
        for v in value:
            long_texts(v, found)
    return found


# ---- photos --------------------------------------------------------------------------------------------------

def upload_folders() -> tuple[str, ...]:
    """Where Gradio keeps what visitors sent (uploads, pasted photos, the example photos it copied), resolved."""
    return (os.path.realpath(get_upload_folder()),)


def uploaded_photo(path: str | None) -> str:
    """``path`` resolved, when it is a regular file inside the upload folder; else a Refusal that is the same for
    every path (nothing outside the folder is opened, and nothing is said about it)."""
    if path and not str(path).startswith(("http://", "https://")):
        real = os.path.realpath(path)                     # symlinks followed: a link out of the folder is outside
        if any(Path(real).is_relative_to(folder) for folder in upload_folders()):
            try:
                if stat.S_ISREG(os.stat(real).st_mode):
                    used(str(path), real)
                    return real
            except OSError:                               # gone, or unreadable: the same answer
                pass
    raise Refusal("message.photo_not_uploaded")


def used(*paths: str) -> None:
    """The running event's session uses these uploaded files: they stay while the session is remembered
    (``vit_explorer.sessions``)."""
    holder, session = sessions.current(), sessions.current_session()
    if holder is not None and session is not None:
        for path in paths:
            holder.used(session, path)


def inline_photo(url: str, cache_dir: str) -> str:
    """A ``data:`` URL photo written into the upload folder, or a Refusal when it holds more than
    ``Limits.inline_photo_bytes`` (within the JSON body's limit), said from its length before anything is decoded or
    written."""
    encoded = url.partition(",")[2]
    size = len(encoded) * 3 // 4 - encoded[-2:].count("=")
    limit = limits.LIMITS.inline_photo_bytes
    if size > limit:
        raise Refusal("message.photo_too_large", size=size / 2**20, limit=limit / 2**20)
    saved = processing_utils.save_base64_to_cache(url, cache_dir)
    used(saved, os.path.realpath(saved))
    return saved


# ---- every event -----------------------------------------------------------------------------------------------

def not_finite(value) -> bool:
    """Whether a payload holds a NaN or an infinity anywhere (JSON as Python's json module reads it)."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(not_finite(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(not_finite(v) for v in value)
    return False


class Explorer(gr.Blocks):
    """The page's Blocks: every event passes ``process_api``, which refuses NaN and infinite numbers, says every
    ``Refusal`` in the language of the visitor's page (``lang_state``, the page's language), and turns any other
    error (what the page cannot read) into one message; the error itself goes to the server's log. A value a
    component refuses (``preprocess_data``: a choice that is not among its choices, a slider value that is no
    number) gets the same one message."""

    lang_state: gr.State | None = None       # set by the layout: the page's language, per browser tab

    async def preprocess_data(self, block_fn, inputs, state, explicit_call: bool = False):
        try:
            return await super().preprocess_data(block_fn, inputs, state, explicit_call)
        except (Refusal, InvalidPathError):
            raise
        except Exception:            # gr.Error from a component too: its text names Python types and values
            log.info("A value no component of the page accepts was refused (message.bad_request)", exc_info=True)
            raise Refusal("message.bad_request") from None

    async def process_api(self, block_fn, inputs, state=None, *args, **kwargs):
        lang = self._language(state)
        typed = TYPED.set(tuple(long_texts(inputs)))     # what every message of this event must not repeat whole
        session = sessions.SESSION.set(kwargs.get("session_hash"))   # whose uploads the photo inputs use
        try:
            if not_finite(inputs):
                raise Refusal("message.not_a_number")
            return await super().process_api(block_fn, inputs, state, *args, **kwargs)
        except Refusal as refusal:
            raise refusal.said_in(lang) from None
        except InvalidPathError:       # Gradio's own check of a marked file payload: the same answer as ours
            raise Refusal("message.photo_not_uploaded", lang) from None
        except gr.Error as err:
            raise gr.Error(readable(str(err.message)), print_exception=False) from None
        except Exception:
            log.exception("A request the page could not handle (the visitor was told: message.bad_request)")
            raise Refusal("message.bad_request", lang) from None
        finally:
            TYPED.reset(typed)
            sessions.SESSION.reset(session)

    def _language(self, state) -> str:
        """The visitor's page language, from the session's state (English when there is none yet)."""
        if state is None or self.lang_state is None:
            return "en"
        try:
            return language(state[self.lang_state._id])
        except (KeyError, TypeError, ValueError):
            return "en"
