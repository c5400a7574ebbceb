"""Protects the page's input size (``vit_explorer.views``: size_control, size_cost, switch_size; ``state.sized``): a
model whose position information can follow the size runs at its own size and larger, up to the server's token
budget (``--max-tokens``, or the public default), in steps of its patch; the cost is said before it runs (tokens,
the bytes kept, exactly what the analysis then keeps); the analysis at that size is the library's (``--input-size``'s)
and every map stays on the photo the model saw; a BEiT-like model (relative position bias) stays at its own size and
says why; sizes beyond the budget or between patches are one message and change nothing."""
from __future__ import annotations

from pathlib import Path

import gradio as gr
import numpy as np
import pytest
import torch

import app_server  # noqa: F401  (gives this process its own GRADIO_TEMP_DIR before the app is built)
import vit
from tiny_models import tiny
from tiny_run import COLOURS, tiny_checkpoint
from viz.analysis import analyze, cost
from viz.i18n import t
from vit_explorer import server, state, views
from vit_explorer.controls import ControlValues
from viz.controls import DISPLAY_SIZE
from viz.records import cached_bytes

SIDE, PATCH = 64, 8
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("sizes")
    beit = tiny(rel_pos_bias=True, pos_embed_kind="none", layer_scale=True, k_bias=False, readout="mean",
                fc_norm=True, img_size=SIDE, num_classes=len(COLOURS))
    return {"vit": str(tiny_checkpoint(folder / "tiny.pt", size=SIDE, patch=PATCH, depth=3)),
            "beit": str(vit.save_checkpoint(folder / "beit.pt", beit, COLOURS, vit.Preprocess.for_crop(SIDE)))}


@pytest.fixture
def local(monkeypatch):
    monkeypatch.setattr(state.SETTINGS, "any_model", True)
    monkeypatch.setattr(state.SETTINGS, "max_tokens", None)


def opened(model: str, photo: str):
    values = views.page_analyze(None, photo, model, ControlValues(), None, "en")
    return values["session"]


def test_the_control_spans_the_native_size_to_the_token_budget(checkpoints, local, monkeypatch):
    served = state.MODELS.get(checkpoints["vit"])
    limits = views.size_range(served)
    assert limits == dict(minimum=SIDE, maximum=77 * PATCH, value=SIDE, step=PATCH, interactive=True)   # 6,000 tokens
    assert cost.tokens_at(served.loaded.config, 77 * PATCH) <= cost.LOCAL_MAX_TOKENS < cost.tokens_at(
        served.loaded.config, 78 * PATCH)
    monkeypatch.setattr(state.SETTINGS, "max_tokens", 101)                 # --max-tokens 101: 10×10 patches + CLS
    assert views.size_range(served)["maximum"] == 10 * PATCH
    args = server.parse_args(["--max-tokens", "3000"])
    assert args.max_tokens == 3000 and server.parse_args([]).max_tokens is None


def test_a_public_servers_budget_keeps_one_analysis_within_its_memory(checkpoints, monkeypatch):
    monkeypatch.setattr(state.SETTINGS, "any_model", False)
    monkeypatch.setattr(state.SETTINGS, "max_tokens", None)
    cfg = vit.ViTConfig(**vit.variant("vit_b_16").__dict__)                 # ViT-B/16: 20 kB a token
    budget = state.token_budget(cfg)
    side = cost.largest_side(cfg, budget)
    assert cost.kept_bytes(cfg, side) <= state.ANALYSES_MEMORY // 4 < cost.kept_bytes(cfg, side + 16)
    assert budget < cost.LOCAL_MAX_TOKENS
    app = (REPO / "docs" / "app.md").read_text(encoding="utf-8")
    assert f"(a ViT-B/16 up to {budget:,} tokens, {side}×{side})" in app
    assert f"| `--max-tokens N` | {cost.LOCAL_MAX_TOKENS:,} (this machine alone) |" in app
    small = vit.variant("small-14", img_size=518, num_classes=0, layer_scale=True)
    assert (f"1022×1022, {cost.tokens_at(small, 1022):,} tokens (a local server allows {cost.LOCAL_MAX_TOKENS:,}) "
            f"and {cost.kept_bytes(small, 1022) / 2**20:.1f} MB kept") in app.replace("\n", " ")


def test_a_larger_size_is_the_librarys_analysis_at_that_size_with_its_cost_said_first(checkpoints, local, cat):
    photo = REPO / "examples" / "chelsea.jpg"
    session = opened(checkpoints["vit"], str(photo))
    said = views.size_cost(2 * SIDE, session, checkpoints["vit"], "en")["input_cost"]
    values = views.switch_size(2 * SIDE, session, ControlValues(), "en")
    key = values["session"].key
    assert key == session.key._replace(size=2 * SIDE)
    a = state.analysis(key)
    assert a.grid == (2 * SIDE // PATCH,) * 2 and a.image.size == (2 * SIDE, 2 * SIDE)
    served = state.served(checkpoints["vit"])
    c = cost.analysis_cost(served.loaded.config, 2 * SIDE, SIDE, 1.0)
    assert c.bytes == cached_bytes(a)                               # the bytes said are the bytes kept
    assert f"{c.tokens:,} tokens" in said and f"{c.bytes / 2**20:.1f} MB" in said
    loaded = vit.load(checkpoints["vit"])                                    # what --input-size 128 128 runs
    import dataclasses
    loaded = dataclasses.replace(loaded, own_preprocess=loaded.own_preprocess.at_size((2 * SIDE, 2 * SIDE)))
    reference = analyze(loaded.with_preprocess("own"), vit.image_file.open_image(photo))
    np.testing.assert_allclose(a.probabilities, reference.probabilities, rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(a.image), np.asarray(reference.image))   # the maps' photo: the same crop
    for name in ("rollout", "attention"):                                   # drawn over that photo
        assert values[name].height == DISPLAY_SIZE
    size = vit.image_file.open_image(photo).size
    native = state.model_of(session.key).loaded.preprocess.crop_box(size)
    larger = state.model_of(key).loaded.preprocess.crop_box(size)
    # the same part of the photo outlined, but for the whole pixels of the resize (64 / 0.875 = 73 px, 128 / 0.875 = 146)
    np.testing.assert_allclose(larger, native, atol=0.01 * max(size))
    back = views.switch_size(SIDE, values["session"], ControlValues(), "en")
    assert back["session"].key == session.key                                # the native size: the first analysis


def test_sizes_refused_with_one_message(checkpoints, local, monkeypatch):
    session = opened(checkpoints["vit"], str(REPO / "examples" / "coffee.jpg"))
    with pytest.raises(gr.Error, match="multiple of the patch size 8"):
        views.switch_size(SIDE + 4, session, ControlValues(), "en")
    monkeypatch.setattr(state.SETTINGS, "max_tokens", 101)
    with pytest.raises(gr.Error) as refused:
        views.switch_size(12 * PATCH, session, ControlValues(), "zh-CN")
    assert str(refused.value.message) == t("message.input_size_refused", "zh-CN", side=96, patch=8, budget=101,
                                           largest=80)


def test_a_relative_position_bias_keeps_its_own_size(checkpoints, local):
    served = state.MODELS.get(checkpoints["beit"])
    control = views.size_control(served, "en")
    assert control["input_size"].interactive is False and control["input_size"].maximum == SIDE
    assert control["input_cost"] == t("note.input_size_fixed", "en", side=SIDE)
    with pytest.raises(gr.Error, match="relative position bias"):
        state.served(checkpoints["beit"], "en", "own", 2 * SIDE)


@pytest.fixture(autouse=True)
def _no_grad():
    with torch.no_grad():
        yield
