"""Protects the front door: no missing font can stop the app. With every CJK font hidden from matplotlib (as on
macOS or Windows without Noto, a Docker ``python`` image, a minimal Linux) ``python app.py`` serves, analyses in
both languages, and Chinese pictures carry English labels (never tofu boxes) while the page's own texts stay
Chinese and say once which font to install."""
from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from gradio import processing_utils
from gradio_client import Client, handle_file
from matplotlib import font_manager
from PIL import Image

import hide_cjk_fonts
from api_client import AUGREG, CAT_CLASSES, top5
from app_server import free_port
from viz.drawing import fonts
from viz.i18n import CATALOGUE, PICTURES, t
from viz.i18n import fonts as scripts

REPO = Path(__file__).resolve().parents[2]
PICTURE_OUTPUTS = {"rollout": 2, "attention": 3, "heads": 4, "position": 8, "distance": 9, "norms": 10,
                   "norm_curves": 11}   # /analyze's pictures with texts in them (api_client's order)
SERVE_TIMEOUT_S = 240


@pytest.fixture
def no_cjk_font():
    hide_cjk_fonts.hide()
    try:
        yield
    finally:
        hide_cjk_fonts.restore()


def test_hidden_fonts_are_not_found_and_pictures_fall_back_to_english(no_cjk_font):
    assert scripts.cjk_font() is None and not scripts.can_draw_chinese()
    assert scripts.picture_language("zh-CN") == "en" and fonts.figure_families("zh-CN") is None
    assert fonts.pil_font(16, "zh-CN").getname() == fonts.pil_font(16, "en").getname()
    assert t("name.layer", "zh-CN", layer=3) == "layer 3"              # a picture's text: English
    assert t("tab.rollout", "zh-CN") == CATALOGUE["tab.rollout"][1]    # the page's text: still Chinese
    assert "fonts-noto-cjk" in scripts.missing_font_message()


def test_the_font_fixture_can_fail():
    """With the fonts back, the same checks give Chinese (the machine that runs the tests has a CJK font)."""
    assert scripts.cjk_font() is not None and scripts.picture_language("zh-CN") == "zh-CN"
    assert t("name.layer", "zh-CN", layer=3) == PICTURES["name.layer"][1].format(layer=3)
    assert scripts.missing_font_message() is None


def _entry(name: str, path: str) -> font_manager.FontEntry:
    return font_manager.FontEntry(fname=path, name=name, style="normal", weight=400)


@pytest.mark.parametrize("family", ["WenQuanYi Zen Hei", "PingFang SC", "Microsoft YaHei", "SimSun"])
def test_every_usual_system_family_counts_as_a_cjk_font(family):
    """Linux, macOS and Windows fonts are all looked for, in the documented order of preference."""
    assert scripts._regular_face([_entry("DejaVu Sans", "/a.ttf"), _entry(family, "/cjk.ttf")]).family == family
    preferred = scripts._regular_face([_entry(family, "/b.ttf"), _entry("Noto Sans CJK SC", "/n.ttc")])
    assert preferred.family == "Noto Sans CJK SC"
    assert scripts._regular_face([_entry("DejaVu Sans", "/a.ttf")]) is None


def test_the_page_says_once_in_chinese_which_font_to_install(no_cjk_font):
    from vit_explorer.texts import font_note
    note = font_note("zh-CN")
    assert note.startswith("图中文字暂以英文显示") and "Noto Sans CJK SC" in note and "fonts-noto-cjk" in note
    assert font_note("en") == ""


def test_the_page_says_nothing_when_the_font_is_there():
    from vit_explorer.texts import font_note
    assert font_note("zh-CN") == "" and font_note("en") == ""


