"""Two languages: the catalogue is complete in English and Chinese, the page can feed it to gr.I18n, and Chinese
text in pictures is drawn with real glyphs (not the font's missing-glyph box) by Pillow and by matplotlib."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from matplotlib import font_manager
from PIL import Image

from allowed_english import NAMES, english_words
from oracles import token_norm_plot
from viz import i18n
from viz.drawing import fonts, plots, render
from viz.i18n import CATALOGUE, LANGUAGES, PAGE, PICTURES, language, language_from_header, t, translations
from viz.i18n.fonts import cjk_font

BARE = {"CLS", "logit", "Grad", "CAM", "EVA", "BEiT", "GELU", "QuickGELU", "SwiGLU", "LayerScale", "Pre", "Linear",
        "tanh", "LayerNorm", "qkv", "DINOv3"}   # names that are a whole text in both languages: a method, a family, a module
CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")


def test_every_key_has_both_languages_with_the_same_fields():
    assert LANGUAGES == ("en", "zh-CN")
    for key, texts in CATALOGUE.items():
        assert len(texts) == 2 and all(isinstance(x, str) and x.strip() for x in texts), key
        english, chinese = texts
        assert i18n.fields(english) == i18n.fields(chinese), key   # the same values fill both
        assert not CJK.search(english), key


def test_the_chinese_catalogue_has_no_english_left():
    for key, (_, chinese) in CATALOGUE.items():
        text = re.sub(r"\{[^}]*\}", " ", chinese)                    # the fields are filled with numbers/names
        text = re.sub(r"\S*[/\\]\S*", " ", text)                     # paths and commands
        words = english_words(text)
        assert words <= NAMES, f"{key}: English words {sorted(words - NAMES)} in {chinese!r}"
        if not words or words - BARE:                                # only a bare name may stay untranslated
            assert CJK.search(chinese), f"{key}: {chinese!r} is not Chinese"


def test_every_control_of_the_page_has_a_label_and_a_help_text():
    controls = [key.split(".", 1)[1] for key in CATALOGUE if key.startswith("control.")]
    assert set(controls) >= {"fusion", "discard", "start_layer", "opacity", "mask_artifacts", "layer", "head",
                             "mean_heads", "dino_mask", "rolled"}                      # every control of today's page
    missing = [c for c in controls + ["model"] if f"help.{c}" not in CATALOGUE]
    assert not missing, f"controls without a help text: {missing}"
    for key in ("tab.rollout", "tab.attention", "tab.heads", "tab.query", "tab.position", "tab.distance",
                "tab.norms", "tab.model"):
        assert key in CATALOGUE and f"about.{key.split('.')[1]}" in CATALOGUE or key == "tab.model"


def test_no_section_and_tab_share_a_name_in_either_language():
    """A section of the page and a tab are both buttons of role "tab": with one name a visitor (and a screen reader)
    could not tell which one they are pressing."""
    from vit_explorer.tabs import SECTIONS, TAB_IDS

    for lang in LANGUAGES:
        names = [t(f"section.{s}", lang) for s in SECTIONS] + [t(f"tab.{tab}", lang) for tab in TAB_IDS]
        assert len(set(names)) == len(names), (lang, sorted(n for n in names if names.count(n) > 1))


def test_pictures_say_layer_never_block():
    for key, (english, _) in PICTURES.items():
        assert not re.search(r"\bblock|\bBlock|\b[LB](?!2 norm)\d", english), key   # "L2 norm" is a norm


def test_t_formats_in_both_languages_and_names_a_missing_key():
    assert t("name.layer_head", "en", layer=3, head=1) == "layer 3, head 1"
    assert t("name.layer_head", "zh-CN", layer=3, head=1) == "第 3 层，头 1"
    assert t("note.artifacts_dominate", "zh", share=0.58, count=4).startswith("此图 58% ")
    with pytest.raises(KeyError, match="no.such.key"):
        t("no.such.key")
    with pytest.raises(ValueError, match="Unknown language 'fr'"):
        t("name.rollout", "fr")


def test_language_tags_and_accept_language_headers():
    assert [language(x) for x in (None, "en", "en-US", "zh", "zh_CN", "zh-Hans", "ZH-cn")] == \
        ["en", "en", "en", "zh-CN", "zh-CN", "zh-CN", "zh-CN"]
    assert language_from_header("zh-CN,zh;q=0.9,en;q=0.8") == "zh-CN"
    assert language_from_header("en-GB,en;q=0.9,zh-CN;q=0.8") == "en"
    assert language_from_header("fr-FR,fr;q=0.9,zh;q=0.5") == "zh-CN"       # the best one we have
    assert language_from_header("zh-TW,fr") == "en" and language_from_header(None) == "en"


def test_translations_are_what_gr_I18n_takes():
    import gradio as gr

    with warnings.catch_warnings():
        warnings.simplefilter("error")                               # no "Invalid locale code" warning
        i18n_ = gr.I18n(**translations())
    assert set(i18n_.translations_dict) == {"en", "zh-CN"}
    assert i18n_.translations_dict["zh-CN"]["tab.rollout"] == "注意力展开"
    assert set(i18n_.translations_dict["en"]) == set(CATALOGUE) >= set(PICTURES) | set(PAGE)
    assert not set(PICTURES) & set(PAGE)
    assert translations(["tab.model"]) == {"en": {"tab.model": "Model"}, "zh-CN": {"tab.model": "模型"}}


def test_the_cjk_font_is_found_through_matplotlibs_font_manager():
    face = cjk_font()
    assert face.family == "Noto Sans CJK SC"
    entries = [e for e in font_manager.fontManager.ttflist if e.fname == face.path and e.name == face.family]
    assert entries and entries[0].index == face.index                 # the same file and face matplotlib uses
    assert fonts.pil_font(20, "zh-CN").getname() == ("Noto Sans CJK SC", "Regular")
    assert fonts.figure_families("zh-CN") == ["DejaVu Sans", "Noto Sans CJK SC"] and fonts.figure_families("en") is None


def _has_glyph(font, ch: str) -> bool:
    return ch.isspace() or fonts.glyph_mask(font, ch) != fonts.glyph_mask(font, fonts.MISSING_CHAR)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_character_of_the_picture_texts_has_a_glyph(lang):
    """Every text drawn into a picture, in the font Pillow draws it with, has no .notdef box."""
    index = LANGUAGES.index(lang)
    for key, texts in PICTURES.items():
        text = re.sub(r"\{[^}]*\}", "", texts[index])
        f = render.font(16, lang, text)
        missing = [ch for ch in text if not _has_glyph(f, ch)]
        assert not missing, f"{key} ({lang}): no glyph for {missing} in {f.getname()}"


def test_the_bundled_font_would_draw_chinese_as_tofu():
    """The check above can fail: Pillow's own font draws every Chinese character as the same box."""
    bundled = render.font(16, "en")
    assert all(not _has_glyph(bundled, ch) for ch in "层头图块")
    assert len({fonts.glyph_mask(fonts.pil_font(16, "zh-CN"), ch) for ch in "层头图块"}) == 4   # four real glyphs


