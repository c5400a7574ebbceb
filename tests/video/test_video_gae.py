"""Protects the claim that a video model's GAE is Chefer et al. 2021's rule through space and time: on transformers'
VideoMAE, ViViT and V-JEPA 2 (joint attention, V-JEPA 2's probe blocks and query read by hooks; random weights,
perturbed; eager attention, ``output_attentions``, the attention probabilities' gradients kept with ``retain_grad``)
the rule written out here, R ← R + mean_h((∇A ⊙ A)⁺)·R read at the readout's row, equals ``viz.video.gae``'s map; on transformers' TimeSformer the same rule applied to
dense (T, T) matrices of the stream built here from its time and space attention (read by hooks) and their gradients
equals it too; and the deletion / insertion check over tubelets (``viz.video.faithfulness``): each curve point is
the model's probability on a clip built here with those tubelets painted with the baseline, each area np.trapezoid
of its curve."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.ndimage import gaussian_filter

import vit
from video_references import SIZES, clips, reference
from viz.video.classmap import clip_maps
from viz.video.faithfulness import ClipCheck
from viz.video.gae import gae_of_pass
from vit.explain import ClassTarget
from vit.explain.video import gradcam_pass
from vit.video import VideoConfig, VideoTransformer

FRAMES = 4
TOL = 1e-5          # relative to the map's largest value
# R − I alone, relative to its largest value: under a mean or probe readout that part is ~1e-4 of the identity's
# share, so float32 rounding of the whole (and thread-order sums) leaves ~1e-3 of it (a wrong rule: ~1e-1)
RELEVANCE_TOL = 5e-3


def ours_of(ref, tmp_path):
    ref.save_pretrained(tmp_path / "ref")
    return vit.load(tmp_path / "ref").model


def rule(steps: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Chefer et al. 2021's R over the stream from each step's dense (H, T, T) attention and its gradient."""
    T = steps[0][0].shape[-1]
    R = np.eye(T)
    for A, G in steps:
        E = np.maximum(G.astype(np.float64) * A, 0).mean(axis=0)
        R = R + E @ R
    return R


@pytest.mark.parametrize("family", ["videomae", "vivit"])
def test_joint_attention_equals_the_rule_on_transformers(family, tmp_path):
    ref = reference(family, "small", FRAMES).eval()
    ours = ours_of(ref, tmp_path)
    block = ours.architecture(32, 32, FRAMES).blocks[0]
    x = clips(1, FRAMES, SIZES["small"][4], seed=3)
    for cls in (0, 2):
        out = ref(pixel_values=x, output_attentions=True)
        for a in out.attentions:
            a.retain_grad()
        out.logits[0, cls].backward()
        R = rule([(a[0].detach().numpy(), a.grad[0].numpy()) for a in out.attentions])
        if family == "vivit":                                              # the CLS row over the patches
            expected = R[0, 1:]
        else:                                                              # the mean of the patch rows
            expected = R.mean(axis=0)
        expected = expected.reshape(block.frames, *block.grid)
        mine = clip_maps(ours, x, ("gae",), ClassTarget(cls)).maps["gae"]
        assert mine.shape == expected.shape == (2, 4, 4)
        err = np.abs(mine - expected).max() / np.abs(expected).max()
        assert err <= TOL, f"{family} class {cls}: GAE differs by {err:.2e} of its max"
        # beyond R's identity (the mean readout's 1/N on every patch): the gradient-weighted part alone
        base = 0.0 if family == "vivit" else 1.0 / expected.size
        rel = np.abs((mine - base) - (expected - base)).max() / np.abs(expected - base).max()
        assert rel <= RELEVANCE_TOL, f"{family} class {cls}: R − I differs by {rel:.2e} of its max"


