"""Rendering: colour lookup tables, bilinear upsampling, blending, outlines, thumbnail grids and Figure plots."""
from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
import sys

import matplotlib
import numpy as np
import pytest
from PIL import Image

from oracles import token_norm_plot
from viz.drawing import plots
from viz.drawing.grids import similarity_mosaic, thumbnail_grid, tile_images
from viz.drawing.render import (add_colorbar, colorize, colormap_lut, index_image, interpolation_matrix, map_index,
                                mark_patch, mask_outline, mix_photo_under, normalize, overlay, resize_maps, upsample)


def test_lut_matches_matplotlib():
    lut = colormap_lut("viridis")
    assert lut.shape == (256, 3) and lut.dtype == np.uint8
    cmap = matplotlib.colormaps["viridis"]
    for i in (0, 100, 255):
        np.testing.assert_allclose(lut[i], np.array(cmap(i / 255)[:3]) * 255, atol=1)
    with pytest.raises(ValueError, match="Unknown colormap"):
        colormap_lut("no-such-map")


def test_normalize_and_colorize():
    v = normalize(np.array([[2.0, 4.0], [6.0, 10.0]]))
    np.testing.assert_allclose(v, [[0, 0.25], [0.5, 1.0]])
    np.testing.assert_array_equal(normalize(np.full((2, 2), 3.0)), np.zeros((2, 2)))
    np.testing.assert_allclose(normalize(np.array([0.0, 5.0, 20.0]), vmin=0, vmax=10), [0, 0.5, 1.0])
    rgb = colorize(v, "gray")
    np.testing.assert_array_equal(rgb[..., 0], [[0, 64], [128, 255]])


def test_upsample_is_bilinear_between_patch_centres():
    m = np.array([[0.0, 1.0], [2.0, 3.0]], dtype=np.float32)
    up = upsample(m, (4, 4))
    assert up.shape == (4, 4)
    np.testing.assert_allclose(up[0, 0], 0.0, atol=1e-6)    # corners are clamped to the corner patches
    np.testing.assert_allclose(up[3, 3], 3.0, atol=1e-6)
    np.testing.assert_allclose(up[0, 1], 0.25, atol=1e-6)   # pixel centre 1.5 -> a quarter of the way to patch 1
    np.testing.assert_allclose(upsample(np.full((3, 5), 7.0), (48, 80)), 7.0, atol=1e-5)
    np.testing.assert_allclose(resize_maps(m[None], (4, 4))[0], up, atol=1e-6)   # the grids' resize agrees
    np.testing.assert_allclose(interpolation_matrix(3, 7).sum(1), 1.0, atol=1e-6)
    # the matrix resize the heat maps use agrees with Pillow's at display size too (a 14×14 map to 640×480)
    values = np.random.default_rng(0).random((14, 14)).astype(np.float32)
    np.testing.assert_allclose(resize_maps(values, (480, 640)), upsample(values, (480, 640)), atol=1e-5)


def float_mix(photo: np.ndarray, colours: np.ndarray, alpha: float) -> np.ndarray:
    """round((1 - alpha)·photo + alpha·colours) in float32: how overlays were mixed before Pillow did it."""
    return (photo.astype(np.float32) * np.float32(1 - alpha) + colours.astype(np.float32) * np.float32(alpha)
            + np.float32(0.5)).astype(np.uint8)


def test_mixing_gives_the_float_arithmetic_bytes_for_whole_steps_of_1_255():
    # every pair of byte values (photo, colour), in all three channels
    photo, colour = (np.repeat(v[..., None], 3, axis=2) for v in np.meshgrid(*(np.arange(256, dtype=np.uint8),) * 2))
    wider = np.pad(colour, ((0, 0), (0, 8), (0, 0)), constant_values=7)   # room for a colour bar on the right
    for alpha in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 0.05, 0.35, 0.5, 0.65, 0.75):   # the slider's default is 0.6
        picture = Image.fromarray(wider)
        mix_photo_under(picture, Image.fromarray(photo), alpha)
        got = np.asarray(picture).astype(int)
        assert (got[:, 256:] == 7).all()                    # outside the photo's box: untouched
        difference = np.abs(got[:, :256] - float_mix(photo, colour, alpha))
        if (alpha * 255) % 1 == 0:
            assert difference.max() == 0, alpha
        else:                                                # Pillow mixes in steps of 1/255: one level at most
            assert difference.max() == 1 and difference.mean() < 0.3, alpha
    with pytest.raises(ValueError, match="alpha"):
        mix_photo_under(Image.fromarray(wider), Image.fromarray(photo), 1.5)


def test_the_colours_are_those_of_the_map_upsampled_then_looked_up():
    # the lookup row is taken on the grid before the enlargement (it commutes with interpolation): at display
    # size the colours equal the straightforward way's, upsample then round, but for an index off by one here or there
    values = np.random.default_rng(3).random((14, 14)).astype(np.float32)
    straight = colorize(upsample(normalize(values, 0.1, 0.9), (640, 480)))
    fast = np.asarray(index_image(map_index(values, (640, 480), 0.1, 0.9)))
    off = np.abs(fast.astype(int) - straight).max(axis=-1) > 0
    assert off.mean() < 1e-4
    assert np.abs(fast.astype(int) - straight).max() <= 12              # one step of the lookup table, at most


