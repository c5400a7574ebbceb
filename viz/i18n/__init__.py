"""Every text of the explorer in English and Simplified Chinese, in one catalogue: the texts several tabs share here
(``pictures``: axis labels, legends, colour-bar labels, captions, notes drawn into images; ``page``: the title, the
controls every map tab shows, messages, what the loader assumed), and each tab's own texts beside its view, in its
slice (``viz.<tab>.texts``), which adds them with ``register`` (``viz`` imports every slice's texts, so the
catalogue is whole once ``viz`` is imported). Each entry is a key with its English and Chinese text; texts may hold
``str.format`` fields (``{layer}``), filled by ``t``.

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

from .languages import DEFAULT_LANGUAGE, LANGUAGES, language, language_from_header
from .page import PAGE
from .pictures import PICTURES

CATALOGUE: dict[str, tuple[str, str]] = {**PICTURES, **PAGE}
if len(CATALOGUE) != len(PICTURES) + len(PAGE):  # a key in two parts would silently shadow one of them
    raise RuntimeError(f"Keys in two parts of viz.i18n: {sorted(set(PICTURES) & set(PAGE))}")
PICTURE_KEYS: set[str] = set(PICTURES)     # the texts drawn into pictures: English where Chinese cannot be drawn


def register(page: dict[str, tuple[str, str]], pictures: dict[str, tuple[str, str]]) -> None:
    """A tab's texts (key -> (English, Chinese)) added to the catalogue: those of the page, and those drawn into its
    pictures (which ``t`` gives in English where no CJK font can draw them). RuntimeError for a key that is already
    there (it would silently shadow another's)."""
    twice = (set(page) | set(pictures)) & set(CATALOGUE) | set(page) & set(pictures)
    if twice:
        raise RuntimeError(f"Keys in two parts of viz.i18n: {sorted(twice)}")
    CATALOGUE.update(page)
    CATALOGUE.update(pictures)
    PICTURE_KEYS.update(pictures)


def t(key: str, lang: str | None = DEFAULT_LANGUAGE, **values) -> str:
    """The text of ``key`` in ``lang``, with its fields filled from ``values``.

    KeyError names the key (a typo must not draw an empty label); a missing field raises KeyError too."""
    try:
        entry = CATALOGUE[key]
    except KeyError:
        raise KeyError(f"No text {key!r} in the catalogue (viz/i18n/pictures.py, page.py, viz/<tab>/texts.py).") from None
    lang = language(lang)
    if key in PICTURE_KEYS and lang != DEFAULT_LANGUAGE:
        lang = _picture_language(lang)
    text = entry[LANGUAGES.index(lang)]
    return text.format(**values) if values or "{" in text else text


def _picture_language(lang: str) -> str:
    """The language pictures are drawn in (English without a CJK font). Imported here, not at the top: the fonts
    module loads matplotlib's font manager, which only pictures need."""
    from .fonts import picture_language
    return picture_language(lang)


def fields(text: str) -> set[str]:
    """The names of the ``str.format`` fields in a text ("layer {layer}" -> {"layer"})."""
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def translations(keys=None) -> dict[str, dict[str, str]]:
    """``{language: {key: text}}`` for ``gr.I18n(**translations())`` (all keys, or the given ones)."""
    chosen = CATALOGUE if keys is None else {k: CATALOGUE[k] for k in keys}
    return {lang: {k: v[i] for k, v in chosen.items()} for i, lang in enumerate(LANGUAGES)}


__all__ = ["LANGUAGES", "DEFAULT_LANGUAGE", "CATALOGUE", "PICTURES", "PAGE", "language", "register",
           "language_from_header", "t", "fields", "translations"]
