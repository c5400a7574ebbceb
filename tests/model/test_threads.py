"""Protects capture under concurrency: two threads analysing two images at once get exactly their own results."""
from __future__ import annotations

import threading

import torch

import vit


def test_two_threads_capture_exactly_their_single_threaded_results(real_weights_dir, cat, camera):
    loaded = vit.load(real_weights_dir / "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors")
    inputs = [loaded.preprocess(cat), loaded.preprocess(camera)]
    with torch.no_grad():
        alone = [loaded.model.forward_with_attention(x, return_token_norms=True) for x in inputs]
    assert not torch.equal(alone[0][1], alone[1][1])  # different images, different maps: a mix-up would show

    rounds = 4
    results = [[None] * rounds for _ in inputs]
    errors = []
    barrier = threading.Barrier(len(inputs))

    def work(i: int) -> None:
        try:
            for r in range(rounds):
                barrier.wait()  # both threads enter the model together, every round
                with torch.no_grad():
                    results[i][r] = loaded.model.forward_with_attention(inputs[i], return_token_norms=True)
        except Exception as e:  # reported by the main thread below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not any(t.is_alive() for t in threads), "a thread never finished its forwards"
    assert not errors, errors
    for i, expected in enumerate(alone):
        for r in range(rounds):
            for got, want in zip(results[i][r][:3], expected[:3]):  # logits, attention, token norms
                assert torch.equal(got, want), (i, r)