def _bar(label: str, lang: str) -> np.ndarray:
    photo = Image.new("RGB", (64, 224), "gray")
    return np.asarray(render.add_colorbar(photo, "viridis", 0.0, 1.0, label, lang=lang)).astype(int)


def test_colour_bars_draw_chinese_glyphs():
    label = t("colorbar.uniform", "zh-CN", tokens=197)
    real = _bar(label, "zh-CN")
    tofu = _bar(re.sub(CJK, fonts.MISSING_CHAR, label), "zh-CN")     # the same label with missing glyphs
    assert real.shape == tofu.shape
    assert np.abs(real - tofu).sum() > 0                              # Chinese glyphs, not .notdef boxes
    wrong_font = _bar(label, "en")                                    # what it looked like with Pillow's font:
    assert np.array_equal(wrong_font, _bar(re.sub(CJK, fonts.MISSING_CHAR, label), "en"))   # all tofu


def test_matplotlib_figures_draw_chinese_glyphs():
    d = np.random.default_rng(0).random((4, 3)) * 100

    def drawn(fig):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            image = np.asarray(plots.figure_to_image(fig)).astype(int)
        assert not [w for w in caught if "missing from font" in str(w.message)]
        return image

    chinese = drawn(plots.distance_plot(d, uniform_distance=50.0, lang="zh-CN"))
    fig = plots.distance_plot(d, uniform_distance=50.0, lang="zh-CN")
    for text in fig.findobj(lambda artist: hasattr(artist, "get_text") and CJK.search(artist.get_text() or "")):
        text.set_text(re.sub(CJK, "\U000f0000", text.get_text()))     # private use: the .notdef box
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                               # "Glyph missing": that is the point
        tofu = np.asarray(plots.figure_to_image(fig)).astype(int)
    assert np.abs(chinese - tofu).sum() > 0
    english = plots.distance_plot(d, uniform_distance=50.0)
    assert english.axes[0].get_xlabel() == "Network depth (layer)"
    assert {text.get_fontfamily()[0] for text in english.findobj(lambda a: hasattr(a, "get_fontfamily"))} == \
        {"sans-serif"}                                                # English figures keep matplotlib's default


def test_every_plot_has_a_legend_in_both_languages():
    rng = np.random.default_rng(0)
    for lang in LANGUAGES:
        figs = [plots.distance_plot(rng.random((4, 3)) * 100, uniform_distance=50.0, lang=lang),
                token_norm_plot(rng.random((4, 7)) + 1, 1, flags=np.eye(4, 6, dtype=bool), lang=lang)]
        for fig in figs:
            legend = fig.axes[0].get_legend()
            assert legend is not None and len(legend.get_texts()) >= 3
        heads = [x.get_text() for x in figs[0].axes[0].get_legend().get_texts()]
        assert heads[:3] == [t("name.head", lang, head=h) for h in range(3)]
