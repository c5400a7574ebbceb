"""Learning-rate schedule: linear warmup, then a half cosine down to zero, stepped once per optimizer step.

Stepping per batch (not per epoch) keeps the warmup smooth even when an epoch is only a few steps long.
"""
from __future__ import annotations

import math


class WarmupCosine:
    """Multiplier of the peak learning rate at optimizer step ``step`` (0-based), for ``torch.optim.lr_scheduler.LambdaLR``.

    Steps ``0 … warmup_steps-1`` rise linearly to 1 (the first step already has a non-zero rate, so even a
    one-step run updates the weights); the remaining steps follow ``0.5·(1 + cos(π·t))`` with
    ``t = (step - warmup_steps) / (total_steps - warmup_steps)``, so the rate falls from 1 towards 0 and the last
    step still learns a little. A plain class (not a closure) so that ``LambdaLR.state_dict()`` saves
    its numbers with the scheduler and a resumed run checks it continues the same schedule.
    """

    def __init__(self, total_steps: int, warmup_steps: int):
        if total_steps < 1:
            raise ValueError(f"total_steps must be at least 1 but got {total_steps}!")
        self.total_steps = int(total_steps)
        self.warmup_steps = max(0, min(int(warmup_steps), self.total_steps))

    def __call__(self, step: int) -> float:
        if step < self.warmup_steps:
            return (step + 1) / self.warmup_steps
        decay_steps = self.total_steps - self.warmup_steps
        if decay_steps <= 0:  # all steps are warmup: stay at the peak
            return 1.0
        t = min(1.0, (step - self.warmup_steps) / decay_steps)
        return 0.5 * (1.0 + math.cos(math.pi * t))
