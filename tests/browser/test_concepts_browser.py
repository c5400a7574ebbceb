"""Protects the Concepts tab as a person uses it, in a real browser (headless Debian chromium through pip playwright,
the app served on 127.0.0.1 with the real AugReg ViT-Ti and two SAEs on its list: one trained in the test with
``python -m viz.concepts train`` on scikit-image's photos, one of random weights on another layer): on a desktop and
on a 390 px phone, in English and in Chinese, the tab opens with the first SAE drawn; picking the trained one draws
its strongest concepts with their top patches; a latent picked draws its 64 strongest patches; a click on the photo
lists the latents at that patch; switching the latent off gives a new top-5 beside the old one and the rollouts
before and after, in the page's language. Nothing is cut or covered: no sideways scrolling, every picture's label and
every box's text whole, and on the phone every picture with text in it shown at its drawn size at least (never
shrunk to fit the screen's width or height, which would shrink its text). Screenshots go to tests/artifacts/."""
from __future__ import annotations

import pytest
from PIL import Image
from playwright.sync_api import Page
from skimage import data

import vit
from browser_setup import ARTIFACTS, TIMEOUT_MS, TOP1, app_in_browser
from concept_cases import constructed_sae
from viz.cli.concepts import main as concepts_main
from viz.i18n import t
from vit_explorer import state

pytestmark = pytest.mark.slow   # an SAE trained, a served app and a browser: about two minutes

WEIGHTS = "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors"
PHOTOS = ("chelsea", "coffee", "astronaut", "rocket", "immunohistochemistry", "retina", "hubble_deep_field", "camera",
          "horse", "grass", "brick", "colorwheel")
DESKTOP = {"width": 1400, "height": 900}
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def server(real_weights_dir, tmp_path_factory):
    weights = str(real_weights_dir / WEIGHTS)
    root = tmp_path_factory.mktemp("concepts_browser")
    photos = root / "photos"
    photos.mkdir()
    for name in PHOTOS:
        Image.fromarray(getattr(data, name)()).convert("RGB").save(photos / f"{name}.jpg", quality=92)
    assert concepts_main(["train", str(photos), "--weights", weights, "--layer", "6", "--latents", "384", "--k", "8",
                          "--crops", "3", "--epochs", "4", "--out", str(root / "saes" / "augreg-layer6"),
                          "--quiet"]) == 0
    other = constructed_sae(root / "saes" / "random-layer3", vit.load(weights), 3, photos=photos)
    listed = state.SETTINGS.saes
    state.SETTINGS.saes = [str(other), str(root / "saes" / "augreg-layer6")]
    try:
        with app_in_browser(weights) as (url, browser):
            yield {"url": url, "browser": browser, "cat": photos / "chelsea.jpg"}
    finally:
        state.SETTINGS.saes = listed


def _src(page: Page, elem_id: str) -> str | None:
    img = page.locator(f"#{elem_id} img").first
    return img.get_attribute("src") if img.count() else None


def _new_src(page: Page, elem_id: str, old: str | None) -> str:
    page.wait_for_function("([id, old]) => { const i = document.querySelector('#' + id + ' img');"
                           " return i !== null && i.src !== old; }", arg=[elem_id, old])
    return _src(page, elem_id)


def _pick(page: Page, box: str, option: str) -> None:
    page.locator(f"#{box} input").click()
    page.get_by_role("option", name=option).first.click()


def _open_concepts(page: Page, lang: str) -> None:
    """The Inside section, then its Concepts tab, each by its exact name in its own tab bar (a section and a tab may
    share a name)."""
    page.locator("#sections").get_by_role("tab", name=t("section.inside", lang), exact=True).first.click()
    page.locator("#tabs-inside").get_by_role("tab", name=t("tab.concepts", lang), exact=True).click()


CUT_OR_SHRUNK = """phone => {
    const found = [];
    for (const id of ["concepts-strongest", "concepts-top", "concepts-photo", "concepts-edit", "concepts-top5"]) {
        const box = document.getElementById(id);
        for (const label of box.querySelectorAll("label"))
            if (label.offsetParent !== null && label.scrollWidth > label.clientWidth + 1)
                found.push(`${id}: its label is cut (${label.innerText})`);
        const img = box.querySelector("img");
        if (phone && id !== "concepts-photo" && img !== null && img.naturalWidth > 0) {   // text drawn in it
            const r = img.getBoundingClientRect();
            const scale = Math.min(r.width / img.naturalWidth, r.height / img.naturalHeight);
            if (scale < 0.97) found.push(`${id}: shown at ${scale.toFixed(2)} of its drawn size`);
        }
    }
    for (const id of ["concepts-sae", "concepts-latent"]) {
        const input = document.querySelector(`#${id} input`);
        if (input.scrollWidth > input.clientWidth + 1) found.push(`${id}: its text is cut (${input.value})`);
    }
    if (document.documentElement.scrollWidth > window.innerWidth + 1) found.push("the page scrolls sideways");
    return found;
}"""


