"""Protects the served app from bad checkpoints: a file that is not a checkpoint, a truncated download, another
architecture, labels that do not match the head, and a pickle carrying code each get a plain message from the
app's model loading (the /analyze API, the model picker's handler, vit.load underneath); the code is never
run; and the app keeps its current model: the same session goes on analysing photos with it, and in the
browser the model picker goes back to it.

test_checkpoint_refusals.py covers vit.load's refusals in depth; these cover what a person of the app meets.
"""
from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path

import pytest
import torch
import torchvision
from gradio_client import Client
from gradio_client.exceptions import AppError
from playwright.sync_api import sync_playwright
from safetensors.torch import save_file

from vit_explorer import state, views
from vit_explorer.controls import ControlValues
from vit_explorer.server import only_this_machine
import vit
from api_client import CAT_CLASSES, analyze, top5
from browser_setup import CHROMIUM, CHROMIUM_ARGS
from vit.checkpoints.files import OWN_FORMAT, OWN_VERSION


class Payload:
    """Unpickling this creates ``marker``: the stand-in for the code a malicious checkpoint runs."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return os.mkdir, (self.marker,)   # creates the marker (a folder), leaves no open file behind


def _tiny_vit() -> vit.VisionTransformer:
    torch.manual_seed(0)
    return vit.VisionTransformer(vit.variant("tiny", depth=2, img_size=32, num_classes=4))


def _labels_not_matching_the_head(path):
    """Our own format, written by hand because save_checkpoint refuses it: 4 outputs, 3 labels."""
    model = _tiny_vit()
    torch.save({"format": OWN_FORMAT, "version": OWN_VERSION,
                "config": {**asdict(model.cfg), "img_size": list(model.cfg.img_size)},
                "labels": ["cat", "dog", "fish"], "preprocess": vit.Preprocess.for_crop(32).to_dict(),
                "model": model.state_dict(), "extra": {}}, path)


def _make(kind: str, folder, weights: str) -> str:
    path = folder / {"photo": "model.pt", "truncated": "vit_tiny.safetensors", "resnet": "squeezenet.pth",
                     "labels": "mine.pt", "pickle": "evil.pth"}[kind]
    if kind == "photo":            # a JPEG renamed to .pt
        from PIL import Image
        from skimage import data
        Image.fromarray(data.chelsea()).save(path, format="JPEG")
    elif kind == "truncated":      # half a download of the real AugReg checkpoint
        payload = Path(weights).read_bytes()
        path.write_bytes(payload[: len(payload) // 2])
    elif kind == "resnet":         # another architecture's state dict
        torch.manual_seed(0)
        save_file(torchvision.models.squeezenet1_1().state_dict(), str(path))
    elif kind == "labels":
        _labels_not_matching_the_head(path)
    else:                          # a pickle whose loading would run code (here: create a marker file)
        torch.save({"model": _tiny_vit().state_dict(), "hook": Payload(folder / "payload_ran")}, path)
    return str(path)


BAD = {  # kind -> words the message must contain
    "photo": "is not a checkpoint! Expected a safetensors file",
    "truncated": "damaged safetensors file (truncated download?)",
    "resnet": "Unknown checkpoint format! Expected the keys of a torchvision, timm, DINO, Hugging Face or Google ViT",
    "labels": "wrong number of labels! Expected 4 (the head's outputs) but got 3",
    "pickle": "it is a pickle that holds Python objects other than tensors, which could run code",
}


@pytest.fixture(scope="module")
def bad(tmp_path_factory, augreg_weights) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("bad_checkpoints")
    return {kind: _make(kind, folder, augreg_weights) for kind in BAD}


@pytest.fixture(scope="module")
def photos(tmp_path_factory, cat, camera) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("photos")
    cat.save(folder / "cat.jpg", quality=95)
    camera.save(folder / "camera.png")
    return {"cat": str(folder / "cat.jpg"), "camera": str(folder / "camera.png")}


@pytest.mark.parametrize("kind", BAD)
def test_vit_load_refuses_with_a_clear_message(bad, kind):
    with pytest.raises(ValueError) as refused:
        vit.load(bad[kind])
    assert BAD[kind] in str(refused.value)


@pytest.mark.parametrize("kind", BAD)
def test_model_picker_handler_refuses_with_a_clear_message(augreg_url, bad, augreg_weights, kind):
    with pytest.warns(UserWarning) as refused:
        picker = views.switch_model(bad[kind], augreg_weights, None, None, ControlValues(), "en")["model"]
    assert len(refused) == 1 and picker.value == augreg_weights        # the picker goes back to the current model
    assert f"Could not load the model {bad[kind]!r}" in str(refused[0].message)
    assert BAD[kind] in str(refused[0].message)
    assert bad[kind] not in state.MODELS and augreg_weights in state.MODELS  # nothing half-loaded is kept; the current model is


@pytest.mark.parametrize("kind", BAD)
def test_api_refuses_the_checkpoint_and_the_session_keeps_its_model(augreg_url, bad, photos, kind):
    client = Client(augreg_url, verbose=False)
    assert top5(analyze(client, photos["cat"]))[0][0] in CAT_CLASSES
    with pytest.raises(AppError) as refused:
        analyze(client, photos["camera"], model=bad[kind])
    assert "Could not load the model" in str(refused.value) and BAD[kind] in str(refused.value)
    result = analyze(client, photos["camera"])  # the next photo, with the model the app already had
    assert top5(result)[0][0] == "tripod" and "augreg" in result[1]


def test_pickle_payload_never_ran(augreg_url, bad, photos):
    marker = Path(bad["pickle"]).with_name("payload_ran")
    with pytest.raises(AppError, match="could run code"):
        analyze(Client(augreg_url, verbose=False), photos["cat"], model=bad["pickle"])
    assert not marker.exists()
    torch.load(bad["pickle"], weights_only=False)  # the payload is real: an unsafe load runs it
    assert marker.exists()


def test_a_server_others_can_reach_loads_only_its_listed_models(augreg_url, photos, tmp_path, monkeypatch):
    """Through /analyze's ``model`` input anyone could name a server file (and learn whether it exists), and a
    known name made the server download that model. A public server refuses both; no server repeats a file's
    bytes."""
    secret = tmp_path / "credentials.txt"
    secret.write_text("SECRET-TOKEN-42\n")
    client = Client(augreg_url, verbose=False)
    with pytest.raises(AppError, match="is not a checkpoint") as refused:   # this machine alone: any path, or why not
        analyze(client, photos["cat"], model=str(secret))
    assert "SECRET" not in str(refused.value)
    monkeypatch.setattr(state.SETTINGS, "any_model", False)  # as launch() sets it for --host 0.0.0.0 or --share
    for source in (str(secret), "vit_h_14", "default"):
        with pytest.raises(AppError) as refused:
            analyze(client, photos["cat"], model=source)
        assert "only runs the models in its Model list" in str(refused.value)
        assert "SECRET" not in str(refused.value)
    assert top5(analyze(client, photos["camera"]))[0][0] == "tripod"  # its listed model still runs


@pytest.mark.parametrize("host, share, alone", [("127.0.0.1", False, True), ("localhost", False, True),
                                                ("0.0.0.0", False, False), ("192.168.1.5", False, False),
                                                ("127.0.0.1", True, False)])
def test_only_a_server_reachable_from_this_machine_alone_loads_any_model(host, share, alone):
    assert only_this_machine(host, share) is alone


@pytest.mark.slow
def test_browser_model_picker_goes_back_to_the_current_model(augreg_url, bad, photos):
    """Type a bad checkpoint in the picker: an error says why, the picker shows the current model again, and the
    next photo is analysed with it (not refused again because the picker still held the bad path)."""
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.set_default_timeout(60_000)
        page.goto(augreg_url)
        page.locator("#photo-input input[type=file]").set_input_files(photos["cat"])
        page.wait_for_selector("#top5 [data-testid=label-output-value]")
        picker = page.locator("#model-picker input")
        current = picker.input_value()
        picker.click()
        picker.fill(bad["truncated"])
        picker.press("Enter")
        page.wait_for_selector(".toast-body:has-text('damaged safetensors file')")
        page.wait_for_function("([sel, value]) => document.querySelector(sel).value === value",
                               arg=["#model-picker input", current])
        page.locator("#photo-input input[type=file]").set_input_files(photos["camera"])
        page.wait_for_function("() => document.querySelector('#top5 [data-testid=label-output-value]')"
                               ".innerText.trim() === 'tripod'")
        assert "augreg" in page.locator("#summary").inner_text()
        assert page.locator(".toast-body").count() == 1, page.locator(".toast-body").all_inner_texts()
        browser.close()
