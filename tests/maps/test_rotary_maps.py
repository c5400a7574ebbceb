"""Protects Figure 7's position panel for a model that rotates q and k instead of adding a position table: the panel
shows the similarity of positions the rotation itself implies (``VisionTransformer.rotary_kernel``), and its
numbers are the ones computed directly from the model's own rotation: the rotation matrix R_i of every patch
(the attention's ``positioned`` applied to the basis vectors), K(i, j) = trace(R_iᵀ R_j) / Dh, averaged over heads
(and, for RoPE-Mixed, blocks). Axial RoPE's kernel is the mean of its rows' and its columns' kernels, each a
function of one axis. The guided walk shows the same kernel on the photo's own grid; a model with neither a table
nor a rotation gets a sentence instead of a picture. DINOv3's storage tokens have their own token norms and never
count as patches in the high-norm rule."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

import vit
from tiny_models import FAMILIES, tiny
from viz.analysis.capture import model_arrays
from viz.learn.walkthrough import walk
from viz.drawing import plots
from viz.learn import steps as walk_steps
from viz.position.view import model_panels, position_panel
from viz.i18n import t
from viz.maps import norms as norms_module

ROTARY = {**{name: FAMILIES[name] for name in ("dinov3", "rope_vit", "rope_gap")},
          "rope_mixed": dict(rope=True, rope_mixed=True, rope_axes="xy", pos_embed_kind="none", layer_scale=True)}


def direct_kernel(model: vit.VisionTransformer, grid: tuple[int, int]) -> torch.Tensor:
    """trace(R_iᵀ R_j) / Dh from the rotation matrices the model's attention applies, mean over heads and blocks."""
    H, Dh = model.cfg.num_heads, model.cfg.embed_dim // model.cfg.num_heads
    positions = model.token_positions(grid[0] * model.cfg.patch_size, grid[1] * model.cfg.patch_size)
    n, N = positions.num_prefix, grid[0] * grid[1]
    basis = torch.eye(Dh)[:, None, None, :].expand(Dh, H, n + N, Dh)       # q[c, h, t] = e_c
    kernels = []
    for blk in model.blocks:
        rotated, _ = blk.attn.positioned(basis, basis, positions)           # [c, h, t] = R_{h,t} e_c
        R = rotated[:, :, n:].permute(1, 2, 3, 0).double()                  # (H, N, Dh, Dh): R_{h,t}
        kernels.append(torch.einsum("hiab,hjab->hij", R, R) / Dh)          # trace(R_iᵀ R_j) / Dh
    return torch.stack(kernels).mean(dim=(0, 1)).float()


@pytest.mark.parametrize("family", sorted(ROTARY))
def test_the_panels_numbers_are_the_rotations_own(family):
    model = tiny(**ROTARY[family])
    arrays = model_arrays(model, family)
    assert arrays.pos_embed is None and arrays.rotary_kernel.shape == (16, 16)
    torch.testing.assert_close(torch.from_numpy(arrays.rotary_kernel), direct_kernel(model, (4, 4)), rtol=1e-5,
                               atol=1e-6)
    _, saved = model_panels(arrays)
    assert "pos_similarity" not in saved and np.array_equal(saved["rotary_kernel"], arrays.rotary_kernel)
    for lang in ("en", "zh-CN"):                  # the picture is that plot of these numbers, titled as the kernel
        drawn = np.asarray(position_panel(arrays, lang))
        want = plots.figure_to_image(plots.position_similarity_plot(arrays.rotary_kernel, (4, 4),
                                                                    t("title.rotary_kernel", lang), lang=lang))
        assert np.array_equal(drawn, np.asarray(want))


@pytest.mark.parametrize("family", ["dinov3", "rope_vit", "rope_gap"])
def test_axial_kernel_is_the_mean_of_one_kernel_per_axis(family):
    model = tiny(**ROTARY[family])
    grid = (3, 5)
    rows, cols, both = (model.rotary_kernel(grid, axis) for axis in ("rows", "columns", "both"))
    torch.testing.assert_close(both, (rows + cols) / 2, rtol=1e-6, atol=1e-6)
    r = torch.arange(3).repeat_interleave(5)                               # each patch's row and column
    c = torch.arange(5).repeat(3)
    for kernel, coordinate in ((rows, r), (cols, c)):   # one axis's kernel sees that axis only: equal for equal pairs
        pair = coordinate[:, None] * 10 + coordinate[None, :]
        for key in pair.unique():
            values = kernel[pair == key]
            assert torch.equal(values, values[:1].expand_as(values))
        assert torch.allclose(kernel[coordinate[:, None] == coordinate[None, :]], torch.ones(()), atol=1e-6)
    with pytest.raises(ValueError, match="RoPE-Mixed"):
        tiny(**ROTARY["rope_mixed"]).rotary_kernel(axis="rows")


def test_the_guided_walk_shows_the_kernel_on_the_photos_grid():
    model = tiny(**ROTARY["dinov3"])
    photo = Image.fromarray(np.random.default_rng(0).integers(0, 255, (40, 56, 3), dtype=np.uint8))
    w = walk(model, vit.Preprocess(resize_mode="squash", resize=(32, 48), crop=(32, 48)), photo)
    assert w.positions == "rotary" and w.grid == (4, 6)
    np.testing.assert_allclose(w.position_similarity, model.rotary_kernel((4, 6)).numpy(), rtol=1e-6)
    text = walk_steps.step_texts(w, lang="en")[5].text
    assert "rotates the patches' queries and keys" in text


def test_a_model_with_neither_table_nor_rotation_says_why():
    model = tiny(**FAMILIES["beit"])
    arrays = model_arrays(model, "beit")
    assert arrays.rotary_kernel is None and model_panels(arrays)[1] == {}
    w = walk(model, vit.Preprocess(resize_mode="squash", resize=(32, 32), crop=(32, 32)),
             Image.new("RGB", (32, 32), "gray"))
    assert w.positions == "none" and w.position_similarity is None
    assert "learnt bias for every offset" in walk_steps.step_texts(w, lang="en")[5].text
    said = walk_steps.position_patch_picture(w, 1, 1)
    assert np.array_equal(np.asarray(said), np.asarray(position_panel(arrays)))


def test_storage_tokens_have_their_norms_and_never_count_as_patches():
    """DINOv3's 4 storage tokens are prefix tokens: their norms are kept after every block beside CLS's (the token
    norm curves draw each prefix token), and the high-norm rule compares patches with the patches' median only, so a
    register however large is never flagged nor masked, while a patch as large is."""
    model = tiny(**FAMILIES["dinov3"])
    x = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        capture = model.forward_with_attention(x, return_token_norms=True)
        stream, positions, kept = model.embed(x), model.token_positions(32, 32), []
        for blk in model.blocks:
            stream = blk.step(stream, positions).out
            kept.append(stream[0].norm(dim=-1))
    assert capture.token_norms.shape == (1, 2, 5 + 16)
    torch.testing.assert_close(capture.token_norms[0], torch.stack(kept), rtol=1e-5, atol=1e-6)
    norms = np.ones((2, 5 + 16), dtype=np.float32)
    norms[:, 1:5] = 100.0                                               # the registers hold the large norms
    assert not norms_module.flag_high_norm(norms, 5, (4, 4)).any()
    norms[:, 5 + 6] = 100.0                                             # a patch as large is an artifact
    assert norms_module.flag_high_norm(norms, 5, (4, 4))[:, 1, 2].all()