def _browse(server, locale: str, viewport: dict) -> Page:
    lang = "zh-CN" if locale == "zh-CN" else "en"
    page = server["browser"].new_context(locale=locale, viewport=viewport).new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(server["url"])
    page.locator("#photo-input input[type=file]").set_input_files(str(server["cat"]))
    page.wait_for_selector(TOP1)
    _open_concepts(page, lang)
    first = _new_src(page, "concepts-strongest", None)                 # the first SAE on the list, drawn at once
    assert "random-layer3" in page.locator("#concepts-sae input").input_value()
    _pick(page, "concepts-sae", "augreg-layer6")                         # the trained one
    strongest = _new_src(page, "concepts-strongest", first)
    assert strongest != first
    page.wait_for_function("words => document.querySelector('#concepts-line').innerText.includes(words)",
                           arg=t("concepts.source.trained", lang))
    return page


def _latent_patch_and_switch(page: Page, lang: str, narrow: bool) -> str:
    """A latent picked (the second strongest), a patch clicked, that latent switched off: the edit's line."""
    top = _src(page, "concepts-top")
    second = page.locator("#concepts-latent input")
    second.click()
    options = page.get_by_role("option")
    options.nth(1).wait_for()
    name = options.nth(1).inner_text().strip()
    latent = name.split()[0].lstrip("#")
    options.nth(1).click()
    _new_src(page, "concepts-top", top)
    photo = page.locator("#concepts-photo img").first
    box = photo.bounding_box()
    photo.click(position={"x": box["width"] * 0.45, "y": box["height"] * 0.35})
    page.wait_for_function("word => document.querySelector('#concepts-patch').innerText.includes(word)",
                           arg="图块 (" if lang == "zh-CN" else "patch (")
    assert page.locator("#concepts-patch li").count() >= 1              # the latents active there, listed
    page.locator("#concepts-edit-button").click()
    page.locator("#concepts-edit img").first.wait_for()
    marker = f"关闭潜变量 {latent}" if lang == "zh-CN" else f"with latent {latent} switched off"
    page.wait_for_function("word => document.querySelector('#concepts-edit-line').innerText.includes(word)",
                           arg=marker)
    page.locator("#concepts-top5 [data-testid=label-output-value]").first.wait_for()
    if narrow:
        assert page.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"] + 1
    return page.locator("#concepts-edit-line").inner_text()


def _before_and_after(line: str, lang: str) -> tuple[str, str]:
    """The new top-5 and the old one, as the edit's line lists them."""
    if lang == "zh-CN":
        after, _, rest = line.partition("后的前五类：")[2].partition("（之前：")
        return after, rest.partition("）")[0]
    after, _, rest = line.partition(": ")[2].partition(" (before: ")
    return after, rest.partition(")")[0]


@pytest.mark.parametrize("locale, viewport", [("en-US", DESKTOP), ("zh-CN", PHONE), ("zh-CN", DESKTOP),
                                              ("en-US", PHONE)], ids=["en-desktop", "zh-phone", "zh-desktop", "en-phone"])
def test_concepts_in_a_browser(server, locale, viewport):
    lang, phone = ("zh-CN" if locale == "zh-CN" else "en"), viewport is PHONE
    page = _browse(server, locale, viewport)
    try:
        assert t("picture.concepts_strongest", lang) in page.locator("#concepts-strongest").inner_text()
        if phone:
            assert page.locator("#concepts-strongest img").evaluate("i => i.naturalWidth") <= 360   # drawn for it
        line = _latent_patch_and_switch(page, lang, phone)
        after, before = _before_and_after(line, lang)
        assert after and before and after != before, line               # the answer changed
        assert "tabby" in before or "Egyptian cat" in before or "tiger cat" in before
        page.wait_for_function("() => [...document.querySelectorAll('[id^=concepts-] img')].every(i => i.complete)")
        assert page.evaluate(CUT_OR_SHRUNK, phone) == []
        name = f"concepts-{'zh' if lang == 'zh-CN' else 'en'}-{'phone' if phone else 'desktop'}.png"
        page.locator("#concepts-line").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / name), full_page=True)
    finally:
        page.context.close()
