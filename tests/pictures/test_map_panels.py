"""The page's map panels tell the truth at a glance: colour bars in multiples of uniform attention, one colour
scale across layers, patch-true drawing, artifact masking on every CLS-attention view (exactly the flagged
tokens dropped), the note when artifacts dominate, the heads grid and the crop outline. Synthetic analyses
with known answers; the dominance rule also on the real checkpoints."""
from __future__ import annotations

import numpy as np
import pytest
import vit
from PIL import Image

from viz import panels
from viz.drawing import render
from viz.i18n import t
from viz.maps import attention, norms
from viz.maps.distance import mean_attention_distance
from viz.maps.rollout import fuse_heads
from vit.architecture import Architecture
from viz.records import Analysis
from viz.attention.view import attention_layers, attention_map_panel
from viz.controls import Controls, Session
from viz.heads.grid import head_stats, heads_grid_panel
from viz.panels.display import uniform_ticks
from viz.query.view import query_map_panels, query_photo
from viz.rollout.view import rollout_map_panel, rollout_view

GRID = (4, 5)
P = 16
PREFIX = 1
T = PREFIX + GRID[0] * GRID[1]
FLAGGED = {(0, 0), (3, 4)}                      # the synthetic "artifact" patches


def synthetic(attn: np.ndarray, flagged=FLAGGED) -> Analysis:
    """An Analysis of given attention (L, H, T, T) over a gray 64×80 photo, with token norms that flag ``flagged``."""
    L = attn.shape[0]
    token_norms = np.full((L, T), 10.0, dtype=np.float32)
    for r, c in flagged:
        token_norms[:, PREFIX + r * GRID[1] + c] = 100.0
    photo = Image.fromarray(np.random.default_rng(1).integers(0, 256, (GRID[0] * P, GRID[1] * P, 3), dtype=np.uint8))
    return Analysis(image=photo, probabilities=np.array([0.7, 0.3]), labels=("a", "b"), attention=attn,
                    architecture=Architecture.plain(L, attn.shape[1], GRID, P, PREFIX), token_norms=token_norms,
                    mean_distance={False: mean_attention_distance(attn, PREFIX, GRID, P)})


def random_attention(L: int = 3, H: int = 2, seed: int = 0) -> np.ndarray:
    a = np.random.default_rng(seed).random((L, H, T, T)).astype(np.float32) ** 3
    return a / a.sum(axis=-1, keepdims=True)


def uniform_attention(L: int = 2, H: int = 2) -> np.ndarray:
    return np.full((L, H, T, T), 1.0 / T, dtype=np.float32)


def flagged_mask() -> np.ndarray:
    mask = np.zeros(GRID, dtype=bool)
    for r, c in FLAGGED:
        mask[r, c] = True
    return mask


def test_a_uniform_map_reads_one():
    a = synthetic(uniform_attention(), flagged=set())
    p = attention_map_panel(a, layer=1, display=panels.Display(size=160))
    np.testing.assert_allclose(p.values, 1.0, rtol=1e-5)
    assert (p.vmin, p.vmax, p.tokens) == pytest.approx((1.0, 1.0, T))
    assert [render.tick_text(v) for v in uniform_ticks(p.vmin, p.vmax)] == ["1"]   # the one tick reads 1
    row, column = query_map_panels(a, 2, 3, display=panels.Display(size=160))
    np.testing.assert_allclose(row.values, 1.0, rtol=1e-5)
    np.testing.assert_allclose(column.values, 1.0, rtol=1e-5)
    grid = heads_grid_panel(a, width=600)
    assert (grid.vmin, grid.vmax) == pytest.approx((1.0, 1.0))
    # and a patch that gets 3/T reads 3 there
    attn = uniform_attention()
    attn[:, :, 0, :] = (1 - 3.0 / T) / (T - 1)
    attn[:, :, 0, PREFIX + 7] = 3.0 / T
    values = attention_map_panel(synthetic(attn, set())).values
    assert values.ravel()[7] == pytest.approx(3.0) and values.ravel()[0] == pytest.approx((T - 3) / (T - 1))


def test_the_colour_bar_marks_uniform_attention():
    assert uniform_ticks(0.2, 5.0) == [5.0, 1.0, 0.2]          # 1 = uniform replaces the middle tick
    assert uniform_ticks(2.0, 5.0) == [5.0, 3.5, 2.0]          # not on the bar: the middle as before


