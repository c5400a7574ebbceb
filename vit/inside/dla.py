"""Direct logit attribution (Elhage et al. 2021, "A Mathematical Framework for Transformer Circuits"): the target's
logit split exactly into what each part of the model wrote into the stream the head reads.

The stream after the last block is a sum, x_L = e + Σ_l (attention branch_l + MLP branch_l), e the embedding (the
stream entering block 0: class token + its position embedding, patches, registers). The readout, made linear at
this photo (``readout.linear_readout``: the final norm's scale frozen at its value on this photo, a CLIP tower's
embedding norm too), turns it into logit = Σ_t u_t · x_L,t + head_bias, so every term of the sum gets its share
u · term. An attention branch is a sum over heads: ls1 ⊙ (W_O (concat_h z_h) + b_O), z_h = A_h V_h the head's
attn @ v, so head h's share is u · ls1 ⊙ (its columns of W_O) z_h, and the projection bias is a term of its own.
EVA-02's sub-LN (a LayerNorm on the concatenated heads before W_O) has its scale frozen the same way at this
photo, per token; its centring is linear, so it splits over the heads too, and its shift joins the projection
bias; a res-post-norm block's LayerNorm after the projection (timm's *_rpn) the same way. LayerScale is a
per-channel factor: included. Because z_h = Σ_s A_h[t, s] v_h,s, a head's share splits
further over the source tokens s it moved (attention × value × its W_O columns): a map per head that sums to the
head's share.

In contrast mode (class A rather than B) every term is A's minus B's. The parts add up to the model's own logit
(minus nothing: ``DirectLogitAttribution.total`` equals ``logit`` to float rounding).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..model import LayerScale, VisionTransformer
from .readout import Score, linear_readout
from .stream import Trace


@dataclass
class DirectLogitAttribution:
    """One photo's score split into parts; L blocks, H heads, T tokens. Float64 tensors on the CPU."""
    logit: float                     # the score from the model's output: the target's logit (contrast: A − B)
    head_bias: float                 # the head's bias plus the final norm's shift read through the head (w·β + b)
    embedding: float                 # the stream entering block 0, as the readout reads it
    attention_bias: torch.Tensor     # (L,) each block's projection bias (+ sub-LN shift), through LayerScale
    heads: torch.Tensor              # (L, H) each head's output through its columns of proj
    mlp: torch.Tensor                # (L,) each block's MLP branch
    sources: torch.Tensor | None     # (L, H, T) each head's share split over its source tokens (sums to ``heads``)

    def total(self) -> float:
        """embedding + Σ attention_bias + Σ heads + Σ mlp + head_bias: equals ``logit`` to float rounding."""
        return float(self.embedding + self.attention_bias.sum() + self.heads.sum() + self.mlp.sum() + self.head_bias)


def direct_logit_attribution(model: VisionTransformer, t: Trace, score: Score, image: int = 0) -> DirectLogitAttribution:
    """``Trace`` (with ``attention=True`` for the per-source split) -> DLA of ``score`` for image ``image``.

    Only the R tokens the readout reads enter the sums (the class token, or every patch for mean pooling), so for a
    class-token model the whole split costs a few matrix-vector products per layer. ``readout.NotLinear`` when the
    readout cannot be made linear (MAP pooling, a tanh pre-logits layer).
    """
    final = t.residual[-1][image]                                                     # (T, D)
    u, bias = linear_readout(model, final, score.classes, int(score.index[image]))
    if score.contrast is not None:
        u_b, bias_b = linear_readout(model, final, score.classes, int(score.contrast[image]))
        u, bias = u - u_b, bias - bias_b
    rows = u.abs().sum(dim=-1).nonzero()[:, 0]                  # the tokens the readout reads (CLS; patches for avg)
    u = u[rows].double().cpu()                                  # (R, D)
    pick = lambda x: x[image][..., rows.to(x.device), :].double().cpu()     # noqa: E731  (…, R, D) of image
    L, H = t.depth, model.cfg.num_heads
    heads, mlp, attention_bias = (torch.zeros(L, H, dtype=torch.float64), torch.zeros(L, dtype=torch.float64),
                                  torch.zeros(L, dtype=torch.float64))
    sources = torch.zeros(L, H, t.layout.num_tokens, dtype=torch.float64) if t.attention is not None else None
    with torch.inference_mode():
        for l, block in enumerate(model.blocks):
            z = pick(t.heads[l])                                                    # (H, R, Dh)
            d, attention_bias[l] = _merged_direction(block, u, z)                   # (R, D) over the heads' channels
            dh = d.reshape(len(rows), H, -1).transpose(0, 1)                        # (H, R, Dh)
            heads[l] = (dh * z).sum(dim=(1, 2))
            mlp[l] = (u * pick(t.mlp[l])).sum()
            if sources is not None:      # the trace kept the rows 0 … k−1 (CLS, DIST) or all: a row is its token
                A = t.attention[l][image][:, rows.to(t.attention[l].device)].double().cpu()   # (H, R, T)
                sources[l] = (A * _read_values(block, t.residual[l][image], dh)).sum(dim=1)
        embedding = float((u * pick(t.residual[0])).sum())
    logit = float(score(t.output[image:image + 1], torch.tensor([image]))[0])
    return DirectLogitAttribution(logit, bias, embedding, attention_bias, heads, mlp, sources)


