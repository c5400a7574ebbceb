"""Protects the served app from whatever people upload, through the real /analyze API (gradio_client against the
app served on 127.0.0.1 with the AugReg ViT-Ti): every broken file gets a plain message and the same session
goes on working, a decompression bomb is refused without being decoded (the server's memory stays flat), and
odd but valid images reach the model as the right upright, correctly coloured pixels.

vit/image_file.py's own unit tests (test_image_file.py) cover the decoder function by function; these
cover the path an upload really takes: HTTP upload, the app's image component, the handler, the model.
"""
from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError
from PIL import Image
from skimage import data

from vit_explorer import state
from api_client import CAT_CLASSES, analyze, difference_outside_query_frame, model_input, top5
from bench.measure import peak_rss_delta_mb
from vit.image_file import MAX_ASPECT


@pytest.fixture(scope="module")
def client(augreg_url) -> Client:
    """One person's session, used by every test of this module in turn."""
    return Client(augreg_url, verbose=False)


@pytest.fixture(scope="module")
def preprocess(augreg_url, augreg_weights):
    return state.MODELS.get(augreg_weights).loaded.preprocess  # the served model's own preprocessing


@pytest.fixture(scope="module")
def good_photos(tmp_path_factory, cat, camera) -> list[tuple[str, set[str]]]:
    folder = tmp_path_factory.mktemp("good")
    cat.save(folder / "cat.jpg", quality=95)
    camera.save(folder / "camera.png")
    return [(str(folder / "cat.jpg"), CAT_CLASSES), (str(folder / "camera.png"), {"tripod"})]


def _encoded(im: Image.Image, fmt: str, **kw) -> bytes:
    buf = io.BytesIO()
    im.save(buf, fmt, **kw)
    return buf.getvalue()