def colour_at(image: Image.Image, row: int, col: int, size: tuple[int, int]) -> np.ndarray:
    """The colour in the middle of patch (row, col) of a map drawn at ``size`` = (H, W)."""
    H, W = size
    return np.asarray(image)[int((row + 0.5) * H / GRID[0]), int((col + 0.5) * W / GRID[1])]


def test_equal_values_get_equal_colours_across_layers_with_the_shared_scale():
    """Two layers whose maps hold the same value at one patch: one colour with the shared scale."""
    attn = random_attention(L=2, H=1, seed=3)
    target = 0.15
    for layer in (0, 1):
        row = attn[layer, 0, 0]
        row[PREFIX + 7] = 0.0
        row *= (1 - target) / row.sum()
        row[PREFIX + 7] = target
    attn[1, 0, 0, PREFIX + 2] *= 4.0                                   # layer 1 gets a higher peak
    attn[1, 0, 0] *= (1 - target) / (attn[1, 0, 0].sum() - target)
    attn[1, 0, 0, PREFIX + 7] = target
    a = synthetic(attn, flagged=set())
    display = panels.Display(size=160, alpha=1.0, colorbar=False, patch_true=True)
    size = (128, 160)
    shared = [attention_map_panel(a, layer, head=0, shared_scale=True, display=display) for layer in (0, 1)]
    assert shared[0].values[1, 2] == pytest.approx(shared[1].values[1, 2]) == pytest.approx(target * T)
    np.testing.assert_array_equal(colour_at(shared[0].image, 1, 2, size), colour_at(shared[1].image, 1, 2, size))
    every = np.stack(attention_layers(a, head=0))                        # the one range: over every layer
    assert (shared[0].vmin, shared[0].vmax) == (shared[1].vmin, shared[1].vmax) == \
        pytest.approx((float(every.min()), float(every.max())))
    own = [attention_map_panel(a, layer, head=0, display=display) for layer in (0, 1)]
    assert not np.array_equal(colour_at(own[0].image, 1, 2, size), colour_at(own[1].image, 1, 2, size))


def test_patch_true_rendering_is_constant_within_each_patch():
    a = synthetic(random_attention(), flagged=set())
    size = 250                                                         # not a multiple of the grid
    p = attention_map_panel(a, display=panels.Display(size=size, alpha=1.0, colorbar=False,
                                                             patch_true=True))
    pixels = np.asarray(p.image).astype(int)
    H, W = pixels.shape[:2]
    rows, cols = render.patch_borders(GRID, (H, W))
    assert len(rows) == GRID[0] - 1 and len(cols) == GRID[1] - 1      # one grid line per inner border
    line = np.zeros((H, W), dtype=bool)
    line[rows, :] = True
    line[:, cols] = True
    index_r, index_c = render.nearest_index(GRID[0], H), render.nearest_index(GRID[1], W)
    for r in range(GRID[0]):
        for c in range(GRID[1]):
            inside = (index_r[:, None] == r) & (index_c[None, :] == c) & ~line
            colours = pixels[inside]
            assert (colours == colours[0]).all(), (r, c)               # one colour per patch …
            expected = render.colorize(render.normalize(p.values, p.vmin, p.vmax), a and "inferno")[r, c]
            np.testing.assert_array_equal(colours[0], expected)       # … the patch's own value
    assert (pixels[line] != pixels[~line][0]).any()                     # and the lines are drawn
    smooth = np.asarray(attention_map_panel(a, display=panels.Display(size=size, alpha=1.0,
                                                                             colorbar=False)).image)
    assert len(np.unique(smooth.reshape(-1, 3), axis=0)) > 4 * GRID[0] * GRID[1]   # smoothing blends patches


def test_maps_are_drawn_at_display_size():
    a = synthetic(random_attention(), flagged=set())
    for size in (448, 640):
        p = attention_map_panel(a, display=panels.Display(size=size))
        assert p.image.height == round(size * GRID[0] / GRID[1]) and p.image.width > size   # photo + colour bar
        bare = rollout_map_panel(a, display=panels.Display(size=size, colorbar=False))
        assert bare.image.size == (size, round(size * GRID[0] / GRID[1]))
    assert panels.Display(size=640).font_size == 20 and panels.Display().font_size == 12


def kept_rows_renormalised(rows: np.ndarray, drop: np.ndarray) -> np.ndarray:
    """Reference: zero the dropped patch keys, renormalise each row (written independently of viz.maps)."""
    rows = np.array(rows, dtype=np.float64)
    dropped = PREFIX + np.flatnonzero(drop.ravel())
    rows[..., dropped] = 0.0
    return rows / rows.sum(axis=-1, keepdims=True)


