"""One epoch of training and one pass of validation, each with a progress bar."""
from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm.auto import tqdm


@dataclass
class Precision:
    """Mixed precision on CUDA (bfloat16 where supported, else float16 with loss scaling), plain float32 on CPU."""
    device: torch.device
    dtype: torch.dtype | None = None               # None: float32, no autocast
    scaler: torch.amp.GradScaler | None = None     # only for float16

    @classmethod
    def for_device(cls, device: torch.device) -> "Precision":
        if device.type != "cuda":
            return cls(device)
        if torch.cuda.is_bf16_supported():
            return cls(device, torch.bfloat16)
        return cls(device, torch.float16, torch.amp.GradScaler("cuda"))

    def autocast(self):
        if self.dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.dtype)

    @property
    def name(self) -> str:
        return "float32" if self.dtype is None else f"mixed {str(self.dtype).removeprefix('torch.')}"


class RunningMeans:
    """Sample-weighted running loss and accuracy over the batches seen so far."""

    def __init__(self):
        self.loss_sum, self.correct, self.count = 0.0, 0, 0

    def update(self, loss: torch.Tensor, logits: torch.Tensor, labels: torch.Tensor) -> None:
        n = labels.shape[0]
        self.loss_sum += loss.item() * n
        self.correct += (logits.argmax(dim=-1) == labels).sum().item()
        self.count += n

    @property
    def loss(self) -> float:
        return self.loss_sum / max(self.count, 1)

    @property
    def acc(self) -> float:
        return self.correct / max(self.count, 1)


def train_one_epoch(model: nn.Module, loader, optimizer: torch.optim.Optimizer,
                    scheduler: torch.optim.lr_scheduler.LRScheduler, precision: Precision, label_smoothing: float,
                    desc: str) -> dict[str, float]:
    """Train over ``loader`` once, stepping the schedule every batch. Returns mean loss/accuracy and the last lr."""
    model.train()
    meters = RunningMeans()
    bar = tqdm(loader, desc=desc, unit="batch", dynamic_ncols=True)
    for images, labels in bar:
        images = images.to(precision.device, non_blocking=True)
        labels = labels.to(precision.device, non_blocking=True)
        with precision.autocast():
            logits = model(images)                              # (B, K)
        loss = F.cross_entropy(logits.float(), labels, label_smoothing=label_smoothing)
        optimizer.zero_grad(set_to_none=True)
        if precision.scaler is not None:
            precision.scaler.scale(loss).backward()
            precision.scaler.step(optimizer)
            precision.scaler.update()
        else:
            loss.backward()
            optimizer.step()
        lr = optimizer.param_groups[0]["lr"]  # the rate this step used
        scheduler.step()
        meters.update(loss.detach(), logits.detach(), labels)
        bar.set_postfix(loss=f"{meters.loss:.4f}", acc=f"{meters.acc:.3f}", lr=f"{lr:.2e}")
    bar.close()
    return {"train_loss": meters.loss, "train_acc": meters.acc, "lr": lr}


@torch.inference_mode()
def evaluate(model: nn.Module, loader, precision: Precision, desc: str) -> dict[str, float]:
    """Mean cross-entropy (without label smoothing) and top-1 accuracy over ``loader``."""
    model.eval()
    meters = RunningMeans()
    bar = tqdm(loader, desc=desc, unit="batch", dynamic_ncols=True, leave=False)
    for images, labels in bar:
        images = images.to(precision.device, non_blocking=True)
        labels = labels.to(precision.device, non_blocking=True)
        with precision.autocast():
            logits = model(images)
        meters.update(F.cross_entropy(logits.float(), labels), logits, labels)
        bar.set_postfix(loss=f"{meters.loss:.4f}", acc=f"{meters.acc:.3f}")
    bar.close()
    return {"val_loss": meters.loss, "val_acc": meters.acc}
