"""The page's texts: every static text through ``gr.I18n`` (the browser translates labels, help and Markdown),
texts made on the server through ``viz.i18n.t`` in the visitor's language (held in the ``lang`` state), and the
line that tells a Chinese visitor when the machine has no font for Chinese pictures. The catalogue itself, in
English and Simplified Chinese, is ``viz.i18n`` (``viz/i18n/page.py`` holds the page's part)."""
from __future__ import annotations

import gradio as gr

from viz.i18n.fonts import CJK_FAMILIES, picture_language
from viz.i18n import language, t, translations

I18N = gr.I18n(**translations())
FONT_COMMAND = "sudo apt-get install fonts-noto-cjk"


def font_note(lang: str) -> str:
    """"" unless the page is in Chinese on a machine without a CJK font: then which font to install."""
    if picture_language(lang) == language(lang):
        return ""
    return t("message.no_cjk_font", lang, font=CJK_FAMILIES[0], command=FONT_COMMAND)
