"""Decode an untrusted image file into an upright RGB picture, or refuse it with a message a person understands.

Uploads come from anyone, so decoding is guarded in this order, each step before any pixel is decoded:

1. the file exists, is not empty and is at most ``max_bytes`` long;
2. Pillow identifies it as one of a few photo formats (``FORMATS``); anything else (an HTML page, a PDF,
   a renamed text file, a Photoshop file, …) is named in the message. The allowlist also keeps Pillow
   plugins such as EPS, which shells out to Ghostscript, away from untrusted bytes;
3. the size declared in the header is at most ``max_pixels`` (a decompression bomb declares a huge size
   in a tiny file; it is refused here, before the pixels are decompressed, so memory stays bounded).

Then the first frame is decoded, turned upright (EXIF orientation), and mapped to 8-bit RGB by
``vit.preprocess.to_rgb`` (16-bit greyscale rescaled, transparency flattened onto white). Pictures
thinner than 1:``MAX_ASPECT`` are center-cropped along their long side to that ratio: resizing the
short side to the model's 256 pixels would otherwise blow a 20000×3 strip up to gigabytes, and the
model's center crop never reaches beyond the middle of the long side anyway.
"""
from __future__ import annotations

import os

from PIL import Image, ImageOps, UnidentifiedImageError

from .preprocess import to_rgb
from .video_file import video_given_to_photos, video_kind

FORMATS = ("JPEG", "MPO", "PNG", "GIF", "WEBP", "BMP", "TIFF", "AVIF")  # photo formats Pillow may open here
MAX_BYTES = 50 * 1024 * 1024   # largest upload read, in bytes
MAX_PIXELS = 50_000_000        # largest declared width·height (a 50-megapixel photo); more is refused unread
MAX_ASPECT = 16                # long side : short side kept after decoding
_READABLE = "JPEG, PNG, GIF, WebP, BMP or TIFF"

# First bytes of common files, to say what an unreadable upload is. Supported formats come first: a file
# that starts like a PNG but does not open is a damaged PNG, not "something else".
_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "damaged PNG"),
    (b"\xff\xd8\xff", "damaged JPEG"),
    (b"GIF87a", "damaged GIF"),
    (b"GIF89a", "damaged GIF"),
    (b"BM", "damaged BMP"),
    (b"II*\x00", "damaged TIFF"),
    (b"MM\x00*", "damaged TIFF"),
    (b"%PDF", "PDF document"),
    (b"%!PS", "PostScript/EPS file"),
    (b"8BPS", "Photoshop (PSD) file"),
    (b"\x00\x00\x01\x00", "Windows icon (ICO)"),
    (b"PK\x03\x04", "ZIP archive (or an Office document)"),
    (b"\x1f\x8b", "gzip archive"),
)


_IMAGE_BRANDS = (b"ftypheic", b"ftypheix", b"ftypmif1", b"ftypmsf1", b"ftypavif")   # ISO files that hold photos


class ImageFileError(ValueError):
    """An upload that cannot be analysed; ``str(error)`` is meant to be shown to the person as is."""