def _cat_jpeg_cut_in_half() -> bytes:
    payload = _encoded(Image.fromarray(data.chelsea()), "JPEG", quality=90)
    return payload[: len(payload) // 2]


def _cat_png_with_zeroed_header() -> bytes:
    payload = bytearray(_encoded(Image.fromarray(data.chelsea()), "PNG"))
    payload[40:60] = bytes(20)
    return bytes(payload)


BROKEN = [  # (file name, content, words the message must contain)
    ("empty.jpg", lambda: b"", "The file is empty"),
    ("notes.jpg", lambda: b"Shopping list:\n- milk\n- cat food\n", "it looks like a text file"),
    ("cut.jpg", _cat_jpeg_cut_in_half, "damaged or incomplete"),
    ("broken.png", _cat_png_with_zeroed_header, "damaged"),
    ("page.jpg", lambda: b"<!DOCTYPE html><html><body><img src='cat.jpg'></body></html>", "it looks like a HTML page"),
    ("drawing.svg", lambda: b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><circle r="4"/></svg>',
     "it looks like a SVG drawing"),
    ("paper.pdf", lambda: b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n", "it looks like a PDF document"),
    ("cat.tga", lambda: _encoded(Image.fromarray(data.chelsea()), "TGA"), "TGA image (not supported here)"),
]


@pytest.mark.parametrize("index", range(len(BROKEN)), ids=[b[0] for b in BROKEN])
def test_broken_upload_gets_a_clear_message_and_the_next_photo_works(client, tmp_path, good_photos, index):
    name, content, words = BROKEN[index]
    path = tmp_path / name
    path.write_bytes(content())
    with pytest.raises(AppError) as refused:
        analyze(client, path)
    assert words in str(refused.value)
    assert "Please upload" in str(refused.value)  # says what to do next
    photo, expected = good_photos[index % 2]  # alternating photos: every follow-up is a new analysis
    assert top5(analyze(client, photo))[0][0] in expected


def _png_declaring(width: int, height: int) -> bytes:
    """A valid PNG header declaring width×height 8-bit RGB pixels, followed by almost no data."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + chunk(b"IEND", b"")


def _real_bomb() -> bytes:
    """A complete, decodable 9000×9000 PNG of 13 kB: 81 megapixels, 243 MB once decoded to RGB. It is under
    Pillow's own bomb limit (89 MP), so only the app's guard stands between it and the decoder."""
    return _encoded(Image.new("1", (9000, 9000)), "PNG", optimize=True)


@pytest.mark.parametrize("name, content, words", [
    ("huge.png", lambda: _png_declaring(100_000, 100_000), "enormous size and was refused unread"),
    ("bomb.png", _real_bomb, "declares 9000×9000 pixels (81 megapixels), the limit is 50 megapixels. "
                             "It was refused before decoding"),
], ids=["100000x100000-header", "9000x9000-decodable"])
def test_decompression_bomb_is_refused_before_decoding(client, tmp_path, good_photos, name, content, words):
    path = tmp_path / name
    path.write_bytes(content())
    assert path.stat().st_size < 20_000

    def send():
        with pytest.raises(AppError) as refused:
            analyze(client, path)
        return str(refused.value)

    rise_mb, message = peak_rss_delta_mb(send)  # the server runs in this process: its peak RSS is ours
    assert words in message
    assert rise_mb < 40, f"the server's peak RSS rose by {rise_mb:.0f} MB while refusing a bomb (decoding needs 81+ MB)"
    photo, expected = good_photos[0]
    assert top5(analyze(client, photo))[0][0] in expected


# ---- odd but valid images: the model sees the right pixels ----------------------------------------------------

def _rgba_cat_left_transparent() -> tuple[Image.Image, Image.Image]:
    cat = Image.fromarray(data.chelsea())
    alpha = np.full(cat.size[::-1], 255, np.uint8)
    alpha[:, :150] = 0                                # left 150 columns fully transparent
    rgba = cat.convert("RGBA")
    rgba.putalpha(Image.fromarray(alpha))
    on_white = np.asarray(cat).copy()
    on_white[:, :150] = 255
    return rgba, Image.fromarray(on_white)


def _three_stripes(width: int) -> Image.Image:
    """A strip 3 pixels high: a red, a green and a blue row."""
    rows = np.array([[255, 0, 0], [0, 160, 0], [0, 0, 255]], np.uint8)
    return Image.fromarray(np.repeat(rows[:, None], width, axis=1))


def _odd_images():
    """(file name, bytes to upload, the upright RGB picture the model must get, its top class or None)."""
    cat = Image.fromarray(data.chelsea())
    camera = Image.fromarray(data.camera())
    palette_cat = cat.convert("P", palette=Image.Palette.ADAPTIVE, colors=64)
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90° clockwise to view": how phones store portrait shots
    rgba, on_white = _rgba_cat_left_transparent()
    return [
        ("dot.png", _encoded(Image.new("RGB", (1, 1), (200, 30, 60)), "PNG"), Image.new("RGB", (1, 1), (200, 30, 60)), None),
        ("strip.png", _encoded(_three_stripes(2000), "PNG"), _three_stripes(3 * MAX_ASPECT), None),
        ("camera_grey.png", _encoded(camera, "PNG"), camera.convert("RGB"), "tripod"),
        ("camera_16bit.png", _encoded(Image.fromarray(data.camera().astype(np.uint16) * 257), "PNG"),
         camera.convert("RGB"), "tripod"),
        ("cat_cmyk.jpg", _encoded(cat.convert("CMYK"), "JPEG", quality=95), cat, CAT_CLASSES),
        ("cat_rgba.png", _encoded(rgba, "PNG"), on_white, None),
        ("cat_palette.png", _encoded(palette_cat, "PNG"), palette_cat.convert("RGB"), CAT_CLASSES),
        ("cat_then_camera.gif", _encoded(palette_cat, "GIF", save_all=True, duration=100, loop=0,
                                         append_images=[camera.convert("P")]), palette_cat.convert("RGB"), CAT_CLASSES),
        ("cat_sideways.jpg", _encoded(cat.transpose(Image.Transpose.ROTATE_90), "JPEG", quality=95, exif=exif),
         cat, CAT_CLASSES),
    ]


ODD = _odd_images()


@pytest.mark.parametrize("index", range(len(ODD)), ids=[o[0] for o in ODD])
def test_odd_but_valid_image_is_analysed_as_its_upright_picture(client, preprocess, tmp_path, index):
    name, payload, upright, expected_class = ODD[index]
    path = tmp_path / name
    path.write_bytes(payload)
    result = analyze(client, path)
    assert len(top5(result)) == 5 and "197 tokens" in result[1]
    got = model_input(result)
    expected = np.asarray(preprocess.crop_image(upright))
    tolerance = 8 if name.endswith(".jpg") else 5  # the JPEG the app sends, and the JPEG uploaded
    assert difference_outside_query_frame(got, expected) < tolerance, name
    if expected_class is not None:
        top = top5(result)[0][0]
        assert top in (expected_class if isinstance(expected_class, set) else {expected_class}), (name, top5(result))


def test_sideways_photo_is_not_shown_sideways(client, preprocess, tmp_path):
    """The orientation check above can fail: the sideways pixels are far from the upright crop."""
    name, payload, upright, _ = ODD[-1]
    path = tmp_path / name
    path.write_bytes(payload)
    got = model_input(analyze(client, path))
    sideways = np.asarray(preprocess.crop_image(upright.transpose(Image.Transpose.ROTATE_90)))
    assert difference_outside_query_frame(got, sideways) > 25
