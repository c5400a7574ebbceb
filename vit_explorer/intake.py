"""What comes in over HTTP, bounded before it is read: request bodies, uploads, and the events that skip the queue.

One ASGI middleware (``INTAKE``, first in ``vit_explorer.site.MIDDLEWARE``):

- **a request body** larger than its route allows is refused with 413 before it is read: at once when its
  Content-Length says so, else as soon as the bytes received pass the limit (a chunked body is counted as it comes,
  never held). JSON bodies (an event, its inline photo) are capped at ``Limits.json_bytes``;
- **an upload request** (Gradio's ``/upload``, multipart) at ``Limits.upload_bytes`` and ``Limits.upload_files``
  parts, and each visitor's address at ``Limits.upload_bytes_per_client`` bytes per ``Limits.upload_window``
  seconds. An upload stopped half-way is stopped inside Gradio's own parser (``MultiPartException``), which deletes
  the files it had begun;
- **an event that skips the queue** (Gradio's ``/run/…`` route: the page's instant events, a tab opened) at
  ``Limits.instant_per_second`` per address, in bursts of ``Limits.instant_burst``: they are answered in
  milliseconds, but each may create a browser session (``vit_explorer.sessions`` bounds those in bytes).

The visitor's address is the connection's, or the one a trusted reverse proxy names (uvicorn's
``FORWARDED_ALLOW_IPS``, 127.0.0.1 by default). The refusal says why in the language the browser asks for.
"""
from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict, deque

from starlette.formparsers import MultiPartException
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from viz.i18n import language_from_header, t

from . import limits

UPLOAD_ROUTE = "/gradio_api/upload"
INSTANT_ROUTES = ("/gradio_api/run/", "/gradio_api/api/", "/gradio_api/component_server")
BODY_METHODS = ("POST", "PUT", "PATCH")
ADDRESSES_KEPT = 10_000           # addresses remembered for the per-address limits (the oldest forgotten first)


class TooLarge(MultiPartException):
    """A body past its limit, raised from inside the body's stream (Gradio's multipart parser deletes its files on a
    ``MultiPartException``; any other route fails reading it, and its answer is replaced by the refusal)."""

    def __init__(self, status: int, key: str, **values):
        super().__init__(key)
        self.status, self.key, self.values = status, key, values


class PerAddress:
    """Something remembered per visitor's address, for the most recently seen ``ADDRESSES_KEPT`` addresses."""

    def __init__(self, make):
        self._make, self._items = make, OrderedDict()
        self.lock = threading.Lock()

    def __getitem__(self, address: str):
        """Call with ``lock`` held."""
        if address not in self._items:
            self._items[address] = self._make()
            while len(self._items) > ADDRESSES_KEPT:
                self._items.popitem(last=False)
        self._items.move_to_end(address)
        return self._items[address]

    def clear(self) -> None:
        with self.lock:
            self._items.clear()


UPLOADED = PerAddress(deque)                              # address -> deque of (time, bytes) uploaded
INSTANT = PerAddress(lambda: [0.0, None])                 # address -> [tokens, last refill time]


def uploaded_recently(address: str, now: float) -> tuple[int, float]:
    """(bytes the address uploaded within the window, seconds until the oldest of them leaves it)."""
    window = limits.LIMITS.upload_window
    with UPLOADED.lock:
        times = UPLOADED[address]
        while times and times[0][0] < now - window:
            times.popleft()
        return sum(size for _, size in times), (times[0][0] + window - now) if times else 0.0


def record_upload(address: str, size: int) -> None:
    with UPLOADED.lock:
        UPLOADED[address].append((time.monotonic(), size))


def instant_allowed(address: str) -> float:
    """0 when the address may send one more event that skips the queue now (taking a token), else the seconds until
    it may."""
    rate, burst = limits.LIMITS.instant_per_second, limits.LIMITS.instant_burst
    now = time.monotonic()
    with INSTANT.lock:
        bucket = INSTANT[address]
        tokens = burst if bucket[1] is None else min(burst, bucket[0] + (now - bucket[1]) * rate)
        bucket[1] = now
        if tokens >= 1:
            bucket[0] = tokens - 1
            return 0.0
        bucket[0] = tokens
        return (1 - tokens) / rate


def header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


