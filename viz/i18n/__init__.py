"""Every text of the explorer in English and Simplified Chinese: the pictures' texts and the page's.

One catalogue, three parts (``pictures``: axis labels, legends, colour-bar labels, captions, notes drawn into
images; ``page``: titles, tab names, control labels and help, messages of the page; ``model``: the Model tab's
architecture table). Each entry is a key with
its English and Chinese text; texts may hold ``str.format`` fields (``{layer}``), filled by ``t``.

- ``t(key, lang="en", **values)``: the text in one language, formatted; what viz/ draws and what the server
  puts into messages (``gr.Error``, notes), which the browser cannot translate. A picture's text is English
  when Chinese is asked for on a machine without a CJK font (``viz.drawing.fonts.picture_language``).
- ``translations()``: ``{"en": {key: text}, "zh-CN": {key: text}}``, the form Gradio's ``gr.I18n`` takes:
  ``i18n = gr.I18n(**translations())``, ``gr.Slider(label=i18n("control.layer"))``,
  ``demo.launch(i18n=i18n)``. Gradio picks the browser's language ("zh-CN", else English) and translates
  static texts (labels, info, Markdown) in the browser; texts with fields must go through ``t`` instead.
- ``language(lang)``: "zh", "zh_CN", "zh-Hans", "zh-CN" -> "zh-CN"; "en-US" -> "en"; others raise ValueError.
- ``language_from_header(accept_language)``: a request's Accept-Language header -> "zh-CN" or "en".
"""
from __future__ import annotations

import string

from ..concepts.texts import TEXTS as CONCEPTS   # a slice's texts, merged here until slices' texts are wired
from .model import MODEL
from .page import PAGE
from .pictures import PICTURES

LANGUAGES = ("en", "zh-CN")   # the order of the texts in every catalogue entry
DEFAULT_LANGUAGE = "en"
CATALOGUE: dict[str, tuple[str, str]] = {**PICTURES, **PAGE, **MODEL, **CONCEPTS}
if len(CATALOGUE) != len(PICTURES) + len(PAGE) + len(MODEL) + len(CONCEPTS):  # a key in two parts would shadow one
    twice = (set(PICTURES) & set(PAGE)) | (set(PICTURES) & set(MODEL)) | (set(PAGE) & set(MODEL))
    raise RuntimeError(f"Keys in two parts of viz.i18n: {sorted(twice)}")

_ALIASES = {"en": "en", "zh": "zh-CN", "zh-cn": "zh-CN", "zh-hans": "zh-CN", "zh-sg": "zh-CN", "zh-hans-cn": "zh-CN"}


def language(lang: str | None) -> str:
    """Normalise a language tag to one of ``LANGUAGES`` (None -> English); ValueError for any other language."""
    if lang is None:
        return DEFAULT_LANGUAGE
    tag = str(lang).strip().replace("_", "-").lower()
    if tag in _ALIASES:
        return _ALIASES[tag]
    if tag.split("-")[0] == "en":
        return "en"
    raise ValueError(f"Unknown language {lang!r}! Expected one of {LANGUAGES} (or 'zh', 'zh_CN', 'en-US').")


def language_from_header(accept_language: str | None) -> str:
    """An HTTP Accept-Language header ("zh-CN,zh;q=0.9,en;q=0.8") -> the best of ``LANGUAGES``, English by default.

    Only Simplified Chinese tags count as Chinese ("zh-TW" and "zh-HK" are Traditional and get English, as
    Gradio's own choice of locale does for texts it has no Traditional version of)."""
    weighted = []
    for i, part in enumerate((accept_language or "").split(",")):
        tag, _, params = part.strip().partition(";")
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                q = 0.0
        weighted.append((-q, i, tag.strip()))
    for _, _, tag in sorted(weighted):
        try:
            return language(tag)
        except ValueError:
            continue
    return DEFAULT_LANGUAGE


def t(key: str, lang: str | None = DEFAULT_LANGUAGE, **values) -> str:
    """The text of ``key`` in ``lang``, with its fields filled from ``values``.

    KeyError names the key (a typo must not draw an empty label); a missing field raises KeyError too."""
    try:
        entry = CATALOGUE[key]
    except KeyError:
        raise KeyError(f"No text {key!r} in the catalogue (viz/i18n/pictures.py, page.py, model.py).") from None
    lang = language(lang)
    if key in PICTURES and lang != DEFAULT_LANGUAGE:
        lang = _picture_language(lang)
    text = entry[LANGUAGES.index(lang)]
    return text.format(**values) if values or "{" in text else text


def _picture_language(lang: str) -> str:
    """The language pictures are drawn in (English without a CJK font). Imported here, not at the top: the fonts
    module needs matplotlib's font list and imports ``language`` from this package."""
    from ..drawing.fonts import picture_language
    return picture_language(lang)


def fields(text: str) -> set[str]:
    """The names of the ``str.format`` fields in a text ("layer {layer}" -> {"layer"})."""
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def translations(keys=None) -> dict[str, dict[str, str]]:
    """``{language: {key: text}}`` for ``gr.I18n(**translations())`` (all keys, or the given ones)."""
    chosen = CATALOGUE if keys is None else {k: CATALOGUE[k] for k in keys}
    return {lang: {k: v[i] for k, v in chosen.items()} for i, lang in enumerate(LANGUAGES)}


__all__ = ["LANGUAGES", "DEFAULT_LANGUAGE", "CATALOGUE", "PICTURES", "PAGE", "MODEL", "CONCEPTS", "language",
           "language_from_header", "t", "fields", "translations"]
