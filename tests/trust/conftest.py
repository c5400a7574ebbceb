"""The CLI tests' tiny checkpoint (5 classes, 32×32 input) and a folder of three random 40×48 photos."""
import numpy as np
import pytest
from PIL import Image

import vit
from tiny_models import tiny


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny")
    return str(vit.save_checkpoint(folder / "tiny.pt", tiny(), [f"class {i}" for i in range(5)],
                                   vit.Preprocess(32, 32)))


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    folder = tmp_path_factory.mktemp("photos")
    rng = np.random.default_rng(0)
    for name in ("a", "b", "c"):
        Image.fromarray(rng.integers(0, 255, (40, 48, 3), dtype=np.uint8)).save(folder / f"{name}.png")
    return folder