def _read_values(block, stream: torch.Tensor, dh: torch.Tensor) -> torch.Tensor:
    """d_r · v_s for every head, readout row r and source token s -> (H, R, T): each source's value read in the
    direction row r pulls from head h, from the stream entering the block (T, D). v_s = W_v,h · norm1(x_s) + b_v,h,
    so d · v_s = (W_v,hᵀ d) · norm1(x_s) + d · b_v,h: no value is recomputed, a product per head and row."""
    attn = block.attn
    H, R, Dh = dh.shape
    D = H * Dh                                                                  # the heads' width (P·D: parallel)
    x = block.attention_input(stream).double().cpu()                                     # (T, D_model)
    W = attn.qkv.weight[2 * D:].detach().double().cpu().reshape(H, Dh, -1)    # value rows, per head
    b = attn.v_bias if attn.v_bias is not None else (None if attn.qkv.bias is None else attn.qkv.bias[2 * D:])
    g = torch.einsum("hrk,hkd->hrd", dh, W)                                    # (H, R, D): W_v,hᵀ d
    read = g @ x.T                                                              # (H, R, T)
    if b is not None:
        read = read + (dh * b.detach().double().cpu().reshape(H, 1, Dh)).sum(dim=-1, keepdim=True)
    return read


def _merged_direction(block, u: torch.Tensor, heads: torch.Tensor) -> tuple[torch.Tensor, float]:
    """The readout u (R, D) pulled back through ls1 and proj (and a sub-LN, its scale frozen at these heads (H, R,
    Dh)) -> (direction over the concatenated heads' channels (R, D), the share of the constant terms: proj's bias,
    the sub-LN's shift)."""
    attn = block.attn
    a = u * block.ls1.gamma.detach().double().cpu() if isinstance(block.ls1, LayerScale) else u   # (R, D)
    W = attn.proj.weight.detach().double().cpu()                          # (D_out, D_in)
    H, R, Dh = heads.shape
    concat = heads.transpose(0, 1).reshape(R, H * Dh)                     # what proj reads (before a sub-LN)
    shift = 0.0
    if block.res_post_norm:                                               # norm1 after proj, scale frozen per token
        pre = concat if not isinstance(attn.norm, nn.LayerNorm) else F.layer_norm(
            concat, concat.shape[-1:], attn.norm.weight.detach().double().cpu(),
            attn.norm.bias.detach().double().cpu(), attn.norm.eps)
        merged = pre @ W.T + (attn.proj.bias.detach().double().cpu() if attn.proj.bias is not None else 0.0)
        norm = block.norm1
        sigma = (merged.var(dim=-1, unbiased=False, keepdim=True) + norm.eps).sqrt()
        shift += float((a @ norm.bias.detach().double().cpu()).sum())
        a = a * norm.weight.detach().double().cpu()
        a = (a - a.mean(dim=-1, keepdim=True)) / sigma
    shift += float((a @ attn.proj.bias.detach().double().cpu()).sum()) if attn.proj.bias is not None else 0.0
    d = a @ W                                                             # (R, D_in): Wᵀ a_r
    if isinstance(attn.norm, nn.LayerNorm):                               # EVA-02's sub-LN, scale frozen per token
        sigma = (concat.var(dim=-1, unbiased=False, keepdim=True) + attn.norm.eps).sqrt()
        shift += float((d @ attn.norm.bias.detach().double().cpu()).sum())
        d = d * attn.norm.weight.detach().double().cpu()
        d = (d - d.mean(dim=-1, keepdim=True)) / sigma
    return d, shift
