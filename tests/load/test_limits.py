"""Protects the pieces of a public server's limits one by one, without a served app (``test_public_server.py`` attacks
the served app as a whole): the memory budget's admission (``vit_explorer.budget``), the table of jobs covering every
handler the page wires (``vit_explorer.jobs``), the estimator's shape of growth (``viz.analysis.peak``), the queue's
turns and shares (``vit_explorer.fair``), the sessions' eviction order (``vit_explorer.sessions``), a body counted as
it comes (``vit_explorer.intake``), echoes cut (``vit_explorer.door``) and the limits an environment sets."""
from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import gradio as gr
import pytest

import app_server  # noqa: F401  (gives this process its own GRADIO_TEMP_DIR before any app is built)
import vit
from viz.analysis import peak
from viz.i18n import t
from vit_explorer import budget, fair, intake, jobs, limits, sessions
from vit_explorer.door import Refusal, readable
from vit_explorer.heavy import Stopped

GB = 2**30


# ---- the memory budget -------------------------------------------------------------------------------------------

def need(nbytes: int) -> budget.Need:
    return budget.Need(nbytes, "job.explain", (("side", 1232),), lambda lang, capacity: t("advice.smaller_size", lang,
                                                                                          side=832))


def test_a_job_that_could_never_fit_is_refused_with_what_would(monkeypatch):
    monkeypatch.setattr(limits.LIMITS, "max_memory", 6 * GB)
    held = budget.Budget()
    with pytest.raises(Refusal) as refused:
        with held.reserve(need(21 * GB), "en"):
            pass
    assert str(refused.value) == ("Explaining at 1232 px would need about 21.0 GB of memory at its peak, more than "
                                  "this server allows at once (6.0 GB). It fits at an input size of 832 px or less.")
    with pytest.raises(Refusal) as refused:
        with held.reserve(need(21 * GB), "zh-CN"):
            pass
    assert "832" in str(refused.value) and "GB" in str(refused.value) and "像素" in str(refused.value)
    assert held.held == 0


def test_jobs_that_fit_together_run_together_and_one_that_does_not_waits_for_the_memory(monkeypatch):
    monkeypatch.setattr(limits.LIMITS, "max_memory", 10 * GB)
    held = budget.Budget()
    order = []

    def second():
        with held.reserve(need(6 * GB)):
            order.append("second runs")

    with held.reserve(need(5 * GB)):
        with held.reserve(need(4 * GB)):                      # nested: covered by the job's own reservation
            assert held.held == 5 * GB
        thread = threading.Thread(target=second)
        thread.start()
        time.sleep(0.5)
        order.append("first ends")                            # 5 + 6 > 10: the second waits for the first
    thread.join(timeout=10)
    assert order == ["first ends", "second runs"] and held.held == 0 and held.peak_held == 6 * GB


def test_a_job_waiting_for_memory_is_told_to_try_again(monkeypatch):
    monkeypatch.setattr(limits.LIMITS, "max_memory", 10 * GB)
    monkeypatch.setattr(budget, "WAIT_SECONDS", 0.5)
    held = budget.Budget()
    refused = []

    def other():
        try:
            with held.reserve(need(6 * GB)):
                pass
        except Refusal as err:
            refused.append(str(err))

    with held.reserve(need(5 * GB)):
        thread = threading.Thread(target=other)
        thread.start()
        thread.join(timeout=10)
    assert refused == [t("message.memory_busy", "en", seconds=1)]


def test_a_job_whose_visitor_left_stops_waiting(monkeypatch):
    monkeypatch.setattr(limits.LIMITS, "max_memory", 10 * GB)
    held = budget.Budget()
    gone = threading.Event()
    monkeypatch.setattr("vit_explorer.heavy.still_wanted", lambda: not gone.is_set())
    outcome = []

    def other():
        try:
            with held.reserve(need(6 * GB)):
                outcome.append("ran")
        except Stopped:
            outcome.append("stopped")

    with held.reserve(need(5 * GB)):
        thread = threading.Thread(target=other)
        thread.start()
        gone.set()
        thread.join(timeout=10)
    assert outcome == ["stopped"]


# ---- the estimates -------------------------------------------------------------------------------------------------

def test_the_estimates_grow_with_the_input_as_the_jobs_do():
    """The gradient pass holds every block's attention and its gradient: an explanation of a ViT-Ti at 1232 px needs
    gigabytes where one at 224 needs tens of megabytes, and the largest side that fits a budget is the last one."""
    model = vit.VisionTransformer(vit.variant("vit_ti_16"))
    small, large = (peak.Shape.of(model, s, s) for s in (224, 1232))
    assert peak.of("explain", large) > 9 * GB > 100 * 2**20 > peak.of("explain", small)
    assert peak.of("render", large) < peak.of("analysis", large) < peak.of("explain", large)
    side = peak.largest_side("explain", model, 6 * GB)
    assert peak.of("explain", peak.Shape.of(model, side, side)) <= 6 * GB
    assert peak.of("explain", peak.Shape.of(model, side + 16, side + 16)) > 6 * GB
    assert peak.of("trust", small, sanity=True) > peak.of("trust", small)
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    assert peak.Shape.of(model, 448, 448) == peak.Shape.of_config(model.cfg, 448, 448, params)