def test_overlay_blends_at_the_photo_resolution():
    photo = Image.fromarray(np.full((32, 48, 3), 200, dtype=np.uint8))
    values = np.array([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
    assert overlay(photo, values, alpha=0.0).tobytes() == photo.tobytes()
    full = np.asarray(overlay(photo, values, cmap="gray", alpha=1.0))
    assert full.shape == (32, 48, 3)
    assert full[0, 0, 0] == 0 and full[-1, -1, 0] == 255     # min and max patches
    half = np.asarray(overlay(photo, values, cmap="gray", alpha=0.5)).astype(int)
    np.testing.assert_allclose(half, (200 + full.astype(int)) / 2, atol=1)
    with_bar = overlay(photo, values, colorbar=True, label="x")
    assert with_bar.size[1] == 32 and with_bar.size[0] > 48


def test_mask_outline_and_patch_marker():
    mask = np.zeros((4, 4), dtype=bool)
    mask[1:3, 1:3] = True
    edge = mask_outline(mask, (64, 64), width=2)
    assert edge[32, 16:18].all() and not edge[32, 32]          # on the border, not inside
    assert not edge[:8].any()
    photo = Image.new("RGB", (64, 64), "black")
    marked = np.asarray(mark_patch(photo, 1, 2, (4, 4), color=(0, 255, 0), width=1))
    assert marked[16, 40, 1] == 255 and marked[20, 40, 1] == 0  # top edge of patch (1, 2), not its inside
    bar = add_colorbar(photo, "viridis", 0.0, 1.0)
    assert bar.size[1] == 64 and bar.size[0] > 64


def test_thumbnail_grid_layout_round_trips_clicks():
    maps = np.random.default_rng(0).random((3, 4, 2, 3)).astype(np.float32)
    image, layout = thumbnail_grid(maps, cell=20, cmap="gray", row_labels=["a", "b", "c"],
                                   col_labels=list("wxyz"), selected=(1, 2))
    assert (layout.rows, layout.cols, layout.cell) == (3, 4, (20, 30))
    assert image.size == (layout.left + 4 * 30 + 3 * layout.gap, layout.top + 3 * 20 + 2 * layout.gap)
    pixels = np.asarray(image)
    for r in range(3):
        for c in range(4):
            x0, y0, x1, y1 = layout.box(r, c)
            assert layout.cell_at((x0 + x1) / 2, (y0 + y1) / 2) == (r, c)
            brightest = np.unravel_index(maps[r, c].argmax(), (2, 3))   # each thumbnail is scaled on its own
            y = y0 + int((brightest[0] + 0.5) * 10)
            x = x0 + int((brightest[1] + 0.5) * 10)
            assert pixels[y, x, 0] >= 235                         # near the top of the gray ramp
    assert layout.cell_at(1, 1) is None                       # the label margin


def test_the_parts_drawn_once_equal_fresh_drawings():
    from viz.drawing import grids, render

    photo = Image.fromarray(np.random.default_rng(2).integers(0, 256, (96, 128, 3), dtype=np.uint8))
    maps = np.random.default_rng(0).random((3, 4, 2, 3)).astype(np.float32)
    labels = dict(row_labels=["a", "b", "c"], col_labels=list("wxyz"), title="layer", lang="zh-CN")

    def drawings():
        return (render.add_colorbar(photo, "viridis", 0.1, 5.0, "CLS\nuniform", lang="zh-CN").tobytes(),
                thumbnail_grid(maps, cell=20, background=photo, alpha=0.6, **labels)[0].tobytes())

    kept = drawings()                                          # now from the kept ramp, labels and masks
    assert drawings() == kept
    for cached in (render._ramp, render._label_strip, render.constant_mask, grids.label_margins, grids._labels,
                   grids._row_mask):
        cached.cache_clear()
    assert drawings() == kept                                  # drawn afresh: the same pixels


def test_thumbnail_grid_marks_and_background():
    maps = np.zeros((1, 2, 4, 4), dtype=np.float32)
    marks = np.zeros((1, 2, 4, 4), dtype=bool)
    marks[0, 1, 0, 0] = True
    image, layout = thumbnail_grid(maps, cell=16, cmap="gray", marks=marks,
                                   background=np.full((8, 8, 3), 255, dtype=np.uint8), alpha=0.5)
    pixels = np.asarray(image)
    x0, y0, _, _ = layout.box(0, 1)
    np.testing.assert_array_equal(pixels[y0, x0], (0, 255, 255))   # the marked patch's outline
    x0, y0, _, _ = layout.box(0, 0)
    assert abs(int(pixels[y0 + 8, x0 + 8, 0]) - 128) <= 1          # half photo (255), half map colour (0)


def test_tiles_and_similarity_mosaic():
    tiles = np.random.default_rng(0).random((5, 4, 4, 3))
    assert tile_images(tiles, cols=3, scale=2, gap=1).size == (3 * 8 + 2, 2 * 8 + 1)
    sim = np.arange(36, dtype=np.float32).reshape(6, 6)
    mosaic = similarity_mosaic(sim, (2, 3), gap=1)
    assert mosaic.shape == (2 * 3 - 1, 3 * 4 - 1)                            # tiles of 2×3 with 1-pixel gaps
    np.testing.assert_array_equal(mosaic[0:2, 0:3], sim[0].reshape(2, 3))     # tile of patch (0, 0)
    np.testing.assert_array_equal(mosaic[3:5, 4:7], sim[4].reshape(2, 3))     # tile of patch (1, 1)
    assert np.isnan(mosaic[2]).all()


def test_plots_have_labelled_axes_and_become_images():
    rng = np.random.default_rng(0)
    figs = [plots.distance_plot(rng.random((4, 3)) * 100, "title", uniform_distance=50.0),
            plots.position_similarity_plot(np.eye(6), (2, 3)),
            token_norm_plot(rng.random((4, 1 + 6)) + 1, 1, flags=np.eye(4, 6, dtype=bool))]
    for fig in figs:
        ax = fig.axes[0]
        assert ax.get_xlabel() and ax.get_ylabel()
        image = plots.figure_to_image(fig)
        assert image.mode == "RGB" and image.size == tuple(int(v) for v in fig.get_size_inches() * fig.dpi)


def test_rendering_never_touches_pyplot():
    code = ("import sys, numpy as np; from viz import panels; from viz.drawing import plots; "
            "plots.figure_to_image(plots.distance_plot(np.ones((2, 2)))); "
            "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_blitted_plots_equal_full_draws():
    rng = np.random.default_rng(0)
    d = rng.random((12, 3)) * 150
    norms = rng.random((12, 1 + 196)) * 5 + 10
    norms[7:, 1] = 500.0
    flags = np.zeros((12, 196), dtype=bool)
    flags[7:, 0] = True
    pairs = [(plots.distance_image(d, uniform_distance=117.0), plots.distance_plot(d, uniform_distance=117.0)),
             (plots.token_norm_image(norms, 1, flags), token_norm_plot(norms, 1, flags))]
    for fast, figure in pairs:
        full = np.asarray(plots.figure_to_image(figure)).astype(int)
        assert np.abs(np.asarray(fast).astype(int) - full).mean() < 0.5


def test_blitted_plots_are_thread_safe():
    rng = np.random.default_rng(1)
    data = [rng.random((12, 12)) * 100 for _ in range(8)]
    alone = [np.asarray(plots.distance_image(d)) for d in data]
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(lambda d: np.asarray(plots.distance_image(d)), data * 3))
    for i, image in enumerate(together):
        np.testing.assert_array_equal(image, alone[i % 8])


def test_kept_plot_artists_show_each_image_alone():
    # the band, the curves and the scatter are made once per backdrop and moved to each image's data; the flagged
    # curves are made per image: drawing another image in between leaves no trace
    rng = np.random.default_rng(2)
    norms = [rng.random((12, 1 + 196)) * 5 + 10 for _ in range(2)]
    flags = [np.zeros((12, 196), dtype=bool) for _ in range(2)]
    norms[1][6:, 3] = norms[1][6:, 9] = 90.0               # two flagged patches in one image, none in the other
    flags[1][6:, 2] = flags[1][6:, 8] = True
    assert plots.log_range(norms[0]) == plots.log_range(norms[1])       # so both are drawn on one backdrop
    first = plots.token_norm_image(norms[0], 1, flags[0]).tobytes()
    other = plots.token_norm_image(norms[1], 1, flags[1]).tobytes()
    assert other != first and plots.token_norm_image(norms[0], 1, flags[0]).tobytes() == first
    d = [rng.random((12, 12)) * 100 for _ in range(2)]
    first = plots.distance_image(d[0], top=150.0).tobytes()
    assert plots.distance_image(d[1], top=150.0).tobytes() != first
    assert plots.distance_image(d[0], top=150.0).tobytes() == first


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_a_colour_bar_label_longer_than_the_picture_is_high_is_broken_into_lines_that_fit(lang):
    from viz.drawing import render
    from viz.i18n import t
    label = t("colorbar.norm_share", lang)                     # two long lines
    short = Image.new("RGB", (300, 120), "white")
    out = render.add_colorbar(short, "viridis", 0.0, 1.0, label, lang=lang, ticks=[1.0, 0.0], font_size=13)
    bar = render._Colorbar(0.0, 1.0, label, 14, lang, [1.0, 0.0], 13, 120)
    f = render.font(13, lang, label.replace("\n", ""))
    assert len(bar.label.split("\n")) > 2 and all(f.getlength(line) <= 116 for line in bar.label.split("\n"))
    assert bar.label.replace("\n", "").replace(" ", "") == label.replace("\n", "").replace(" ", "")
    assert out.width == 300 + render.colorbar_width(0.0, 1.0, label, lang=lang, ticks=[1.0, 0.0], font_size=13,
                                                    height=120) == 300 + bar.width
    tall = render._Colorbar(0.0, 1.0, label, 14, lang, [1.0, 0.0], 13, 2000)
    assert tall.label == label                                 # room enough: the lines as written
