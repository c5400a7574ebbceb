"""Protects the claim that transformers' VideoMAE, TimeSformer, ViViT and V-JEPA 2 classifiers open as exactly their
reference: the same logits (relative difference <= 1e-4) and every attention step as transformers computed it
(eager attention), at two sizes and two frame counts, on random weights perturbed so that no zero bias or identity
LayerNorm hides a wrong mapping. TimeSformer's divided attention is checked as the two steps it is (the time
attention, which transformers does not return, read by a hook), V-JEPA 2's attentive probe with its blocks and the
query's cross-attention (its readout). Folders as save_pretrained writes them (the file layout) go through vit.load;
state dicts in transformers' in-memory names through the same filter."""
from __future__ import annotations

import json

import pytest
import torch

import vit
from reference_models import assert_close
from video_references import FAMILIES, SIZES, ReferenceRun, clips, reference
from vit.checkpoints.formats import load_strict
from vit.checkpoints.video_formats import huggingface_video_config, video_filter_fn
from vit.video import VideoConfig, VideoTransformer


def assert_steps(capture, run: ReferenceRun) -> None:
    assert len(capture.attention) == len(run.steps)
    for i, (ours, ref) in enumerate(zip(capture.attention, run.steps)):
        assert_close(ours, ref, f"attention of step {i} ({capture.architecture.blocks[i].attends})")
        assert torch.allclose(ours.sum(-1), torch.ones(()), atol=1e-5)


@pytest.mark.parametrize("frames", (4, 8))
@pytest.mark.parametrize("size", tuple(SIZES))
@pytest.mark.parametrize("family", FAMILIES)
def test_folder_equals_transformers(family, size, frames, tmp_path):
    ref = reference(family, size, frames)
    ref.save_pretrained(tmp_path / family)
    loaded = vit.load(tmp_path / family)
    assert loaded.config.family == family and loaded.format == f"huggingface-{family}"
    x = clips(2, frames, SIZES[size][4])
    run = ReferenceRun(ref, x)
    with torch.no_grad():
        capture = loaded.model.forward_with_attention(x)
        plain = loaded.model(x)
    assert_close(capture.output, run.logits, "logits (capture)")
    assert_close(plain, run.logits, "logits (fused attention)")
    assert_steps(capture, run)
    if family == "vjepa2":
        assert_close(capture.probe_attention, run.readout, "the probe query's attention")
    else:
        assert capture.probe_attention is None
    assert capture.architecture == loaded.model.architecture(SIZES[size][4], SIZES[size][4], frames)


@pytest.mark.parametrize("family", FAMILIES)
def test_in_memory_names_equal_transformers(family):
    """transformers ≥ 5 names some tensors otherwise in memory than in its files (ViViT's q/k/v/o_proj, VideoMAE's
    query and value biases): its state_dict() maps through the same filter."""
    ref = reference(family, "small", 4)
    cfg = VideoConfig(**huggingface_video_config(ref.config.to_dict(), family), num_classes=5)
    ours = VideoTransformer(cfg).eval()
    load_strict(ours, video_filter_fn(ref.state_dict(), f"huggingface-{family}"), family)
    x = clips(1, 4, 32, seed=3)
    run = ReferenceRun(ref, x)
    with torch.no_grad():
        capture = ours.forward_with_attention(x)
    assert_close(capture.output, run.logits)
    assert_steps(capture, run)


def test_timesformer_steps_and_layouts():
    """A divided block is two steps of the description: time (one group per patch place, its frames) then space (one
    group per frame: the CLS token and that frame's patches); the groups' token indices cover the stream as the
    description says."""
    ref = reference("timesformer", "small", 4)
    model = VideoTransformer(VideoConfig(**huggingface_video_config(ref.config.to_dict(), "t"), num_classes=5)).eval()
    arch = model.architecture(32, 32, 4)
    assert arch.steps == ("time", "space", "time", "space") and arch.depth == 4 and not arch.one_sequence
    assert arch.video and arch.patch_shape == (4, 4, 4) and arch.readout == "cls"
    time, space = arch.blocks[:2]
    assert (time.frames, time.grid, time.prefix, time.tubelet, time.num_tokens) == (4, (4, 4), 1, 1, 65)
    t_index, s_index = time.groups(), space.groups()
    assert t_index.shape == (16, 4) and s_index.shape == (4, 17)
    assert t_index[5].tolist() == [1 + 5, 1 + 16 + 5, 1 + 32 + 5, 1 + 48 + 5]      # patch place 5 through time
    assert s_index[2].tolist() == [0] + list(range(1 + 32, 1 + 48))                # frame 2 with the CLS token
    assert sorted(t_index.flatten().tolist()) == list(range(1, 65))
    videomae = VideoTransformer(VideoConfig(img_size=32, patch_size=8, num_frames=4, embed_dim=32, depth=2,
                                            num_heads=2, mlp_dim=64, num_classes=3))
    joint = videomae.architecture(32, 32, 8)                                       # any multiple of the tubelet
    assert joint.one_sequence and joint.readout == "mean" and joint.frames == 4 and joint.tubelet == 2
    assert joint.blocks[0].groups().tolist() == [list(range(64))] and joint.patch_shape == (4, 4, 4)