def test_a_clips_estimates_follow_its_steps_groups_and_the_docs_quote_them():
    """A clip's shape is read from the description: a divided model's time and space steps attend inside their groups
    (far fewer pairs than one joint step over as many tokens), and video.md quotes VideoMAE-B/16's estimates."""
    from pathlib import Path

    import torch

    from vit.video import VideoConfig, VideoTransformer
    from viz.video.faithfulness import BATCH

    with torch.device("meta"):
        videomae = VideoTransformer(VideoConfig(k_bias=False))                      # B/16, 16 frames, tubelets of 2
        timesformer = VideoTransformer(VideoConfig(num_frames=8, tubelet_size=1, attention="divided", class_token=True,
                                                   pos_embed="space_time", global_pool="token"))
    joint, divided = peak.ClipShape.of(videomae), peak.ClipShape.of(timesformer)
    assert (joint.tokens, joint.depth, joint.layer) == (1568, 12, 12 * 1568**2)
    assert (divided.tokens, divided.depth) == (1569, 24)
    assert divided.layer == max(12 * 196 * 8**2, 12 * 8 * 197**2) < joint.layer
    analysis, classmap = peak.of("video", joint), peak.of("video_classmap", joint, method="gradcam")
    gae = peak.of("video_classmap", joint, method="gae")
    assert analysis < classmap < gae
    docs = " ".join((Path(__file__).resolve().parents[2] / "docs" / "video.md").read_text(encoding="utf-8").split())
    assert (f"{analysis / GB:.2f} GB for the analysis, {classmap / GB:.2f} GB for Grad-CAM per frame and "
            f"{gae / GB:.2f} GB for GAE") in docs
    assert f"estimated at {peak.of('video_check', joint, batch=BATCH) / GB:.2f} GB for VideoMAE-B/16" in docs


def test_every_handler_the_page_wires_runs_a_known_job(augreg_weights):
    """A new handler must say what it runs (``vit_explorer.jobs.JOBS``) or that it runs nothing (``LIGHT``)."""
    from vit_explorer.layout import build_app

    demo = build_app(augreg_weights)
    wired = [fn.fn for fn in demo.fns.values() if getattr(fn.fn, "job", None) is not None]
    assert len(wired) > 40
    assert not [name for name in (fn.job for fn in wired) if name not in jobs.JOBS and name not in jobs.LIGHT]
    assert set(jobs.JOBS) | set(jobs.LIGHT) >= {fn.job for fn in wired}
    unused = {name for name in (*jobs.JOBS, *jobs.LIGHT) if not name.startswith("vit_explorer.api.")} - \
        {fn.job for fn in wired}
    assert not unused, f"entries for handlers the page no longer wires: {unused}"


# ---- queues -------------------------------------------------------------------------------------------------------

def fake_event(address: str, session: str = "s", length: int = 100):
    request = SimpleNamespace(client=SimpleNamespace(host=address), headers={"content-length": str(length)})
    return SimpleNamespace(request=request, session_hash=session, alive=True, concurrency_id="model", _id=id(request))


def test_addresses_take_turns_within_a_kind_of_work():
    queue = fair.FairQueue.__new__(fair.FairQueue)
    waiting = SimpleNamespace(queue=[], concurrency_limit=1)
    queue.event_queue_per_concurrency_id = {"model": waiting}
    queue.event_ids_to_events = {}
    arrivals = [fake_event("flood") for _ in range(5)] + [fake_event("visitor"), fake_event("other"),
                                                          fake_event("visitor")]
    for event in arrivals:
        waiting.queue.append(event)
        queue.event_ids_to_events[event._id] = event
        queue._take_turns(event._id)
    order = [e.request.client.host for e in waiting.queue]
    assert order == ["flood", "visitor", "other", "flood", "visitor", "flood", "flood", "flood"]


def test_an_address_beyond_its_share_is_told_when_to_try_again(monkeypatch):
    queue = fair.FairQueue.__new__(fair.FairQueue)
    waiting = SimpleNamespace(queue=[fake_event("flood", f"s{i}") for i in range(48)], concurrency_limit=1)
    queue.event_queue_per_concurrency_id = {"model": waiting}
    queue.active_jobs = []
    fn = type("Fn", (), {"concurrency_id": "model"})()              # hashable, as Gradio's BlockFunction is
    queue.process_time_per_fn = {fn: SimpleNamespace(avg_time=0.5)}
    said = queue.refusal(fn, "new", "flood", "en", fake_event("flood").request)
    assert said == t("message.busy_address", "en", seconds=25)
    assert queue.refusal(fn, "new", "visitor", "en", fake_event("visitor").request) is None
    big = fake_event("visitor", length=65 * 2**20).request                # the bodies one address may have waiting
    assert queue.refusal(fn, "new", "visitor", "en", big) == t("message.busy_address", "en", seconds=1)


