"""Protects the page's Video tab (``vit_explorer.tabs.video``) through its handlers, on a public server listing a
video model trained on the moving squares: an uploaded clip gives the top-5, a frame slider over the sampled frames,
the chosen frame with its rollout (equal to the slice's drawing of the cached analysis), the strip and the distance
picture, in English and Chinese; the slider draws from the cache without running the model; a photo model, a clip
before any upload, and a photo model's name are each answered with one sentence. The class maps per frame: the clip's
top-5 offered, the top-1's Grad-CAM equal to the library's (``viz.video.classmap``) drawn on every frame and the
slider's, a class outside the top-5 or a method outside the table refused; a clip's analysis and its class map whose
visitor has gone stop at the next attention step, nothing of them cached. The check of the drawn maps: its curves
``ClipCheck``'s on the cached maps, its note the Trust tab's verdicts, refused without a drawn map or for a class or
method outside the choices, admitted by its own estimate, stopped at the next forward batch when its visitor leaves."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import gradio as gr
import numpy as np
import pytest
from PIL import Image

import app_server  # noqa: F401  (gives this process its own GRADIO_TEMP_DIR before any app is built)
import vit
from tiny_models import tiny
from video_clips import moving_squares_toy
from vit.explain.targets import ClassTarget
from vit_explorer import heavy, jobs, limits, state, views
from vit_explorer.door import Refusal
from viz.analysis import peak
from vit_explorer.tabs import TAB_IDS
from vit_explorer.tabs import video as tab
from viz.i18n import t
from viz.video.classmap import VIDEO_METHODS, clip_gradcam, clip_maps, scale_clip
from viz.video.view import captioned, frame_caption, frame_overlay, frame_overlays, frames_strip
from viz.video.faithfulness import BATCH, ClipCheck, curves_figure
from viz.drawing import screens
from viz.drawing.plots import figure_to_image
from viz.trust.verdicts import ProtocolsReport
from viz.trust.view import verdict_words
from handler_steps import finished


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    return moving_squares_toy(tmp_path_factory.mktemp("squares"))


@pytest.fixture
def server(toy, tmp_path, monkeypatch):
    """A public server listing the toy video model and a tiny photo model, with one clip uploaded."""
    weights, data = toy
    photo_model = vit.save_checkpoint(tmp_path / "photos.pt", tiny(), list("abcde"), vit.Preprocess(32, 32))
    uploads = tmp_path / "uploads"
    (uploads / "f00d").mkdir(parents=True)
    clip = Path(shutil.copy(data / "right" / "0000.mp4", uploads / "f00d" / "clip.mp4"))
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(uploads))
    monkeypatch.setenv("VIT_WEIGHTS_DIR", str(tmp_path / "no-weights"))
    monkeypatch.setattr(state.SETTINGS, "models", [str(Path(weights).resolve()), str(Path(photo_model).resolve())])
    monkeypatch.setattr(state.SETTINGS, "any_model", False)
    return SimpleServer(Path(weights).name, Path(photo_model).name, str(clip))


class SimpleServer:
    def __init__(self, video_model: str, photo_model: str, clip: str):
        self.video_model, self.photo_model, self.clip = video_model, photo_model, clip


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_a_clip_gives_every_output(server, lang):
    out = tab.analyse(server.video_model, server.clip, lang)
    assert set(out) == set(tab.OUTPUTS)
    slider = out["video_frame"]
    assert (slider.minimum, slider.maximum, slider.value, slider.interactive) == (0, 7, 0, True)
    assert set(out["video_top5"]) <= {"down", "left", "right", "up"} and len(out["video_top5"]) == 4
    assert out["video_note"] == t("video.summary", lang, frames=8, total=8, seconds=1.0,
                                  top=max(out["video_top5"], key=out["video_top5"].get)) + " " + t(
        "verified.not_verified", lang, reason=t("verified.reason.own_format", lang))   # the model line's check
    for name in ("video_picture", "video_strip", "video_distance"):
        assert isinstance(out[name], Image.Image) and min(out[name].size) > 100, name
    a, rollout = state.VIDEOS.find((os.path.realpath(server.clip), state.model_source(server.video_model)))
    assert rollout.shape == (4, 4, 4) and np.allclose(a.clip.indices, np.arange(8))
    frame = tab.show_frame(server.video_model, server.clip, 5, lang)["video_picture"]
    expected = captioned(frame_overlay(a, rollout, 5, cell=tab.FRAME_SIZE), frame_caption(a, 5, lang), lang)
    assert np.array_equal(np.asarray(frame), np.asarray(expected))
    assert np.array_equal(np.asarray(tab.show_frame(server.video_model, server.clip, 99, lang)["video_picture"]),
                          np.asarray(tab.show_frame(server.video_model, server.clip, 7, lang)["video_picture"]))


def test_the_slider_never_runs_the_model(server):
    tab.analyse(server.video_model, server.clip, "en")
    taken = state.MODEL_TURN.taken
    tab.show_frame(server.video_model, server.clip, 3, "en")
    assert state.MODEL_TURN.taken == taken
    state.VIDEOS.clear()
    with pytest.raises(gr.Error) as refused:
        tab.show_frame(server.video_model, server.clip, 3, "en")
    assert refused.value.message == t("message.video_none", "en") and state.MODEL_TURN.taken == taken


def test_what_is_refused_with_one_sentence(server):
    with pytest.raises(gr.Error) as refused:
        tab.analyse(server.photo_model, server.clip, "zh-CN")
    assert refused.value.message == t("message.video_needs_model", "zh-CN", name=server.photo_model)
    with pytest.raises(gr.Error) as refused:
        tab.analyse(server.video_model, None, "en")
    assert refused.value.message == t("message.video_none", "en")
    with pytest.raises(gr.Error) as refused:
        tab.analyse("/etc/passwd", server.clip, "en")
    assert refused.value.message == t("message.models_listed_only", "en")


def test_the_tab_is_in_the_table():
    assert "video" in TAB_IDS


def test_the_model_box_sends_a_video_model_to_its_tab(server, monkeypatch):
    """Chosen in the page's own Model box, a video model is not switched to (the photo tabs read photos): one warning
    naming the tab, and the box goes back to the model the page had."""
    warned = []
    monkeypatch.setattr(gr, "Warning", warned.append)
    out = views.switch_model(server.video_model, server.photo_model, None, None, None, "en")
    assert set(out) == {"model"} and out["model"].value == server.photo_model
    assert warned == [t("video.in_video_tab", "en", name=server.video_model)]


# ---- class maps per frame ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_a_class_map_per_frame_for_one_of_the_top5(server, lang):
    state.CLASSMAPS.clear()
    with pytest.raises(gr.Error) as refused:
        tab.explain_clip(server.video_model, server.clip, None, "gradcam", 0, lang)
    assert refused.value.message == t("message.video_classmap_first", lang)
    tab.analyse(server.video_model, server.clip, lang)
    a, _ = state.VIDEOS.find((os.path.realpath(server.clip), state.model_source(server.video_model)))
    offered = tab.offer_classes(server.video_model, server.clip, lang)
    top = [name for name, _ in a.top_k(5)]
    assert offered["video_class"].choices == [(n, n) for n in top] and offered["video_class"].value == top[0]
    assert all(offered[name] is None for name in tab.CLASSMAP_OUTPUTS)
    second = top[1]
    out = tab.explain_clip(server.video_model, server.clip, second, "gradcam", 5, lang)
    assert set(out) == set(tab.CLASSMAP_OUTPUTS)
    loaded = state.MODELS.get(state.model_source(server.video_model)).loaded
    index = a.labels.index(second)
    expected = clip_gradcam(loaded.model, loaded.preprocess.clip_tensor(a.clip.frames), ClassTarget(index))
    cam = state.CLASSMAPS.find((os.path.realpath(server.clip), state.model_source(server.video_model), "gradcam",
                                index))
    assert cam.shape == (4, 4, 4) and np.abs(cam - expected.values).max() < 1e-6
    title = t("video.method.gradcam", lang)
    strip = captioned(frames_strip(a, frame_overlays(a, cam, cell=tab.STRIP_CELL), lang),
                      t("picture.video_classmap", lang, method=title, name=second), lang)
    assert np.array_equal(np.asarray(out["video_classmap_strip"]), np.asarray(strip))
    frame = captioned(frame_overlay(a, cam, 5, cell=tab.FRAME_SIZE), frame_caption(a, 5, lang), lang)
    assert np.array_equal(np.asarray(out["video_classmap_frame"]), np.asarray(frame))
    assert out["video_classmap_note"].startswith(t("video.classmap_summary", lang, method=title, name=second,
                                                   probability=float(a.probabilities[index]), index=0,
                                                   seconds=0.0).split("：" if lang != "en" else ":")[0])
    taken = state.MODEL_TURN.taken                        # the slider and the default class draw from the cache
    moved = tab.show_classmap_frame(server.video_model, server.clip, second, "gradcam", 2, lang)
    frame = captioned(frame_overlay(a, cam, 2, cell=tab.FRAME_SIZE), frame_caption(a, 2, lang), lang)
    assert np.array_equal(np.asarray(moved["video_classmap_frame"]), np.asarray(frame))
    assert tab.show_classmap_frame(server.video_model, server.clip, top[2], "gradcam", 2, lang) == {}
    tab.explain_clip(server.video_model, server.clip, second, "gradcam", 1, lang)
    assert state.MODEL_TURN.taken == taken
    tab.explain_clip(server.video_model, server.clip, second, "gae", 1, lang)    # the table's other entry
    gae = state.CLASSMAPS.find((os.path.realpath(server.clip), state.model_source(server.video_model), "gae", index))
    x = loaded.preprocess.clip_tensor(a.clip.frames)
    assert np.abs(gae - scale_clip(clip_maps(loaded.model, x, ["gae"], ClassTarget(index)).maps["gae"])).max() < 1e-6


def test_a_class_or_method_outside_the_choices_is_refused(server):
    tab.analyse(server.video_model, server.clip, "en")
    a, _ = state.VIDEOS.find((os.path.realpath(server.clip), state.model_source(server.video_model)))
    outside = next(name for name in a.labels if name not in dict(a.top_k(5))) if len(a.labels) > 5 else None
    for name in filter(None, [outside, "tabby cat", "x" * 5000]):
        with pytest.raises(gr.Error) as refused:
            tab.explain_clip(server.video_model, server.clip, name, "gradcam", 0, "en")
        assert refused.value.message.startswith("Choose one of the clip's top-5 classes")
    with pytest.raises(gr.Error) as refused:
        tab.explain_clip(server.video_model, server.clip, None, "attnlrp", 0, "zh-CN")
    assert refused.value.message == t("message.video_method_unknown", "zh-CN", methods=", ".join(
        t(f"video.method.{m}", "zh-CN") for m in VIDEO_METHODS))


def test_every_method_of_the_table_is_a_choice_with_its_texts():
    for m in VIDEO_METHODS:
        for lang in ("en", "zh-CN"):
            assert t(f"video.method.{m}", lang) != f"video.method.{m}"
            assert t(f"video.method_about.{m}", lang) != f"video.method_about.{m}"


def test_a_clips_jobs_are_admitted_by_their_own_estimates(server, monkeypatch):
    """The analysis and the class map each need their own estimate (``peak.ClipShape``); over the budget, the class
    map is refused before it runs, in the jobs' one sentence (no other method fits: the table has only Grad-CAM)."""
    values = dict(video_model=server.video_model, video_file=server.clip, video_class=None, video_method="gradcam",
                  video_frame=0, lang="en")
    state.VIDEOS.clear()
    assert jobs.video_classmap(values) is None            # not analysed yet: the handler says so itself
    tab.analyse(server.video_model, server.clip, "en")
    served = state.MODELS.get(state.model_source(server.video_model))
    shape = peak.ClipShape.of(served.loaded.model, params=served.nbytes)
    assert (shape.frames, shape.tokens, shape.depth) == (8, 65, 2)          # a CLS token, 4 × 4 × 4 patches
    analysis, classmap = jobs.video(values), jobs.video_classmap(values)
    assert (analysis.bytes, analysis.what) == (peak.of("video", shape), "job.video")
    assert (classmap.bytes, classmap.what) == (peak.of("video_classmap", shape, method="gradcam"), "job.video_classmap")
    assert_refused_over_budget(monkeypatch, tab.explain_clip, values, classmap)


