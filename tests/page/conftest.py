"""The page tests' shared fixtures: the page built for the real AugReg ViT-Ti, and a tiny random CLIP checkpoint."""
import pytest
import torch


@pytest.fixture(scope="module")
def demo(augreg_weights):
    """The whole page (vit_explorer.layout.build_app) serving the AugReg ViT-Ti, built once per test module."""
    from vit_explorer.layout import build_app
    return build_app(augreg_weights)


@pytest.fixture(scope="module")
def clip_path(tmp_path_factory):
    """A tiny random CLIP in OpenAI's layout (image and text towers), as tests/model/test_clip.py builds it."""
    from reference_models import open_clip_tiny
    state_dict = {**open_clip_tiny().state_dict(), "input_resolution": torch.tensor(64),
                  "context_length": torch.tensor(77), "vocab_size": torch.tensor(49408)}
    path = tmp_path_factory.mktemp("clip") / "ViT-tiny.pt"
    torch.save(state_dict, path)
    return str(path)