# ---- sessions -----------------------------------------------------------------------------------------------------

def test_new_sessions_push_out_the_ones_without_work_first(monkeypatch):
    with gr.Blocks() as demo:
        work, language = gr.State(None), gr.State("en")
    holder = sessions.Sessions()
    holder.set_blocks(demo)
    monkeypatch.setattr(limits.LIMITS, "sessions_memory", int(10.5 * holder.weight))
    visitor = holder["visitor"]
    visitor[work._id] = SimpleNamespace(key="an analysis")
    holder.owned_by("visitor", "198.51.100.1")
    for i in range(150):                                        # a flood: new ids that only set the language
        holder[f"flood{i}"][language._id] = "zh-CN"
        holder.owned_by(f"flood{i}", "203.0.113.1")
    assert "visitor" in holder.session_data and holder.total() <= limits.LIMITS.sessions_memory
    for i in range(30):                                         # then sessions with work, from one address
        holder[f"worker{i}"][work._id] = SimpleNamespace(key=i)
        holder.owned_by(f"worker{i}", "203.0.113.2")
    assert "visitor" in holder.session_data                    # the address holding the most gave up its own
    assert sum(sid.startswith("worker") for sid in holder.session_data) == 9
    assert sessions.holds_work(holder.session_data["visitor"])


def test_a_closed_page_goes_with_its_uploads_unless_it_comes_back(tmp_path, monkeypatch):
    with gr.Blocks() as demo:
        work = gr.State(None)
    holder = sessions.Sessions()
    holder.set_blocks(demo)
    monkeypatch.setattr(limits.LIMITS, "public", True)
    monkeypatch.setattr(limits.LIMITS, "closed_session_seconds", 5)
    photos = {}
    for page in ("left", "back"):
        holder[page][work._id] = SimpleNamespace(key=page)
        photos[page] = tmp_path / f"{page}.jpg"
        photos[page].write_bytes(b"a photo")
        holder.used(page, str(photos[page]))
        holder.session_data[page].is_closed = True                    # its heartbeat ended
    started = time.time()
    holder.sweep(started)                                             # both seen closed
    time.sleep(0.05)
    holder["back"]                                                    # an event of the page that came back
    holder.sweep(started + 10)
    assert "left" not in holder.session_data and not photos["left"].exists()
    assert "back" in holder.session_data and photos["back"].exists()
    assert not holder.session_data["back"].is_closed


# ---- bodies, echoes, the environment ----------------------------------------------------------------------------

@pytest.mark.parametrize("split", [1, 3, 7, 1000])
def test_an_uploads_parts_are_counted_however_its_chunks_fall(split):
    boundary = b"--abc123"
    body = b"".join(boundary + b"\r\nContent-Disposition: form-data; name=\"files\"; filename=\"x\"\r\n\r\nzz\r\n"
                    for _ in range(6)) + boundary + b"--\r\n"
    chunks = [body[i:i + split] for i in range(0, len(body), split)]

    async def receive():
        return {"type": "http.request", "body": chunks.pop(0), "more_body": bool(chunks)}

    import asyncio
    counted = intake.Counted(receive, 10**6, None, boundary, files=4)
    with pytest.raises(intake.TooLarge):
        while chunks:
            asyncio.run(counted.receive())
    assert counted.refusal.key == "message.upload_too_many_files" and counted.parts in (6, 7)   # 5 files and more


def test_a_message_repeats_at_most_a_readable_part_of_what_was_typed():
    typed = "x" * 2**20
    said = readable(t("message.target_failed", "en", error=f"Unknown class {typed!r}"), (typed,))
    assert len(said) < 200 and said.startswith("Nothing to explain for that target: Unknown class 'xxxx")
    number = readable(t("message.input_size_refused", "en", side=10**300, patch=16, budget=6000, largest=1232))
    assert "1" + "0" * 15 + "…" in number and "0" * 17 not in number
    assert readable("A short message stays as it is.") == "A short message stays as it is."


def test_the_environment_raises_any_limit():
    assert limits.from_environment("sessions_memory=96M, upload_window=30,instant_burst=5") == {
        "sessions_memory": 96 * 2**20, "upload_window": 30.0, "instant_burst": 5}
    with pytest.raises(ValueError, match="Unknown limit 'session_memory'"):
        limits.from_environment("session_memory=1G")
    assert limits.memory_arg("1.5G") == int(1.5 * GB) and limits.memory_arg("512M") == 512 * 2**20
    with pytest.raises(ValueError):
        limits.memory_arg("12K")
