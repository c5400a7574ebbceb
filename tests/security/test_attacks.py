"""Protects a served app from a stranger who sends it anything (docs/app.md, "What a public server is guarded
against"): ``python app.py --public`` on 127.0.0.1 (as behind a reverse proxy) and a local ``python app.py``, each in
its own process, attacked through Gradio's raw HTTP protocol (``raw_queue``, not gradio_client: private events are
reachable as an attacker reaches them).

Every event of the page is found in its ``/config`` (a new one is attacked without editing this file): path-only,
marked and URL payloads for every image input; server paths (a secret file, a missing one, a FIFO, devices, /proc)
for every text and dropdown input; NaN and infinite numbers; payloads and event data of the wrong shape; direct calls
that would skip the queue. Then the limits: one heavy job per visitor, a bounded queue of heavy jobs, a cancelled
job that stops, a FIFO model path refused while another visitor's analysis completes. FIFO canaries fail the tests
if the server ever opens them. Loopback only; every wait bounded."""
from __future__ import annotations

import json
import os
import re
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from PIL import Image
from skimage import data

from bench.app_process import AppProcess
from canaries import CANARY_BYTES, FifoCanary
from raw_queue import FILE_MARK, Answer, RawClient
from viz.i18n import CATALOGUE, t

pytestmark = pytest.mark.slow        # two served apps, hundreds of events

AUGREG = "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors"
SECRET = "SECRET-TOKEN-7f3a9c"
NUMBERS = ("slider", "number")
HEAVY = {"check", "trust", "look_inside", "ablate_heads", "patch_from", "compare", "animate", "open_snapshots"}


# ---- what every attack got: tests/artifacts/security-attacks.md, for a person to read -------------------------

LEDGER: dict[str, list[tuple[str, str, str]]] = {}       # server -> (event, attack, what came back)


def record(server: "Server", event: dict, attack: str, answer: Answer) -> Answer:
    if answer.status != 200:
        got = f"refused at the door ({answer.status}): {answer.detail}"
    elif not answer.success:
        got = f"error: {answer.error}"
    else:
        warnings = [m["log"] for m in answer.messages if m.get("msg") == "log" and m.get("log")]
        got = "ran" + (f"; warning: {' / '.join(warnings)}" if warnings else "")
    LEDGER.setdefault("public" if server.public else "local", []).append(
        (str(event["api_name"]), attack, " ".join(got.split())[:160]))
    return answer


@pytest.fixture(scope="module", autouse=True)
def ledger():
    yield
    lines = ["# What each attack got", ""]
    for name, rows in LEDGER.items():
        lines += [f"## {name} server", "", "| event | attack | answer |", "|---|---|---|"]
        lines += [f"| {event} | {attack} | {got.replace('|', '/')} |" for event, attack, got in rows] + [""]
    folder = Path(__file__).resolve().parents[1] / "artifacts"
    folder.mkdir(exist_ok=True)
    (folder / "security-attacks.md").write_text("\n".join(lines), encoding="utf-8")


# ---- the bait: files that must never be opened or shown ------------------------------------------------------

@dataclass
class Bait:
    folder: Path
    secret_text: Path          # a text file holding SECRET
    secret_photo: Path         # a real photo outside the upload folder: analysed, it would answer with pictures
    missing: Path              # no file there
    canaries: list[FifoCanary]

    @property
    def fifo(self) -> Path:
        return self.canaries[0].path

    @property
    def snapshots(self) -> Path:
        """A training run's snapshot folder whose only snapshot is a FIFO."""
        return self.canaries[1].path.parent

    def opened(self) -> list[str]:
        return [str(c.path) for c in self.canaries if c.opened.is_set()]


