"""The two languages of every text and how a request names them: ``language`` normalises a tag ("zh", "zh_CN",
"zh-Hans" -> "zh-CN"; "en-US" -> "en"), ``language_from_header`` reads an Accept-Language header."""
from __future__ import annotations

LANGUAGES = ("en", "zh-CN")   # the order of the texts in every catalogue entry


DEFAULT_LANGUAGE = "en"


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
