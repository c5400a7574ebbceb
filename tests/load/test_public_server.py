"""Protects a public server from one visitor who would take it down (docs/app.md, "The limits of a public server"):
``python app.py --public --max-memory 768M`` on 127.0.0.1, its sessions' memory made small
(``VIT_EXPLORER_LIMITS``) so that a flood passes it, attacked through Gradio's raw HTTP protocol (``raw_queue``) and
raw sockets, each attack bounded in time:

- many new sessions (events that skip the queue, and queued ones) leave the first visitor's analysis where it was;
- an address with 40 analyses waiting does not keep another visitor waiting behind them;
- an explanation whose visitor left, or cancelled it, stops within seconds;
- 20 files of 50 MB in one upload, and a 300 MB body, are refused (413) before they are read: the disk and the
  server's memory do not grow;
- uploads go when their session is closed, or when no session used them;
- the heaviest jobs at the largest input size, from three sessions at once, keep the server's peak RSS within the
  budget (or are refused with the sentence that says what would fit).

Visitors are told apart by their addresses as a reverse proxy on 127.0.0.1 names them (X-Forwarded-For, which
uvicorn trusts from there)."""
from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path

import httpx
import pytest
from PIL import Image
from skimage import data

from bench.app_process import AppProcess
from bench.measure import proc_status_kb
from raw_queue import FILE_MARK, Answer, RawClient
from viz.i18n import t

pytestmark = pytest.mark.slow        # a served app, hundreds of events

AUGREG = "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors"
BUDGET_MB = 768
LIMITS = "sessions_memory=24M,closed_session_seconds=3,unused_upload_seconds=3"


# ---- the server, and visitors at addresses of their own --------------------------------------------------------

class Served:
    """The public server and what its page offers: its config, its events by name, an uploaded photo."""

    def __init__(self, app: AppProcess):
        self.app = app
        with RawClient(app.url) as client:
            self.config = client.config()
        self.components = {c["id"]: c for c in self.config["components"]}

    @property
    def url(self) -> str:
        return self.app.url

    def events(self) -> list[dict]:
        return [d for d in self.config["dependencies"] if d["backend_fn"]]

    def named(self, name: str) -> dict:
        return next(d for d in self.events() if d["api_name"] == name)

    def kind(self, component_id: int) -> str:
        return self.components[component_id]["type"]

    def baseline(self, event: dict, photo: dict | None = None, values: dict | None = None) -> list:
        """The inputs as a fresh page sends them, ``photo`` in the image inputs, and ``values`` by the component's
        elem_id or its label's catalogue key ("control.discard")."""
        out = []
        for i in event["inputs"]:
            props = self.components[i].get("props", {})
            kind = self.kind(i)
            value = photo if kind == "image" else None if kind == "state" else props.get("value")
            for name, given in (values or {}).items():
                if props.get("elem_id") == name or f'"{name}"' in str(props.get("label", "")):
                    value = given
            out.append(value)
        return out

    def visitor(self, address: str, **kw) -> RawClient:
        client = RawClient(self.url, **kw)
        client.http.headers["x-forwarded-for"] = address
        return client

    def rss_mb(self) -> float:
        return proc_status_kb("VmRSS", self.app.pid) / 1024

    def peak_mb(self) -> float:
        return proc_status_kb("VmHWM", self.app.pid) / 1024

    def reset_peak(self) -> None:
        with open(f"/proc/{self.app.pid}/clear_refs", "w") as f:
            f.write("5")

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.app.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.fixture(scope="module")
def served(real_weights_dir, tmp_path_factory):
    empty = tmp_path_factory.mktemp("no-weights")
    log = tmp_path_factory.mktemp("logs") / "public.log"
    with AppProcess(real_weights_dir / AUGREG, log=log, args=("--public", "--max-memory", f"{BUDGET_MB}M"),
                    env={"VIT_WEIGHTS_DIR": str(empty), "VIT_EXPLORER_LIMITS": LIMITS}) as app:
        yield Served(app)


