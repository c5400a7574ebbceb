"""Protects what the command line writes for a ViT and a Swin from changing under a restructure: the arrays of
attention.npz and the top-5 that ``python -m viz`` wrote for two tiny perturbed checkpoints (a ViT with two registers
on a 48×64 input, a two-stage Swin with 4×4 windows) while each architecture had its own code path
(tests/cli/before/, made by make_before.py), written again now that every model is read through its description.

Every array the earlier run wrote is written again, equal within float32 rounding of a different CPU (rtol 1e-5, and
an absolute 1e-6 of the array's largest value for entries near zero); the top-5's labels in the same order and their
probabilities to 1e-6.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from viz.cli import main

BEFORE = Path(__file__).parent / "before"
CASES = ("vit", "vit_masked", "swin")


@pytest.mark.parametrize("case", CASES)
def test_the_command_line_writes_what_it_wrote_before(case, tmp_path):
    expected = json.loads((BEFORE / f"expected_{case}.json").read_text())
    weights = BEFORE / ("swin.pth" if case.startswith("swin") else "vit.pth")
    assert main([str(BEFORE / "photo.png"), "--weights", str(weights), "--out", str(tmp_path), "--quiet",
                 *expected["args"]]) == 0
    run = tmp_path / "photo"
    with np.load(BEFORE / f"expected_{case}.npz") as before, np.load(run / "attention.npz") as now:
        missing = sorted(set(before.files) - set(now.files))
        assert not missing, f"arrays no longer written: {missing}"
        for key in before.files:
            old, new = before[key], now[key]
            assert new.shape == old.shape and new.dtype == old.dtype, (key, new.shape, old.shape, new.dtype, old.dtype)
            scale = float(np.nanmax(np.abs(old))) if old.size and np.issubdtype(old.dtype, np.floating) else 0.0
            np.testing.assert_allclose(new, old, rtol=1e-5, atol=1e-6 * scale, equal_nan=True, err_msg=key)
    top_k = json.loads((run / "result.json").read_text())["top_k"]
    assert [c["label"] for c in top_k] == [c["label"] for c in expected["top_k"]]
    np.testing.assert_allclose([c["probability"] for c in top_k], [c["probability"] for c in expected["top_k"]],
                               atol=1e-6)
