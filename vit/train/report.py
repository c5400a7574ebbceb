"""The training report next to the checkpoint: NAME.metrics.csv (one row per epoch) and NAME.curves.png.

matplotlib is imported only inside ``write_curves`` (vit/ otherwise never imports it), and draws on a
``matplotlib.figure.Figure``, never pyplot, so no global figure state or GUI backend is involved.
"""
from __future__ import annotations

import csv
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


def write_curves(path: Path, history: list[dict], title: str) -> None:
    """Loss and accuracy per epoch (train and validation) as a two-panel PNG; the best epoch is marked."""
    from matplotlib.figure import Figure  # lazy: only the training report needs matplotlib

    epochs = [row["epoch"] for row in history]
    best = best_row(history)
    fig = Figure(figsize=(10, 4), layout="constrained")
    ax_loss, ax_acc = fig.subplots(1, 2)
    for ax, key, label in ((ax_loss, "loss", "cross-entropy loss"), (ax_acc, "acc", "top-1 accuracy")):
        train_label = "train (label-smoothed)" if key == "loss" else "train (augmented)"
        ax.plot(epochs, [row[f"train_{key}"] for row in history], "o-", ms=3, label=train_label)
        ax.plot(epochs, [row[f"val_{key}"] for row in history], "o-", ms=3, label="validation")
        ax.axvline(best["epoch"], color="grey", ls=":", lw=1, label=f"best (epoch {best['epoch']})")
        ax.set_xlabel("epoch")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.legend()
    ax_acc.set_ylim(0, 1.02)
    fig.suptitle(f"{title} · best val accuracy {best['val_acc']:.1%}")
    fig.savefig(path, dpi=100)
