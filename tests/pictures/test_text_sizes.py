"""Protects the pictures' text on a phone: every picture the page shows, drawn for a narrow screen, has no text below
``screens.MIN_TEXT`` CSS pixels when a 390 px phone shows it (at most ``screens.PHONE_WIDTH`` pixels wide: the
browser tests check that the page gives its pictures that much), in English and in Chinese.

The sizes are the drawing code's own (``text_sizes.recording``). The pictures are the real ones: the AugReg ViT-Ti on the cat, its explanations, trust check, inside views
and guided walk, the comparison with the DeiT-Ti, the animation's frames, a training run's snapshot.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

import vit
from text_sizes import recording, shown_text
from viz.compare.animate import display_frames
from viz.cache import Cache
from viz.drawing import screens
from viz.attention.view import attention_view
from viz.controls import AnalysisKey, Controls, Session, display
from viz.distance.view import distance_view
from viz.explain.view import explain_view, explanations, methods_view
from viz.heads.view import heads_view
from viz.learn.view import STEPS, learn_step
from viz.norms.view import norms_grid_panel, token_norm_curves_panel
from viz.position.view import position_panel
from viz.query.view import query_views
from viz.rollout.view import rollout_view

pytestmark = pytest.mark.slow   # real weights: explanations, a trust check, the inside views (a minute on 2 cores)

LANGS = ("en", "zh-CN")


@pytest.fixture(scope="module")
def page(real_weights_dir, cat, tmp_path_factory):
    """The real model, the cat's analysis, walk, explanation, trust report, inside report and a comparison."""
    from viz.learn.walkthrough import walk
    from viz.analysis.capture import analyze
    from viz.analysis.serve import serve
    from viz.compare import compare
    from viz.compare.side import compare_side
    from viz.inside.job import InsideJob
    from viz.trust.job import ProtocolsJob
    from viz.explain.explainer import explain_tensor

    folder = tmp_path_factory.mktemp("cat")
    cat.save(folder / "cat.jpg")
    loaded = vit.load(real_weights_dir / "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors")
    deit = vit.load(real_weights_dir / "deit_tiny_patch16_224.pipevit_ln_fixedpoint.safetensors")
    served = serve(loaded)
    a = analyze(loaded, cat)
    x = loaded.preprocess.to_tensor(a.image)
    explained = explanations(explain_tensor, loaded.model, x, None, loaded.labels)
    trust = ProtocolsJob(loaded.model, x, None, protocols=("tokens",), sanity=False, cache=Cache(None, 2**26),
                         model_id="m", labels=loaded.labels, rows_per_step=16)
    for _ in trust.steps():
        pass
    inside = InsideJob(loaded.model, x, None, labels=loaded.labels)
    for _ in inside.steps():
        pass
    other = loaded.preprocess.to_tensor(loaded.preprocess.crop_image(cat.transpose(0)))
    patched = InsideJob(loaded.model, x, None, views=(), labels=loaded.labels, other=other, other_name="mirrored")
    for _ in patched.steps():
        pass
    comparison = compare(cat, compare_side(loaded, cat, a), compare_side(deit, cat), discard_ratio=0.9)
    return dict(served=served, a=a, walk=walk(loaded.model, loaded.preprocess, cat, loaded.labels),
                explained=explained, trust=trust.result(), inside=inside.result(), patched=patched.result(),
                comparison=comparison, session=Session(AnalysisKey(str(folder / "cat.jpg"), "m")))