def test_video_refusals(tmp_path):
    """What the families here do not run is refused with a sentence: a VideoMAE reading its first token, TimeSformer's
    joint attention, another frame size or frame count than a learnt table's, a bare state dict."""
    with pytest.raises(ValueError, match="use_mean_pooling"):
        huggingface_video_config({"model_type": "videomae", "use_mean_pooling": False}, "x")
    with pytest.raises(ValueError, match="attention_type"):
        huggingface_video_config({"model_type": "timesformer", "attention_type": "joint_space_time"}, "x")
    ref = reference("vivit", "small", 4)
    ref.save_pretrained(tmp_path / "vivit")
    model = vit.load(tmp_path / "vivit").model
    with pytest.raises(ValueError, match="exactly 4 frames"):
        model(clips(1, 6, 32))
    with pytest.raises(ValueError, match="frame size"):
        model(clips(1, 4, 48))
    state = {k: v for k, v in ref.state_dict().items()}
    torch.save(state, tmp_path / "bare.pt")
    with pytest.raises(ValueError, match="config.json"):
        vit.load(tmp_path / "bare.pt")


def test_folder_processor_and_labels(tmp_path):
    """A folder's labels and video processor come with it; without a processor file its class's defaults are said."""
    ref = reference("videomae", "small", 4)
    ref.config.id2label = {i: f"action {i}" for i in range(5)}
    ref.config.label2id = {v: k for k, v in ref.config.id2label.items()}
    ref.save_pretrained(tmp_path / "m")
    loaded = vit.load(tmp_path / "m")
    assert loaded.labels == [f"action {i}" for i in range(5)]
    assert loaded.verified.status == "verified"                      # checked against transformers (test_video_verify)
    assert loaded.preprocess.crop == (32, 32) and loaded.preprocess.num_frames == 4
    assert any("VideoMAEVideoProcessor" in a for a in loaded.assumptions)
    (tmp_path / "m" / "video_preprocessor_config.json").write_text(json.dumps(
        {"video_processor_type": "VideoMAEVideoProcessor", "size": {"shortest_edge": 40},
         "crop_size": {"height": 32, "width": 32}}))
    loaded = vit.load(tmp_path / "m")
    assert loaded.preprocess.resize == 40 and not loaded.assumptions


def test_own_format_round_trip(tmp_path):
    """A video model saved in our own format reloads with the same logits, config and preprocessing."""
    ref = reference("timesformer", "small", 4)
    ref.save_pretrained(tmp_path / "t")
    loaded = vit.load(tmp_path / "t")
    vit.save_checkpoint(tmp_path / "own.pt", loaded.model, loaded.labels, loaded.preprocess)
    again = vit.load(tmp_path / "own.pt")
    x = clips(1, 4, 32)
    with torch.no_grad():
        assert torch.allclose(again.model(x), loaded.model(x), rtol=1e-6, atol=1e-7)
    assert again.config == loaded.config and again.preprocess == loaded.preprocess
    assert (again.verified.status, again.verified.key) == ("not_verified", "own_format")


@pytest.mark.parametrize("family", FAMILIES)
def test_attention_on_demand(family, tmp_path):
    """The fused forward that keeps each step's queries and keys gives the same stream, and every step's attention
    recomputed from them (all rows, or some) equals the captured one: 1,568 tokens' maps need not exist at once."""
    from vit.video import step_attention
    ref = reference(family, "small", 4)
    ref.save_pretrained(tmp_path / family)
    model = vit.load(tmp_path / family).model
    x = clips(2, 4, 32, seed=5)
    with torch.no_grad():
        capture = model.forward_with_attention(x)
        kept = list(model.blocks_with_queries_and_keys(x))
    assert len(kept) == len(capture.attention)
    for (tokens, q, k, block), attn in zip(kept, capture.attention):
        attn = attn if attn.ndim == 5 else attn.unsqueeze(1)                     # one group of every token
        assert q.shape[:4] == attn.shape[:4] and block in capture.architecture.blocks
        assert_close(step_attention(q, k, model.attention_scale), attn, f"{block.attends} step recomputed")
        rows = torch.tensor([0, attn.shape[-1] - 1])
        assert_close(step_attention(q, k, model.attention_scale, rows), attn[..., rows, :], "two rows")
    assert_close(model.forward_head(kept[-1][0]), capture.output, "the output of the fused forward")