def _serve_without_cjk_fonts(weights: Path, port: int, home: Path) -> subprocess.Popen:
    """``python app.py --weights …`` in a child process whose matplotlib sees no CJK font."""
    launcher = ("import runpy, sys, hide_cjk_fonts; hide_cjk_fonts.hide(); "
                f"sys.argv = ['app.py', '--weights', {str(weights)!r}, '--port', '{port}']; "
                "runpy.run_path('app.py', run_name='__main__')")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")]),
           "GRADIO_TEMP_DIR": str(home / "gradio"), "GRADIO_ANALYTICS_ENABLED": "False"}
    return subprocess.Popen([sys.executable, "-c", launcher], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_for(url: str, child: subprocess.Popen) -> Client:
    deadline = time.monotonic() + SERVE_TIMEOUT_S
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise AssertionError(f"the app stopped (exit {child.returncode}):\n{child.stderr.read()}")
        try:
            return Client(url, verbose=False)
        except Exception:   # not listening yet: any connection error means "try again"
            time.sleep(1)
    raise AssertionError(f"the app did not serve within {SERVE_TIMEOUT_S} s")


def _in_process_pictures(weights: Path, photo: Path, served: list[str]) -> list[np.ndarray]:
    """/analyze's pictures drawn in this process (its CJK font visible), encoded as the served files were."""
    from vit_explorer.api import analyze
    result = analyze(str(photo), str(weights))
    return [np.asarray(Image.open(io.BytesIO(processing_utils.encode_pil_to_bytes(result[1 + i], Image.open(f).format))))
            for i, f in zip(PICTURE_OUTPUTS.values(), served)]


@pytest.mark.slow
def test_python_app_py_serves_both_languages_without_a_cjk_font(real_weights_dir, cat, tmp_path):
    """The proof of the front door: the app starts, /analyze answers with the English pictures it always drew,
    and a Chinese browser gets Chinese tabs, the font note, and pictures with English labels."""
    from playwright.sync_api import sync_playwright
    from browser_setup import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, TIMEOUT_MS, TOP1
    photo = tmp_path / "cat.png"
    cat.save(photo)
    port = free_port()
    child = _serve_without_cjk_fonts(real_weights_dir / AUGREG, port, tmp_path)
    try:
        url = f"http://127.0.0.1:{port}/"
        english = _wait_for(url, child).predict(handle_file(str(photo)), api_name="/analyze")
        assert top5(english)[0][0] in CAT_CLASSES
        files = [english[i] for i in PICTURE_OUTPUTS.values()]
        served = [np.asarray(Image.open(f).convert("RGB")) for f in files]
        for name, got, want in zip(PICTURE_OUTPUTS, served,
                                   _in_process_pictures(real_weights_dir / AUGREG, photo, files)):
            assert np.array_equal(got, want), f"the English {name} picture changed without a CJK font"
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_context(locale="zh-CN", viewport={"width": 1400, "height": 900}).new_page()
            page.set_default_timeout(TIMEOUT_MS)
            page.goto(url)
            page.locator("#photo-input input[type=file]").set_input_files(str(photo))
            page.wait_for_selector(TOP1)
            page.wait_for_selector("#rollout-image img")
            tabs = [b.inner_text().strip() for b in page.locator("#tabs-look button[role=tab]").all()]
            assert tabs[0] == t("tab.rollout", "zh-CN") and "词元" in page.locator("#summary").inner_text()
            assert page.locator("#font-note").inner_text().strip().startswith("图中文字暂以英文显示")
            src = page.locator("#rollout-image img").first.get_attribute("src")
            rollout = np.asarray(Image.open(io.BytesIO(page.request.get(src).body())).convert("RGB"))
            assert np.array_equal(rollout, served[0])          # drawn for a Chinese visitor, with English labels
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "app-zh-no-cjk-font.png"), full_page=True)
            browser.close()
    finally:
        child.terminate()
        _, stderr = child.communicate(timeout=60)
    assert stderr.count("No Chinese font found") == 1 and "fonts-noto-cjk" in stderr   # said once, at start-up


@pytest.mark.slow
def test_the_cli_draws_chinese_pictures_without_a_cjk_font(real_weights_dir, cat, tmp_path):
    photo = tmp_path / "cat.png"
    cat.save(photo)
    outputs = {}
    for lang in ("en", "zh-CN"):
        code = ("import runpy, sys, hide_cjk_fonts; hide_cjk_fonts.hide(); "
                f"sys.argv = ['viz', {str(photo)!r}, '--weights', {str(real_weights_dir / AUGREG)!r}, '--out', "
                f"{str(tmp_path / lang)!r}, '--lang', {lang!r}, '--quiet']; runpy.run_module('viz', run_name='__main__')")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")])}
        subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, check=True, capture_output=True, timeout=600)
        outputs[lang] = tmp_path / lang / "cat"
    pictures = sorted(p.name for p in outputs["en"].glob("*.png"))
    assert pictures and pictures == sorted(p.name for p in outputs["zh-CN"].glob("*.png"))
    for name in pictures:
        en, zh = (np.asarray(Image.open(outputs[lang] / name).convert("RGB")) for lang in ("en", "zh-CN"))
        assert np.array_equal(en, zh), name