def pictures(page: dict, lang: str) -> dict:
    """Every picture the page shows, drawn for a narrow screen, as callables (each drawn while recording)."""
    from viz.inside import views as inside
    from viz.trust.view import trust_view

    a, c = page["a"], Controls(narrow=True, mask_artifacts=True, discard_ratio=0.9)
    photo = np.asarray(a.image.convert("RGB"))
    report, session = page["inside"], page["session"]
    drawn = {
        "rollout": lambda: rollout_view(a, c, lang)[0],
        "attention": lambda: attention_view(a, c, lang)[0],
        "attention, one scale": lambda: attention_view(a, Controls(narrow=True, shared_scale=True), lang)[0],
        "heads": lambda: heads_view(session, a, c, lang)[1],
        "heads, one scale": lambda: heads_view(session, a, Controls(narrow=True, shared_scale=True),
                                                        lang)[1],
        "query out": lambda: query_views(session, a, c, lang)[0],
        "query in": lambda: query_views(session, a, c, lang)[1],
        "distance": lambda: distance_view(a, lang, True),
        "norms": lambda: norms_grid_panel(a, lang=lang, narrow=True),
        "norm curves": lambda: token_norm_curves_panel(a, lang=lang, narrow=True),
        "position": lambda: position_panel(page["served"].arrays, lang=lang, narrow=True),
        "explain": lambda: explain_view(a, page["explained"], "gae", None, 0.6, lang, True)[0],
        "explain, signed": lambda: explain_view(a, page["explained"], "attnlrp", None, 0.6, lang, True)[0],
        "explain, contrast": lambda: explain_view(a, page["explained"], "gae", page["explained"], 0.6, lang,
                                                       True)[0],
        "methods": lambda: methods_view(a, page["explained"], 0.6, lang, True),
        "trust": lambda: trust_view(page["trust"], a, lang, True),
        "inside lens": lambda: inside.lens_view(report, 5, lang, True).image,
        "inside patch lens": lambda: inside.patch_lens_view(report, 5, photo, lang, True),
        "inside dla": lambda: inside.dla_view(report, (9, 0), lang, True).image,
        "inside sources": lambda: inside.sources_view(report, 9, 0, photo, lang, True),
        "inside heads": lambda: inside.heads_view(report, [(2, 1)], lang, True).image,
        "inside patch": lambda: inside.patch_view(page["patched"], lang, True),
        "comparison": lambda: __import__("viz.compare", fromlist=["comparison_image"]).comparison_image(
            page["comparison"], lang=lang, narrow=True),
        "animation": lambda: display_frames(a, "attention", display=display(c, lang))[7],
        "animation, rollout": lambda: display_frames(a, "rollout", display=display(c, lang))[11],
    }
    for step in range(1, len(STEPS) + 1):
        drawn[f"learn step {step}"] = functools.partial(lambda s: learn_step(page["walk"], s, 7, lang, a, True)[1],
                                                        step)
    return drawn


@pytest.mark.parametrize("lang", LANGS)
def test_every_picture_reads_at_least_min_text_on_a_phone(page, lang, monkeypatch):
    small = {}
    with recording(monkeypatch) as sizes:
        for name, draw in pictures(page, lang).items():
            sizes.clear()
            image = draw()
            if image is None:
                continue
            if not sizes.pixels:                         # a photo without text (the crop, learn step 1)
                continue
            shown = shown_text(sizes, image.width)
            if shown < screens.MIN_TEXT - 0.05:
                small[name] = (round(shown, 1), image.width, min(sizes.pixels))
    assert not small, f"text below {screens.MIN_TEXT} px on a {screens.PHONE_WIDTH} px picture: {small}"


def test_the_snapshot_viewer_reads_on_a_phone(monkeypatch, tmp_path):
    from viz.compare.dynamics import DynamicsView
    from viz.records import SnapshotSeries
    from PIL import Image

    S, L, H, grid = 3, 4, 2, (4, 4)
    rng = np.random.default_rng(0)
    series = SnapshotSeries("squares", np.arange(S), np.linspace(0.1, 0.9, S), Image.new("RGB", (64, 64), "white"),
                            rng.random((S, *grid), dtype=np.float32), rng.random((S, 16, 16), dtype=np.float32),
                            rng.random((S, L, H), dtype=np.float32) * 30, np.linspace(-0.05, 0.4, S),
                            (("square", 0.5),) * S, grid, grid, 16)
    view = DynamicsView(series)
    with recording(monkeypatch) as sizes:
        for lang in LANGS:
            sizes.clear()
            view._backdrops.clear()
            image = view.frame(1, lang, narrow=True)
            assert shown_text(sizes, image.width) >= screens.MIN_TEXT - 0.05, lang


def test_the_rule_itself():
    assert screens.shown_text(22, 720, enlarged=True) == pytest.approx(22 * screens.PHONE_WIDTH / 720)
    assert screens.shown_text(12, 300, enlarged=False) == 12                 # narrower than the phone: as drawn
    assert screens.text_for(720) * screens.PHONE_WIDTH / 720 >= screens.MIN_TEXT
    assert screens.MIN_POINTS * screens.PHONE_WIDTH / (72 * screens.NARROW_INCHES) >= screens.MIN_TEXT
