"""Protects the training (``viz.concepts.train``: overcomplete's SAE, loss and loop on cached tokens) and the SAE's
plain-torch form (``viz.concepts.sae``).

- a planted dictionary (tokens made from a known sparse code over known unit directions): the trained SAE recovers
  the directions (mean best cosine ≥ 0.9), and its FVU, L0 and dead fraction on the held-out tokens are those
  overcomplete's own metrics give on its own model's output and those a direct numpy computation gives;
- the plain-torch form encodes and reconstructs as overcomplete's model does (TopK and BatchTopK, the input
  normalisation undone), and a latent's contributions add up to the reconstruction;
- the shards are streamed in a new order each epoch, every training token once, no held-out token;
- without overcomplete the command says how to install it, in one sentence."""
from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

from concept_cases import planted, write_cache
from viz.concepts.activations import Activations, held_out
from viz.concepts.metrics import moments, reconstruction
from viz.concepts.sae import SparseAutoencoder
from viz.concepts.train import TokenBatches, TrainOptions, input_statistics, overcomplete_sae, train


@pytest.fixture(scope="module")
def planted_cache(tmp_path_factory):
    tokens, dictionary, _ = planted()
    folder = write_cache(tmp_path_factory.mktemp("planted"), tokens, held_out(len(tokens), 0.1))
    return Activations.load(folder), dictionary


@pytest.fixture(scope="module")
def trained(planted_cache):
    acts, _ = planted_cache
    return train(acts, TrainOptions(latents=64, k=3, epochs=10, batch_size=256, lr=3e-3, progress=False))


def numpy_topk(x: np.ndarray, sae: SparseAutoencoder) -> tuple[np.ndarray, np.ndarray]:
    """(codes, reconstruction) of an SAE with centre_scale input and top-k codes, in float64 numpy."""
    W_enc, b_enc, W_dec, b_dec = (getattr(sae, n).double().numpy() for n in ("W_enc", "b_enc", "W_dec", "b_dec"))
    mean = sae.input_mean.double().numpy()
    pre = np.maximum(((x - mean) * sae.scale) @ W_enc + b_enc, 0.0)
    keep = np.argsort(-pre, axis=1, kind="stable")[:, :sae.k]
    codes = np.zeros_like(pre)
    np.put_along_axis(codes, keep, np.take_along_axis(pre, keep, axis=1), axis=1)
    return codes, (codes @ W_dec + b_dec) / sae.scale + mean


def held_out_tokens(acts: Activations) -> torch.Tensor:
    return torch.cat([part["tokens"] for part in acts.chunks("held_out")])


@pytest.mark.slow      # about a minute on a busy 2-core CPU: 23,040 tokens, 10 epochs
def test_a_planted_dictionary_is_recovered(planted_cache, trained):
    _, dictionary = planted_cache
    directions = torch.stack([trained.sae.direction(i) for i in range(trained.sae.latents)]).numpy()
    best = (dictionary @ directions.T).max(axis=1)                 # each planted direction's best learnt match
    print(f"\nmean best cosine {best.mean():.3f}, lowest {best.min():.3f}; overcomplete's logs {trained.logs}")
    assert best.mean() >= 0.9


@pytest.mark.slow
def test_fvu_and_l0_are_overcomplete_s_own_metrics_and_numpy_s(planted_cache, trained):
    from overcomplete.metrics import dead_codes, l0, r2_score

    acts, _ = planted_cache
    sums = reconstruction(trained.sae, acts, moments(acts, "train"))
    ours = {"fvu": sums.fvu(), "l0": sums.active / sums.count, "dead": 1 - sums.fired.mean()}
    x = held_out_tokens(acts)
    with torch.no_grad():                                          # the library's model on the normalised tokens
        normalised = (x - torch.from_numpy(trained.stats.mean).float()) * trained.stats.scale
        _, z, x_hat = trained.model(normalised)
    centre = normalised.mean(0)
    library = {"fvu": 1 - float(r2_score(normalised - centre, x_hat - centre)),
               "l0": float(l0(z)) * trained.sae.latents, "dead": float(dead_codes(z).mean())}
    codes, x_hat_np = numpy_topk(x.double().numpy(), trained.sae)
    x64 = x.double().numpy()
    direct = {"fvu": ((x64 - x_hat_np) ** 2).sum() / ((x64 - x64.mean(0)) ** 2).sum(),
              "l0": (codes > 0).sum(1).mean(), "dead": 1 - (codes > 0).any(0).mean()}
    print(f"\nours {ours}\novercomplete {library}\nnumpy {direct}")
    for reference in (library, direct):
        assert ours["fvu"] == pytest.approx(reference["fvu"], rel=1e-4)     # float32 sums of 2,304 tokens
        assert ours["l0"] == pytest.approx(reference["l0"], abs=1e-9)
        assert ours["dead"] == pytest.approx(reference["dead"], abs=1e-9)
    assert 0 < ours["fvu"] < 0.5 and ours["l0"] == 3


