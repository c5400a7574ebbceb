"""Protects upload decoding (vit/image_file.py): every broken file gets a plain message, bombs are refused
unread, and odd but valid images come out as upright 8-bit RGB with the right content."""
from __future__ import annotations

import io
import struct
import tracemalloc
import zlib

import numpy as np
import pytest
from PIL import Image
from skimage import data

from vit.image_file import MAX_ASPECT, ImageFileError, open_image


@pytest.fixture(scope="module")
def cat() -> Image.Image:
    return Image.fromarray(data.chelsea())  # 451×300 RGB photo of a tabby cat


def _write(tmp_path, name: str, payload: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(payload)
    return str(path)


def _encoded(im: Image.Image, fmt: str, **kw) -> bytes:
    buf = io.BytesIO()
    im.save(buf, fmt, **kw)
    return buf.getvalue()


# ---- broken uploads: a clear message each ----------------------------------------------------------------

@pytest.mark.parametrize("name, payload, words", [
    ("empty.jpg", b"", "empty"),
    ("notes.jpg", b"This is my shopping list:\n- milk\n- bread\n", "text file"),
    ("page.png", b"<!DOCTYPE html><html><body>Not an image</body></html>", "HTML page"),
    ("doc.jpg", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n", "PDF document"),
    ("drawing.png", b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"></svg>', "SVG drawing"),
    ("archive.jpg", b"PK\x03\x04" + bytes(100), "ZIP archive"),
    ("noise.bin", bytes(range(256)) * 4, "not an image format"),
])
def test_unreadable_files_are_named(tmp_path, name, payload, words):
    with pytest.raises(ImageFileError, match=words):
        open_image(_write(tmp_path, name, payload))


def test_truncated_jpeg_is_called_damaged(tmp_path, cat):
    payload = _encoded(cat, "JPEG", quality=90)
    with pytest.raises(ImageFileError, match="damaged or incomplete"):
        open_image(_write(tmp_path, "cut.jpg", payload[: len(payload) // 2]))


def test_corrupt_png_is_called_damaged(tmp_path, cat):
    payload = bytearray(_encoded(cat, "PNG"))
    payload[40:60] = bytes(20)  # overwrite part of the IHDR/IDAT header area: CRC and stream break
    with pytest.raises(ImageFileError, match="PNG.*damaged|damaged or incomplete"):
        open_image(_write(tmp_path, "broken.png", bytes(payload)))


def test_unsupported_format_is_named(tmp_path, cat):
    path = _write(tmp_path, "cat.tga", _encoded(cat, "TGA"))
    with pytest.raises(ImageFileError, match="TGA image \\(not supported here\\)"):
        open_image(path)


def test_missing_and_none_paths(tmp_path):
    with pytest.raises(ImageFileError, match="No image"):
        open_image(None)
    with pytest.raises(ImageFileError, match="does not exist"):
        open_image(str(tmp_path / "gone.jpg"))


def test_oversized_file_is_refused_before_reading(tmp_path, cat):
    path = _write(tmp_path, "cat.png", _encoded(cat, "PNG"))
    with pytest.raises(ImageFileError, match="too large"):
        open_image(path, max_bytes=1000)


def test_decompression_bomb_is_refused_before_decoding(tmp_path):
    """A 1-bit 9000×9000 PNG compresses to ~10 kB but would decode to 243 MB in RGB."""
    path = tmp_path / "bomb.png"
    Image.new("1", (9000, 9000)).save(path, optimize=True)
    assert path.stat().st_size < 100_000
    tracemalloc.start()
    with pytest.raises(ImageFileError, match="9000×9000 pixels.*refused before decoding"):
        open_image(str(path))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 20 * 2**20, f"peak Python allocations {peak / 2**20:.1f} MB while refusing a bomb"


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG that declares width×height 8-bit RGB pixels and carries almost none."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00" * 64)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def test_bomb_past_pillows_own_limit_gets_our_message(tmp_path):
    """400 megapixels declared: past Pillow's own hard limit (2 × 89 MP), which raises inside Image.open."""
    path = _write(tmp_path, "huge.png", _png_header_only(20_000, 20_000))
    with pytest.raises(ImageFileError, match="enormous size"):
        open_image(path)


# ---- odd but valid images --------------------------------------------------------------------------------

def _rgb(im: Image.Image) -> np.ndarray:
    assert im.mode == "RGB"
    return np.asarray(im).astype(int)


def test_plain_jpeg_round_trips(tmp_path, cat):
    out = open_image(_write(tmp_path, "cat.jpg", _encoded(cat, "JPEG", quality=95)))
    assert out.size == cat.size
    assert np.abs(_rgb(out) - np.asarray(cat).astype(int)).mean() < 3


def test_one_pixel_image(tmp_path):
    out = open_image(_write(tmp_path, "dot.png", _encoded(Image.new("RGB", (1, 1), (200, 10, 30)), "PNG")))
    assert out.size == (1, 1) and tuple(_rgb(out)[0, 0]) == (200, 10, 30)


def test_thin_strip_is_center_cropped_to_max_aspect(tmp_path):
    strip = np.zeros((3, 2000, 3), np.uint8)
    strip[:, 1000 - 24:1000 + 24] = 255  # a white band in the middle of the strip
    out = open_image(_write(tmp_path, "strip.png", _encoded(Image.fromarray(strip), "PNG")))
    assert out.size == (3 * MAX_ASPECT, 3)
    assert (_rgb(out) == 255).all(), "the crop must keep the middle of the long side"


def test_grayscale_becomes_rgb(tmp_path):
    cam = data.camera()  # 512×512 uint8 greyscale photo
    out = open_image(_write(tmp_path, "camera.png", _encoded(Image.fromarray(cam), "PNG")))
    rgb = _rgb(out)
    assert (rgb[..., 0] == cam).all() and (rgb[..., 1] == cam).all() and (rgb[..., 2] == cam).all()


def test_sixteen_bit_grayscale_is_rescaled_not_clipped(tmp_path):
    cam16 = data.camera().astype(np.uint16) * 257  # same photo on the full 16-bit range
    out = open_image(_write(tmp_path, "camera16.png", _encoded(Image.fromarray(cam16), "PNG")))
    assert np.abs(_rgb(out)[..., 0] - data.camera().astype(int)).max() <= 1


def test_cmyk_jpeg(tmp_path, cat):
    out = open_image(_write(tmp_path, "cmyk.jpg", _encoded(cat.convert("CMYK"), "JPEG", quality=95)))
    assert out.size == cat.size
    assert np.abs(_rgb(out) - np.asarray(cat).astype(int)).mean() < 6


def test_rgba_is_flattened_onto_white(tmp_path, cat):
    rgba = cat.convert("RGBA")
    alpha = np.full(cat.size[::-1], 255, np.uint8)
    alpha[:, :100] = 0  # left strip fully transparent
    rgba.putalpha(Image.fromarray(alpha))
    out = _rgb(open_image(_write(tmp_path, "cat.png", _encoded(rgba, "PNG"))))
    assert (out[:, :100] == 255).all()
    assert (out[:, 100:] == np.asarray(cat)[:, 100:]).all()


def test_palette_image(tmp_path, cat):
    pal = cat.convert("P", palette=Image.Palette.ADAPTIVE, colors=64)
    out = open_image(_write(tmp_path, "cat.gif", _encoded(pal, "GIF")))
    assert (_rgb(out) == np.asarray(pal.convert("RGB"))).all()


def test_animated_gif_gives_first_frame(tmp_path):
    frames = [Image.new("RGB", (32, 32), c) for c in ((255, 0, 0), (0, 0, 255), (0, 255, 0))]
    payload = _encoded(frames[0], "GIF", save_all=True, append_images=frames[1:], duration=100, loop=0)
    out = _rgb(open_image(_write(tmp_path, "anim.gif", payload)))
    assert (out == (255, 0, 0)).all()


def test_exif_rotated_jpeg_is_shown_upright(tmp_path, cat):
    """Stored sideways with orientation 6 ("rotate 90° clockwise to view"): must come back as the upright cat."""
    sideways = cat.transpose(Image.Transpose.ROTATE_90)  # what a phone camera writes
    exif = Image.Exif()
    exif[0x0112] = 6
    out = open_image(_write(tmp_path, "phone.jpg", _encoded(sideways, "JPEG", quality=95, exif=exif)))
    assert out.size == cat.size
    assert np.abs(_rgb(out) - np.asarray(cat).astype(int)).mean() < 3