@pytest.fixture(scope="module")
def photos(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("photos")
    found = {}
    for name, pixels in (("cat", data.chelsea()), ("coffee", data.coffee()), ("astronaut", data.astronaut()),
                         ("rocket", data.rocket())):
        found[name] = folder / f"{name}.jpg"
        Image.fromarray(pixels).save(found[name], quality=92)
    return found


def uploaded(client: RawClient, path: Path) -> dict:
    return {"path": client.upload(path), "meta": FILE_MARK, "orig_name": path.name}


def warnings_of(answer: Answer) -> list[str]:
    return [m["log"] for m in answer.messages if m.get("msg") == "log" and m.get("log")]


def analysed(served: Served, client: RawClient, photo: dict, values: dict | None = None) -> Answer:
    event = served.named("page_analyze")
    answer = client.call(event["id"], served.baseline(event, photo, values))
    assert answer.success and not warnings_of(answer), (answer.error, warnings_of(answer))
    return answer


def redrawn(served: Served, client: RawClient) -> Answer:
    """A rollout control moved in ``client``'s session: the maps drawn again from its analysis."""
    event = served.named("discard_ratio_changed")
    return client.call(event["id"], served.baseline(event, values={"control.discard": 0.8}))


# ---- sessions a flood cannot erase --------------------------------------------------------------------------------

def test_the_first_visitors_work_outlives_150_new_sessions(served, photos):
    """150 new session ids, each with an event that skips the queue (a tab opened) and one that joins it (the page's
    language): Gradio kept 100 sessions, so every visitor's work was gone. Then 70 sessions from one address, each
    with an analysis: sessions with work from the address holding the most go first."""
    no_photo = t("message.no_analysis", "en")
    with served.visitor("198.51.100.7") as visitor:
        analysed(served, visitor, uploaded(visitor, photos["cat"]))
        assert no_photo not in warnings_of(redrawn(served, visitor))
        tab = next(d for d in served.events() if not d["queue"] and not d["collects_event_data"] and d["inputs"]
                   and all(served.kind(i) == "state" for i in d["inputs"]))      # a tab select (its section's tabs)
        language = next(d for d in served.events() if d["api_name"] == "initial_language")
        statuses = []

        def instant(count: int) -> None:
            with RawClient(served.url) as flood:
                for _ in range(count):
                    flood.session = os.urandom(6).hex()
                    statuses.append(flood.direct(tab["id"], served.baseline(tab)).status)

        threads = [threading.Thread(target=instant, args=(25,)) for _ in range(6)]   # 150 at once, six at a time
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert len(statuses) == 150 and {200, 429} == set(statuses), set(statuses)   # beyond a burst: told to wait
        with RawClient(served.url) as flood:
            for _ in range(150):
                flood.session = os.urandom(6).hex()
                assert flood.call(language["id"], []).success
        answer = redrawn(served, visitor)
        assert answer.success and no_photo not in warnings_of(answer), warnings_of(answer)
        with served.visitor("203.0.113.9") as flood:
            photo = uploaded(flood, photos["coffee"])
            for _ in range(70):                   # 70 sessions with work, more than 24 MB of sessions hold
                flood.session = os.urandom(6).hex()
                analysed(served, flood, photo)
        answer = redrawn(served, visitor)
        assert answer.success and no_photo not in warnings_of(answer), warnings_of(answer)


# ---- queues that stay fair ----------------------------------------------------------------------------------------

def test_a_visitor_is_served_while_another_address_has_40_analyses_waiting(served, photos):
    event = served.named("page_analyze")
    flood = [served.visitor("203.0.113.20", timeout=600) for _ in range(40)]
    try:
        photo = uploaded(flood[0], photos["astronaut"])
        joined = [client.join(event["id"], served.baseline(event, photo)) for client in flood]
        assert all(answer.status == 200 for answer in joined), [a.detail for a in joined if a.status != 200]
        with served.visitor("198.51.100.8", timeout=300) as visitor:
            mine = visitor.call(event["id"], served.baseline(event, uploaded(visitor, photos["rocket"])))
        assert mine.success, mine.error
        done = sum(any(m.get("msg") == "process_completed" for m in client._messages.get(a.event_id, []))
                   for client, a in zip(flood, joined))
        assert done <= 4, f"the visitor waited for {done} of the other address's analyses"
        for client, answer in zip(flood, joined):
            client.cancel(event["id"], answer.event_id)
    finally:
        for client in flood:
            client.close()


def test_one_address_cannot_fill_a_kind_of_work(served, photos):
    """Beyond its share, an address is told when to try again; another address still joins."""
    from vit_explorer.limits import QUEUES

    event = served.named("page_analyze")
    share = QUEUES["model"].per_client
    flood = [served.visitor("203.0.113.21", timeout=600) for _ in range(share + 3)]
    fresh = photos["cat"].parent / "fresh.jpg"
    Image.fromarray(data.chelsea()[:, ::-1]).save(fresh, quality=93)        # never analysed: the first one runs long
    try:
        photo = uploaded(flood[0], fresh)
        values = served.baseline(event, photo, {"input-size": _largest_side(served)})
        joined = [client.join(event["id"], values) for client in flood]
        refused = [a for a in joined if a.status != 200]
        assert 1 <= len(refused) <= 3 and all("try again in about" in a.detail for a in refused), \
            [a.detail for a in refused]                     # (some of its first analyses may already be done)
        with served.visitor("198.51.100.9") as visitor:
            assert visitor.join(event["id"], served.baseline(event, uploaded(visitor, photos["cat"]))).status == 200
            visitor.close()
    finally:
        for client, answer in zip(flood, joined):
            if answer.status == 200:
                client.cancel(event["id"], answer.event_id)
            client.close()


def test_large_redraws_from_one_page_leave_the_renderers_to_everyone(served, photos):
    """Four rollout redraws of an analysis at the largest size, from one page at once, held every renderer: another
    visitor's opacity move waited minutes. One large redraw runs at a time; the others are told to try again."""
    side = _largest_side(served)
    event = served.named("discard_ratio_changed")
    opacity = served.named("opacity_changed")
    with served.visitor("198.51.100.30", timeout=600) as big, served.visitor("198.51.100.31", timeout=120) as small:
        analysed(served, big, uploaded(big, photos["coffee"]), {"input-size": side})
        analysed(served, small, uploaded(small, photos["cat"]))
        joined = [big.join(event["id"], served.baseline(event, values={"control.discard": 0.5 + i / 10}))
                  for i in range(4)]
        time.sleep(0.5)
        moved = small.call(opacity["id"], served.baseline(opacity, values={"control.opacity": 0.3}))
        finished = [big.wait(answer) for answer in joined if answer.status == 200]
    assert moved.success and not warnings_of(moved) and moved.seconds < 30, (moved.seconds, warnings_of(moved))
    busy = t("message.large_redraw_busy", "en")
    told = [a for a in finished if busy in warnings_of(a)]
    assert len(told) >= 2, [warnings_of(a) for a in finished]


# ---- a job whose visitor has gone stops ---------------------------------------------------------------------------

def _idle_within(served: Served, seconds: float) -> float:
    """Seconds until the server uses under a tenth of a core for a second; fails after ``seconds``."""
    started = time.monotonic()
    last = served.cpu_seconds()
    while time.monotonic() - started < seconds:
        time.sleep(1.0)
        now = served.cpu_seconds()
        if now - last < 0.1:
            return time.monotonic() - started
        last = now
    raise AssertionError(f"the server still works {seconds:.0f} s after the job's visitor left")


@pytest.mark.parametrize("how", ["leaves", "cancels"])
def test_an_explanation_stops_within_seconds_when_its_visitor_leaves(served, photos, how):
    """Explain at 448 px runs three families of passes for tens of seconds on a loaded CPU; the visitor leaves (its
    stream of messages closes) or cancels during the first: the job stops at the next family."""
    explain = served.named("explain_1")                       # the Explain tab's method, target, contrast
    client = served.visitor("198.51.100.10", timeout=300)
    try:
        analysed(served, client, uploaded(client, photos["coffee"]), {"input-size": 448})
        values = served.baseline(explain, values={"method": "attnlrp"})
        started = client.join(explain["id"], values)
        assert started.status == 200, started.detail
        client.wait(started, until="process_starts")
        time.sleep(2.0)
        if how == "cancels":
            client.cancel(explain["id"], started.event_id)
    finally:
        client.close()                                       # the page is gone
    assert _idle_within(served, 45) < 45


# ---- uploads and bodies bounded -----------------------------------------------------------------------------------

def _raw_post(served: Served, path: str, headers: dict, chunks, read_after: int = 0) -> tuple[int, str]:
    """POST through a raw socket, the body sent as ``chunks`` (chunked when no Content-Length is given) while the
    server reads; (status, body) of its answer, which may come before the body is sent."""
    host = served.url.split("//")[1].rstrip("/")
    sock = socket.create_connection(tuple([host.split(":")[0], int(host.split(":")[1])]), timeout=30)
    chunked = "content-length" not in {k.lower() for k in headers}
    head = [f"POST {path} HTTP/1.1", f"Host: {host}", *(f"{k}: {v}" for k, v in headers.items())]
    if chunked:
        head.append("Transfer-Encoding: chunked")
    sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
    try:
        for chunk in chunks:
            sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
    except (BrokenPipeError, ConnectionResetError, socket.timeout):
        pass                                                 # refused: the server stopped reading
    answer = b""
    try:
        while b"\r\n\r\n" not in answer or len(answer.split(b"\r\n\r\n", 1)[1]) < 2:
            part = sock.recv(65536)
            if not part:
                break
            answer += part
    except (ConnectionResetError, socket.timeout):
        pass
    sock.close()
    status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/") else 0
    return status, answer.split(b"\r\n\r\n", 1)[-1].decode("utf-8", "replace")


def _disk_mb(folder: str) -> float:
    return sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file()) / 2**20


