"""Protects the promise "a heavy job never holds another visitor back by more than one analysis" on every path of
the page that runs a model: the comparison's second model, CLIP's zero-shot scores, the Learn tab's guided walk and
a training run's snapshots and the Inside tab's views, head removal and patching each wait for the model's turn
while someone else holds it (an analysis running); the snapshots take it once per snapshot and the inside views once
per step (one forward and backward, or one layer's batch), never for the whole run. (A trust check, step by step, is
served and timed in test_app_trust.py.)"""
from __future__ import annotations

import threading

import gradio as gr
import pytest
import torch

import app_server  # noqa: F401  (gives this process its own GRADIO_TEMP_DIR before the app is built)
from handler_steps import finished
from viz.cache import Cache
from vit_explorer import api, state
from vit_explorer.controls import ControlValues
from vit_explorer.tabs import compare, explain, inside, learn

AUGREG = "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors"
DEIT = "deit_tiny_patch16_224.pipevit_ln_fixedpoint.safetensors"
HELD_S = 1.0   # how long the test holds the turn: a job that did not wait would finish well within it


@pytest.fixture(scope="module")
def photo(tmp_path_factory, cat) -> str:
    path = tmp_path_factory.mktemp("turn") / "cat.jpg"
    cat.save(path, quality=95)
    return str(path)


def _waits_for_the_turn(job) -> dict:
    """Run ``job`` in another thread while this one holds the model's turn: it must not finish until the turn is
    free, then it must finish. Returns its result and how often it took the turn."""
    result, errors = {}, []

    def run():
        try:
            result.update(job())
        except Exception as error:   # reported below
            errors.append(error)

    worker = threading.Thread(target=run)
    with state.MODEL_TURN:
        taken = state.MODEL_TURN.taken
        worker.start()
        worker.join(timeout=HELD_S)
        assert worker.is_alive(), "the job ran its model without waiting for the turn"
    worker.join(timeout=300)
    assert not worker.is_alive() and not errors, errors
    return {"result": result, "turns": state.MODEL_TURN.taken - taken}


def test_the_comparisons_second_model_waits_for_the_turn(real_weights_dir, photo):
    a, b = str(real_weights_dir / AUGREG), str(real_weights_dir / DEIT)
    session = api.analyze(photo, a)[0]
    state.MODELS.get(b)                                            # loaded (its warm-up took the turn) before
    done = _waits_for_the_turn(lambda: compare.compare(session, b, compare.AS_A, "en", ControlValues()))
    assert done["result"]["comparison"].width > 800 and done["turns"] == 1


def test_zero_shot_waits_for_the_turn(clip_path, photo):
    session = api.analyze(photo, clip_path)[0]
    done = _waits_for_the_turn(lambda: explain.zero_shot(session, "a cat, a dog", "en"))
    assert set(done["result"]["zero_shot"]) == {"a cat", "a dog"} and done["turns"] == 1


def test_the_guided_walk_waits_for_the_turn(real_weights_dir, photo, monkeypatch):
    session = api.analyze(photo, str(real_weights_dir / AUGREG))[0]
    monkeypatch.setattr(state, "WALKS", Cache(state.walk_key, state.WALKS_MEMORY))   # nothing walked yet
    done = _waits_for_the_turn(lambda: learn.show(session, 1, 11, "en"))
    assert "224×224×3" in done["result"]["learn_table"] and done["turns"] == 1


def test_snapshots_take_the_turn_once_per_snapshot(real_weights_dir, photo, tmp_path):
    from vit.model import ViTConfig, VisionTransformer
    from vit.train.build import scratch_preprocess
    from vit.train.snapshots import save_snapshot

    folder = tmp_path / "run.snapshots"
    for epoch in range(4):
        torch.manual_seed(epoch)
        model = VisionTransformer(ViTConfig(img_size=16, patch_size=4, embed_dim=16, depth=2, num_heads=2, mlp_dim=32,
                                            num_classes=2))
        save_snapshot(folder, model, ["a", "b"], scratch_preprocess((16, 16)), epoch, 0.5, 0.5, "learned")
    session = api.analyze(photo, str(real_weights_dir / AUGREG))[0]
    done = _waits_for_the_turn(lambda: compare.open_snapshots(session, str(folder), "en"))
    assert done["result"]["snapshot"].maximum == 3 and done["turns"] == 4      # one turn per snapshot, four in all


def test_the_inside_views_take_the_turn_once_per_step(tmp_path, photo, monkeypatch):
    from tiny_run import tiny_checkpoint
    from vit_explorer.tabs.explain import NO_CONTRAST, TOP1

    depth = 3
    model = str(tiny_checkpoint(tmp_path / "tiny.pt", depth=depth))
    monkeypatch.setattr(state, "INSIDE", Cache(None, state.INSIDE_MEMORY))       # nothing looked at yet
    session = api.analyze(photo, model)[0]
    quiet = lambda fraction, desc=None: None                                       # noqa: E731
    done = _waits_for_the_turn(lambda: finished(inside.look_inside(session, TOP1, NO_CONTRAST, "", False, "en", quiet)))
    shown = done["result"]["inside_state"]
    assert done["turns"] == 1 + depth                                 # the forward and backward, then each layer
    done = _waits_for_the_turn(lambda: finished(inside.ablate_heads(session, shown, ["1.0"], "en", quiet)))
    assert "1.0" in done["result"]["inside_ablation"] and done["turns"] == 2    # the forward, the ablated forward
    done = _waits_for_the_turn(lambda: finished(inside.patch_from(session, shown, photo, "en", quiet)))
    assert done["result"]["inside_patch_line"] and done["turns"] == 3 + depth  # both photos, the gradient, each layer


def test_a_checkpoint_is_opened_and_checked_before_the_models_turn(tmp_path):
    """While someone holds the model's turn, a model path that is no checkpoint (a FIFO, a text file) is refused at
    once: opening and checking a checkpoint never waits for, nor takes, the turn (only its warm-up forward does)."""
    from canaries import FifoCanary

    text = tmp_path / "notes.pt"
    text.write_text("not a checkpoint")
    with FifoCanary(tmp_path / "model.pt") as canary:
        for path in (canary.path, text):
            refused = []
            worker = threading.Thread(target=lambda p=path: refused.append(_refusal(str(p))))
            with state.MODEL_TURN:
                taken = state.MODEL_TURN.taken
                worker.start()
                worker.join(timeout=60)
                assert not worker.is_alive(), f"checking {path.name} waited for the model's turn"
            assert "is not a checkpoint" in refused[0] and state.MODEL_TURN.taken == taken
        assert not canary.opened.is_set()


def _refusal(path: str) -> str:
    try:
        state.served(path)
    except gr.Error as error:
        return error.message
    return "loaded"