def test_vjepa2_probe_readout_equals_the_rule_on_transformers(tmp_path):
    """V-JEPA 2: the rule through the encoder's blocks and the probe's self-attention blocks (read by hooks), read by
    the probe query's cross-attention over the tokens, mean of heads (p · R, as the photo GAE reads a probe)."""
    ref = reference("vjepa2", "small", FRAMES).eval()
    ours = ours_of(ref, tmp_path)
    x = clips(1, FRAMES, SIZES["small"][4], seed=6)
    for cls in (0, 3):
        kept = {"probe": [], "readout": []}

        def keep(name):
            def hook(module, args, output):
                output[1].retain_grad()
                kept[name].append(output[1])
            return hook

        hooks = [layer.self_attn.register_forward_hook(keep("probe")) for layer in ref.pooler.self_attention_layers]
        hooks.append(ref.pooler.cross_attention_layer.cross_attn.register_forward_hook(keep("readout")))
        try:
            out = ref(pixel_values_videos=x, output_attentions=True)
        finally:
            for h in hooks:
                h.remove()
        steps = [*out.attentions, *kept["probe"]]
        for a in steps:
            a.retain_grad()
        out.logits[0, cls].backward()
        R = rule([(a[0].detach().numpy(), a.grad[0].numpy()) for a in steps])
        p = kept["readout"][0][0, :, 0].detach().numpy().mean(axis=0)                # (N,) mean of heads
        expected = (p @ R).reshape(2, 4, 4)
        mine = clip_maps(ours, x, ("gae",), ClassTarget(cls)).maps["gae"]
        err = np.abs(mine - expected).max() / np.abs(expected).max()
        assert err <= TOL, f"class {cls}: GAE differs by {err:.2e} of its max"
        rel = np.abs((mine - p.reshape(2, 4, 4)) - (expected - p.reshape(2, 4, 4))).max() / \
            np.abs(expected - p.reshape(2, 4, 4)).max()
        assert rel <= RELEVANCE_TOL, f"class {cls}: R − I differs by {rel:.2e} of its max"


def timesformer_dense_steps(ref, x: torch.Tensor, cls: int) -> tuple[list, int, int]:
    """transformers' TimeSformer on one clip: every step's dense (H, T, T) attention and gradient over our stream
    (CLS, then frame-major patches), time step then space step per layer, built here from its grouped attention."""
    kept = []

    def force(module, args, kwargs):
        return (args[0], True), kwargs

    def keep(module, args, output):
        output[1].retain_grad()
        kept.append(output[1])

    hooks = []
    for layer in ref.timesformer.encoder.layer:
        inner = layer.temporal_attention.attention
        hooks.append(inner.register_forward_pre_hook(force, with_kwargs=True))
        hooks.append(inner.register_forward_hook(keep))
    try:
        out = ref(pixel_values=x, output_attentions=True)
    finally:
        for h in hooks:
            h.remove()
    for a in out.attentions:
        a.retain_grad()
    out.logits[0, cls].backward()
    Tp = x.shape[1]
    H = out.attentions[0].shape[1]
    N = out.attentions[0].shape[-1] - 1
    T = 1 + Tp * N
    steps = []
    for time, space in zip(kept, out.attentions):
        # time: group n = patch place n (B·N groups), slot τ -> stream token 1 + τ·N + n; the CLS token takes no part
        A, G = np.zeros((H, T, T)), np.zeros((H, T, T))
        for n in range(N):
            idx = 1 + np.arange(Tp) * N + n
            A[:, idx[:, None], idx[None, :]] = time[n].detach().numpy()
            G[:, idx[:, None], idx[None, :]] = time.grad[n].numpy()
        steps.append((A, G))
        # space: group τ = frame τ, slot 0 the CLS token, slot 1 + j -> stream token 1 + τ·N + j. The step mixes the
        # stream as out = D·V with D's CLS row the mean of its rows over the frames (its value is the same in every
        # frame); ∂score/∂D_ij = T'·∂score/∂A^τ_ij for the CLS row (the mean's 1/T'), ∂score/∂A^τ_ij elsewhere.
        A, G = np.zeros((H, T, T)), np.zeros((H, T, T))
        own = [space.grad[tau][:, 0, 0].numpy() for tau in range(Tp)]
        assert all(np.allclose(o, own[0], rtol=1e-4, atol=1e-7) for o in own)   # one CLS value, one gradient
        for tau in range(Tp):
            idx = np.r_[0, 1 + tau * N + np.arange(N)]
            a, g = space[tau].detach().numpy(), space.grad[tau].numpy()
            A[:, idx[1:, None], idx[None, :]] = a[:, 1:]
            G[:, idx[1:, None], idx[None, :]] = g[:, 1:]
            A[:, 0, idx] += a[:, 0] / Tp
            G[:, 0, idx[1:]] = Tp * g[:, 0, 1:]
        G[:, 0, 0] = Tp * own[0]
        steps.append((A, G))
    return steps, Tp, N


def test_timesformer_equals_the_rule_on_dense_steps(tmp_path):
    ref = reference("timesformer", "small", FRAMES).eval()
    ours = ours_of(ref, tmp_path)
    x = clips(1, FRAMES, SIZES["small"][4], seed=4)
    for cls in (1, 4):
        ref.zero_grad()
        steps, Tp, N = timesformer_dense_steps(ref, x, cls)
        expected = rule(steps)[0, 1:].reshape(Tp, 4, 4)
        mine = clip_maps(ours, x, ("gae",), ClassTarget(cls)).maps["gae"]
        err = np.abs(mine - expected).max() / np.abs(expected).max()
        assert err <= TOL, f"class {cls}: GAE differs by {err:.2e} of its max"
        assert np.ptp(expected) > 1e-3 * np.abs(expected).max()


