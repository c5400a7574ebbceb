"""An attacker's client: Gradio 6's own HTTP protocol spoken with httpx (not gradio_client), so that every event of
the page, private ones included, is reachable as an attacker reaches it, with any payload.

The protocol (gradio/routes.py, gradio/queueing.py of Gradio 6.31):

- ``GET /config``: the page's components and its events ("dependencies": id, inputs, outputs, queue, api_name…);
- ``POST /gradio_api/upload`` (multipart "files"): a file into the upload folder -> its server path;
- ``POST /gradio_api/queue/join`` {"data", "fn_index", "session_hash", "event_data", "trigger_id"} -> {"event_id"},
  or a refusal at the door (4xx/5xx with {"detail"});
- ``GET /gradio_api/queue/data?session_hash=…``: server-sent events for the session's events ("estimation",
  "process_starts", "progress", "process_generating", "process_completed" with {"output", "success"});
- ``POST /gradio_api/run/predict`` {"data", "fn_index", "session_hash"}: an event outside the queue (the page's
  ``queue=False`` events; a queued event is refused there when the queue's API is closed);
- ``POST /gradio_api/cancel`` {"session_hash", "fn_index", "event_id"}.

JSON goes out as Python's json module writes it, so NaN and Infinity can be sent as a browser never would.
"""
from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx

FILE_MARK = {"_type": "gradio.FileData"}      # what Gradio's frontend puts on a file payload


@dataclass
class Answer:
    """What the server answered to one event: refused at the door (``status`` ≠ 200, ``detail``), or run to its end
    (``completed``: ``success``, ``output`` = {"data": […]} or {"error": text}), with every message received."""
    status: int
    detail: str | None = None
    event_id: str | None = None
    completed: bool = False
    success: bool = False
    output: dict = field(default_factory=dict)
    messages: list = field(default_factory=list)
    seconds: float = 0.0

    @property
    def error(self) -> str | None:
        """The text the visitor would read: the door's refusal, or the event's error (None when it succeeded)."""
        if self.status != 200:
            return self.detail
        return None if self.success else (self.output.get("error") or "")

    @property
    def text(self) -> str:
        """Everything the server said, as text (to look for what must never be in it)."""
        return json.dumps([self.detail, self.messages], default=str)