async def refuse(send: Send, scope: Scope, status: int, key: str, **values) -> None:
    """Answer ``status`` with {"detail": the catalogue's ``key``} in the language the browser asks for."""
    lang = language_from_header(header(scope, b"accept-language"))
    body = json.dumps({"detail": t(key, lang, **values)}).encode("utf-8")
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


class Intake:
    """The middleware (module docstring)."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") not in BODY_METHODS:
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        root = scope.get("root_path", "").rstrip("/")
        local = path[len(root):] if root and path.startswith(root) else path
        address = (scope.get("client") or ("unknown",))[0]
        now = time.monotonic()
        if local.startswith(INSTANT_ROUTES) and limits.LIMITS.public and (wait := instant_allowed(address)):
            await refuse(send, scope, 429, "message.too_fast", seconds=max(1.0, wait))
            return
        upload = local.rstrip("/") == UPLOAD_ROUTE
        cap = limits.LIMITS.upload_bytes if upload else limits.LIMITS.json_bytes
        declared = header(scope, b"content-length")
        try:
            length = int(declared) if declared is not None else None
        except ValueError:
            length = None
        if length is not None and length > cap:
            await refuse(send, scope, 413, "message.body_too_large", size=length / 2**20, limit=cap / 2**20)
            return
        allowance = None
        if upload and limits.LIMITS.public:
            used, wait = uploaded_recently(address, now)
            allowance = limits.LIMITS.upload_bytes_per_client - used
            if allowance < (length or 1):
                await refuse(send, scope, 429, "message.uploads_per_client",
                             limit=limits.LIMITS.upload_bytes_per_client / 2**20,
                             minutes=limits.LIMITS.upload_window / 60, seconds=max(1.0, wait))
                return
        boundary = _boundary(header(scope, b"content-type")) if upload else None
        counted = Counted(receive, cap, allowance, boundary, limits.LIMITS.upload_files if upload else None)
        started = False

        async def answer(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start" and counted.refusal is not None:
                return                                # the route failed reading a refused body: say why instead
            if message["type"] == "http.response.body" and counted.refusal is not None and not started:
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted.receive, answer)
        except Exception:
            if counted.refusal is None:              # not ours: the route's own failure
                raise
        finally:
            if upload and limits.LIMITS.public and counted.seen:
                record_upload(address, counted.seen)
        if counted.refusal is not None and not started:
            await refuse(send, scope, counted.refusal.status, counted.refusal.key, **counted.refusal.values)


def _boundary(content_type: str | None) -> bytes | None:
    """The multipart boundary of a Content-Type header, as the delimiter that starts each part."""
    for part in (content_type or "").split(";"):
        name, _, value = part.strip().partition("=")
        if name.lower() == "boundary" and value:
            return b"--" + value.strip('"').encode("latin-1")
    return None


class Counted:
    """A request's ``receive`` that counts the body as it comes: past ``cap`` bytes, past the address's
    ``allowance``, or (an upload) past ``files`` parts, it raises ``TooLarge`` and remembers it as ``refusal``."""

    def __init__(self, receive: Receive, cap: int, allowance: int | None, boundary: bytes | None,
                 files: int | None):
        self._receive, self.cap, self.allowance = receive, cap, allowance
        self.boundary, self.files = boundary, files
        self.seen, self.parts, self._tail = 0, 0, b""
        self.refusal: TooLarge | None = None

    async def receive(self) -> Message:
        message = await self._receive()
        if message["type"] != "http.request":
            return message
        body = message.get("body", b"")
        self.seen += len(body)
        if self.seen > self.cap:
            self._refuse(413, "message.body_too_large", size=self.seen / 2**20, limit=self.cap / 2**20)
        if self.allowance is not None and self.seen > self.allowance:
            self._refuse(429, "message.uploads_per_client", limit=limits.LIMITS.upload_bytes_per_client / 2**20,
                         minutes=limits.LIMITS.upload_window / 60, seconds=limits.LIMITS.upload_window)
        if self.boundary is not None and self.files is not None:
            window = self._tail + body               # a boundary split between two chunks is found once
            self.parts += window.count(self.boundary)
            self._tail = window[-(len(self.boundary) - 1):]
            if self.parts - 1 > self.files:             # each part starts with the boundary, and one ends them all
                self._refuse(413, "message.upload_too_many_files", limit=self.files)
        return message

    def _refuse(self, status: int, key: str, **values) -> None:
        self.refusal = TooLarge(status, key, **values)
        raise self.refusal


INTAKE = Middleware(Intake)