def test_masking_drops_exactly_the_flagged_tokens_on_every_view():
    attn = random_attention(L=3, H=2)
    a = synthetic(attn)
    drop = flagged_mask()
    np.testing.assert_array_equal(panels.artifact_drop(a, True), drop)
    keep = ~drop
    # CLS attention of one layer (mean of heads, then renormalised, as the rollout fuses before it renormalises)
    expected = kept_rows_renormalised(attn[2].mean(0)[0], drop)[PREFIX:].reshape(GRID)
    cls = attention.token_attention_map(attn, PREFIX, GRID, 2, None, drop_patches=drop)
    np.testing.assert_allclose(cls, expected, rtol=1e-5)
    assert (cls[drop] == 0).all() and (cls[keep] > 0).all()
    p = attention_map_panel(a, 2, None, mask_artifacts=True, outline_share=0.6)
    np.testing.assert_allclose(p.values, expected * (T - len(FLAGGED)), rtol=1e-3)   # float16-free: fused mean
    assert p.tokens == T - len(FLAGGED)
    assert not attention.threshold_mask(p.values, 0.6)[drop].any()     # DINO's outline never holds them
    # every head of every layer
    heads = attention.all_heads_maps(attn, PREFIX, GRID, drop_patches=drop)
    np.testing.assert_allclose(heads, kept_rows_renormalised(attn[:, :, 0, :], drop)[..., PREFIX:].reshape(3, 2, *GRID),
                               rtol=1e-5)
    grid = heads_grid_panel(a, width=600, mask_artifacts=True)
    assert grid.note == t("note.artifacts_masked", "en", count=2)
    # the patch query: its row, and its column over the kept queries (each renormalised)
    row_map, column_map = attention.patch_query_maps(attn, PREFIX, GRID, 2, 3, 1, 0, drop_patches=drop)
    q = PREFIX + 2 * GRID[1] + 3
    np.testing.assert_allclose(row_map, kept_rows_renormalised(attn[1, 0, q], drop)[PREFIX:].reshape(GRID), rtol=1e-5)
    full = kept_rows_renormalised(attn[1, 0], drop)[:, q]
    full[PREFIX + np.flatnonzero(drop.ravel())] = 0.0                   # dropped queries attend to nothing
    np.testing.assert_allclose(column_map, full[PREFIX:].reshape(GRID), rtol=1e-5)
    row_panel, column_panel = query_map_panels(a, 2, 3, 1, 0, mask_artifacts=True, shared_scale=True)
    assert (row_panel.values[drop] == 0).all() and (column_panel.values[drop] == 0).all()
    np.testing.assert_allclose(column_panel.values, column_map * (T - 2), rtol=1e-5)
    # rolled out: the flagged tokens are gone from every layer
    rolled_row, rolled_column = attention.rollout_query_maps(fuse_heads(attn, "mean"), PREFIX, GRID, 2, 3,
                                                             drop_patches=drop)
    assert (rolled_row[drop] == 0).all() and (rolled_column[drop] == 0).all() and (rolled_row[keep] > 0).all()
    # a masked patch cannot be queried
    with pytest.raises(ValueError, match=r"Patch \(0, 0\) is a high-norm artifact token"):
        query_map_panels(a, 0, 0, mask_artifacts=True)
    with pytest.raises(ValueError, match="masked out"):
        attention.patch_query_maps(attn, PREFIX, GRID, 3, 4, drop_patches=drop)
    # without masking nothing changes
    np.testing.assert_allclose(attention.token_attention_map(attn, PREFIX, GRID, 2),
                               attn[2].mean(0)[0, PREFIX:].reshape(GRID), rtol=1e-5)