class RawClient:
    """One browser session (``session``) of the app at ``url``, spoken to in the raw protocol; every wait is bounded
    by ``timeout`` seconds.

    Like the page, it keeps the session's stream of messages open while any of its events is pending (a listener
    thread): Gradio takes a stream closed early for a visitor who has left, and stops their running jobs."""

    def __init__(self, url: str, session: str | None = None, timeout: float = 120.0):
        self.url, self.timeout = url.rstrip("/"), timeout
        self.session = session or uuid.uuid4().hex[:11]
        self.http = httpx.Client(base_url=self.url, timeout=httpx.Timeout(timeout, connect=10.0))
        self._messages: dict[str, list[dict]] = {}          # event id -> its messages so far
        self._pending: set[str] = set()                     # events joined and not completed
        self._changed = threading.Condition()
        self._listening = False                             # a listener thread reads the stream (or will)
        self._listener: threading.Thread | None = None
        self._closed = False

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        self.http.close()
        if self._listener is not None:
            self._listener.join(timeout=15)

    def __enter__(self) -> "RawClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def config(self) -> dict:
        return self.http.get("/config").raise_for_status().json()

    def upload(self, path: str | Path) -> str:
        """The server path of ``path`` uploaded as a visitor uploads it."""
        with open(path, "rb") as f:
            answer = self.http.post("/gradio_api/upload", files={"files": (Path(path).name, f)})
        return answer.raise_for_status().json()[0]

    def _post_json(self, route: str, body: dict) -> httpx.Response:
        return self.http.post(route, content=json.dumps(body), headers={"content-type": "application/json"})

    def join(self, fn_index: int, data: list, event_data=None) -> Answer:
        """Ask for the event to join the queue: an Answer with its event id, or the door's refusal."""
        body = {"data": data, "fn_index": fn_index, "session_hash": self.session, "event_data": event_data,
                "trigger_id": None}
        response = self._post_json("/gradio_api/queue/join", body)
        try:
            payload = response.json()
        except json.JSONDecodeError:
            payload = {"detail": response.text}
        if response.status_code != 200:
            detail = payload.get("detail") if isinstance(payload, dict) else payload
            return Answer(response.status_code, detail if isinstance(detail, str) else json.dumps(detail))
        with self._changed:
            received = self._messages.setdefault(payload["event_id"], [])   # its messages may be here already
            if not any(m.get("msg") == "process_completed" for m in received):
                self._pending.add(payload["event_id"])
            if not self._listening:                             # decided under the lock the listener exits under
                self._listening = True
                self._listener = threading.Thread(target=self._listen, name=f"stream {self.session}", daemon=True)
                self._listener.start()
        return Answer(200, event_id=payload["event_id"])

    def _listen(self) -> None:
        """Read the session's stream while events are pending, reopening it when the server closed it."""
        while True:
            with self._changed:
                if self._closed or not self._pending:
                    self._listening = False
                    return
            try:
                with self.http.stream("GET", "/gradio_api/queue/data", params={"session_hash": self.session},
                                      timeout=httpx.Timeout(None, connect=10.0)) as stream:
                    for line in stream.iter_lines():
                        if line.startswith("data:"):
                            self._received(json.loads(line[5:]))
                        with self._changed:
                            if self._closed:
                                self._listening = False
                                return
            except (httpx.HTTPError, RuntimeError):
                with self._changed:
                    if self._closed:
                        self._listening = False
                        return
                time.sleep(0.2)

    def _received(self, message: dict) -> None:
        """Keep a message under its event, even one whose join has not returned yet (a quick event's messages can
        come first, on the stream already open for another event of the session)."""
        event = message.get("event_id")
        with self._changed:
            if event is not None:
                self._messages.setdefault(event, []).append(message)
                if message.get("msg") == "process_completed":
                    self._pending.discard(event)
            elif message.get("msg") == "unexpected_error":
                for pending in self._pending:
                    self._messages[pending].append(message)
                self._pending.clear()
            self._changed.notify_all()

    def wait(self, answer: Answer, until: str = "process_completed") -> Answer:
        """Wait for ``answer``'s event to reach ``until`` ("process_completed", or "process_starts" / "progress" to
        return once it runs), within ``self.timeout`` seconds; its messages so far go into ``answer``."""
        deadline = time.monotonic() + self.timeout

        def reached() -> bool:
            return any(m.get("msg") in (until, "process_completed", "unexpected_error")
                       for m in self._messages[answer.event_id])

        with self._changed:
            while not reached():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"event {answer.event_id} did not reach {until} in {self.timeout} s")
                self._changed.wait(timeout=min(left, 1.0))
            answer.messages = list(self._messages[answer.event_id])
        for message in answer.messages:
            if message.get("msg") == "process_completed":
                answer.completed, answer.success = True, bool(message.get("success"))
                answer.output = message.get("output") or {}
            elif message.get("msg") == "unexpected_error":
                answer.completed, answer.output = True, {"error": message.get("message") or "unexpected_error"}
        return answer

    def call(self, fn_index: int, data: list, event_data=None, queue: bool = True) -> Answer:
        """Run one event to its end, as the page does: through the queue, or (``queue=False``) the direct route."""
        started = time.monotonic()
        if not queue:
            answer = self.direct(fn_index, data, event_data)
        else:
            answer = self.join(fn_index, data, event_data)
            if answer.status == 200:
                answer = self.wait(answer)
        answer.seconds = time.monotonic() - started
        return answer

    def direct(self, fn_index: int, data: list, event_data=None) -> Answer:
        """``POST /gradio_api/run/predict``: how the page runs its events that skip the queue."""
        body = {"data": data, "fn_index": fn_index, "session_hash": self.session, "event_data": event_data}
        response = self._post_json("/gradio_api/run/predict", body)
        try:
            payload = response.json()
        except json.JSONDecodeError:
            return Answer(response.status_code, response.text)
        if response.status_code == 200:
            return Answer(200, completed=True, success=True, output=payload, messages=[payload])
        detail = (payload.get("error") or payload.get("detail")) if isinstance(payload, dict) else payload
        return Answer(response.status_code, detail if isinstance(detail, str) else json.dumps(detail),
                      messages=[payload])

    def cancel(self, fn_index: int, event_id: str) -> None:
        self._post_json("/gradio_api/cancel", {"session_hash": self.session, "fn_index": fn_index,
                                               "event_id": event_id}).raise_for_status()