def assert_refused_over_budget(monkeypatch, handler, values: dict, need) -> None:
    """With a budget one byte below ``need``, the handler's job is refused before it runs, in the jobs' one sentence
    (no smaller change fits this clip)."""
    monkeypatch.setattr(limits.LIMITS, "max_memory", need.bytes - 1)
    with pytest.raises(Refusal) as refused:
        with jobs.admitted(handler, values):
            pass
    assert str(refused.value) == t("message.memory_refused", "en", job=t(need.what, "en", frames=8, side=32),
                                   need=need.bytes / 2**30, budget=(need.bytes - 1) / 2**30,
                                   advice=t("message.memory_no_advice", "en"))


# ---- a job whose visitor has gone stops at the next attention step ---------------------------------------------------

def _wanted_for(monkeypatch, checks: int) -> list:
    """The visitor is there for ``checks`` checks of ``heavy.still_wanted``, then gone; the calls are counted."""
    calls = []

    def still_wanted():
        calls.append(None)
        return len(calls) <= checks
    monkeypatch.setattr(heavy, "still_wanted", still_wanted)
    return calls


def test_a_clips_analysis_stops_at_the_next_step_when_its_visitor_leaves(server, monkeypatch):
    """The toy's two attention steps each take the model's turn (two checks each, the analysis's own turn two): a
    visitor gone after the first step stops the analysis before the second; nothing is cached."""
    source = state.model_source(server.video_model)
    state.MODELS.get(source)                              # loaded (and warmed up) while the visitor is there
    state.VIDEOS.clear()
    taken, there = state.MODEL_TURN.taken, heavy.still_wanted
    _wanted_for(monkeypatch, 4)
    with pytest.raises(heavy.Stopped):
        tab.analyse(server.video_model, server.clip, "en")
    assert state.MODEL_TURN.taken - taken == 2            # the analysis's turn and its first step's; not the second
    assert state.VIDEOS.find((os.path.realpath(server.clip), source)) is None
    monkeypatch.setattr(heavy, "still_wanted", there)     # the visitor is back
    taken = state.MODEL_TURN.taken
    tab.analyse(server.video_model, server.clip, "en")
    assert state.MODEL_TURN.taken - taken == 1 + 2 + 1    # its turn, a turn per step, and the one that finds no more


