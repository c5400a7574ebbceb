"""The token-norm view finds the real high-norm artifact tokens of the AugReg ViT-Ti (its four corners),
flags nothing in DeiT-Ti, and masking the artifacts takes them out of the rollout."""
from __future__ import annotations

import numpy as np
import pytest
import vit
from viz import panels
from viz.analysis import analyze
from viz.maps.norms import artifact_mask

AUGREG = "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors"
DEIT = "deit_tiny_patch16_224.pipevit_ln_fixedpoint.safetensors"
CORNERS = {(0, 0), (0, 13), (13, 0), (13, 13)}


@pytest.fixture(scope="module")
def augreg_cat(real_weights_dir, cat):
    return analyze(vit.load(real_weights_dir / AUGREG), cat)


def flagged(mask: np.ndarray) -> set[tuple[int, int]]:
    return {(int(r), int(c)) for r, c in zip(*np.nonzero(mask))}


def test_augreg_corner_artifacts_are_flagged(augreg_cat):
    a = augreg_cat
    assert a.top_k(1)[0][0] == "Egyptian cat"
    flags = panels.artifact_flags(a)
    assert flagged(artifact_mask(flags)) == CORNERS                 # exactly the four corners, in any block
    assert all(flagged(flags[layer]) == CORNERS for layer in range(7, 12))   # from block 7 on …
    assert not flags[:6].any()                                       # … and not in the early blocks
    norms = a.token_norms[-1, a.num_prefix:].reshape(a.grid)
    ordinary = np.median(norms)
    assert min(norms[r, c] for r, c in CORNERS) > 10 * ordinary      # they are huge, not borderline


def test_artifacts_hijack_attention_and_masking_removes_them(augreg_cat):
    a = augreg_cat
    cls = a.attention[-1].mean(0)[0, a.num_prefix:].reshape(a.grid)
    assert sum(cls[r, c] for r, c in CORNERS) > 0.5                  # 4 of 196 patches take most of the CLS attention
    plain = panels.rollout_of(a)
    masked = panels.rollout_of(a, mask_artifacts=True)
    assert (int(plain.argmax() // 14), int(plain.argmax() % 14)) in CORNERS
    assert all(masked[r, c] == 0 for r, c in CORNERS)
    assert (int(masked.argmax() // 14), int(masked.argmax() % 14)) not in CORNERS
    assert np.isfinite(masked).all()


def test_deit_has_no_high_norm_tokens(real_weights_dir, cat):
    a = analyze(vit.load(real_weights_dir / DEIT), cat)
    assert not panels.artifact_flags(a).any()