@pytest.mark.slow
def test_the_plain_form_encodes_as_overcomplete_s_model(planted_cache, trained):
    acts, _ = planted_cache
    x = held_out_tokens(acts)
    with torch.no_grad():
        normalised = (x - torch.from_numpy(trained.stats.mean).float()) * trained.stats.scale
        _, z, x_hat = trained.model(normalised)
    torch.testing.assert_close(trained.sae.encode(x), z, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(trained.sae.reconstruct(x), x_hat / trained.stats.scale +
                               torch.from_numpy(trained.stats.mean).float(), rtol=1e-5, atol=1e-5)


def small_cache(tmp_path, photos: int = 30, per_shard: int = 7) -> Activations:
    tokens, _, _ = planted(photos=photos, patches=16, width=8, atoms=12, active=2)
    return Activations.load(write_cache(tmp_path / "cache", tokens, held_out(photos, 0.2), per_shard=per_shard))


def test_batchtopk_trains_and_its_plain_form_applies_the_learnt_threshold(tmp_path):
    acts = small_cache(tmp_path)
    result = train(acts, TrainOptions(latents=16, k=2, kind="batchtopk", epochs=1, batch_size=64, progress=False))
    x = held_out_tokens(acts)
    with torch.no_grad():
        normalised = (x - torch.from_numpy(result.stats.mean).float()) * result.stats.scale
        _, z, _ = result.model(normalised)
    assert result.sae.kind == "batchtopk" and float(result.sae.threshold[0]) == float(result.model.running_threshold)
    torch.testing.assert_close(result.sae.encode(x), z, rtol=1e-5, atol=1e-5)


def test_a_latent_s_contributions_add_up_to_the_reconstruction_and_an_edit_removes_one():
    torch.manual_seed(0)
    sae = SparseAutoencoder(torch.randn(8, 12), torch.randn(12), torch.randn(12, 8), torch.randn(8), "topk", 4,
                            normalisation="layer_norm")
    x = torch.randn(20, 8) * 3 + 1
    codes = sae.encode(x)
    shift, _, scale = sae._affine(x)
    parts = sum(sae.contribution(x, codes, i) for i in range(12))
    torch.testing.assert_close(parts + sae.b_dec * scale + shift, sae.reconstruct(x), rtol=1e-5, atol=1e-5)
    latent = int(codes[0].argmax())
    torch.testing.assert_close(sae.edit(x, {latent: 0.0}), x - sae.contribution(x, codes, latent))
    torch.testing.assert_close(sae.edit(x, {latent: 3.0}), x + 2 * sae.contribution(x, codes, latent))
    assert torch.equal(sae.edit(x, {}), x)


def test_every_training_token_once_per_epoch_in_a_new_order(tmp_path):
    acts = small_cache(tmp_path)
    stats = input_statistics(moments(acts, "train"))
    data = TokenBatches(acts, stats, 50, seed=0, progress=False)
    epochs = [torch.cat(list(data)) for _ in range(2)]
    train_tokens = torch.cat([p["tokens"] for p in acts.chunks("train")])
    normalised = (train_tokens - torch.from_numpy(stats.mean).float()) * stats.scale
    assert len(epochs[0]) == len(normalised) // 50 * 50 == len(data) * 50      # whole batches only
    key = lambda t: sorted(map(tuple, t.round(decimals=4).tolist()))        # noqa: E731
    for epoch in epochs:
        assert set(key(epoch)) <= set(key(normalised))                     # no held-out token
    assert not torch.equal(epochs[0], epochs[1])                            # shuffled anew


def test_without_overcomplete_the_command_says_how_to_install_it(monkeypatch, tmp_path, capsys):
    from viz.cli.concepts import main

    monkeypatch.setitem(sys.modules, "overcomplete", None)
    monkeypatch.setitem(sys.modules, "overcomplete.sae", None)
    with pytest.raises(ValueError, match=r"optional package overcomplete: pip install "
                                         r"'vit-attention-explorer\[concepts\]'"):
        overcomplete_sae()
    assert main(["train", str(tmp_path), "--weights", "x", "--layer", "0", "--latents", "8", "--k", "2", "--out",
                 str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.strip() == ("error: training an SAE needs the optional package overcomplete: pip "
                                               "install 'vit-attention-explorer[concepts]' (or pip install "
                                               "overcomplete; it supports Python 3.8 to 3.12)")
