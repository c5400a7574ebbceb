"""Training a sparse autoencoder on cached patch tokens with overcomplete (Fel et al.'s dictionary-learning toolbox
for vision models), its own model and its own training loop: ``overcomplete.sae.TopKSAE`` or ``BatchTopKSAE`` (a
linear encoder, ReLU, the top k; a dictionary of unit-norm atoms), ``overcomplete.sae.train_sae`` (Adam, gradient
clipping, its cosine schedule) and its loss for dead latents, ``top_k_auxiliary_loss`` (Gao et al. 2024's AuxK: the
latents that did not fire predict what the chosen ones left, so a dead latent gets a gradient again).

What is added around it: the tokens streamed from the shards (``TokenBatches``: the shards in a new random order each
epoch, the tokens of each shuffled, one shard in memory), the input normalisation (centred on the training tokens'
mean, scaled so that their mean squared norm is D: the library's SAE has no decoder bias and its thresholds assume
standardised inputs), a progress bar, and the trained model turned into ``viz.concepts.sae.SparseAutoencoder``, which
needs nothing but torch to run.

overcomplete is an optional package (``pip install 'vit-attention-explorer[concepts]'``); browsing trained SAEs does
not need it. Its 0.3.0 release reads ``matplotlib.cm.get_cmap`` when imported, which matplotlib 3.9 removed;
``overcomplete_sae`` puts back matplotlib's documented replacement (``matplotlib.colormaps.get_cmap``) under that name
first.
"""
from __future__ import annotations

import contextlib
import io
import math
import sys
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import torch
from tqdm import tqdm

from .activations import Activations
from .metrics import Moments, moments
from .sae import SaeInfo, SparseAutoencoder

TRAINED_KINDS = ("topk", "batchtopk")
EXTRA = ("training an SAE needs the optional package overcomplete: pip install 'vit-attention-explorer[concepts]' "
         "(or pip install overcomplete; it supports Python 3.8 to 3.12)")


def overcomplete_sae():
    """The ``overcomplete.sae`` module; ValueError with how to install it when it is missing."""
    import matplotlib
    import matplotlib.cm

    if not hasattr(matplotlib.cm, "get_cmap"):      # removed in matplotlib 3.9; overcomplete 0.3.0 calls it on import
        matplotlib.cm.get_cmap = matplotlib.colormaps.get_cmap
    try:
        import overcomplete.sae
    except ImportError:
        raise ValueError(EXTRA) from None
    return overcomplete.sae


@dataclass(frozen=True)
class TrainOptions:
    latents: int                        # M, the dictionary's size
    k: int                              # active latents per token (on average over a batch for batchtopk)
    kind: str = "topk"                  # TRAINED_KINDS
    epochs: int = 10
    batch_size: int = 1024              # tokens per step
    lr: float = 1e-3                    # Adam's peak learning rate
    warmup: float = 0.05                # share of the steps warming the rate up (then cosine down to a tenth)
    aux_penalty: float = 0.1            # weight of the AuxK loss for dead latents (overcomplete's default)
    seed: int = 0
    device: torch.device = torch.device("cpu")
    progress: bool = True


@dataclass
class InputStatistics:
    """The training tokens' mean (D,) and mean squared distance from it (float64)."""
    mean: np.ndarray
    mean_square: float
    count: int

    @property
    def scale(self) -> float:
        """The factor that gives the centred tokens a mean squared norm of D."""
        return math.sqrt(len(self.mean) / max(self.mean_square, 1e-30))


def input_statistics(train: Moments) -> InputStatistics:
    """The normalisation's statistics from the training tokens' moments (``viz.concepts.metrics.moments``)."""
    return InputStatistics(train.mean, float(np.trace(train.covariance)), train.count)


class TokenBatches:
    """One epoch per iteration: batches (batch_size, D) of normalised training tokens, the shards in a random order
    and each shard's tokens shuffled (seeded by the epoch), the last incomplete batch of the epoch left out."""

    def __init__(self, acts: Activations, stats: InputStatistics, batch_size: int, seed: int, progress: bool,
                 pin: bool = False):
        self.acts, self.stats, self.batch_size, self.seed, self.progress, self.pin = (acts, stats, batch_size, seed,
                                                                                      progress, pin)
        self.epoch = 0
        self.mean = torch.from_numpy(stats.mean).float()
        self.steps = stats.count // batch_size          # per epoch (a batch may take tokens from two shards)

    def __len__(self) -> int:
        return self.steps

    def __iter__(self) -> Iterator[torch.Tensor]:
        rng = np.random.default_rng([self.seed, self.epoch])
        self.epoch += 1
        bar = tqdm(total=self.steps, desc=f"epoch {self.epoch}", unit="step", dynamic_ncols=True, leave=False,
                   disable=not self.progress)
        carry = torch.empty(0, self.acts.d_model)
        for s in rng.permutation(len(self.acts.shards)):
            part = next(_train_tokens(self.acts, int(s)), None)
            if part is None:
                continue
            x = (part[torch.from_numpy(rng.permutation(len(part)))] - self.mean) * self.stats.scale
            x = torch.cat([carry, x]) if len(carry) else x
            whole = len(x) // self.batch_size * self.batch_size
            for i in range(0, whole, self.batch_size):
                batch = x[i:i + self.batch_size]
                yield batch.pin_memory() if self.pin else batch
                bar.update()
            carry = x[whole:]
        bar.close()


