"""The Concepts pictures: a latent's map over the photo (its own colour bar, from 0 to its largest activation), its
strongest patches from the training folder as thumbnails (the whole input, the patch framed), a latent's top
patches as one grid, and the rollout before and after a latent is switched off or scaled. Drawn with the explorer's
overlays and colour bars (``viz.drawing.render``); texts in the picture's language (``viz.drawing.fonts``).

For a phone (``narrow``) every picture is at most ``viz.drawing.screens.PHONE_WIDTH`` pixels wide, so that its text
reads as drawn: a smaller map with four smaller thumbnails beside it, four top patches a row, the rollouts one under
the other."""
from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

from ..drawing import render
from ..drawing.fonts import picture_language
from ..i18n import t

FRAME = (0, 255, 0)          # the patch framed on a thumbnail
MAP_SIZE = 224               # longer side of a latent's map in the strongest-concepts picture
THUMB = 108                  # longer side of a thumbnail there (two rows of them beside a map)
GAP = 6
NARROW_MAP, NARROW_THUMB = 144, 64   # for a phone: a map with two rows of two thumbnails beside it
NARROW_PANEL = 270                   # for a phone: the rollouts' panels one under the other
NARROW_COLS, NARROW_CELL = 7, 45     # and a latent's 64 top patches in ten rows of seven: 351 × 664 pixels and the
                                     # title, under the page's 85 % of a phone's screen height


def latent_name(latent: int, label: str | None, lang: str = "en") -> str:
    lang = picture_language(lang)
    if label:
        return t("concepts.picture.latent_label", lang, latent=latent, label=label)
    return t("concepts.picture.latent", lang, latent=latent)


def fit(image: Image.Image, longer: int) -> Image.Image:
    """``image`` resized so that its longer side is ``longer`` pixels (bicubic)."""
    scale = longer / max(image.size)
    size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
    return image if size == image.size else image.resize(size, Image.Resampling.BICUBIC)


def thumbnail(crop: Image.Image, row: int, col: int, grid: tuple[int, int], size: int = THUMB) -> Image.Image:
    """The model's input crop at ``size`` pixels (longer side) with patch (row, col) framed."""
    out = fit(crop.convert("RGB"), size).copy()
    render.frame_patch(out, row, col, grid, out.size, FRAME, max(2, round(size / 50)))
    return out


