"""Protects the trust checks on real weights (AugReg ViT-Ti) and real photos (scikit-image's cat and coffee): the
occlusion oracle beats the random map, the random map lies between the best and the worst map, the class-specific
methods beat random on deletion on average, the sanity check separates GAE from a map that ignores the model, and
the table of AUCs in docs/trust.md is what the code measures.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import vit
from printed import agrees
from skimage import data

from viz.trust.job import occlusion_map, trust_report
from viz.explain import METHODS
from viz.explain.methods import Method
from viz.trust import FLAG_THRESHOLD
from vit.explain import ClassTarget

pytestmark = pytest.mark.slow   # every method's curves on real weights and photos

REPO = Path(__file__).resolve().parents[2]
PHOTOS = {"chelsea": data.chelsea, "coffee": data.coffee}          # photos that ship with scikit-image
CLASS_SPECIFIC = [n for n, m in METHODS.items() if m.class_specific]


@pytest.fixture(scope="module")
def augreg(real_weights_dir):
    return vit.load(real_weights_dir / "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors")


def model_input(loaded, photo):
    from PIL import Image
    return loaded.preprocess.to_tensor(loaded.preprocess.crop_image(Image.fromarray(photo())))


@pytest.fixture(scope="module")
def reports(augreg):
    """Every method and the occlusion oracle on each photo, for its top-1 class."""
    out = {}
    for name, photo in PHOTOS.items():
        x = model_input(augreg, photo)
        top = int(augreg.model(x).argmax())
        oracle = occlusion_map(augreg.model, x, ClassTarget(top))
        out[name] = trust_report(augreg.model, x, ClassTarget(top, augreg.labels[top]), list(METHODS),
                                 maps={"oracle": oracle})
    return out


def test_the_true_single_patch_effect_beats_the_random_map(reports):
    for name, r in reports.items():
        oracle, random = r.methods["oracle"].faithfulness, r.random
        assert oracle.deletion_auc < random.deletion_auc - 0.1, name
        assert oracle.insertion_auc > random.insertion_auc + 0.05, name


def test_the_random_map_lies_between_the_best_and_the_worst_map(reports):
    for name, r in reports.items():
        deletion = [m.faithfulness.deletion_auc for m in r.methods.values()]
        insertion = [m.faithfulness.insertion_auc for m in r.methods.values()]
        assert min(deletion) < r.random.deletion_auc < max(deletion), name
        assert min(insertion) < r.random.insertion_auc < max(insertion), name


def test_class_specific_methods_beat_random_on_deletion_on_average(reports):
    for name, r in reports.items():
        mean = np.mean([r.methods[n].faithfulness.deletion_auc for n in CLASS_SPECIFIC])
        assert mean < r.random.deletion_auc, f"{name}: class-specific {mean:.3f} vs random {r.random.deletion_auc:.3f}"


def _centre_prior(arrays) -> np.ndarray:
    """A map that ignores the model: closeness to the centre of the grid."""
    gh, gw = arrays.grid
    r, c = np.mgrid[0:gh, 0:gw]
    return -np.hypot(r - (gh - 1) / 2, c - (gw - 1) / 2).astype(np.float32)


def test_sanity_gae_falls_with_randomised_layers_while_a_centre_prior_stays_at_one_and_is_flagged(augreg,
                                                                                                    monkeypatch):
    monkeypatch.setitem(METHODS, "centre", Method("centre", "none", _centre_prior, "centre prior", "a test", False))
    x = model_input(augreg, data.chelsea)
    r = trust_report(augreg.model, x, None, ["gae", "centre"], sanity=True)
    gae, centre = r.methods["gae"].sanity, r.methods["centre"].sanity
    assert len(gae) == len(centre) == len(augreg.model.blocks)
    assert gae[-1] < 0.5 and max(gae[-3:]) < FLAG_THRESHOLD and not r.methods["gae"].flagged   # well below 1
    assert centre == (1.0,) * 12 and r.methods["centre"].flagged


def test_the_docs_table_is_what_the_code_measures(reports):
    """docs/trust.md's table "| method | cat deletion | cat insertion | coffee deletion | coffee insertion |"."""
    text = (REPO / "docs" / "trust.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\w+)` \| (0\.\d{3}) \| (0\.\d{3}) \| (0\.\d{3}) \| (0\.\d{3}) \|$", text, re.M)
    assert {r[0] for r in rows} == set(METHODS) | {"oracle"}, "docs/trust.md's faithfulness table lost a row"
    for method, *quoted in rows:                  # at the precision printed (tests/printed.py)
        f = {p: reports[p].methods[method].faithfulness for p in ("chelsea", "coffee")}
        got = [f["chelsea"].deletion_auc, f["chelsea"].insertion_auc, f["coffee"].deletion_auc,
               f["coffee"].insertion_auc]
        assert all(agrees(q, g) for q, g in zip(quoted, got)), \
            f"docs/trust.md's {method} row says {quoted}, the code gives {got}"
