"""What identifies a run over a folder, for resuming it: the listed photos and the model's weights, each as a hash."""
from __future__ import annotations

import hashlib
from typing import Sequence

import torch

from .files import ImageEntry


def images_digest(entries: Sequence[ImageEntry]) -> str:
    """The SHA-256 of the listing: every photo's path, name and label, in order."""
    listing = "\n".join(f"{e.path}\t{e.name}\t{e.label}" for e in entries)
    return hashlib.sha256(listing.encode()).hexdigest()


def weights_digest(model: torch.nn.Module) -> str:
    """The SHA-256 of the model's first two and last two tensors (the embeddings and the head: where a changed
    checkpoint file shows), as float32."""
    tensors = hashlib.sha256()
    state_dict = list(model.state_dict().values())
    for tensor in state_dict[:2] + state_dict[-2:]:
        tensors.update(tensor.detach().float().cpu().numpy().tobytes())
    return tensors.hexdigest()
