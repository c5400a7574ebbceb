"""Protects the door of the page (``vit_explorer.door``, ``state.model_source``, ``vit_explorer.heavy``) piece by
piece, without a served app: which photo paths get through, the inline photo's limit, the models' guard and its
display names, a stepwise job that stops at its next step; and documents the gap in Gradio 6.31 that makes the
photo check ours (a stock gr.Image opens a server path it is sent), so that a Gradio that closes it is noticed.
``test_attacks.py`` attacks the served app as a whole."""
from __future__ import annotations

import base64
import os
from pathlib import Path
from types import SimpleNamespace

import gradio as gr
import pytest
from PIL import Image
from skimage import data

import app_server  # noqa: F401  (gives this process its own GRADIO_TEMP_DIR before any app is built)
from canaries import FifoCanary
from raw_queue import FILE_MARK, RawClient
from vit_explorer import events, state
from vit_explorer.door import Refusal, inline_photo, not_finite, uploaded_photo
from vit_explorer.limits import LIMITS
from vit_explorer.texts import I18N
from viz.i18n import t

REFUSED = t("message.photo_not_uploaded", "en")


@pytest.fixture
def uploads(tmp_path, monkeypatch) -> Path:
    """An upload folder of its own (Gradio's, as $GRADIO_TEMP_DIR names it) holding one uploaded photo."""
    folder = tmp_path / "uploads"
    (folder / "abc123").mkdir(parents=True)
    Image.fromarray(data.chelsea()).save(folder / "abc123" / "cat.jpg")
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(folder))
    return folder


def test_an_uploaded_photo_gets_through_resolved(uploads):
    photo = uploads / "abc123" / "cat.jpg"
    assert uploaded_photo(str(photo)) == os.path.realpath(photo)
    assert uploaded_photo(str(uploads / "abc123" / ".." / "abc123" / "cat.jpg")) == os.path.realpath(photo)


def test_anything_else_gets_one_message_whatever_it_names(uploads, tmp_path):
    """A server path, a missing file, a FIFO, a device, a folder, a link out of the folder, a path that climbs out of
    it, a URL, nothing: one message, the same for all, and no FIFO opened."""
    secret = tmp_path / "secret.png"
    Image.fromarray(data.coffee()).save(secret)
    (uploads / "abc123" / "link.png").symlink_to(secret)
    with FifoCanary(uploads / "abc123" / "pipe.png") as inside, FifoCanary(tmp_path / "pipe.png") as outside:
        paths = [str(secret), str(tmp_path / "missing.png"), str(outside.path), str(inside.path), "/dev/zero",
                 "/etc/passwd", "/proc/self/environ", str(uploads / "abc123"), str(uploads / "abc123" / "link.png"),
                 str(uploads / "abc123" / ".." / ".." / "secret.png"), str(uploads / "nothing.png"),
                 "http://127.0.0.1:9/cat.png", "https://example.com/cat.png", "", None]
        for path in paths:
            with pytest.raises(Refusal) as refused:
                uploaded_photo(path)
            assert str(refused.value) == REFUSED, path
        assert not inside.opened.is_set() and not outside.opened.is_set()


