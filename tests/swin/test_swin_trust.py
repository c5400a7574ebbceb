"""Protects "can this map be trusted" on a Swin: token dropping is refused in one sentence (windows tile the whole
grid), the pixel protocols give every method's deletion and insertion curves over stage 0's patches, with the
whole photo and the empty one at their ends, and the cascading randomisation walks the Swin's blocks from the top
down (its maps change, the model does not)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from swin_references import small_swin
from viz.trust.job import ProtocolsJob, TrustJob, trust_report
from viz.trust.protocols import PIXEL
from vit.explain import ClassTarget
from vit.explain.perturb import cascading_randomization


def test_token_dropping_is_refused_for_a_swin(photo):
    with pytest.raises(ValueError, match=r"^Token dropping does not apply to this model: its windows tile the whole "
                                         r"grid and merging 2×2 groups of tokens between stages needs every group, .* "
                                         r"pixel protocols \(mean_colour, blur, road\)\.$"):
        TrustJob(small_swin(1), photo)


def test_pixel_protocols_give_every_curve(photo):
    model = small_swin(1)
    job = ProtocolsJob(model, photo, ClassTarget(1), ["gae", "gradcam", "rollout", "attnlrp"], protocols=PIXEL,
                       points=5)
    report = job.result()
    with torch.no_grad():
        whole = float(torch.softmax(model(photo), dim=1)[0, 1])
    for protocol, r in report.reports.items():
        assert set(r.methods) == {"gae", "gradcam", "rollout", "attnlrp"}, protocol
        for name, m in r.methods.items():
            assert m.map.shape == (16, 16)
            deletion, insertion = m.faithfulness.deletion, m.faithfulness.insertion
            assert np.isfinite(deletion).all() and np.isfinite(insertion).all()
            assert np.isclose(deletion[0], whole, rtol=1e-4) and np.isclose(insertion[-1], whole, rtol=1e-4)
            assert np.isclose(deletion[-1], insertion[0])                  # nothing kept: the same image
    assert report.reports["blur"].methods["gae"].faithfulness.deletion[2] != \
        report.reports["mean_colour"].methods["gae"].faithfulness.deletion[2]


def test_the_sanity_check_randomises_the_swins_blocks_from_the_top(photo):
    model = small_swin(1)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    randomized = [k for k, m in cascading_randomization(model)]
    assert randomized == list(range(1, 7))                                 # six blocks over three stages
    report = trust_report(model, photo, ClassTarget(1), ["gae", "rollout"], protocol="mean_colour", sanity=True,
                          points=3)
    for name in ("gae", "rollout"):
        rho = report.methods[name].sanity
        assert len(rho) == 6 and rho[-1] < 0.99, name                     # the map follows the weights
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
