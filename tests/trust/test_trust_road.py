"""Protects ROAD's noisy linear imputation (viz.trust.road) against pytorch-grad-cam's ``NoisyLinearImputer`` (the
ROAD authors' code): the same mask gives the same fill, without noise and with the same seed's noise; each imputed
pixel is the weighted mean of its neighbours; nothing kept gives the mean colour; and the ``road`` protocol of the
trust job is seeded and shares the curves' ends with the other protocols.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch
from pytorch_grad_cam.metrics.road import NoisyLinearImputer

from tiny_models import tiny
from viz.trust.job import ProtocolsJob, trust_report
from viz.trust.protocols import noise_generator, perturbed, pixel_mask, protocol_list
from viz.trust.road import NEIGHBOURS, NOISE, noisy_linear_imputation


def patch_mask(seed: int, grid=(3, 4), patch: int = 16) -> torch.Tensor:
    keep = torch.rand(grid, generator=torch.Generator().manual_seed(seed)) > 0.5
    return keep.float().repeat_interleave(patch, 0).repeat_interleave(patch, 1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_imputation_equals_grad_cams_without_noise_and_with_the_same_seeds_noise(seed):
    image = torch.randn(3, 48, 64, generator=torch.Generator().manual_seed(10 + seed))
    mask = patch_mask(seed)
    assert 0 < int(mask.sum()) < mask.numel()
    torch.manual_seed(0)
    reference = NoisyLinearImputer(noise=0.0)(image, mask)
    ours = noisy_linear_imputation(image, mask, noise=0.0)
    torch.testing.assert_close(ours, reference, rtol=0, atol=1e-5)
    torch.manual_seed(seed)                                       # grad-cam draws from the global generator
    reference = NoisyLinearImputer(noise=NOISE)(image, mask)
    ours = noisy_linear_imputation(image, mask, NOISE, torch.Generator().manual_seed(seed))
    torch.testing.assert_close(ours, reference, rtol=0, atol=1e-5)
    assert torch.equal(ours[:, mask > 0], image[:, mask > 0])     # kept pixels untouched


def test_each_imputed_pixel_is_the_weighted_mean_of_its_neighbours():
    image = torch.randn(1, 32, 32, generator=torch.Generator().manual_seed(3)).double()
    mask = torch.ones(32, 32)
    mask[8:24, 4:20] = 0
    out = noisy_linear_imputation(image, mask, noise=0.0)[0]
    for r, c in [(8, 4), (15, 11), (23, 19), (12, 4)]:
        mean = sum(w * out[r + dr, c + dc] for (dr, dc), w in NEIGHBOURS)      # all 8 neighbours inside the image
        assert float(out[r, c]) == pytest.approx(float(mean), abs=1e-9)
    corner = torch.ones(32, 32)
    corner[:16, :16] = 0                                          # neighbours outside the image are left out
    out = noisy_linear_imputation(image, corner, noise=0.0)[0]
    inside = [((dr, dc), w) for (dr, dc), w in NEIGHBOURS if dr >= 0 and dc >= 0]
    assert float(out[0, 0]) == pytest.approx(float(sum(w * out[dr, dc] for (dr, dc), w in inside)
                                                    / sum(w for _, w in inside)), abs=1e-9)


def test_nothing_kept_gives_the_mean_colour_and_everything_kept_the_image():
    image = torch.randn(3, 32, 32, generator=torch.Generator().manual_seed(4))
    empty = noisy_linear_imputation(image, torch.zeros(32, 32), noise=0.0)
    torch.testing.assert_close(empty, image.mean(dim=(1, 2), keepdim=True).expand_as(image))
    assert torch.equal(noisy_linear_imputation(image, torch.ones(32, 32)), image)
    with pytest.raises(ValueError, match=r"\(H, W\)"):
        noisy_linear_imputation(image, torch.ones(16, 16))


def test_the_road_images_are_seeded_by_the_kept_set_and_fill_only_removed_patches():
    x = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(5))
    keeps = [np.array([0, 5, 10]), np.array([1, 2, 3, 4, 15])]
    a = perturbed(x, keeps, "road", (4, 4), 8, seed=0)
    b = perturbed(x, keeps[::-1], "road", (4, 4), 8, seed=0)
    assert torch.equal(a[0], b[1]) and torch.equal(a[1], b[0])     # the same kept set, the same noise, any order
    assert not torch.equal(a[0], perturbed(x, keeps[:1], "road", (4, 4), 8, seed=1)[0])
    kept = pixel_mask(keeps[0], (4, 4), 8) > 0
    assert torch.equal(a[0][:, kept], x[0][:, kept])
    g1, g2 = noise_generator(0, keeps[0]), noise_generator(0, keeps[0][::-1])
    assert torch.equal(torch.randn(3, generator=g1), torch.randn(3, generator=g2))
    assert protocol_list("all") == ["tokens", "mean_colour", "blur", "road"]
    with pytest.raises(ValueError, match="Unknown protocol 'grey'"):
        protocol_list("tokens,grey")


def test_a_protocols_job_computes_the_maps_once_and_shares_the_curves_ends():
    model = tiny()
    x = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    job = ProtocolsJob(model, x, None, ["gae", "random"], protocols="all", rows_per_step=1)
    seen = [(done, total) for done, total, _ in job.steps()]
    assert [d for d, _ in seen] == list(range(1, len(seen) + 1)) and {t for _, t in seen} == {job.total()}
    assert [j.total() for j in job.jobs[1:]] == [2 * 18 + 1] * 3    # no map pass: 36 inner images + the all-filled one
    r = job.result()
    assert r.protocols == ["tokens", "mean_colour", "blur", "road"]
    for p, rep in r.reports.items():
        np.testing.assert_array_equal(rep.methods["gae"].map, r.first.methods["gae"].map)
        f = rep.methods["gae"].faithfulness
        assert f.deletion[0] == pytest.approx(r.first.methods["gae"].faithfulness.deletion[0])   # the whole photo
        assert f.deletion[-1] == f.insertion[0] == rep.random.deletion[-1]                      # nothing kept
    alone = trust_report(model, x, None, ["gae", "random"], protocol="road")           # seeded: the same curves
    np.testing.assert_allclose(alone.methods["gae"].faithfulness.deletion,
                               r.reports["road"].methods["gae"].faithfulness.deletion, rtol=0, atol=1e-6)
    assert set(r.verdicts()) == {"gae"}
