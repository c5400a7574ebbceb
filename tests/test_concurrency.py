"""Protects people using the app at the same time: 16 API clients sending 16 different photos at once each get
exactly the answer they get alone — no mixed-up sessions, maps or model state between concurrent requests."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from gradio_client import Client
from PIL import Image, ImageOps
from skimage import data

from api_client import AUGREG, analyze, model_input, top5
from app_server import running_app

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
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    for photo, got, expected in zip(photos, results, alone):
        assert top5(got) == top5(expected), photo  # same classes, bit-identical probabilities
        assert np.array_equal(model_input(got), model_input(expected)), photo  # its own photo, not another's