def test_an_inline_photo_over_its_limit_is_refused_before_it_is_written(uploads):
    """An inline photo travels inside an event's JSON body, so its limit lies within the body's."""
    small = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n small").decode()
    saved = inline_photo(small, str(uploads))
    assert Path(saved).read_bytes() == b"\x89PNG\r\n\x1a\n small"
    before = sorted(uploads.rglob("*"))
    limit = LIMITS.inline_photo_bytes
    assert limit * 4 // 3 + 2**10 < LIMITS.json_bytes                     # base64 and the event around it fit a body
    too_large = "data:image/png;base64," + "A" * (limit // 3 * 4 + 8)     # one byte over, and a little
    with pytest.raises(Refusal, match=f"The photo is too large: {limit / 2**20:.1f} MB, the limit is "
                                      f"{limit / 2**20:.0f} MB"):
        inline_photo(too_large, str(uploads))
    assert sorted(uploads.rglob("*")) == before


def test_numbers_that_are_no_numbers_are_found_anywhere_in_a_payload():
    assert not not_finite([1, 2.5, "nan", None, {"a": [0.0, True]}])
    for bad in (float("nan"), float("inf"), -float("inf")):
        assert not_finite([1, {"a": [0, bad]}]) and not_finite(bad)


def test_a_refusal_is_said_in_the_visitors_language():
    refusal = Refusal("message.heavy_queue_full")
    assert str(refusal) == refusal.message == t("message.heavy_queue_full", "en")
    assert str(refusal.said_in("zh-CN")) == t("message.heavy_queue_full", "zh-CN")
    assert isinstance(refusal, gr.Error)


# ---- the models' guard ------------------------------------------------------------------------------------------

@pytest.fixture
def listed(monkeypatch, tmp_path):
    """A server whose own model is a file at an absolute path, with an empty weights/ folder."""
    own = tmp_path / "models" / "mine.safetensors"
    own.parent.mkdir()
    own.write_bytes(b"weights")
    monkeypatch.setenv("VIT_WEIGHTS_DIR", str(tmp_path / "no-weights"))
    monkeypatch.setattr(state.SETTINGS, "models", [str(own), "facebook/dinov2-small"])
    return own


def test_the_page_names_models_and_never_where_they_lie(listed):
    assert state.model_choices() == ["mine.safetensors", "facebook/dinov2-small"]    # a Hub name stays as it is
    assert state.display_name("default") == "default" and state.display_name(str(listed)) == "mine.safetensors"
    assert state.model_source("mine.safetensors") == str(listed)
    assert state.model_source("facebook/dinov2-small") == "facebook/dinov2-small"   # compared as a string


def test_a_public_server_answers_the_same_for_every_unlisted_name(listed, monkeypatch, tmp_path):
    monkeypatch.setattr(state.SETTINGS, "any_model", False)
    secret = tmp_path / "credentials.txt"
    secret.write_text("SECRET")
    answers = set()
    for name in (str(secret), str(tmp_path / "missing.pt"), str(listed), "default", "vit_h_14", "../models/mine.pt",
                 "mine", " ", None, "facebook/dinov2-base"):
        with pytest.raises(gr.Error) as refused:
            state.model_source(name)
        answers.add(refused.value.message)
    assert answers == {t("message.models_listed_only", "en")}
    assert state.model_source(" mine.safetensors ") == str(listed)


def test_a_local_server_tries_what_is_typed(listed, monkeypatch):
    monkeypatch.setattr(state.SETTINGS, "any_model", True)
    assert state.model_source("/any/path.pt") == "/any/path.pt" and state.model_source("vit_h_14") == "vit_h_14"
    with pytest.raises(gr.Error):
        state.model_source("")


# ---- heavy jobs stop at their next step ---------------------------------------------------------------------------

def test_a_stepwise_handler_stops_at_its_next_step_when_gradio_stops_asking():
    """Gradio runs a generator handler a step at a time and stops when its event is cancelled or its visitor
    leaves: the wired handler then runs no further step of the job (and took the model's turn only per step)."""
    ran = []

    def job(session):
        for step in range(10):
            with state.MODEL_TURN:
                ran.append(step)
            yield
        return {"out": "done"}

    page = events.Page(I18N, SimpleNamespace(depth=1, heads=1))
    page.add("session", gr.State(None))
    page.add("out", gr.Textbox())
    handler = page.wire(job, ["out"], heavy_group="trust")["fn"]
    steps = handler(None)
    next(steps), next(steps)
    steps.close()                                       # what Gradio does to a cancelled generator
    assert ran == [0, 1]
    assert list(handler(None))[-1] == "done" and ran[2:] == list(range(10))


# ---- Gradio's gap: a stock gr.Image opens the server path it is sent ------------------------------------------

def test_a_stock_gradio_image_opens_a_server_path_sent_without_the_file_mark(tmp_path):
    """Gradio 6.31 checks that a file payload marked ``gradio.FileData`` lies in its upload folder, but an image
    payload without the mark reaches gr.Image as it is, and gr.Image opens it: the reason every photo input of the
    page is a ``PhotoInput`` (``door.uploaded_photo``). If this test fails, Gradio has closed the gap: the check
    stays (it also covers links and URLs), but this note should go."""
    secret = tmp_path / "secret.png"
    Image.fromarray(data.coffee()).save(secret)
    with gr.Blocks() as demo:
        image, size = gr.Image(type="pil"), gr.Textbox()
        gr.Button().click(lambda im: f"{im.width}x{im.height}" if im is not None else "nothing", image, size)
    port = app_server.free_port()
    demo.queue().launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        with RawClient(f"http://127.0.0.1:{port}", timeout=60) as client:
            fn = next(d["id"] for d in client.config()["dependencies"] if d["backend_fn"])
            unmarked = client.call(fn, [{"path": str(secret)}])
            marked = client.call(fn, [{"path": str(secret), "meta": FILE_MARK}])
    finally:
        demo.close()
    assert unmarked.success and unmarked.output["data"] == ["600x400"], "Gradio no longer opens unmarked paths"
    assert not marked.success                                # the marked payload is checked by Gradio itself