def test_twenty_files_of_50_mb_in_one_upload_are_refused_before_they_fill_the_disk(served):
    boundary = "vitexplorerboundary"
    part = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"{{}}.png\"\r\n"
            f"Content-Type: image/png\r\n\r\n")
    block = os.urandom(2**20)

    def body(files: int, megabytes: int):
        for i in range(files):
            yield part.format(i).encode()
            for _ in range(megabytes):
                yield block
            yield b"\r\n"
        yield f"--{boundary}--\r\n".encode()

    before = _disk_mb(served.app.temp_dir)
    rss = served.rss_mb()
    headers = {"Content-Type": f"multipart/form-data; boundary={boundary}"}
    size = 20 * (50 * 2**20 + len(part) + 2) + len(boundary) + 6
    status, said = _raw_post(served, "/gradio_api/upload", {**headers, "Content-Length": str(size)}, body(20, 50))
    assert status == 413 and "too large" in said, (status, said)
    status, said = _raw_post(served, "/gradio_api/upload", headers, body(20, 50))         # no length said: counted
    assert status == 413 and "too large" in said, (status, said)
    status, said = _raw_post(served, "/gradio_api/upload", headers, (c[:1024] for c in body(20, 1)))   # 20 small
    assert status == 413 and "files" in said, (status, said)
    time.sleep(1.0)
    assert _disk_mb(served.app.temp_dir) - before < 5, "a refused upload left its files"
    assert served.rss_mb() - rss < 60