def test_the_note_says_when_artifacts_dominate():
    attn = random_attention(L=2, H=1)
    attn[:, :, 0, :] = 0.5 / (T - 1 - 2)                               # the other 18 patches share one half …
    attn[:, :, 0, 0] = 0.0
    for r, c in FLAGGED:
        attn[:, :, 0, PREFIX + r * GRID[1] + c] = 0.25                 # … the two artifacts the other half
    a = synthetic(attn)
    share = norms.artifact_share(attention_map_panel(a).values, flagged_mask())
    assert share.dominates and share.share == pytest.approx(0.5, rel=1e-3) and share.count == 2
    note = attention_map_panel(a, display=panels.Display(lang="zh-CN")).note
    assert note == t("note.artifacts_dominate", "zh-CN", share=share.share, count=2) and "词元范数" in note
    assert heads_grid_panel(a).note.startswith("50% of this map")
    quiet = synthetic(uniform_attention())                             # artifacts take their uniform share only
    assert attention_map_panel(quiet).note is None
    assert not norms.artifacts_dominate(np.ones(GRID), flagged_mask())
    assert not norms.artifacts_dominate(np.ones(GRID), np.zeros(GRID, dtype=bool))   # nothing flagged
    one = np.zeros(GRID, dtype=bool)
    one[0, 0] = True                                                   # one artifact of 20 patches: uniform share 5 %
    peak = np.ones(GRID)
    peak[0, 0] = 5.0                                                   # 21 % of the mass: 4.2× its share, the peak
    share = norms.artifact_share(peak, one)
    assert share.excess == pytest.approx(5 / 24 / (1 / 20)) and share.peak_ratio == 5.0 and share.dominates
    peak[0, 0] = 4.5                                                   # 3.8× its share: below the rule
    assert not norms.artifacts_dominate(peak, one)
    close = np.full(GRID, 0.7)
    close[0, 0], close[0, 1] = 5.0, 4.5                                # 23 % (4.5×) but only 1.1× the next patch
    share = norms.artifact_share(close, one)
    assert share.excess > 4 and share.share < 0.25 and share.peak_ratio < 1.25 and not share.dominates


@pytest.fixture(scope="module")
def real_cats(real_weights_dir, cat):
    from viz.analysis import analyze
    return {name: analyze(vit.load(real_weights_dir / file), cat) for name, file in
            (("augreg", "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors"),
             ("deit", "deit_tiny_patch16_224.pipevit_ln_fixedpoint.safetensors"))}


def test_the_dominance_rule_on_the_real_checkpoints(real_cats):
    a = real_cats["augreg"]
    flagged = panels.artifact_drop(a, True)
    notes = [attention_map_panel(a, layer).note is not None for layer in range(a.depth)]
    assert notes == [False] * 7 + [True] * 5                           # the corners take over from layer 7 on
    assert rollout_map_panel(a, discard_ratio=0.9).note is not None   # the app's default rollout too
    assert rollout_map_panel(a, discard_ratio=0.9, mask_artifacts=True).note.startswith("4 high-norm")
    masked = attention_map_panel(a, mask_artifacts=True)
    assert (masked.values[flagged] == 0).all()
    deit = real_cats["deit"]
    assert not panels.artifact_drop(deit, True).any()
    assert all(attention_map_panel(deit, layer).note is None for layer in range(deit.depth))
    assert rollout_map_panel(deit, discard_ratio=0.9).note is None


def test_the_heads_grid_fills_the_width_and_reads_back_every_head():
    a = synthetic(random_attention(L=8, H=2), flagged=set())
    for width in (600, 1024):
        grid = heads_grid_panel(a, width=width, selected=(2, 1), display=panels.Display(lang="zh-CN"))
        assert width - grid.layout.cols - 40 <= grid.image.width <= width   # fills it, colour bar included
        assert grid.layers_across and (grid.layout.rows, grid.layout.cols) == (2, 8)   # 8 layers across, 2 heads
        for layer in range(8):
            for head in range(2):
                x0, y0, x1, y1 = grid.box(layer, head)
                assert grid.head_at((x0 + x1) / 2, (y0 + y1) / 2) == (layer, head)
        assert grid.head_at(1, 1) is None
    tall = synthetic(random_attention(L=2, H=3), flagged=set())
    assert not heads_grid_panel(tall).layers_across              # more heads than layers: heads across
    np.testing.assert_allclose(grid.stats.mean_distance, a.mean_distance[False], rtol=1e-5)
    info = grid.info(2, 1, "en")
    assert info.startswith("layer 2, head 1: mean attention distance") and "bits" in info


