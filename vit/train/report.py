"""The training report next to the checkpoint: NAME.metrics.csv (one row per epoch) and NAME.curves.png.

The curves are drawn with Pillow: ``vit/`` never imports matplotlib (nor ``viz``), so training runs with the
model library alone.
"""
from __future__ import annotations

import csv
import math
from pathlib import Path

COLUMNS = ("epoch", "lr", "train_loss", "train_acc", "val_loss", "val_acc", "seconds", "best")


def best_row(history: list[dict]) -> dict:
    """The best epoch: highest validation accuracy, ties broken by lower validation loss, then by the earlier epoch."""
    return max(history, key=lambda row: (row["val_acc"], -row["val_loss"], -row["epoch"]))


def write_metrics(path: Path, history: list[dict]) -> None:
    """Write every epoch so far (rewritten whole, so a resumed run has one row per epoch, in order)."""
    best = best_row(history)["epoch"] if history else None
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        for row in history:
            writer.writerow({**{k: _fmt(row[k]) for k in COLUMNS if k != "best"}, "best": int(row["epoch"] == best)})


def _fmt(value) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


TRAIN, VALIDATION, BEST = (31, 119, 180), (255, 127, 14), (128, 128, 128)   # line colours (RGB)
SIZE, MARGIN = (1000, 400), (72, 48, 24, 46)   # the picture; each panel's margins: left, top, right, bottom


def write_curves(path: Path, history: list[dict], title: str) -> None:
    """Loss and accuracy per epoch (train and validation) as a two-panel PNG; the best epoch is marked.

    Drawn with Pillow (``vit/`` never imports matplotlib): two panels side by side, each with its axes, ticks,
    grid, the two curves with a dot per epoch, the best epoch as a dotted line, and a legend."""
    from PIL import Image, ImageDraw

    best = best_row(history)
    image = Image.new("RGB", SIZE, "white")
    draw = ImageDraw.Draw(image)
    draw.text((SIZE[0] / 2, 8), f"{title} · best val accuracy {best['val_acc']:.1%}", fill="black",
              font=_font(15), anchor="ma")
    half = SIZE[0] // 2
    for left, key, label, limits in ((0, "loss", "cross-entropy loss", None), (half, "acc", "top-1 accuracy", (0, 1.02))):
        train_label = "train (label-smoothed)" if key == "loss" else "train (augmented)"
        _panel(image, (left, 0, left + half, SIZE[1]), history, key, label, limits,
               [(train_label, TRAIN), ("validation", VALIDATION), (f"best (epoch {best['epoch']})", BEST)],
               best["epoch"], legend_at_top=key == "loss")   # loss falls and accuracy rises: the legend where they are not
    image.save(path)


def _font(size: int):
    from PIL import ImageFont
    return ImageFont.load_default(size=size)


def _ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About ``count`` round values between lo and hi (1, 2 or 5 times a power of ten apart)."""
    raw = (hi - lo) / count or 1.0
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]


def _panel(image, box: tuple[int, int, int, int], history: list[dict], key: str, label: str,
           limits: tuple[float, float] | None, legend: list[tuple[str, tuple]], best_epoch: int,
           legend_at_top: bool = True) -> None:
    """One panel of ``write_curves`` inside ``box`` (left, top, right, bottom) of the picture."""
    from PIL import Image, ImageDraw

    draw, small = ImageDraw.Draw(image), _font(12)
    x0, y0 = box[0] + MARGIN[0], box[1] + MARGIN[1]
    x1, y1 = box[2] - MARGIN[2], box[3] - MARGIN[3]
    epochs = [row["epoch"] for row in history]
    curves = {"train": [row[f"train_{key}"] for row in history], "val": [row[f"val_{key}"] for row in history]}
    e_lo, e_hi = min(epochs), max(epochs) if max(epochs) > min(epochs) else min(epochs) + 1
    if limits is None:
        values = curves["train"] + curves["val"]
        pad = 0.05 * ((max(values) - min(values)) or abs(max(values)) or 1.0)
        limits = (min(values) - pad, max(values) + pad)

    def at(epoch: float, value: float) -> tuple[float, float]:
        return (x0 + (epoch - e_lo) / (e_hi - e_lo) * (x1 - x0),
                y1 - (value - limits[0]) / (limits[1] - limits[0]) * (y1 - y0))

    for value in _ticks(*limits):                                          # y grid and tick labels
        y = at(e_lo, value)[1]
        draw.line((x0, y, x1, y), fill=(230, 230, 230))
        draw.text((x0 - 6, y), f"{value:g}", fill="black", font=small, anchor="rm")
    for epoch in _ticks(e_lo, e_hi, 8):
        if float(epoch).is_integer():
            x = at(epoch, limits[0])[0]
            draw.line((x, y0, x, y1), fill=(230, 230, 230))
            draw.text((x, y1 + 6), f"{int(epoch)}", fill="black", font=small, anchor="ma")
    x = at(best_epoch, limits[0])[0]
    for y in range(int(y0), int(y1), 6):                                   # the best epoch, dotted
        draw.line((x, y, x, min(y + 2, y1)), fill=BEST)
    for name, colour in (("train", TRAIN), ("val", VALIDATION)):
        points = [at(e, v) for e, v in zip(epochs, curves[name])]
        if len(points) > 1:
            draw.line(points, fill=colour, width=2)
        for px, py in points:
            draw.ellipse((px - 3, py - 3, px + 3, py + 3), fill=colour)
    draw.rectangle((x0, y0, x1, y1), outline="black")
    draw.text(((x0 + x1) / 2, y1 + 24), "epoch", fill="black", font=_font(13), anchor="ma")
    text = Image.new("RGB", (int(y1 - y0), 18), "white")                   # the y label, turned upright
    ImageDraw.Draw(text).text((text.width / 2, 0), label, fill="black", font=_font(13), anchor="ma")
    image.paste(text.rotate(90, expand=True), (box[0] + 6, int(y0)))
    top = y0 + 8 if legend_at_top else y1 - 8 - 18 * len(legend) - 6          # the legend, on the right
    draw.rectangle((x1 - 200, top, x1 - 8, top + 18 * len(legend) + 6), fill="white", outline=(200, 200, 200))
    for i, (name, colour) in enumerate(legend):
        ly = top + 4 + 18 * i
        draw.line((x1 - 192, ly + 7, x1 - 168, ly + 7), fill=colour, width=2)
        draw.text((x1 - 162, ly), name, fill="black", font=small)