def test_a_300_mb_body_is_refused_with_413_before_it_is_read(served):
    rss = served.rss_mb()
    served.reset_peak()
    headers = {"Content-Type": "application/json", "Content-Length": str(300 * 2**20)}
    block = b" " * 2**20
    status, said = _raw_post(served, "/gradio_api/queue/join", headers, (block for _ in range(300)))
    assert status == 413 and "too large" in said, (status, said)
    status, said = _raw_post(served, "/gradio_api/queue/join", {"Content-Type": "application/json"},
                             (block for _ in range(300)))                                  # chunked: counted
    assert status == 413 and "too large" in said, (status, said)
    assert served.peak_mb() - rss < 60, f"the server's memory grew by {served.peak_mb() - rss:.0f} MB"


def test_uploads_go_with_their_session_and_unused_ones_within_seconds(served, photos):
    """A closed page's session is forgotten after closed_session_seconds (3 s here, 10 minutes by default) and the
    photo it used with it; a photo no session used goes after unused_upload_seconds."""
    from vit_explorer.sessions import SWEEP_SECONDS

    folder = photos["cat"].parent
    for name, pixels in (("unused", data.rocket()[::-1]), ("closed", data.astronaut()[::-1])):   # no one else's
        Image.fromarray(pixels).save(folder / f"{name}.jpg", quality=91)
    with served.visitor("198.51.100.11") as visitor:
        unused = Path(visitor.upload(folder / "unused.jpg"))
        photo = uploaded(visitor, folder / "closed.jpg")
        with httpx.stream("GET", f"{served.url}gradio_api/heartbeat/{visitor.session}", timeout=30) as beat:
            analysed(served, visitor, photo)
            next(beat.iter_lines())                             # the page is open…
        assert Path(photo["path"]).is_file()                   # …and then closed
    deadline = time.monotonic() + 3 + 2 * SWEEP_SECONDS + 10
    while (Path(photo["path"]).exists() or unused.exists()) and time.monotonic() < deadline:
        time.sleep(1.0)
    assert not unused.exists(), "an upload no session used is still on the disk"
    assert not Path(photo["path"]).exists(), "the closed session's photo is still on the disk"


