"""The page's two kinds of image component, and the helpers that make its pictures and notes.

Gradio writes a typed copy of this module (``components.pyi``) next to it when the classes are defined, so the
module holds only what needs it and stays small.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import gradio as gr
from gradio import processing_utils
from PIL import Image


class PhotoInput(gr.Image):
    """gr.Image that hands the handler the uploaded file unopened.

    gr.Image opens every upload with Pillow and may convert and re-save it before the handler runs, so a
    broken file or a decompression bomb would fail (or be decoded) there, without a message of ours.
    Decoding is ``vit.image_file.open_image``'s job; this only passes the file's path on.
    """
    is_template = True  # shown by the browser's ordinary Image component

    def preprocess(self, payload):
        if payload is None:
            return None
        if payload.url and payload.url.startswith("data:"):  # pasted images may arrive inline
            return processing_utils.save_base64_to_cache(payload.url, self.GRADIO_CACHE)  # bytes saved, not decoded
        return payload.path


class Picture(gr.Image):
    """Output gr.Image whose saved pictures are never rewritten in place.

    Gradio saves an output picture under a hash of its bytes and rewrites that file (truncate, then write)
    whenever the same picture is produced again: the model-only panels on every analysis, every panel when two
    people analyse the same example photo. Someone downloading it at that moment got a truncated file (seen
    with 16 simultaneous API clients). Here a picture already saved is reused, and a new one appears at once,
    written under a temporary name and renamed.
    """
    is_template = True  # shown by the browser's ordinary Image component

    def postprocess(self, value):
        if isinstance(value, Image.Image):
            value = saved_once(value, self.GRADIO_CACHE, self.format)
        return super().postprocess(value)


def saved_once(image: Image.Image, cache_dir: str, fmt: str) -> str:
    """Path of the picture in Gradio's cache, where Gradio itself would put it; written atomically, once."""
    data = processing_utils.encode_pil_to_bytes(image, fmt)
    folder = Path(cache_dir) / processing_utils.hash_bytes(data)
    path = folder / f"image.{fmt}"
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, suffix=".part", delete=False) as part:
            part.write(data)
        os.replace(part.name, path)
    return str(path)


def picture(i18n: gr.I18n, key: str, height: int | None = None, enlarge: bool = True, **kw) -> Picture:
    """An output image labelled in both languages: JPEG keeps encoding at a few ms (PNG takes tens of ms for a
    heads grid). Maps come at display size (``viz.explorer.DISPLAY_SIZE``) and fill their panel (``enlarge``);
    clickable images keep their natural size at most (Gradio maps a click to image pixels only up to a scale
    of 1)."""
    return Picture(label=i18n(key), interactive=False, format="jpeg", buttons=["download", "fullscreen"],
                   height=height, elem_classes=["picture", "enlarge"] if enlarge else ["picture"], **kw)


def note(elem_id: str | None = None) -> gr.Markdown:
    """A one-line note under a picture (artifacts, crop, selection), written on the server in the visitor's
    language."""
    return gr.Markdown("", elem_id=elem_id, elem_classes=["note"])
