"""Protects people using the app at the same time: 16 API clients sending 16 different photos at once each get
exactly the answer they get alone — no mixed-up sessions, maps or model state between concurrent requests — and
a picture two requests both produce is never downloaded half-written."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import gradio as gr
import numpy as np
import pytest
from gradio_client import Client
from PIL import Image, ImageOps
from skimage import data

from api_client import AUGREG, analyze, model_input, top5
from app_server import running_app
from vit_explorer.components import Picture

pytestmark = pytest.mark.slow   # 16 clients against a served app

CLIENTS = 16


@pytest.fixture(scope="module")
def url(real_weights_dir):
    with running_app(str(real_weights_dir / AUGREG)) as address:
        yield address


@pytest.fixture(scope="module")
def photos(tmp_path_factory) -> list[str]:
    """16 different photos: seven scikit-image photos, their mirror images, and two crops."""
    folder = tmp_path_factory.mktemp("crowd")
    base = {"cat": data.chelsea(), "astronaut": data.astronaut(), "coffee": data.coffee(), "rocket": data.rocket(),
            "motorcycle": data.stereo_motorcycle()[0], "camera": data.camera(), "coins": data.coins()}
    images = {}
    for name, pixels in base.items():
        images[name] = Image.fromarray(pixels)
        images[name + "_mirrored"] = ImageOps.mirror(images[name])
    images["cat_face"] = images["cat"].crop((100, 0, 350, 250))
    images["astronaut_face"] = images["astronaut"].crop((120, 20, 320, 220))
    paths = []
    for name, image in images.items():
        paths.append(str(folder / f"{name}.png"))
        image.save(paths[-1])
    assert len(paths) == CLIENTS
    return paths


def test_simultaneous_clients_each_get_their_own_answer(url, photos):
    alone = [analyze(Client(url, verbose=False), p) for p in photos]  # one at a time, a session each
    assert len({tuple(label for label, _ in top5(r)) for r in alone}) >= 12  # the photos really differ
    clients = [Client(url, verbose=False) for _ in photos]
    results, errors = [None] * CLIENTS, []
    start = threading.Barrier(CLIENTS)

    def ask(i: int) -> None:
        try:
            start.wait()
            results[i] = analyze(clients[i], photos[i])
        except Exception as e:  # any failure of a client thread is reported by the assertion below
            errors.append((photos[i], e))

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:   # bounded far beyond any machine's time: what is asserted is the outcome, never the speed
        t.join(timeout=1800)
    assert not any(t.is_alive() for t in threads), "a client got no answer in 30 minutes"
    assert not errors, errors
    for photo, got, expected in zip(photos, results, alone):
        assert [label for label, _ in top5(got)] == [label for label, _ in top5(expected)], photo   # same classes
        np.testing.assert_allclose([p for _, p in top5(got)], [p for _, p in top5(expected)], rtol=1e-5,
                                   err_msg=photo)   # the same probabilities (float32: any kernel's rounding)
        assert np.array_equal(model_input(got), model_input(expected)), photo  # its own photo, not another's


def test_a_picture_produced_again_is_not_rewritten_in_place():
    """Gradio's gr.Image rewrites an output picture's file in place (truncate, then write) each time the same
    picture is produced again, so a client downloading it at that moment can get a truncated file: with 16
    simultaneous clients (the model-only panels are the same for all) one did. The app's Picture writes it once."""
    def saves(component, image) -> list[tuple[str, int, int]]:
        out = []
        for _ in range(3):
            path = component.postprocess(image).path
            out.append((path, Path(path).stat().st_ino, Path(path).stat().st_mtime_ns))
            time.sleep(0.02)
        return out

    plain = saves(gr.Image(format="png"), Image.fromarray(data.astronaut()))
    assert len({p for p, _, _ in plain}) == 1 and len({m for _, _, m in plain}) == 3  # same file, written 3 times
    ours = saves(Picture(format="png"), Image.fromarray(data.coffee()))
    assert len(set(ours)) == 1  # same file, same inode, never written again
    assert np.array_equal(np.asarray(Image.open(ours[0][0])), data.coffee())