def small(**kw) -> VideoTransformer:
    torch.manual_seed(0)
    cfg = VideoConfig(img_size=32, num_frames=4, patch_size=8, embed_dim=32, depth=2, num_heads=2, mlp_dim=64,
                      num_classes=5, **kw)
    model = VideoTransformer(cfg).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return model


def test_one_pass_serves_both_maps_and_clips_are_independent():
    """``gradcam_pass(..., attention=True)`` on two clips: each clip's GAE equals its own pass's; V-JEPA 2's probe
    readout and TimeSformer's groups included."""
    for model in (small(pos_embed="rope3d", global_pool="probe", probe_depth=1),
                  small(attention="divided", tubelet_size=1, class_token=True, pos_embed="space_time",
                        global_pool="token")):
        x = clips(2, 4, 32, seed=9)
        both = gradcam_pass(model, x, ClassTarget(2), attention=True)
        for i in range(2):
            one = clip_maps(model, x[i:i + 1], ("gradcam", "gae"), ClassTarget(2))
            assert np.allclose(gae_of_pass(both, i), one.maps["gae"], rtol=1e-5, atol=1e-6 * np.abs(one.maps["gae"]).max())


def baseline(x: torch.Tensor, protocol: str, P: int) -> np.ndarray:
    """What removed pixels show: the clip's channel means, or each frame blurred in space (σ = P/2, ±2σ, mirrored
    edges) -> (F, C, H, W)."""
    clip = x[0].numpy()
    if protocol == "mean_colour":
        return np.broadcast_to(clip.mean(axis=(0, 2, 3))[None, :, None, None], clip.shape)
    return gaussian_filter(clip.astype(np.float64), sigma=(0, 0, P / 2, P / 2), mode="mirror", truncate=2.0)


def by_hand(model, x: torch.Tensor, base: np.ndarray, values: np.ndarray, removed: np.ndarray, cls: int) -> float:
    """The class's probability on the clip with the ``removed`` tubelets (flat over (T', gh, gw)) painted with the
    ``base`` pixels."""
    arch = model.architecture(32, 32, x.shape[1])
    t, P = arch.tubelet, arch.patch_size
    clip = x[0].numpy().copy()                                            # (F, C, H, W)
    for k in removed:
        tau, row, col = np.unravel_index(k, values.shape)
        box = (slice(tau * t, tau * t + t), slice(None), slice(row * P, row * P + P), slice(col * P, col * P + P))
        clip[box] = base[box]
    with torch.no_grad():
        return float(torch.softmax(model(torch.from_numpy(clip)[None].float()), dim=-1)[0, cls])


@pytest.mark.parametrize("protocol", ["mean_colour", "blur"])
def test_curves_are_the_model_on_clips_built_by_hand(protocol):
    model = small(attention="divided", tubelet_size=1, class_token=True, pos_embed="space_time", global_pool="token")
    x = clips(1, 4, 32, seed=11)
    maps = clip_maps(model, x, ("gradcam", "gae"), ClassTarget(3))
    check = ClipCheck(model, x, 3, maps.maps, protocol=protocol, points=6, batch=3)
    assert [d for d, _ in check.steps()][-1] == check.total == -(-len(check.keys) // 3)
    report = check.result()
    f = np.linspace(0, 1, 6)
    base = baseline(x, protocol, 8)
    for name in ("gae", "random"):
        values = maps.maps["gae"] if name == "gae" else check.maps["random"]
        mine = report.methods[name].faithfulness if name != "random" else report.random
        order = np.argsort(-values.ravel(), kind="stable")
        M = order.size
        for k in (0, 2, 5):
            r = int(round(f[k] * M))
            assert abs(mine.deletion[k] - by_hand(model, x, base, values, order[:r], 3)) <= 1e-5
            assert abs(mine.insertion[k] - by_hand(model, x, base, values, order[r:], 3)) <= 1e-5
        assert mine.deletion_auc == pytest.approx(np.trapezoid(mine.deletion, f), abs=1e-12)
        assert mine.insertion_auc == pytest.approx(np.trapezoid(mine.insertion, f), abs=1e-12)
    assert report.probability == pytest.approx(report.random.deletion[0])
    assert report.gains("gae")["deletion_gain"] == pytest.approx(report.random.deletion_auc -
                                                                 report.methods["gae"].faithfulness.deletion_auc)