def _train_tokens(acts: Activations, shard: int) -> Iterator[torch.Tensor]:
    """The training tokens of one shard (none when every photo in it is held out)."""
    part = acts.read(shard)
    keep = ~torch.from_numpy(acts.held_out)[part["photo"].long()]
    if keep.any():
        yield part["tokens"][keep]


def build(options: TrainOptions, d_model: int, batch: int):
    """overcomplete's model for ``options`` (seeded), with the top k over one token (topk) or over a batch (batchtopk:
    k per token on average)."""
    sae = overcomplete_sae()
    if options.kind not in TRAINED_KINDS:
        raise ValueError(f"Unknown kind {options.kind!r}! Expected one of {', '.join(TRAINED_KINDS)}.")
    if not 0 < options.k <= options.latents:
        raise ValueError(f"--k must be between 1 and --latents ({options.latents}) but got {options.k}.")
    torch.manual_seed(options.seed)
    if options.kind == "topk":
        return sae.TopKSAE(d_model, options.latents, top_k=options.k, device=options.device)
    return sae.BatchTopKSAE(d_model, options.latents, top_k=options.k * batch, device=options.device)


@dataclass
class Trained:
    sae: SparseAutoencoder               # the plain-torch form, normalisation included
    logs: dict[str, list[float]]         # overcomplete's per epoch: avg_loss, r2, z_sparsity, dead_features, time_epoch
    model: object                        # overcomplete's own model, in eval mode (it reads normalised tokens)
    stats: InputStatistics


def train(acts: Activations, options: TrainOptions, info: SaeInfo | None = None,
          stats: InputStatistics | None = None) -> Trained:
    """Train an SAE on the cached training tokens with overcomplete's model, loss and loop."""
    sae = overcomplete_sae()
    from overcomplete.sae.losses import top_k_auxiliary_loss

    stats = stats or input_statistics(moments(acts, "train"))
    batch = min(options.batch_size, stats.count)
    data = TokenBatches(acts, stats, batch, options.seed, options.progress, pin=options.device.type == "cuda")
    model = build(options, acts.d_model, batch)
    optimizer = torch.optim.Adam(model.parameters(), lr=options.lr)
    total = max(1, options.epochs * len(data))
    scheduler = sae.CosineScheduler(optimizer, options.lr, options.lr / 10, total, int(options.warmup * total))

    def criterion(x, x_hat, pre_codes, codes, dictionary):
        return top_k_auxiliary_loss(x, x_hat, pre_codes, codes, dictionary, penalty=options.aux_penalty)

    with contextlib.redirect_stdout(sys.stderr if options.progress else io.StringIO()):   # its line per epoch
        logs = sae.train_sae(model, data, criterion, optimizer, scheduler, nb_epochs=options.epochs,
                             device=options.device)
    return Trained(from_overcomplete(model, options.kind, options.k, stats, info),
                   {k: list(map(float, v)) for k, v in logs.items() if k in LOGGED}, model, stats)


LOGGED = ("avg_loss", "r2", "z_sparsity", "dead_features", "time_epoch")


def from_overcomplete(model, kind: str, k: int, stats: InputStatistics, info: SaeInfo | None = None
                      ) -> SparseAutoencoder:
    """overcomplete's TopKSAE / BatchTopKSAE with its linear encoder (put in eval mode: the dictionary fused) ->
    ``SparseAutoencoder``, the input normalisation it was trained under included."""
    model.eval()
    linear = model.encoder.final_block[0]                   # MLPEncoder without hidden blocks: Linear, Identity
    threshold = None
    if kind == "batchtopk":
        threshold = model.running_threshold.detach().reshape(1)
    return SparseAutoencoder(linear.weight.detach().T.cpu(), linear.bias.detach().cpu(),
                             model.get_dictionary().detach().cpu(), torch.zeros(linear.in_features), kind,
                             k, None if threshold is None else threshold.cpu(), "centre_scale",
                             torch.from_numpy(stats.mean).float(), stats.scale, info=info)
