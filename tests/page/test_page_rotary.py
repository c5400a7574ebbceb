"""The page with the rotary families: a DINOv3 backbone opens, its Position tab shows the similarity its rotation
implies under a title that says so, and the tabs that need classes (Explain, Trust, Inside) say why they have none in
one sentence, in the visitor's language; a RoPE-ViT with a head is explained like any classifier."""
from __future__ import annotations

from types import SimpleNamespace

import gradio as gr
import numpy as np
import pytest
import timm
import torch

import app_server  # noqa: F401  (gives this process its own GRADIO_TEMP_DIR before the app is built)
from handler_steps import finished
from reference_models import randomize_, save_timm
from vit_explorer import state, views
from vit_explorer.controls import ControlValues
from vit_explorer.tabs import explain, inside, position, trust
from vit_explorer.tabs.explain import NO_CONTRAST, TOP1
from viz.i18n import t
from viz.position.view import position_panel


def timm_file(folder, name: str, **kwargs) -> str:
    torch.manual_seed(0)
    return save_timm(randomize_(timm.create_model(name, depth=2, embed_dim=64, num_heads=4, **kwargs)), folder)


@pytest.fixture(scope="module")
def photo(tmp_path_factory, cat) -> str:
    path = tmp_path_factory.mktemp("photo") / "cat.jpg"
    cat.save(path, quality=95)
    return str(path)


def opened(photo: str, model: str, lang: str = "en") -> dict:
    return views.page_analyze(None, photo, model, ControlValues(layer=0), None, lang)


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_a_dinov3_backbone_shows_its_rotation_and_says_why_it_has_no_classes(photo, tmp_path_factory, lang):
    path = timm_file(tmp_path_factory.mktemp("dinov3"), "vit_small_patch16_dinov3")
    page = opened(photo, path, lang)
    session = page["session"]
    served = state.model_of(session.key)
    assert served.loaded.config.family == "dinov3" and served.arrays.rotary_kernel is not None
    assert np.array_equal(np.asarray(position.show(SimpleNamespace(served=served, lang=lang, controls=SimpleNamespace(narrow=False)))["position"]),
                          np.asarray(position_panel(served.arrays, lang)))
    message = t("message.no_classes", lang)
    for run in (lambda: explain.explain(session, "gae", TOP1, NO_CONTRAST, "", False, 0.6, lang),
                lambda: finished(trust.check(session, TOP1, "", False, False, "fast", lang)),   # heavy jobs: generators
                lambda: finished(inside.look_inside(session, TOP1, NO_CONTRAST, "", False, lang))):
        with pytest.raises(gr.Error) as refused:
            run()
        assert refused.value.message == message


def test_a_rope_vit_classifier_is_explained(photo, tmp_path_factory):
    path = timm_file(tmp_path_factory.mktemp("rope"), "vit_small_patch16_rope_224", num_classes=5)
    page = opened(photo, path)
    explained = explain.explain(page["session"], "attnlrp", TOP1, NO_CONTRAST, "", False, 0.6, "en")
    assert "explain_picture" in explained and "AttnLRP" in explained["explain_line"]
