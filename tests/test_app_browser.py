"""Protects the page as a person uses it, in a real browser: headless Debian chromium driven by pip playwright
(never a downloaded browser), the app served on 127.0.0.1 with real weights. Upload the cat, see a cat class
on top, move the layer slider and see the attention image change, click a patch and see its query map."""
from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, sync_playwright

from app_server import running_app

CAT_CLASSES = {"Egyptian cat", "tabby", "tiger cat", "Persian cat", "Siamese cat", "lynx"}
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def page(real_weights_dir, tmp_path_factory, cat):
    """The app's page with the cat photo uploaded and analysed."""
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium); "
                    f"the test never downloads a browser.", pytrace=False)
    photo = tmp_path_factory.mktemp("browser") / "cat.jpg"
    cat.save(photo, quality=95)
    with running_app(str(real_weights_dir / "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors")) as url, \
            sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(url)
        page.locator("#photo-input input[type=file]").set_input_files(str(photo))
        page.wait_for_selector("#top5 [data-testid=label-output-value]")
        page.wait_for_selector("#rollout-image img")
        yield page
        browser.close()


def _image_src(page: Page, elem_id: str) -> str:
    return page.locator(f"#{elem_id} img").first.get_attribute("src")


def _wait_for_new_src(page: Page, elem_id: str, old: str | None) -> str:
    page.wait_for_function("([id, old]) => { const img = document.querySelector(`#${id} img`);"
                           " return img !== null && img.complete && img.src !== old; }", arg=[elem_id, old])
    return _image_src(page, elem_id)


def _bytes(page: Page, src: str) -> bytes:
    response = page.request.get(src)
    assert response.ok, (src, response.status)
    return response.body()


def test_upload_shows_a_cat_class_on_top(page):
    top = page.locator("#top5 [data-testid=label-output-value]").inner_text().strip()
    assert top in CAT_CLASSES
    assert "197 tokens" in page.locator("#summary").inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "app.png"), full_page=True)
    assert (ARTIFACTS / "app.png").stat().st_size > 50_000


def test_moving_the_layer_slider_changes_the_attention_image(page):
    page.get_by_role("tab", name="Attention", exact=True).click()
    before = _wait_for_new_src(page, "attention-image", None)
    slider = page.locator("#layer-slider input[type=range]")
    slider.focus()
    page.keyboard.press("ArrowLeft")  # block 11 -> block 10, as a person dragging the slider
    after = _wait_for_new_src(page, "attention-image", before)
    assert page.locator("#layer-slider input[type=number]").input_value() == "10"
    assert _bytes(page, after) != _bytes(page, before)


def test_clicking_a_patch_shows_where_it_attends(page):
    page.get_by_role("tab", name="Patch query", exact=True).click()
    before = _wait_for_new_src(page, "query-out", None)
    photo = page.locator("#query-photo img").first
    box = photo.bounding_box()
    photo.click(position={"x": box["width"] * 0.3, "y": box["height"] * 0.35})  # the cat's left eye
    after = _wait_for_new_src(page, "query-out", before)
    assert _bytes(page, after) != _bytes(page, before)
    page.screenshot(path=str(ARTIFACTS / "app-patch-query.png"), full_page=True)


def test_clicking_a_thumbnail_opens_that_layer_and_head(page):
    page.get_by_role("tab", name="All heads", exact=True).click()
    grid = page.locator("#heads-image img").first
    grid.wait_for()
    box = grid.bounding_box()
    natural = grid.evaluate("img => [img.naturalWidth, img.naturalHeight]")
    scale = min(box["width"] / natural[0], box["height"] / natural[1])  # the grid is shown scaled to fit
    # The AugReg ViT-Ti grid: 12 rows (layers) × 3 columns (heads) of 56-pixel thumbnails after the labels;
    # aim at the middle of the last column, a little below the middle row.
    x = box["width"] / 2 + (natural[0] / 2 - 30) * scale
    y = box["height"] / 2 + 0.6 * 58 * scale
    before = _image_src(page, "attention-image")
    grid.click(position={"x": x, "y": y})
    page.wait_for_function("() => document.querySelector('#layer-slider input[type=number]') !== null"
                           " && document.querySelector('#layer-slider input[type=number]').value === '6'")
    assert page.get_by_role("tab", name="Attention", exact=True).get_attribute("aria-selected") == "true"
    after = _wait_for_new_src(page, "attention-image", before)
    assert _bytes(page, after) != _bytes(page, before)


def test_typing_a_checkpoint_path_switches_the_model(page, real_weights_dir):
    deit = str(real_weights_dir / "deit_tiny_patch16_224.pipevit_ln_fixedpoint.safetensors")
    picker = page.locator("#model-picker input")
    picker.click()
    picker.fill(deit)
    picker.press("Enter")
    page.wait_for_function("() => document.querySelector('#summary').innerText.includes('deit_tiny')")
    top = page.locator("#top5 [data-testid=label-output-value]").inner_text().strip()
    assert top in CAT_CLASSES


def test_a_path_that_is_no_checkpoint_is_refused_and_the_model_kept(page, tmp_path):
    fake = tmp_path / "holiday.pth"
    fake.write_text("not weights")
    picker = page.locator("#model-picker input")
    before = picker.input_value()
    picker.click()
    picker.fill(str(fake))
    picker.press("Enter")
    page.get_by_text("is not a checkpoint").first.wait_for()  # the error toast, in plain words
    page.wait_for_function("before => document.querySelector('#model-picker input').value === before", arg=before)
    assert "deit_tiny" in page.locator("#summary").inner_text()


def test_an_example_photo_runs(page):
    page.locator("button", has=page.locator("img[src*='camera']")).first.click()  # the camera example
    page.wait_for_function("() => document.querySelector('#top5 [data-testid=label-output-value]')"
                           ".innerText.trim() === 'tripod'")