def test_a_class_map_stops_at_the_next_step_when_its_visitor_leaves(server, monkeypatch):
    source = state.model_source(server.video_model)
    tab.analyse(server.video_model, server.clip, "en")
    state.CLASSMAPS.clear()
    taken = state.MODEL_TURN.taken
    _wanted_for(monkeypatch, 4)
    with pytest.raises(heavy.Stopped):
        tab.explain_clip(server.video_model, server.clip, None, "gradcam", 0, "en")
    assert state.MODEL_TURN.taken - taken == 2            # the job's turn and its first step's
    assert not [key for key in state.CLASSMAPS.keys() if key[:2] == (os.path.realpath(server.clip), source)]


# ---- the deletion and insertion check of the drawn class maps --------------------------------------------------------

def _report_key(server, index: int, methods: tuple[str, ...]) -> tuple:
    return os.path.realpath(server.clip), state.model_source(server.video_model), index, methods


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_the_check_of_the_drawn_maps_is_the_librarys(server, lang):
    """Without a drawn map, one sentence asks for one; after Grad-CAM, the curves are ClipCheck's on the cached map
    (the random order beside them), the note words each verdict as the Trust tab does, the picture is the library's
    figure of the cached report (narrow: the phone's); run again, it is drawn from the cache without the model. With
    GAE drawn as well, both maps are checked."""
    tab.analyse(server.video_model, server.clip, lang)
    state.CLASSMAPS.clear()
    state.CLIP_CHECKS.clear()
    a, _ = state.VIDEOS.find((os.path.realpath(server.clip), state.model_source(server.video_model)))
    top = [name for name, _ in a.top_k(5)]
    index = a.labels.index(top[0])
    with pytest.raises(gr.Error) as refused:
        finished(tab.check_clip(server.video_model, server.clip, top[0], "gradcam", lang))
    assert refused.value.message == t("message.video_check_first", lang, name=top[0])
    tab.explain_clip(server.video_model, server.clip, top[0], "gradcam", 0, lang)
    out = finished(tab.check_clip(server.video_model, server.clip, top[0], "gradcam", lang, True))
    assert set(out) == set(tab.CHECK_OUTPUTS)
    report = state.CLIP_CHECKS.find(_report_key(server, index, ("gradcam",)))
    loaded = state.MODELS.get(state.model_source(server.video_model)).loaded
    cam = state.CLASSMAPS.find((os.path.realpath(server.clip), state.model_source(server.video_model), "gradcam",
                                index))
    expected = ClipCheck(loaded.model, loaded.preprocess.clip_tensor(a.clip.frames), index, {"gradcam": cam}).result()
    assert list(report.methods) == ["gradcam"] and report.protocol == "mean_colour"
    for got, want in ((report.methods["gradcam"].faithfulness, expected.methods["gradcam"].faithfulness),
                      (report.random, expected.random)):
        for kind in ("deletion", "insertion"):
            assert np.allclose(getattr(got, kind), getattr(want, kind), rtol=1e-5, atol=1e-6), kind
    assert np.asarray(out["video_check_picture"]).shape[1] == round(screens.NARROW_INCHES * screens.NARROW_DPI)
    assert np.array_equal(np.asarray(out["video_check_picture"]),
                          np.asarray(figure_to_image(curves_figure(report, lang, narrow=True))))
    verdict = ProtocolsReport({"mean_colour": report}).verdicts()["gradcam"]
    note = out["video_check_note"]
    assert note.startswith(t("video.check_head", lang, name=top[0], probability=report.probability,
                             variant=t("video.trust.mean_colour", lang), points=11))
    assert f"**{t('video.method.gradcam', lang)}**" in note and verdict_words(verdict, lang) in note
    assert f"{verdict.abpc_gain['mean_colour']:+.3f} ± {verdict.margin['mean_colour']:.3f}" in note
    taken = state.MODEL_TURN.taken
    again = finished(tab.check_clip(server.video_model, server.clip, top[0], "gae", lang, True))
    assert state.MODEL_TURN.taken == taken and again["video_check_note"] == note
    tab.explain_clip(server.video_model, server.clip, top[0], "gae", 0, lang)
    both = finished(tab.check_clip(server.video_model, server.clip, top[0], "gradcam", lang))
    assert list(state.CLIP_CHECKS.find(_report_key(server, index, ("gradcam", "gae"))).methods) == ["gradcam", "gae"]
    assert f"**{t('video.method.gae', lang)}**" in both["video_check_note"]


