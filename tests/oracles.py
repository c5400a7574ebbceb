"""Reference implementations the tests hold the library to: the straightforward form of what the library computes
another way (whole T×T matrices where it carries one row, a full matplotlib draw where it blits onto a cached
backdrop, a fresh deep copy per randomisation where it randomises one copy in place). None of them is called by the
explorer itself."""
from __future__ import annotations

import copy
from typing import Sequence

import numpy as np
from matplotlib.figure import Figure
from PIL import Image

from vit.explain.perturb import randomize_block
from viz import panels
from viz.drawing import plots, render
from viz.explain.gae import gae_steps
from viz.explain.grad_rollout import DEFAULT_DISCARD_RATIO, gradient_fused
from viz.maps.layout import check_attention, layer_index
from viz.maps.rollout import fuse_heads, rollout_product
from viz.maps.statistics import key_share, patch_keys, prefix_keys
from viz.records import Analysis, ModelArrays
from viz.cli.pictures import image_panels
from viz.position.view import model_panels
from viz.rollout.view import rollout_overlay


# ---- maps: whole matrices ----------------------------------------------------------------------------------------

def rollout_matrix(attn: np.ndarray, fusion: str = "mean", discard_ratio: float = 0.0, start_layer: int = 0,
                   protect: Sequence[int] = (0,)) -> np.ndarray:
    """(L, H, T, T) attention -> rollout R (T, T): heads fused by ``fusion``, then ``rollout_product``."""
    attn = np.asarray(attn)
    start = layer_index(start_layer, attn.shape[0])
    return rollout_product(fuse_heads(attn[start:], fusion), discard_ratio, 0, protect)


def gae_matrix(attention: np.ndarray, attention_grad: np.ndarray) -> np.ndarray:
    """(L, H, T, T) attention and its gradient -> GAE's relevance R (T, T) after the last block (every row)."""
    R = np.eye(attention.shape[-1], dtype=np.float32)
    for step in gae_steps(attention, attention_grad):     # R ← R + Ā·R = (I + Ā)·R
        R = step @ R
    return R


def grad_rollout_matrix(attention: np.ndarray, attention_grad: np.ndarray, discard_ratio: float = DEFAULT_DISCARD_RATIO,
                        protect: tuple[int, ...] = (0,)) -> np.ndarray:
    """(L, H, T, T) attention and gradient -> the gradient-weighted rollout R (T, T), rows summing to 1."""
    return rollout_product(gradient_fused(attention, attention_grad), discard_ratio, 0, protect)


# ---- data-set statistics: numpy definitions of what viz.analysis.postprocess computes in torch --------------------

def attention_entropy(attn: np.ndarray) -> np.ndarray:
    """Entropy in nats of every query row, averaged over all T query tokens -> (L, H).

    ``-Σ_j A_ij · ln A_ij`` with 0 · ln 0 = 0: 0 when a query attends to one token only, ln T when it attends
    to all T tokens alike."""
    attn = np.asarray(attn, dtype=np.float64)
    if attn.ndim != 4 or attn.shape[2] != attn.shape[3]:
        raise ValueError(f"Wrong attention shape! Expected (layers, heads, T, T) but got {attn.shape}!")
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(attn > 0, -attn * np.log(attn), 0.0)
    return terms.sum(axis=-1).mean(axis=-1)


def key_mass(attn: np.ndarray) -> np.ndarray:
    """Share of each block's attention that each key token receives -> (L, T), every row summing to 1: summed over
    heads and over all T query tokens, divided by H·T."""
    attn = np.asarray(attn, dtype=np.float64)
    if attn.ndim != 4 or attn.shape[2] != attn.shape[3]:
        raise ValueError(f"Wrong attention shape! Expected (layers, heads, T, T) but got {attn.shape}!")
    L, H, T, _ = attn.shape
    return attn.sum(axis=(1, 2)) / (H * T)


def attention_shares(attn: np.ndarray, num_prefix: int, grid: tuple[int, int],
                     high_norm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(share of each block's attention on the prefix tokens (L,), on the ``high_norm`` patches (gh, gw) (L,))."""
    attn = check_attention(attn, num_prefix, grid)
    mass = key_mass(attn)
    return key_share(mass, prefix_keys(num_prefix, grid)), key_share(mass, patch_keys(num_prefix, high_norm))


# ---- pictures: drawn in full --------------------------------------------------------------------------------------

def token_norm_plot(norms: np.ndarray, num_prefix: int, flags: np.ndarray | None = None,
                    title: str | None = None, lang: str = "en") -> Figure:
    """Token norms (L, T) as a complete Figure, drawn from scratch: what ``plots.token_norm_image`` blits."""
    norms = np.asarray(norms, dtype=np.float32)
    fig = plots.new_figure()
    ax = plots.plot_axes(fig, title)
    plots._norm_axes(ax, norms.shape[0], num_prefix, plots.log_range(norms), title, lang)
    x, lo, med, hi, top = plots._norm_curves(norms, num_prefix)
    ax.fill_between(x, lo, hi, color="tab:blue", alpha=0.2, linewidth=0)
    ax.plot(x, med, color="tab:blue")
    ax.plot(x, top, color="tab:blue", linestyle=":")
    for i in range(num_prefix):
        ax.plot(x, norms[:, i], color="black" if i == 0 else "gray", linewidth=1)
    plots._flagged_artists(ax, norms, num_prefix, flags)
    return fig


def rollout_panel(a: Analysis, fusion: str = "mean", discard_ratio: float = 0.0, start_layer: int = 0,
                  mask_artifacts: bool = False, norm_ratio: float = 3.0, cmap: str = render.DEFAULT_CMAP,
                  alpha: float = 0.6, colorbar: bool = True, scale: int = 1, lang: str = "en") -> Image.Image:
    """The whole rollout of the analysis' query blended onto the photo, as the CLI draws it."""
    drop = panels.artifact_drop(a, mask_artifacts, norm_ratio)
    values = panels.rollout_of(a, fusion, discard_ratio, start_layer, mask_artifacts, norm_ratio)
    return rollout_overlay(a, values, drop, cmap, alpha, colorbar, scale, lang)


def render_all(a: Analysis, m: ModelArrays, o: panels.MapOptions = panels.MapOptions()) -> tuple[dict, dict]:
    """Every panel the CLI writes for one image, the model's own included -> ({name: image}, {name: array})."""
    images, arrays = image_panels(a, o)
    model_images, model_maps = model_panels(m, o.lang)
    return {**images, **model_images}, {**arrays, **model_maps}


# ---- the sanity check: one fresh copy per depth ---------------------------------------------------------------------

def randomized_copy(model, blocks: int, seed: int = 0):
    """A copy of ``model`` with its top ``blocks`` blocks re-initialised (0 <= blocks <= L); the model is untouched."""
    L = len(model.blocks)
    if not 0 <= blocks <= L:
        raise ValueError(f"blocks must be between 0 and the model's depth {L} but got {blocks}!")
    randomized = copy.deepcopy(model)
    for index in range(L - 1, L - 1 - blocks, -1):
        randomize_block(randomized, index, seed)
    return randomized.eval()
