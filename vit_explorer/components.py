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
from gradio.utils import get_upload_folder
from PIL import Image

from . import door


class PhotoInput(gr.Image):
    """gr.Image that hands the handler an uploaded file, unopened: every photo input of the page and the API.

    Only a file inside Gradio's upload folder gets through (``door.uploaded_photo``: a server path or a URL is
    refused before it is opened or fetched, with one message whatever it names), and an inline photo only when it
    is within the upload limit (``door.inline_photo``). gr.Image would open every upload with Pillow and might
    convert and re-save it before the handler runs, so a broken file or a decompression bomb would fail (or be
    decoded) there, without a message of ours. Decoding is ``vit.image_file.open_image``'s job.
    """
    is_template = True  # shown by the browser's ordinary Image component

    def preprocess(self, payload):
        if payload is None:
            return None
        if payload.url and payload.url.startswith("data:"):  # pasted images may arrive inline
            path = door.inline_photo(payload.url, self.GRADIO_CACHE)   # bytes saved, not decoded
            self.temp_files.add(path)                                   # deleted with the cache (delete_cache)
            return path
        return door.uploaded_photo(payload.path)

    async def async_move_resource_to_block_cache(self, url_or_file_path):
        """Gradio fetches a marked file payload that names a URL before the component sees it: not for a photo."""
        if url_or_file_path is not None and str(url_or_file_path).startswith(("http://", "https://")):
            raise door.Refusal("message.photo_not_uploaded")
        return await super().async_move_resource_to_block_cache(url_or_file_path)


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
    return cached_file(data, f"image.{fmt}", cache_dir)


def cached_file(data: bytes, name: str, cache_dir: str | None = None) -> str:
    """Path of ``data`` as ``name`` in Gradio's cache (``cache_dir``, default the upload folder), in a folder named
    by the bytes' hash; written atomically, once. A file the server makes for a visitor lives there: Gradio serves
    it, and deletes it with the cache (the app's ``delete_cache``) once a component has sent it."""
    folder = Path(cache_dir or get_upload_folder()) / processing_utils.hash_bytes(data)
    path = folder / name
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, suffix=".part", delete=False) as part:
            part.write(data)
        os.replace(part.name, path)
    return str(path)


def picture(i18n: gr.I18n, key: str, height: int | None = None, enlarge: bool = True, **kw) -> Picture:
    """An output image labelled in both languages: JPEG keeps encoding at a few ms (PNG takes tens of ms for a
    heads grid). Maps come at display size (``DISPLAY_SIZE``) and fill their panel (``enlarge``);
    clickable images keep their natural size at most (Gradio maps a click to image pixels only up to a scale
    of 1)."""
    return Picture(label=i18n(key), interactive=False, format="jpeg", buttons=["download", "fullscreen"],
                   height=height, elem_classes=["picture", "enlarge"] if enlarge else ["picture"], **kw)


def note(elem_id: str | None = None) -> gr.Markdown:
    """A one-line note under a picture (artifacts, crop, selection), written on the server in the visitor's
    language."""
    return gr.Markdown("", elem_id=elem_id, elem_classes=["note"])