@pytest.fixture(scope="module")
def bait(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bait")
    (folder / "credentials.txt").write_text(f"{SECRET}\n")
    Image.fromarray(data.coffee()).save(folder / "secret.png")
    (folder / "run.snapshots").mkdir()
    canaries = [FifoCanary(folder / "model.pt"), FifoCanary(folder / "run.snapshots" / "epoch-0001.pt")]
    found = Bait(folder, folder / "credentials.txt", folder / "secret.png", folder / "missing.png", canaries)
    yield found
    for canary in canaries:
        canary.close()


def attack_strings(bait: Bait) -> dict[str, str]:
    """What an attacker types into a model, folder or any text box: files of the server, and names of models."""
    return {"secret": str(bait.secret_text), "missing": str(bait.missing), "fifo": str(bait.fifo),
            "snapshots": str(bait.snapshots), "device": "/dev/zero", "proc": "/proc/self/environ",
            "known": "vit_h_14", "relative": "../../../../etc/passwd"}


# ---- the two servers ---------------------------------------------------------------------------------------------

@dataclass
class Server:
    app: AppProcess
    public: bool
    config: dict
    photo: dict                # a photo this test uploaded, as the page sends it
    weights: Path

    @property
    def url(self) -> str:
        return self.app.url

    @property
    def components(self) -> dict[int, dict]:
        return {c["id"]: c for c in self.config["components"]}

    def events(self) -> list[dict]:
        """Every event the page runs on the server."""
        return [d for d in self.config["dependencies"] if d["backend_fn"]]

    def kind(self, component_id: int) -> str:
        return self.components[component_id]["type"]

    def typed(self, component_id: int) -> bool:
        """Whether a visitor types into the input: a text box, or a dropdown that takes what is typed (one that
        takes only its choices refuses anything else before a handler sees it)."""
        c = self.components[component_id]
        return c["type"] == "textbox" or (c["type"] == "dropdown" and c.get("props", {}).get("allow_custom_value"))

    def baseline(self, event: dict) -> list:
        """The inputs as a fresh page sends them, with the uploaded photo in every image input."""
        values = []
        for i in event["inputs"]:
            kind = self.kind(i)
            values.append(self.photo if kind == "image" else None if kind == "state" else
                          self.components[i].get("props", {}).get("value"))
        return values

    def named(self, name: str) -> dict:
        return next(d for d in self.events() if d["api_name"] == name)

    def client(self, **kw) -> RawClient:
        return RawClient(self.url, **kw)

    def analysed(self, client: RawClient) -> None:
        """Give ``client``'s session an analysis of the uploaded photo (what the heavy jobs work on)."""
        event = self.named("page_analyze")
        answer = client.call(event["id"], self.baseline(event))
        assert answer.success, answer.error


@pytest.fixture(scope="module", params=["public", "local"])
def server(request, real_weights_dir, tmp_path_factory, cat):
    public = request.param == "public"
    empty = tmp_path_factory.mktemp("no-weights")           # weights/ lists nothing but the server's own model
    log = tmp_path_factory.mktemp("logs") / f"{request.param}.log"
    args = ("--public",) if public else ()
    with AppProcess(real_weights_dir / AUGREG, log=log, args=args, env={"VIT_WEIGHTS_DIR": str(empty)}) as app:
        photo = tmp_path_factory.mktemp("photos") / "cat.jpg"
        cat.save(photo, quality=95)
        with RawClient(app.url) as client:
            config = client.config()
            path = client.upload(photo)
        yield Server(app, public, config, {"path": path, "meta": FILE_MARK, "orig_name": "cat.jpg"},
                     Path(real_weights_dir))


def retry(client: RawClient, event: dict, values: list, event_data=None, within: float = 30.0) -> Answer:
    """``client.call``, asking again while the session's previous heavy job is still being cleared from the queue
    (it finished a moment ago), or while the address has sent more events that skip the queue than a public server
    takes at once: the attack must reach the handler, not the limit."""
    deadline = time.monotonic() + within
    busy = t("message.heavy_one_at_a_time", "en")
    while True:
        answer = client.call(event["id"], values, event_data, queue=event["queue"])
        if (answer.error != busy and answer.status != 429) or time.monotonic() > deadline:
            return answer
        time.sleep(0.2 if answer.status != 429 else 1.0)    # 429: the address's rate of instant events (public)


def human(text: str | None) -> bool:
    """Whether ``text`` is one of the page's messages (``viz.i18n``'s catalogue, the shared texts and every tab's,
    any language, fields filled; the API says the same sentences): never a Python error's text."""
    if text is None:
        return True
    for key, texts in CATALOGUE.items():
        if not key.startswith("message."):
            continue
        for template in texts:
            parts = re.split(r"\{[^}]*\}", template)
            if sum(map(len, parts)) >= 10 and re.fullmatch(".*".join(map(re.escape, parts)), text, re.S):
                return True
    return False


def said(answer: Answer) -> list[str]:
    """Every text a visitor reads from the answer: its error, and the warnings the page showed."""
    texts = [answer.error] if answer.error else []
    return texts + [m.get("log") for m in answer.messages if m.get("msg") == "log" and m.get("log")]


def never_leaked(answers: list[Answer], bait: Bait) -> None:
    for answer in answers:
        assert SECRET not in answer.text and CANARY_BYTES.decode().strip() not in answer.text, answer.text[:500]
    assert not bait.opened(), f"the server opened {bait.opened()}"


# ---- what the page shows about the server -----------------------------------------------------------------------

def test_the_page_and_the_api_description_name_no_server_path(server):
    """The Model box and the API's description name models by display names, never by where they lie; the example
    photos are listed by their names, not by where Gradio copied them (the upload folder)."""
    with server.client() as client:
        texts = {"config": json.dumps(client.config()), "api": client.http.get("/gradio_api/info").text}
        examples = [c for c in client.config()["components"] if c["type"] == "dataset"]
        thumbnail = client.http.get(examples[0]["props"]["samples"][0][0]["url"])
    folders = {"weights": str(server.weights), "upload": os.path.realpath(server.app.temp_dir),
               "repository": str(Path(__file__).resolve().parents[2]), "temporary": "/tmp/"}
    for name, text in texts.items():
        for what, folder in folders.items():
            assert folder not in text, f"{name} names the server's {what} folder"
    assert AUGREG in texts["config"]                                   # by its name
    assert thumbnail.status_code == 200 and thumbnail.content[:2] == b"\xff\xd8"   # the example photo itself


def test_no_event_skips_the_queue_and_its_door(server):
    """A queued event called on the direct REST route would skip the queue's limits and the heavy jobs' door."""
    with server.client() as client:
        for event in server.events():
            if event["queue"]:
                while (answer := client.direct(event["id"], server.baseline(event))).status == 429:
                    time.sleep(1.0)                  # the direct route's rate for an address (public): wait as told
                assert answer.status == 404, (event["api_name"], answer.status, answer.detail)


# ---- photos come only from uploads ------------------------------------------------------------------------------

def test_a_photo_input_takes_only_uploads_and_says_the_same_whatever_the_path(server, bait):
    refused = t("message.photo_not_uploaded", "en")
    inside = Path(server.app.temp_dir) / "planted"              # a link inside the upload folder, out of it
    inside.mkdir(exist_ok=True)
    (inside / "link.png").unlink(missing_ok=True)
    (inside / "link.png").symlink_to(bait.secret_photo)
    payloads = {"path": {"path": str(bait.secret_photo)}, "missing": {"path": str(bait.missing)},
                "fifo": {"path": str(bait.fifo)}, "device": {"path": "/dev/zero"},
                "marked": {"path": str(bait.secret_photo), "meta": FILE_MARK},
                "marked missing": {"path": str(bait.missing), "meta": FILE_MARK},
                "link inside": {"path": str(inside / "link.png"), "meta": FILE_MARK},
                "url": {"url": server.url + "config"},
                "marked url": {"path": server.url + "config", "meta": FILE_MARK},
                "file url": {"url": f"file://{bait.secret_photo}"}}
    answers = []
    with server.client() as client:
        for event in server.events():
            for k, i in enumerate(event["inputs"]):
                if server.kind(i) != "image":
                    continue
                for name, payload in payloads.items():
                    values = server.baseline(event)
                    values[k] = payload
                    answer = record(server, event, f"photo {name}", retry(client, event, values))
                    answers.append(answer)
                    assert answer.error == refused, (event["api_name"], name, answer.error)
    shutil.rmtree(inside)
    assert len(answers) >= 3 * len(payloads)           # the photo of the page and of the API, Inside's second photo
    never_leaked(answers, bait)


def test_an_inline_photo_beyond_its_limit_is_refused_before_it_is_written(server):
    """A photo sent inline as a data: URL just beyond the inline limit gets the photo's message; one of 52 MB (the
    upload route caps files at 50 MB; this route did not) is a body beyond the JSON limit: 413 before it is read."""
    from vit_explorer.limits import Limits

    limit = Limits().inline_photo_bytes
    over = "data:image/png;base64," + "A" * (limit // 3 * 4 + 2**16)
    huge = "data:image/png;base64," + "A" * (70 * 2**20)
    cache = Path(server.app.temp_dir)

    def cached_bytes() -> int:
        return sum(p.stat().st_size for p in cache.rglob("*") if p.is_file())

    with server.client() as client:
        seen = set()
        for event in server.events():
            for k, i in enumerate(event["inputs"]):
                if server.kind(i) != "image" or i in seen:
                    continue
                seen.add(i)                                    # once per photo input
                before = cached_bytes()
                values = server.baseline(event)
                values[k] = {"url": over}
                answer = record(server, event, "photo data: URL just over its limit", retry(client, event, values))
                assert answer.error == t("message.photo_too_large", "en", size=(limit + 3 * 2**14) / 2**20,
                                         limit=limit / 2**20), answer.error
                values[k] = {"url": huge}
                answer = record(server, event, "photo data: URL of 52 MB", retry(client, event, values))
                assert answer.status == 413 and "too large" in answer.detail, (answer.status, answer.detail)
                assert cached_bytes() - before < 2**20
    assert len(seen) >= 2                                      # the page's photo and Inside's second photo


# ---- server paths: nothing opened, nothing said ----------------------------------------------------------------

def test_server_paths_in_every_text_input_open_nothing_and_show_nothing(server, bait):
    """Every input a visitor types into, of every event, gets each path in turn (all of an event's typed inputs at
    once, in a session that has an analysis, so that the handlers get as far as they can). Nothing made from a
    server file comes back, no canary is opened, and on a public server a path that exists gets the same answer as
    one that does not."""
    strings = attack_strings(bait)
    answers: dict[tuple[str, str], Answer] = {}
    with server.client() as client:
        server.analysed(client)
        for event in server.events():
            typed = [k for k, i in enumerate(event["inputs"]) if server.typed(i)]
            if not typed:
                continue
            for name, text in strings.items():
                values = server.baseline(event)
                for k in typed:
                    values[k] = text
                answers[event["api_name"], name] = record(server, event, f"text: {name} path",
                                                          retry(client, event, values))
    assert len({e for e, _ in answers}) >= 10          # the Model box, Compare, snapshots, the API, Explain, …
    never_leaked(list(answers.values()), bait)
    for answer in answers.values():
        assert all(human(text) for text in said(answer)), said(answer)
    if server.public:
        def seen(name: str) -> tuple:           # what came back, the typed text itself left out (it may be echoed,
            answer = answers[event, name]       # a path by its file's name alone)
            texts = [text.replace(strings[name], "<typed>").replace(Path(strings[name]).name, "<typed>")
                     for text in said(answer)]
            return answer.status, answer.success, texts

        for event in {e for e, _ in answers}:
            assert seen("secret") == seen("missing"), event
        for answer in answers.values():         # no message says where anything lies on the server
            for text in said(answer):
                assert str(bait.folder) not in text and os.path.realpath(server.app.temp_dir) not in text, text
        refused = t("message.models_listed_only", "en")
        for event in ("page_analyze", "analyze", "switch_model", "compare", "open_snapshots"):
            assert refused in said(answers[event, "fifo"]), (event, said(answers[event, "fifo"]))
        for name in ("fifo", "secret", "snapshots"):             # the SAEs go through the same guard
            answer = said(answers["pick_sae", name])
            assert t("message.saes_listed_only", "en") in answer, answer


def test_every_control_moved_before_any_photo_gets_its_line_or_one_message(server):
    """A fresh page, nothing analysed yet, every event whose inputs are controls sent as the page sends it (the input
    size slider's cost line asked for the model by its display name, not through the models' guard, and could not
    handle a server started with --weights PATH)."""
    answers = {}
    with server.client() as client:
        for event in server.events():
            if any(server.kind(i) == "image" for i in event["inputs"]):
                continue
            client.session = os.urandom(6).hex()                       # a page that has seen no photo
            values = [0 if server.kind(i) == "dataset" else v               # an example clicked: its index
                      for i, v in zip(event["inputs"], server.baseline(event))]
            clicked = {"index": [0, 0], "value": None, "selected": True} if event["collects_event_data"] else None
            answers[event["api_name"]] = record(server, event, "before any photo",
                                                retry(client, event, values, clicked))
    assert "size_cost" in answers and answers["size_cost"].success, answers.get("size_cost")
    cost = json.dumps(answers["size_cost"].output)
    assert "tokens" in cost, cost
    bad = t("message.bad_request", "en")
    for name, answer in answers.items():
        assert bad not in said(answer) and all(human(x) for x in said(answer)), (name, said(answer))


def test_a_visitors_long_text_and_long_numbers_are_cut_in_every_message(server):
    """A megabyte of text as the class to explain (and in every text box), a number of 300 digits for every number:
    whatever the page says repeats 60 characters of the text, and 16 digits."""
    text, number = "tabby" * 200_000, float("1e300")
    with server.client() as client:
        server.analysed(client)
        for event in server.events():
            values = server.baseline(event)
            for k, i in enumerate(event["inputs"]):
                if server.typed(i):
                    values[k] = text
                elif server.kind(i) in NUMBERS:
                    values[k] = number
            if values == server.baseline(event):
                continue
            answer = record(server, event, "a megabyte of text, a number of 300 digits", retry(client, event, values))
            for message in said(answer):
                assert len(message) < 1000 and "tabby" * 14 not in message and "0" * 17 not in message, \
                    (event["api_name"], message[:300])


# ---- numbers and the shape of events ----------------------------------------------------------------------------

@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")], ids=["nan", "inf", "-inf"])
def test_a_number_that_is_no_number_gets_one_message(server, number):
    message = t("message.not_a_number", "en")
    seen = 0
    with server.client() as client:
        for event in server.events():
            numbers = [k for k, i in enumerate(event["inputs"]) if server.kind(i) in NUMBERS]
            if not numbers:
                continue
            values = server.baseline(event)
            for k in numbers:
                values[k] = number
            answer = record(server, event, f"number {number}", retry(client, event, values))
            assert answer.error == message, (event["api_name"], answer.error)
            seen += 1
    assert seen >= 5                                  # the display controls, the layer and head, the snapshot slider, …


def test_events_of_the_wrong_shape_get_a_human_message(server, bait):
    """Inputs of the wrong type, too few inputs, and event data that is not what the event sends: every answer is
    a result or one of the page's messages, never a Python error's text; the server goes on serving."""
    wrong = {"__proto__": [1, {"x": None}]}
    answers = []
    with server.client() as client:
        server.analysed(client)
        for event in server.events():
            shapes = [[wrong if server.kind(i) != "state" else None for i in event["inputs"]], []]
            shapes += [server.baseline(event)] * 3 if event["collects_event_data"] else []
            event_data = [None, None, "garbage", {"index": "x", "value": [1]}, {"index": [10**9, -5]}]
            kinds = ["wrong types", "too few inputs", "event data 'garbage'", "event data index 'x'",
                     "event data index far outside"]
            for values, data_of_event, kind in zip(shapes, event_data, kinds):
                answer = record(server, event, kind, retry(client, event, values, data_of_event))
                answers.append(answer)
                assert all(human(text) for text in said(answer)), (event["api_name"], values, said(answer))
        server.analysed(client)                         # still serving, the same session too
    never_leaked(answers, bait)


# ---- heavy jobs: one per visitor, a bounded queue, cancelled means stopped -----------------------------------------

def _thorough_check(server: Server, client: RawClient) -> tuple[dict, Answer]:
    """A thorough trust check started in ``client``'s session (minutes on a CPU), once it runs."""
    event = server.named("trust")
    values = server.baseline(event)
    values[[server.kind(i) for i in event["inputs"]].index("radio")] = "thorough"
    started = client.join(event["id"], values)
    assert started.status == 200, started.detail
    client.wait(started, until="progress")
    return event, started


def test_a_visitor_runs_one_heavy_job_at_a_time_and_a_cancelled_job_stops(server):
    busy = t("message.heavy_one_at_a_time", "en")
    with server.client(timeout=300) as client, server.client() as visitor:
        server.analysed(client)
        check, running = _thorough_check(server, client)
        refused = set()
        for event in server.events():
            if event["queue"] and event["api_name"] != "page_analyze":
                answer = client.join(event["id"], server.baseline(event))
                if answer.status != 200:
                    assert answer.error == busy, (event["api_name"], answer.error)
                    refused.add(event["api_name"])
                else:
                    client.wait(answer)
                record(server, event, "while the session's thorough check runs", answer)
        assert refused == HEAVY & {e["api_name"] for e in server.events()}
        server.analysed(visitor)                        # another visitor is served meanwhile
        server.analysed(client)                         # and so is the same visitor's analysis
        client.cancel(check["id"], running.event_id)
        client.wait(running)
        again = server.named("animate")                 # cancelled means stopped: the next heavy job is let in
        deadline = time.monotonic() + 60
        while (answer := client.join(again["id"], server.baseline(again))).status != 200:
            assert answer.error == busy and time.monotonic() < deadline, answer.error
            time.sleep(0.5)
        assert client.wait(answer).success


def test_heavy_jobs_wait_in_a_bounded_queue(server):
    """At most QUEUE_MAX heavy jobs wait in all, from visitors at addresses of their own (X-Forwarded-For, which the
    server trusts from 127.0.0.1, as from a reverse proxy there; one address's share is smaller: tests/load)."""
    from vit_explorer.heavy import QUEUE_MAX

    with server.client(timeout=300) as first:
        server.analysed(first)
        check, running = _thorough_check(server, first)
        waiting = []
        try:
            for i in range(QUEUE_MAX):
                client = server.client()
                client.http.headers["x-forwarded-for"] = f"198.51.100.{i + 1}"
                answer = client.join(check["id"], server.baseline(check))
                assert answer.status == 200, answer.detail
                waiting.append((client, answer))
            with server.client() as late:
                late.http.headers["x-forwarded-for"] = "198.51.100.200"
                answer = late.join(check["id"], server.baseline(check))
            assert answer.error == t("message.heavy_queue_full", "en")
        finally:
            for client, answer in waiting:
                client.cancel(check["id"], answer.event_id)
                client.close()
            first.cancel(check["id"], running.event_id)
            first.wait(running)


def test_a_fifo_model_is_refused_at_once_while_another_visitors_analysis_completes(server, bait, cat, tmp_path):
    """The FIFO named as the model blocked the model's turn on a local server: every visitor waited until something
    wrote to it. Now it is refused before it is opened (local: "it is a FIFO"; public: not a listed model), while
    another visitor's analysis of a photo never seen before runs and completes."""
    fresh = tmp_path / "fresh.png"
    Image.fromarray(255 - data.chelsea()).save(fresh)           # not cached: this analysis runs the model
    event = server.named("page_analyze")
    results = {}
    with server.client(timeout=60) as visitor, server.client(timeout=60) as attacker:
        values = server.baseline(event)
        values[0] = {"path": visitor.upload(fresh), "meta": FILE_MARK, "orig_name": "fresh.png"}
        thread = threading.Thread(target=lambda: results.update(visitor=visitor.call(event["id"], values)))
        thread.start()
        attack = server.baseline(event)
        attack[[server.kind(i) for i in event["inputs"]].index("dropdown")] = str(bait.fifo)
        results["attacker"] = attacker.call(event["id"], attack)
        thread.join(timeout=120)
    record(server, event, "model: a FIFO, while another visitor's analysis runs", results["attacker"])
    assert not thread.is_alive() and results["visitor"].success, results["visitor"].error
    words = t("message.models_listed_only", "en") if server.public else "is not a checkpoint: it is a FIFO"
    assert any(words in text for text in said(results["attacker"])), said(results["attacker"])
    assert not bait.opened()


def test_files_made_for_visitors_live_in_gradios_cache(server):
    """The animation's GIF is written under the server's Gradio cache (deleted with it), not in a shared folder."""
    with server.client() as client:
        server.analysed(client)
        event = server.named("animate")
        answer = retry(client, event, server.baseline(event))
    assert answer.success, answer.error
    files = [v["path"] for v in answer.output["data"] if isinstance(v, dict) and v.get("path")]
    assert files and all(os.path.realpath(f).startswith(os.path.realpath(server.app.temp_dir)) for f in files), files
