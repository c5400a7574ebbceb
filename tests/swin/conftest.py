"""Fixtures of the Swin tests: our own small Swin, v1 and v2 (``swin_references.small_swin``), and a photo for it."""
from __future__ import annotations

import pytest

from swin_references import pixels, small_swin


@pytest.fixture(scope="module", params=[1, 2], ids=["v1", "v2"])
def swin(request):
    return small_swin(request.param)


@pytest.fixture
def photo():
    return pixels((32, 32), batch=1, seed=3)
