"""Protects the /analyze API (gradio_client against a served app with real weights): a cat is a cat, only the
photo is required, the preprocessing is the last input of /analyze and /explain (own by default), a broken upload
gets a plain message and the server keeps serving, concurrent clients each get exactly their own answer."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from gradio_client import Client, handle_file
from gradio_client.exceptions import AppError
from PIL import Image
from skimage import data

from app_server import running_app

CAT_CLASSES = {"Egyptian cat", "tabby", "tiger cat", "Persian cat", "Siamese cat", "lynx"}


@pytest.fixture(scope="module")
def url(real_weights_dir):
    with running_app(str(real_weights_dir / "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors")) as address:
        yield address


@pytest.fixture(scope="module")
def photos(tmp_path_factory, cat, camera) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("api_photos")
    images = {"cat.jpg": cat, "camera.png": camera, "motorcycle.jpg": Image.fromarray(data.stereo_motorcycle()[0])}
    paths = {}
    for name, image in images.items():
        image.save(folder / name)
        paths[name.split(".")[0]] = str(folder / name)
    (folder / "page.jpg").write_text("<!DOCTYPE html><html><body>Not a photo</body></html>")
    paths["page"] = str(folder / "page.jpg")
    return paths


def _top(result) -> list[tuple[str, float]]:
    return [(c["label"], c["confidence"]) for c in result[0]["confidences"]]


def test_analyze_classifies_the_cat_and_returns_the_panels(url, photos):
    result = Client(url, verbose=False).predict(handle_file(photos["cat"]), api_name="/analyze")
    top = _top(result)
    assert len(top) == 5 and top[0][0] in CAT_CLASSES and top[0][1] > 0.5
    assert [p for _, p in top] == sorted((p for _, p in top), reverse=True)
    assert "197 tokens" in result[1]
    panels = [r for r in result[2:] if isinstance(r, str) and not r.startswith(("#", "|"))]
    assert len(panels) == 11
    sizes = []
    for p in panels:                           # every panel is a readable image
        with Image.open(p) as image:
            sizes.append(image.size)
    rollout, attention, _, query_photo, query_out, query_in = sizes[:6]
    assert query_photo == (448, 448)  # the pixels the model saw, enlarged to click on
    assert all(h == 640 and w > 640 for w, h in (rollout, attention))  # display size + colour bar
    assert all(h == 320 and w > 320 for w, h in (query_out, query_in))
    assert "**Total: 5,717,416 parameters.**" in result[12]


def test_the_photo_is_the_only_required_input_of_the_two_public_endpoints(url):
    api = Client(url, verbose=False).view_api(print_info=False, return_format="dict")
    assert sorted(api["named_endpoints"]) == ["/analyze", "/explain"]
    for endpoint in ("/analyze", "/explain"):
        required = [p["parameter_name"] for p in api["named_endpoints"][endpoint]["parameters"]
                    if not p["parameter_has_default"]]
        assert required == ["photo"], endpoint


ANALYZE_PARAMETERS = ["photo", "model", "fusion", "discard_ratio", "start_layer", "opacity", "mask_artifacts", "layer",
                      "head", "mean_of_heads", "dino_mask", "through_all_layers", "shared_scale", "patch_true"]
EXPLAIN_PARAMETERS = ["photo", "method", "target", "contrast", "model"]


def test_the_preprocessing_is_the_last_input_of_both_endpoints_own_by_default(url, photos):
    client = Client(url, verbose=False)
    api = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    for endpoint, before in (("/analyze", ANALYZE_PARAMETERS), ("/explain", EXPLAIN_PARAMETERS)):
        parameters = api[endpoint]["parameters"]
        assert [p["parameter_name"] for p in parameters] == [*before, "preprocess"], endpoint   # added at the end
        assert parameters[-1]["parameter_default"] == "own" and parameters[-1]["type"]["enum"] == ["own", "crop",
                                                                                                   "squash"]
    squashed = client.predict(handle_file(photos["cat"]), preprocess="squash", api_name="/analyze")
    assert "squashed photo" in squashed[1] and "crop" not in squashed[1]


def test_explain_endpoint_returns_the_map_and_its_numbers(url, photos):
    client = Client(url, verbose=False)
    picture, numbers = client.predict(handle_file(photos["cat"]), "gae", "tabby", "", "", api_name="/explain")
    assert numbers["target"] == {"index": 281, "name": "tabby"} and numbers["method"] == "gae"
    assert np.asarray(numbers["map"]).shape == (14, 14) and numbers["readout"] == "the CLS token"
    with Image.open(picture) as image:
        assert image.height >= 224
    with pytest.raises(AppError, match="Unknown class 'unicorn'"):
        client.predict(handle_file(photos["cat"]), "gae", "unicorn", "", "", api_name="/explain")


def test_broken_upload_gets_a_message_and_the_server_keeps_serving(url, photos):
    client = Client(url, verbose=False)
    with pytest.raises(AppError, match="looks like a HTML page|looks like an? HTML page"):
        client.predict(handle_file(photos["page"]), api_name="/analyze")
    assert _top(client.predict(handle_file(photos["camera"]), api_name="/analyze"))[0][0] == "tripod"


@pytest.mark.slow
def test_concurrent_clients_each_get_their_own_answer(url, photos):
    names = ["cat", "camera", "motorcycle"] * 2
    alone = {n: Client(url, verbose=False).predict(handle_file(photos[n]), api_name="/analyze") for n in set(names)}
    assert len({_top(r)[0][0] for r in alone.values()}) == 3
    results, errors = [None] * len(names), []
    barrier = threading.Barrier(len(names))

    def ask(i: int) -> None:
        try:
            client = Client(url, verbose=False)
            barrier.wait()
            results[i] = client.predict(handle_file(photos[names[i]]), api_name="/analyze")
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(names))]
    for t in threads:
        t.start()
    for t in threads:   # bounded far beyond any machine's time: what is asserted is the outcome, never the speed
        t.join(timeout=1800)
    assert not any(t.is_alive() for t in threads), "a client got no answer in 30 minutes"
    assert not errors, errors
    for name, got in zip(names, results):
        assert [label for label, _ in _top(got)] == [label for label, _ in _top(alone[name])], name
        np.testing.assert_allclose([p for _, p in _top(got)], [p for _, p in _top(alone[name])], rtol=1e-5,
                                   err_msg=name)       # float32 on any kernel
        rollout_alone, rollout_got = (np.asarray(Image.open(r[2])).astype(int) for r in (alone[name], got))
        assert np.abs(rollout_got - rollout_alone).mean() < 0.5, name    # its own map (another's differs by tens)
