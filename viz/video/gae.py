"""GAE through space and time: Chefer, Gur & Wolf 2021, "Generic Attention-model Explainability", for every video
family, read from the model's description.

The published rule (a self-attention encoder): R₀ = I and, step by step from the first to the last,

    Ē_l = mean_h((∂score/∂A_l ⊙ A_l)⁺),      R_l = R_{l−1} + Ē_l · R_{l−1}                    (T, T)

and the map is the readout's row of R over the patch columns, T'·gh·gw of them, laid out (T', gh, gw). The readout's
row is read as the photo GAE reads it (``viz.explain.gae``, ``viz.maps.video.readout_row``): e_0 for a CLS model
(ViViT, TimeSformer), the mean of the patch rows for a mean-pooled one (VideoMAE), p · R for V-JEPA 2's attentive
probe, p its query's attention over the tokens, mean of heads. Values are R's, not rescaled.

The steps are the description's (``vit.architecture``): a joint block is one step over the whole stream; a
TimeSformer block is two, its time step (one group per patch place, that place's T' tokens) and its space step (one
group per time position: the CLS token and that frame's patches); V-JEPA 2's probe blocks follow the encoder's. A
grouped step's attention is made one (T, T) matrix D of the stream as ``viz.maps.video.dense_step`` makes it (each
group's rows and columns at its tokens' places; the CLS token, a query in every frame's group, gets the mean of its
rows, as the model takes the mean of its outputs). The step then mixes the stream exactly as out = D · V (the CLS
token's value is the same in every frame's group), and the rule is applied to D with ∂score/∂D: an entry that lies in
one group has ∂D⊙D equal to that group's ∂A⊙A (the 1/count of the mean and the count of the chain rule cancel); the
CLS token's entry on itself, in every group, has ∂D⊙D = Σ_g ∂A^g⊙A^g. So Ē over the stream is the sum, over the
groups, of each group's mean_h((∂A^g ⊙ A^g)⁺) put at its tokens' places (``viz.explain.gae.weighted_attention``
per group: the clamp per head and group is the clamp per head of the stream's entry, since the CLS token's
self-entry has one sign in every group). A token in no group of the step (the CLS token in a time step) is not
updated by it: its row of Ē is 0 and R keeps it.

The readout's row is carried down the steps without forming R: r ← r + r · Ē_l from the last step to the first,
group by group.
"""
from __future__ import annotations

import numpy as np
import torch

from vit.architecture import Architecture, BlockLayout
from vit.explain.video import ClassMapPass

from ..explain.gae import weighted_attention
from ..maps.video import grouped, readout_row


def step_relevance(attention: np.ndarray, attention_grad: np.ndarray, block: BlockLayout) -> np.ndarray:
    """One step's attention and its gradient on its layout ((H, T, T), or (G, H, n, n) inside its groups) -> (G, n, n):
    each group's mean_h((∂score/∂A ⊙ A)⁺)."""
    attention, attention_grad = grouped(attention, block), grouped(attention_grad, block)
    if attention.shape != attention_grad.shape:
        raise ValueError(f"Wrong shapes! Expected a step's attention and its gradient alike but got "
                         f"{attention.shape} and {attention_grad.shape}.")
    return weighted_attention(attention, attention_grad)


def rows_through_step(rows: np.ndarray, relevance: np.ndarray, block: BlockLayout) -> np.ndarray:
    """rows (…, T) -> rows + rows · Ē, Ē the step's (T, T) matrix over the stream: its groups' (G, n, n)
    ``relevance`` summed at their tokens' places (module docstring), without forming it."""
    rows = np.asarray(rows, dtype=np.float32)
    index = block.groups()                                                          # (G, n) stream token per slot
    flat = rows.reshape(-1, rows.shape[-1])
    if index.shape == (1, flat.shape[-1]):                                          # one group of every token
        return (flat + flat @ relevance[0]).reshape(rows.shape)
    per_group = np.einsum("kgi,gij->kgj", flat[:, index], relevance)               # (k, G, n)
    out = flat.copy()
    np.add.at(out, (slice(None), index.ravel()), per_group.reshape(flat.shape[0], -1))
    return out.reshape(rows.shape)


def video_gae(attention, attention_grad, architecture: Architecture, readout: np.ndarray) -> np.ndarray:
    """Every step's attention and gradient on its layout (first first, one clip) and the readout's row (T,) over the
    last step's tokens -> GAE (T', gh, gw): the readout's row of R over every frame's patches."""
    if not len(attention) == len(attention_grad) == architecture.depth:
        raise ValueError(f"Expected the attention and its gradient of the {architecture.depth} steps but got "
                         f"{len(attention)} and {len(attention_grad)}.")
    return gae_of_relevance([step_relevance(_array(A), _array(G), block)
                             for A, G, block in zip(attention, attention_grad, architecture.blocks)],
                            architecture, readout)


def gae_of_relevance(relevance, architecture: Architecture, readout: np.ndarray) -> np.ndarray:
    """Every step's (G, n, n) groups of mean_h((∇A ⊙ A)⁺) (``step_relevance``, first first, one clip) and the
    readout's row (T,) -> GAE (T', gh, gw)."""
    blocks = architecture.blocks
    row = np.asarray(readout, dtype=np.float32)
    if row.shape != (blocks[-1].num_tokens,):
        raise ValueError(f"Wrong readout shape! Expected weights over the {blocks[-1].num_tokens} tokens but got "
                         f"{row.shape}.")
    for E, block in reversed(list(zip(relevance, blocks))):
        row = rows_through_step(row, E, block)
    return row[blocks[0].prefix:].reshape(architecture.patch_shape)


def relevance_of_step(attention: torch.Tensor, attention_grad: torch.Tensor, block: BlockLayout) -> np.ndarray:
    """A step's attention and gradient for B clips ((B, H, T, T) or (B, G, H, n, n)) -> (B, G, n, n): each clip's
    ``step_relevance``; the ``reduce`` of ``gradcam_pass`` that keeps only this of every step."""
    A, G = _array(attention), _array(attention_grad)
    return np.stack([step_relevance(a, g, block) for a, g in zip(A, G)])


def _array(values) -> np.ndarray:
    """A step's array as float32 numpy (a tensor from the pass, on any device, or an array)."""
    if isinstance(values, torch.Tensor):
        return values.detach().float().cpu().numpy()
    return np.asarray(values, dtype=np.float32)


def gae_of_pass(run: ClassMapPass, clip: int = 0) -> np.ndarray:
    """The ``gradcam_pass(..., attention=True)`` of clips (with ``reduce=relevance_of_step``, or keeping every
    step's attention and gradient) -> GAE (T', gh, gw) of clip ``clip``."""
    probe = None if run.probe is None else _array(run.probe[clip])
    readout = readout_row(run.architecture, probe)
    if run.reduced is not None:
        return gae_of_relevance([E[clip] for E in run.reduced], run.architecture, readout)
    if run.attention is None:
        raise ValueError("GAE needs every step's attention and its gradient: run gradcam_pass(..., attention=True).")
    return video_gae([a[clip] for a in run.attention], [g[clip] for g in run.attention_grad], run.architecture,
                     readout)