def test_what_a_new_photo_draws_once_is_kept_and_equals_a_fresh_drawing():
    from viz.heads import grid as heads

    a = synthetic(random_attention(L=4, H=3))
    for size, resample in ((160, Image.Resampling.BICUBIC), (320, Image.Resampling.BICUBIC),
                           (160, Image.Resampling.LANCZOS)):
        enlarged = panels.display_photo(a, size, resample)
        assert panels.display_photo(a, size, resample) is enlarged                  # drawn once, then kept
        assert enlarged.tobytes() == a.image.resize((size, size * 64 // 80), resample).tobytes()
    # the clickable photo: the kept enlargement, the same pixels as the model-size panels' photo(a, 2)
    framed = query_photo(Session(("photo", "model")), a)
    assert framed.tobytes() == render.mark_patch(panels.photo(a, 2), *panels.default_query(a), a.grid).tobytes()
    # the heads grid: drawn once per analysis and options, equal to a fresh drawing; a selection only frames it
    display = panels.Display(lang="zh-CN")
    grid = heads_grid_panel(a, 600, display=display)
    assert heads_grid_panel(a, 600, display=display) is grid
    assert grid.image.tobytes() == heads.heads_grid(a, 600, display=display).image.tobytes()
    framed = np.asarray(heads_grid_panel(a, 600, selected=(1, 2), display=display).image)
    x0, y0, x1, y1 = grid.box(1, 2)
    outside = np.ones(framed.shape[:2], dtype=bool)
    outside[y0 - 1:y1 + 2, x0 - 1:x1 + 2] = False
    assert (framed[outside] == np.asarray(grid.image)[outside]).all()
    assert tuple(framed[y0 - 1, x0 + 5]) == (0, 200, 0)


def test_a_new_photos_pictures_are_the_same_drawn_two_at_a_time_or_one_after_another(monkeypatch):
    import threading

    from viz import explorer

    a = synthetic(random_attention(L=4, H=3))
    c = Controls(layer=3, discard_ratio=0.9)
    drawn_on = []
    original = rollout_view
    monkeypatch.setattr(explorer, "rollout_view",
                        lambda *args: drawn_on.append(threading.current_thread().name) or original(*args))

    def drawn(session):
        return {k: v.tobytes() if isinstance(v, Image.Image) else v for k, v in
                explorer.pictures(session, a, c, "zh-CN").items() if k != "session"}

    together = drawn(Session(("photo", "model")))
    assert drawn_on[-1].startswith("pictures")                    # on the helper thread
    assert explorer._HELPER_FREE.acquire(blocking=False)          # the helper is taken (by another visitor) ...
    try:
        alone = drawn(Session(("photo", "model")))
    finally:
        explorer._HELPER_FREE.release()
    assert drawn_on[-1] == threading.current_thread().name       # ... so everything is drawn here, nothing waits
    assert together == alone
    assert set(together) >= {"rollout", "attention", "heads", "query_photo", "query_out", "query_in", "distance",
                             "norms", "norm_curves", "rollout_note", "heads_note"}


def test_head_entropy_in_bits_and_as_a_share_of_the_maximum():
    attn = uniform_attention(L=1, H=2)
    attn[0, 1, 0] = 0.0
    attn[0, 1, 0, 5] = 1.0                                             # head 1: all on one token
    stats = head_stats(synthetic(attn, flagged=set()))
    np.testing.assert_allclose(stats.entropy_bits[0], [np.log2(T), 0.0], atol=1e-5)
    np.testing.assert_allclose(stats.entropy_share[0], [1.0, 0.0], atol=1e-6)
    masked = head_stats(synthetic(uniform_attention(L=1, H=1)), mask_artifacts=True)
    np.testing.assert_allclose(masked.entropy_bits, np.log2(T - 2), atol=1e-5)    # uniform over the kept tokens


@pytest.mark.parametrize("size", [(451, 300), (300, 451), (120, 80)])
def test_the_crop_outline_is_where_the_model_looked(cat, size):
    photo = cat.resize(size)
    pre = vit.Preprocess(resize=256, crop=(224, 224))
    left, top, right, bottom = pre.crop_box(size)
    region = photo.crop((round(left), round(top), round(right), round(bottom))).resize((224, 224))
    seen = np.asarray(pre.crop_image(photo)).astype(float)
    assert np.abs(np.asarray(region).astype(float) - seen).mean() < 12   # the same pixels, resampled once
    picture, note = panels.crop_panel(photo, pre, size=448, lang="zh-CN")
    assert max(picture.size) == 448
    pixels = np.asarray(picture).astype(int)
    scale = 448 / max(size)
    x0, y0 = round(left * scale), round(top * scale)
    assert tuple(pixels[(y0 + round(bottom * scale)) // 2, x0]) == (0, 255, 255)   # the outline's left edge
    if min(size) < 256:
        assert note == t("note.enlarged", "zh-CN", width=size[0], height=size[1], factor=256 / min(size),
                         crop="224×224")
    else:
        assert note is None