# ---- memory by peak -----------------------------------------------------------------------------------------------

def _largest_side(served: Served) -> int:
    size = next(c for c in served.config["components"] if c.get("props", {}).get("elem_id") == "input-size")
    return int(size["props"]["maximum"])


def test_the_heaviest_jobs_at_the_largest_size_keep_the_peak_within_the_budget(served, photos):
    """Three sessions at the largest input size the page offers: Explain, Inside, a thorough trust check with the
    sanity check, the animation and a comparison at once. Each runs within the budget or is refused with the sentence
    saying what would fit; the server's peak RSS stays within the budget above where it started (plus what the caches
    keep of the analyses)."""
    side = _largest_side(served)
    clients = [served.visitor(f"198.51.100.{20 + i}", timeout=900) for i in range(3)]
    try:
        photo = uploaded(clients[0], photos["cat"])
        for client in clients:
            analysed(served, client, photo, {"input-size": side})
        rss = served.rss_mb()
        served.reset_peak()
        jobs = {"explain_1": {"method": "gae"}, "look_inside": {}, "trust": {"trust-depth": "thorough"},
                "animate": {}, "compare": {"compare-model": AUGREG, "compare-preprocess": "squash"}}
        answers = {}

        def run(client, name, values):
            event = served.named(name)
            answers[name] = client.call(event["id"], served.baseline(event, values=values))

        threads = [threading.Thread(target=run, args=(clients[i % 3], name, values))
                   for i, (name, values) in enumerate(jobs.items())]
        for thread in threads:
            thread.start()
            time.sleep(0.5)
        for thread in threads:
            thread.join(timeout=900)
        grew = served.peak_mb() - rss
    finally:
        for client in clients:
            client.close()
    said = {name: warnings_of(answer) + ([answer.error] if answer.error else []) for name, answer in answers.items()}
    assert all(answer.completed for answer in answers.values()), said
    refused = [name for name, texts in said.items() if any("more than this server allows" in x for x in texts)]
    assert {"look_inside", "trust"} <= set(refused), said
    explained = json.dumps(answers["explain_1"].output, ensure_ascii=False)     # GAE's passes are left out, and why
    assert "GAE at" in explained and "more than this server allows" in explained and "AttnLRP;" in explained, \
        explained[:2000]
    for texts in said.values():
        assert not any("could not handle" in x for x in texts), said
    print(f"largest side {side} px, peak growth {grew:.0f} MB of a {BUDGET_MB} MB budget; refused: {refused}")
    assert grew < BUDGET_MB + 96, f"the server's peak grew by {grew:.0f} MB, over its {BUDGET_MB} MB budget"
    print(json.dumps(said)[:2000])