def open_image(path: str | os.PathLike | None, *, max_bytes: int = MAX_BYTES,
               max_pixels: int = MAX_PIXELS) -> Image.Image:
    """Decode the image file at ``path`` -> an upright RGB ``PIL.Image`` detached from the file.

    Raises ImageFileError with a plain-words message for a missing, empty, oversized, unreadable,
    damaged or unsupported file, and for one whose declared size exceeds ``max_pixels``.
    """
    if path is None or str(path) == "":
        raise ImageFileError("No image was given. Please upload a photo.")
    if not os.path.isfile(path):
        name = os.path.basename(str(path))
        raise ImageFileError(f"The file {name!r} does not exist (any more). Please upload it again.")
    size = os.path.getsize(path)
    if size == 0:
        raise ImageFileError("The file is empty (0 bytes). Please upload a photo.")
    if size > max_bytes:
        raise ImageFileError(f"The file is too large: {size / 2**20:.1f} MB, the limit is {max_bytes / 2**20:.0f} MB.")
    Image.init()  # registers every plugin once, so the allowlist below can name them
    try:
        with Image.open(path, formats=[f for f in FORMATS if f in Image.OPEN]) as im:
            _check_declared_size(im, max_pixels)
            im.seek(0)  # animations: the first frame
            im.load()
            frame = _to_upright_rgb(im)
    except UnidentifiedImageError:
        raise ImageFileError(_describe_unreadable(path)) from None
    except Image.DecompressionBombError:  # Pillow's own guard, for files past its global limit
        raise ImageFileError(f"The image declares an enormous size and was refused unread "
                             f"(the limit is {max_pixels / 1e6:.0f} megapixels).") from None
    except (OSError, SyntaxError, EOFError, ValueError) as err:  # what Pillow raises on damaged pixel data
        raise ImageFileError(f"The image file is damaged or incomplete and cannot be decoded ({err}). "
                             f"Please upload another copy of the photo.") from None
    return _limit_aspect(frame, MAX_ASPECT)


def _check_declared_size(im: Image.Image, max_pixels: int) -> None:
    """Refuse from the header alone: a decompression bomb is a tiny file that declares a huge size."""
    w, h = im.size
    if w < 1 or h < 1:
        raise ImageFileError(f"The image declares an empty size ({w}×{h} pixels).")
    if w * h > max_pixels:
        raise ImageFileError(f"The image is too large: it declares {w}×{h} pixels ({w * h / 1e6:.0f} megapixels), "
                             f"the limit is {max_pixels / 1e6:.0f} megapixels. It was refused before decoding.")


def _to_upright_rgb(im: Image.Image) -> Image.Image:
    """Any Pillow mode -> 8-bit RGB (``preprocess.to_rgb``), turned upright by its EXIF orientation."""
    return to_rgb(ImageOps.exif_transpose(im))


def _limit_aspect(im: Image.Image, max_aspect: int) -> Image.Image:
    """Center-crop the long side to at most ``max_aspect`` × the short side."""
    w, h = im.size
    if w > max_aspect * h:
        left = (w - max_aspect * h) // 2
        return im.crop((left, 0, left + max_aspect * h, h))
    if h > max_aspect * w:
        top = (h - max_aspect * w) // 2
        return im.crop((0, top, w, top + max_aspect * w))
    return im


def _describe_unreadable(path: str | os.PathLike) -> str:
    """A message naming what the unreadable file looks like, from its first bytes."""
    with open(path, "rb") as f:
        head = f.read(512)
    kind = next((name for magic, name in _SIGNATURES if head.startswith(magic)), None)
    video = video_kind(head)
    if kind is None and video is not None and head[4:12] not in _IMAGE_BRANDS:
        return video_given_to_photos(video)
    text = head.lstrip().lower()
    if kind is None and text.startswith((b"<!doctype html", b"<html", b"<head", b"<body")):
        kind = "HTML page"
    elif kind is None and (text.startswith(b"<svg") or (text.startswith(b"<?xml") and b"<svg" in text)):
        kind = "SVG drawing"
    elif kind is None and text.startswith(b"<?xml"):
        kind = "XML file"
    elif kind is None and head[4:12] in _IMAGE_BRANDS:
        kind = "HEIC photo (not supported here)"
    elif kind is None and _looks_like_text(head):
        kind = "text file"
    if kind is None:
        try:  # a real image in a format outside the allowlist: Pillow can name it from its header
            with Image.open(path) as other:
                kind = f"{other.format} image (not supported here)"
        except (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError):
            kind = None
    if kind is not None and kind.startswith("damaged"):
        return (f"The file looks like a {kind.removeprefix('damaged ')} image but is damaged or incomplete. "
                f"Please upload another copy of the photo.")
    what = f"it looks like a {kind}" if kind else "its content is not an image format this app knows"
    return f"This file cannot be read as a photo: {what}. Please upload a {_READABLE} image."


def _looks_like_text(head: bytes) -> bool:
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return all(c >= 32 or c in b"\t\r\n" for c in head)