def map_picture(photo: Image.Image, values: np.ndarray, caption: str, cmap: str = render.DEFAULT_CMAP,
                alpha: float = 0.6, size: int = MAP_SIZE, lang: str = "en") -> Image.Image:
    """A latent's activations (gh, gw) over the photo, from 0 to their largest (0 everywhere: all dark), with a
    colour bar, ``caption`` underneath."""
    lang = picture_language(lang)
    shown = fit(photo.convert("RGB"), size)
    top = float(values.max()) if values.size and values.max() > 0 else 1.0
    picture = render.overlay(shown, values, cmap, alpha, vmin=0.0, vmax=top, colorbar=True,
                             label=t("concepts.picture.colorbar", lang), lang=lang, smooth=False,
                             font_size=max(12, size // 18))
    return render.caption(picture, caption, lang, font_size=max(12, size // 18))


def thumbnails_block(thumbs: list[Image.Image], cols: int, cell: int = THUMB, gap: int = GAP) -> Image.Image:
    """Thumbnails in rows of ``cols``, each centred in a ``cell`` square, white around them."""
    rows = max(1, -(-len(thumbs) // cols))
    block = Image.new("RGB", (cols * cell + (cols - 1) * gap, rows * cell + (rows - 1) * gap), "white")
    for i, thumb in enumerate(thumbs):
        r, c = divmod(i, cols)
        block.paste(thumb, (c * (cell + gap) + (cell - thumb.width) // 2, r * (cell + gap) + (cell - thumb.height) // 2))
    return block


def message_block(text: str, size: tuple[int, int], lang: str = "en") -> Image.Image:
    return render.message_image(text, size, font_size=13, lang=picture_language(lang))


def concept_row(map_image: Image.Image, thumbs: list[Image.Image] | None, per_row: int = 4,
                lang: str = "en", cell: int = THUMB) -> Image.Image:
    """One concept: its map, and beside it its strongest patches (two rows of ``per_row`` in cells of ``cell``
    pixels), or a note when there are none to show (None: no top patches or folder; []: the latent never fired on
    the folder)."""
    height = map_image.height
    width = per_row * cell + (per_row - 1) * GAP
    if thumbs:
        side = thumbnails_block(thumbs[:2 * per_row], per_row, cell)
    else:
        key = "concepts.picture.no_top" if thumbs is None else "concepts.picture.no_fire"
        side = message_block(t(key, picture_language(lang)), (width, 2 * cell + GAP), lang)
    row = Image.new("RGB", (map_image.width + 2 * GAP + side.width, max(height, side.height)), "white")
    row.paste(map_image, (0, 0))
    row.paste(side, (map_image.width + 2 * GAP, 0))
    return row


def titled(body: Image.Image, title: str, lang: str = "en", font_size: int = 15) -> Image.Image:
    """``body`` under ``title``, left aligned and broken into lines as wide as the body."""
    lang = picture_language(lang)
    font = render.font(font_size, lang, title)
    lines = render.wrap_lines(title, font, max(body.width - 12, 4 * font_size))
    step = round(font_size * 1.4)
    top = step * len(lines) + font_size // 2
    out = Image.new("RGB", (body.width, body.height + top), "white")
    out.paste(body.convert("RGB"), (0, top))
    draw = ImageDraw.Draw(out)
    for i, line in enumerate(lines):
        draw.text((6, font_size // 4 + i * step + step // 2), line, fill="black", font=font, anchor="lm")
    return out


def stack(rows: list[Image.Image], title: str, lang: str = "en", gap: int = 2 * GAP) -> tuple[Image.Image, list[int]]:
    """Pictures one under the other, left aligned, ``title`` above them -> (the picture, where each row starts)."""
    width = max(r.width for r in rows)
    body = Image.new("RGB", (width, sum(r.height for r in rows) + gap * (len(rows) - 1)), "white")
    y, tops = 0, []
    for r in rows:
        body.paste(r, (0, y))
        tops.append(y)
        y += r.height + gap
    out = titled(body, title, lang)
    return out, [top + out.height - body.height for top in tops]


def patches_picture(thumbs: list[Image.Image], activations: list[float], title: str, cols: int = 8,
                    cell: int = 96, lang: str = "en") -> Image.Image:
    """A latent's top patches: thumbnails in rows of ``cols``, each with its activation under it, ``title`` above."""
    lang = picture_language(lang)
    if not thumbs:
        return message_block(t("concepts.picture.no_fire", lang), (cols * (cell + GAP), cell), lang)
    font = render.font(12, lang)
    label = 16
    rows = -(-len(thumbs) // cols)
    grid = Image.new("RGB", (cols * cell + (cols - 1) * GAP, rows * (cell + label) + (rows - 1) * GAP), "white")
    draw = ImageDraw.Draw(grid)
    for i, (thumb, value) in enumerate(zip(thumbs, activations)):
        r, c = divmod(i, cols)
        x, y = c * (cell + GAP), r * (cell + label + GAP)
        grid.paste(thumb, (x + (cell - thumb.width) // 2, y + (cell - thumb.height) // 2))
        draw.text((x + cell // 2, y + cell + label // 2), render.tick_text(value), fill="black", font=font,
                  anchor="mm")
    return titled(grid, title, lang, font_size=14)


def comparison_picture(photo: Image.Image, before: np.ndarray, after: np.ndarray, removed: np.ndarray,
                       captions: tuple[str, str, str], cmap: str = render.DEFAULT_CMAP, alpha: float = 0.6,
                       size: int = MAP_SIZE, lang: str = "en", narrow: bool = False) -> Image.Image:
    """The rollout before and after an edit on one colour scale (their common largest value), and the norm of what
    the edit took from (or added to) each patch, side by side (``narrow``: one under the other)."""
    lang = picture_language(lang)
    shown = fit(photo.convert("RGB"), size)
    top = float(max(before.max(), after.max()))
    font_size = max(12, size // 18)
    panels = [render.caption(render.overlay(shown, values, cmap, alpha, vmin=0.0, vmax=top, colorbar=True, lang=lang,
                                            font_size=font_size), caption, lang, font_size=font_size)
              for values, caption in ((before, captions[0]), (after, captions[1]))]
    panels.append(render.caption(render.overlay(shown, removed, cmap, alpha, vmin=0.0, colorbar=True, lang=lang,
                                                smooth=False, font_size=font_size), captions[2], lang,
                                 font_size=font_size))
    if narrow:
        return beside(panels, vertical=True)
    return beside(panels)


def beside(panels: list[Image.Image], vertical: bool = False) -> Image.Image:
    """Pictures side by side, top aligned (``vertical``: one under the other, left aligned), ``2 * GAP`` apart."""
    along = [p.height if vertical else p.width for p in panels]
    across = max(p.width if vertical else p.height for p in panels)
    length = sum(along) + 2 * GAP * (len(panels) - 1)
    out = Image.new("RGB", (across, length) if vertical else (length, across), "white")
    at = 0
    for p, step in zip(panels, along):
        out.paste(p, (0, at) if vertical else (at, 0))
        at += step + 2 * GAP
    return out