def test_a_check_of_a_class_or_method_outside_the_choices_is_refused(server):
    tab.analyse(server.video_model, server.clip, "en")
    a, _ = state.VIDEOS.find((os.path.realpath(server.clip), state.model_source(server.video_model)))
    tab.explain_clip(server.video_model, server.clip, None, "gradcam", 0, "en")
    taken = state.MODEL_TURN.taken
    for name in ("tabby cat", "x" * 5000, 3, ["right"]):
        with pytest.raises(gr.Error) as refused:
            finished(tab.check_clip(server.video_model, server.clip, name, "gradcam", "en"))
        assert refused.value.message.startswith("Choose one of the clip's top-5 classes")
    for method in ("attnlrp", "random", "../gradcam", None):
        with pytest.raises(gr.Error) as refused:
            finished(tab.check_clip(server.video_model, server.clip, None, method, "zh-CN"))
        assert refused.value.message == t("message.video_method_unknown", "zh-CN", methods=", ".join(
            t(f"video.method.{m}", "zh-CN") for m in VIDEO_METHODS))
    assert state.MODEL_TURN.taken == taken


def test_a_check_is_admitted_by_its_own_estimate(server, monkeypatch):
    values = dict(video_model=server.video_model, video_file=server.clip, video_class=None, video_method="gradcam",
                  lang="en")
    state.VIDEOS.clear()
    assert jobs.video_check(values) is None               # not analysed yet: the handler says so itself
    tab.analyse(server.video_model, server.clip, "en")
    served = state.MODELS.get(state.model_source(server.video_model))
    shape = peak.ClipShape.of(served.loaded.model, params=served.nbytes)
    need = jobs.video_check(values)
    assert (need.bytes, need.what) == (peak.of("video_check", shape, batch=BATCH), "job.video_check")
    assert_refused_over_budget(monkeypatch, tab.check_clip, values, need)


def test_a_check_stops_at_the_next_batch_when_its_visitor_leaves(server, monkeypatch):
    """Each forward batch takes the model's turn (two checks of ``still_wanted`` each): a visitor gone after two
    batches stops the check before the third; nothing of it is cached."""
    tab.analyse(server.video_model, server.clip, "en")
    tab.explain_clip(server.video_model, server.clip, None, "gradcam", 0, "en")
    state.CLIP_CHECKS.clear()
    taken = state.MODEL_TURN.taken
    _wanted_for(monkeypatch, 4)
    steps = tab.check_clip(server.video_model, server.clip, None, "gradcam", "en")
    with pytest.raises(heavy.Stopped):
        finished(steps)
    assert state.MODEL_TURN.taken - taken == 2 and len(state.CLIP_CHECKS) == 0
