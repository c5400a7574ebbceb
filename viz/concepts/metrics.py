"""metrics.json: how well an SAE explains the tokens of photos it never saw, as the anchors (ViT-Prisma's and saev's
published SAEs) report it. Everything is measured on the held-out photos' tokens (all their views):

- ``fvu``: the fraction of variance unexplained, Σ‖x − x̂‖² / Σ‖x − x̄‖² over the tokens, x̄ their mean (saev's
  normalised MSE; 1 − fvu is Prisma's "explained variance");
- ``l0``: the mean number of latents active per token;
- ``dead_fraction``: the share of latents that fire on none of these tokens;
- ``pca_fvu_at_l0``: the baseline, the FVU of the best linear code of the same size: the tokens projected on the
  first round(l0) principal components of the training tokens (their mean removed, then added back);
- ``spliced``: the model run on each held-out photo with the layer's patch tokens replaced by their reconstruction:
  ``kl``, the mean KL divergence (nats) of its class probabilities from the model's own; ``top1_agreement``, the share
  of photos whose top-1 class stays; ``kl_mean_ablation``, the KL when the patch tokens are replaced by the training
  tokens' mean instead (the scale the first is read against: 1 − kl / kl_mean_ablation is the share of the KL
  recovered, akin to Prisma's "CE recovered"). None for a model without classes.

Sums are float64 and streamed shard by shard; nothing grows with the folder.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader
from tqdm import tqdm

from vit.inside.hooks import continue_edited, hook_tokens

from ..analysis import model_input
from ..folders.files import ImageEntry
from ..folders.loader import collate
from .activations import Activations, PhotoViews
from .sae import SparseAutoencoder

CHUNK = 4096       # tokens encoded at once


@dataclass
class Moments:
    """Streamed sums of tokens (D,) and of their outer products (D, D), float64."""
    count: int = 0
    total: np.ndarray | None = None
    outer: np.ndarray | None = None

    def add(self, x: torch.Tensor) -> None:
        """Tokens (N, D), a chunk at a time (float64 copies of ``CHUNK`` tokens)."""
        if self.total is None:
            self.total, self.outer = np.zeros(x.shape[1]), np.zeros((x.shape[1], x.shape[1]))
        for chunk in x.split(CHUNK):
            chunk = chunk.double()
            self.count += len(chunk)
            self.total += chunk.sum(0).numpy()
            self.outer += (chunk.T @ chunk).numpy()

    @property
    def mean(self) -> np.ndarray:
        return self.total / self.count

    @property
    def covariance(self) -> np.ndarray:
        return self.outer / self.count - np.outer(self.mean, self.mean)


def moments(acts: Activations, which: str = "train") -> Moments:
    m = Moments()
    for part in acts.chunks(which):
        m.add(part["tokens"])
    if m.count == 0:
        raise ValueError(f"No {which.replace('_', '-')} tokens in {acts.folder}.")
    return m


def principal_components(m: Moments) -> tuple[np.ndarray, np.ndarray]:
    """(variances (D,) largest first, components (D, D) as columns) of the tokens the moments describe."""
    values, vectors = np.linalg.eigh(m.covariance)
    order = np.argsort(values)[::-1]
    return values[order], vectors[:, order]


@dataclass
class Reconstruction:
    """Streamed sums over the evaluation tokens: what the reconstruction metrics are made of (float64)."""
    count: int = 0
    error: float = 0.0                       # Σ‖x − x̂‖²
    square: float = 0.0                      # Σ‖x‖²
    total: np.ndarray | None = None          # Σ x
    active: int = 0                          # Σ over tokens of the active latents
    fired: np.ndarray | None = None          # (M,) bool
    centred: float = 0.0                     # Σ‖x − μ_train‖²
    energy: np.ndarray | None = None         # (D,) Σ ((x − μ_train)·v_j)² per training component v_j

    def fvu(self) -> float:
        mean = self.total / self.count
        return self.error / (self.square - self.count * float(mean @ mean))

    def pca_fvu(self, components: int) -> float:
        mean = self.total / self.count
        return (self.centred - float(self.energy[:components].sum())) / (self.square - self.count * float(mean @ mean))


def reconstruction(sae: SparseAutoencoder, acts: Activations, train: Moments, which: str = "held_out"
                   ) -> Reconstruction:
    """The sums of ``Reconstruction`` over ``which`` tokens of the cache (in float32 through the SAE)."""
    _, components = principal_components(train)
    components, mean = torch.from_numpy(components), torch.from_numpy(train.mean)
    r = Reconstruction(fired=np.zeros(sae.latents, dtype=bool), total=np.zeros(acts.d_model),
                       energy=np.zeros(acts.d_model))
    device = sae.W_enc.device
    for part in acts.chunks(which):
        for x in part["tokens"].split(CHUNK):
            on = x.to(device)
            codes = sae.encode(on)
            x_hat = sae.decode(codes, on).cpu()
            codes = codes.cpu()
            x64 = x.double()
            r.count += len(x)
            r.error += float(((x64 - x_hat.double()) ** 2).sum())
            r.square += float((x64 ** 2).sum())
            r.total += x64.sum(0).numpy()
            r.active += int((codes != 0).sum())
            r.fired |= (codes != 0).any(0).numpy()
            y = x64 - mean
            r.centred += float((y ** 2).sum())
            r.energy += ((y @ components) ** 2).sum(0).numpy()
    if r.count == 0:
        raise ValueError(f"No {which.replace('_', '-')} tokens in {acts.folder}.")
    return r


@dataclass
class Spliced:
    kl: float | None
    top1_agreement: float | None
    kl_mean_ablation: float | None
    photos: int = 0
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"kl": self.kl, "top1_agreement": self.top1_agreement, "kl_mean_ablation": self.kl_mean_ablation}


def kl_divergence(logits: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    """KL(softmax(logits) ‖ softmax(other)) per row (B,), float64, in nats."""
    p, q = torch.log_softmax(logits.double(), -1), torch.log_softmax(other.double(), -1)
    return (p.exp() * (p - q)).sum(-1)


def patch_edit(num_prefix: int, replace) -> callable:
    """A token edit (B, T, D) -> (B, T, D) that replaces the patch tokens by ``replace(patches (B·N, D))``."""
    def edit(tokens: torch.Tensor) -> torch.Tensor:
        B, T, D = tokens.shape
        patches = replace(tokens[:, num_prefix:].reshape(-1, D)).reshape(B, T - num_prefix, D)
        return torch.cat([tokens[:, :num_prefix], patches.to(tokens.dtype)], dim=1)
    return edit


def spliced(sae: SparseAutoencoder, loaded, acts: Activations, folder: Path, mean: np.ndarray, batch_size: int = 16,
            workers: int = 0, progress: bool = False) -> Spliced:
    """The model on the held-out photos (view 0) with the SAE spliced in at its layer and hook point, and with the
    patch tokens mean-ablated there: the mean KL from the model's own probabilities and the top-1 agreement."""
    if not loaded.labels:
        return Spliced(None, None, None, notes=["the model has no classes: no probabilities to compare"])
    model, device = loaded.model, next(loaded.model.parameters()).device
    layer, hook, prefix = acts.info["layer"], acts.info["hook"], acts.info["num_prefix_tokens"]
    photos = [i for i in np.flatnonzero(acts.held_out) if i not in acts.failed]
    entries = [ImageEntry(Path(folder) / acts.photos[i], acts.photos[i]) for i in photos]
    loader = DataLoader(PhotoViews(entries, loaded.preprocess, 0, 0), batch_size=batch_size, num_workers=workers,
                        collate_fn=collate)
    sae = copy.deepcopy(sae).to(device)          # the caller's stays where it is
    mean_tokens = torch.from_numpy(mean).float().to(device)
    reconstructed = patch_edit(prefix, sae.reconstruct)
    ablated = patch_edit(prefix, lambda patches: mean_tokens.expand_as(patches))
    kl = kl_mean = agree = 0.0
    count = 0
    for batch in tqdm(loader, desc="spliced model", unit="batch", dynamic_ncols=True, disable=not progress):
        if not batch.indices:
            continue
        x = model_input(batch.pixels[:, 0], loaded.preprocess, device)
        read = hook_tokens(model, x, layer, hook)
        run = lambda edit: continue_edited(model, read.stream, layer, hook, edit, read.positions)   # noqa: E731
        own, spliced_out, mean_out = run(lambda t: t), run(reconstructed), run(ablated)
        kl += float(kl_divergence(own, spliced_out).sum())
        kl_mean += float(kl_divergence(own, mean_out).sum())
        agree += float((own.argmax(-1) == spliced_out.argmax(-1)).sum())
        count += len(x)
    if count == 0:
        return Spliced(None, None, None, notes=["no held-out photo could be read"])
    return Spliced(kl / count, agree / count, kl_mean / count, count)


def evaluate(sae: SparseAutoencoder, loaded, acts: Activations, folder: Path, train: Moments | None = None,
             batch_size: int = 16, workers: int = 0, progress: bool = False) -> dict:
    """metrics.json's contents (see the module docstring)."""
    train = train or moments(acts, "train")
    r = reconstruction(sae, acts, train)
    l0 = r.active / r.count
    components = int(min(max(round(l0), 1), acts.d_model))
    s = spliced(sae, loaded, acts, folder, train.mean, batch_size, workers, progress)
    return {"fvu": r.fvu(), "l0": l0, "dead_fraction": float(1.0 - r.fired.mean()),
            "pca_fvu_at_l0": r.pca_fvu(components), "spliced": s.to_dict(), "pca_components": components,
            "held_out": {"photos": s.photos or int(acts.held_out.sum()), "tokens": r.count}, "notes": s.notes}
