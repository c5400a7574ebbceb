"""The family's own readout, applied to any layer's tokens, and made linear for direct logit attribution.

Every view reads the stream through what the model itself does after its last block (``forward_head``): the final
norm, the pooling, the head, so that the last layer's reading *is* the model's output:

    plain ViT, registers   head(LN(x_CLS))         (DINOv3 with untied norms: head(cls_norm(x_CLS)))
    DeiT distilled         (head(LN(x_CLS)) + head_dist(LN(x_DIST))) / 2
    BEiT                   head(fc_norm(mean of the patch tokens))
    DINOv2 classifiers     head([LN(x_CLS), mean of LN(x_patch)]): the head's two halves read the two
    InternViT, PE lang     head(x_CLS) / head(mean of the patch tokens): no final norm
    CLIP image tower       s · cos(P · ln_post(x_CLS), text), P the projection, s = exp(logit_scale), per typed text
    SigLIP                 head(MAP(LN(x))): the attention-pool probe over the tokens, then the head

``Classes`` is what is read out (a classifier's classes, or the typed texts of a CLIP tower) and ``Score`` the one
number a view measures: the target's logit, or the difference of two logits (contrast).

``linear_readout`` gives, for one photo, the readout of a score as a linear function of the last tokens,
score = Σ_t u_t · x_t + bias, exact at this photo: each LayerNorm divides by its token's standard deviation σ, which
depends on the token; frozen at its value on this photo, LN(x) = γ ⊙ (x − mean(x)) / σ + β is linear (the
centring is), so u_t = (r_t − mean(r_t)) / σ_t for the direction r_t the head reads token t in. A CLIP tower's
cosine divides by the embedding's norm, frozen the same way. MAP pooling is a softmax over the tokens, which no
frozen scale makes linear (``NotLinear``); nor is a pre-logits tanh layer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn as nn

from ..explain.targets import Target, TextTarget
from ..model import VisionTransformer


class NotLinear(ValueError):
    """The model's readout cannot be made linear in the tokens (MAP pooling, a tanh pre-logits layer)."""


@dataclass(frozen=True, eq=False)
class Classes:
    """What a model's output is read as: a classifier's K classes (``names``), or for a CLIP image tower the K typed
    texts (``texts``: their normalised embeddings and logit scale; the names are the texts)."""
    names: tuple[str, ...]
    texts: TextTarget | None = None

    def __len__(self) -> int:
        return len(self.names)

    def logits(self, output: torch.Tensor) -> torch.Tensor:
        """The model's output (N, K) logits, or (N, E) image embeddings of a CLIP tower -> (N, K) logits."""
        return output if self.texts is None else self.texts.logits(output)

    def index(self, target: Target) -> int | None:
        """The class (or text) a target names; None for a target that means each image's top-1."""
        if isinstance(target, TextTarget):
            return None if target.index is None else self.names.index(target.texts[target.index])
        return target.index


def classes_for(model: VisionTransformer, labels: Sequence[str] = (), *targets: Target | None) -> Classes:
    """The classes a model's views read: its classifier's (``labels`` name them; "class i" where they do not), or,
    for a CLIP image tower, every text of the given text targets (target and contrast), in the order typed.

    ValueError for a model with neither (a backbone: its output is features, not classes).
    """
    texts = [t for t in targets if isinstance(t, TextTarget)]
    if texts:
        names = list(dict.fromkeys(text for t in texts for text in t.texts))
        rows = {text: t.embeddings[i] for t in texts for i, text in enumerate(t.texts)}
        embeddings = torch.stack([rows[n] for n in names])
        return Classes(tuple(names), TextTarget(tuple(names), embeddings, texts[0].logit_scale))
    K = model.cfg.num_classes
    if not K:
        raise ValueError("This model has no classes (a backbone, or a CLIP image tower without typed texts): there "
                         "is nothing to read out. For a CLIP checkpoint give the texts.")
    return Classes(tuple(labels[i] if i < len(labels) else f"class {i}" for i in range(K)))


@dataclass(frozen=True, eq=False)
class Score:
    """The number a view measures for each image: the logit of class ``index``, minus that of ``contrast`` when
    given. Both (B,) long, one class per image (a data set's images each have their own top-1)."""
    classes: Classes
    index: torch.Tensor
    contrast: torch.Tensor | None = None

    def __call__(self, output: torch.Tensor, images: torch.Tensor | None = None) -> torch.Tensor:
        """Output (N, K or E) -> (N,); ``images`` (N,) long says which image each row belongs to (default: row i
        is image i)."""
        logits = self.classes.logits(output)
        rows = torch.arange(logits.shape[0], device=logits.device)
        images = rows if images is None else images.to(logits.device)
        s = logits[rows, self.index.to(logits.device)[images]]
        if self.contrast is not None:
            s = s - logits[rows, self.contrast.to(logits.device)[images]]
        return s


def score_for(classes: Classes, output: torch.Tensor, target: Target | None = None,
              contrast: Target | None = None) -> Score:
    """The ``Score`` of a target (None, or a target without an index: each image's top-1 in ``output`` (B, K)) and an
    optional contrast class (a ``ClassTarget`` or ``TextTarget`` with its index)."""
    logits = classes.logits(output.detach())
    index = classes.index(target) if target is not None else None
    top1 = logits.argmax(dim=1)
    chosen = top1 if index is None else torch.full_like(top1, _checked(classes, index))
    other = None
    if contrast is not None:
        b = classes.index(contrast)
        if b is None:
            raise ValueError("A contrast names one class (or text); got one without an index.")
        other = torch.full_like(top1, _checked(classes, b))
    return Score(classes, chosen.cpu(), None if other is None else other.cpu())


def _checked(classes: Classes, index: int) -> int:
    if not 0 <= index < len(classes):
        raise ValueError(f"Class {index} does not exist! Expected 0 <= class < {len(classes)}.")
    return int(index)


def read(model: VisionTransformer, tokens: torch.Tensor, classes: Classes) -> torch.Tensor:
    """Tokens after any block (N, T, D) -> logits (N, K) through the model's own norm, pooling and head (the logit
    lens; after the last block this is the model's output)."""
    return classes.logits(model.forward_head(tokens))


def read_patches(model: VisionTransformer, tokens: torch.Tensor, classes: Classes) -> torch.Tensor:
    """Tokens (N, T, D) -> every patch token read alone through the same norm and head: logits (N, P, K), P patches.

    Mean pooling of one token is the token; the MAP probe over one token gives the pool's output for that token;
    CLS beside the mean reads the token in both places; DeiT-distilled averages its two heads on the token.
    """
    n = model.cfg.num_prefix_tokens
    x = model.norm(tokens[:, n:])                                        # (N, P, D)
    N, P, D = x.shape
    if model.attn_pool is not None:                                      # each patch its own one-token sequence
        x = model.attn_pool(x.reshape(N * P, 1, D))[0].reshape(N, P, D)
    if model.cfg.readout == "cls_mean":
        x = torch.cat([x, x], dim=-1)                                    # (N, P, 2D)
    features = model.pre_logits(model.fc_norm(x))
    output = model.head(model.proj(features))
    if model.head_dist is not None:
        output = (output + model.head_dist(features)) / 2
    return classes.logits(output.reshape(N * P, -1)).reshape(N, P, -1)


def _std(x: torch.Tensor, norm: nn.LayerNorm) -> torch.Tensor:
    """What LayerNorm divides by: sqrt(var + eps) over the last dimension (…, 1)."""
    return (x.var(dim=-1, unbiased=False, keepdim=True) + norm.eps).sqrt()


def _centred(r: torch.Tensor) -> torch.Tensor:
    return r - r.mean(dim=-1, keepdim=True)


def why_not_linear(model: VisionTransformer) -> str | None:
    """Why no frozen scale makes this model's readout linear in the tokens (a sentence), or None when it is linear."""
    if model.attn_pool is not None:
        return ("this model pools its tokens with attention (MAP, as SigLIP): the probe's softmax over the tokens is "
                "not linear, so the logit does not split into the layers' parts. The logit lens, head ablation and "
                "activation patching work on it.")
    if not isinstance(model.pre_logits, nn.Identity):
        return "this model has a pre-logits layer with a tanh (representation_size): its logit does not split into parts."
    return None


@torch.no_grad()
def linear_readout(model: VisionTransformer, final: torch.Tensor, classes: Classes, index: int) -> tuple[torch.Tensor, float]:
    """The readout of class ``index``'s logit as a linear function of one photo's last tokens ``final`` (T, D):
    (u (T, D), bias) with logit = Σ_t u_t · final_t + bias, exact for this photo (module docstring).

    ``bias`` is the head's bias plus the final norm's shift read through the head (w · β + b). Every LayerNorm's
    scale 1/σ is frozen at its value on this photo, and a CLIP tower's 1/|embedding|. ``NotLinear`` for MAP pooling
    and a tanh pre-logits layer.
    """
    reason = why_not_linear(model)
    if reason:
        raise NotLinear(f"Direct logit attribution needs a readout that is linear in the tokens, but {reason}")
    cfg = model.cfg
    T, D = final.shape
    n = cfg.num_prefix_tokens
    one_hot = lambda i: torch.nn.functional.one_hot(torch.tensor(i), T).to(final)         # noqa: E731
    mean = torch.zeros(T, dtype=final.dtype, device=final.device)
    mean[n:] = 1.0 / (T - n)
    # (head, which of its D-wide input slices, how the pooling weighs each token, the share of the output)
    heads = {"cls": [(model.head, 0, one_hot(0), 1.0)],
             "mean": [(model.head, 0, mean, 1.0)],
             "mean_all": [(model.head, 0, torch.full((T,), 1.0 / T).to(final), 1.0)],
             "cls_mean": [(model.head, 0, one_hot(0), 1.0), (model.head, 1, mean, 1.0)],
             "distilled": [(model.head, 0, one_hot(0), 0.5), (model.head_dist, 0, one_hot(1), 0.5)]}[cfg.readout]
    u = torch.zeros_like(final)
    bias = torch.zeros((), dtype=final.dtype, device=final.device)
    for head, part, a, share in heads:
        w, b = _head_direction(model, head, final, a, classes, index)   # the logit = w · features + b
        w, b = share * w[part * D:(part + 1) * D], share * b / len([h for h in heads if h[0] is head])
        if isinstance(model.fc_norm, nn.LayerNorm):                      # pool, then normalise the pooled vector
            pooled = a @ final                                           # (D,)
            r = _centred(model.fc_norm.weight * w) / _std(pooled, model.fc_norm)
            u += a[:, None] * r
            bias += w @ model.fc_norm.bias + b
        elif isinstance(model.norm, nn.Identity) and model.cls_norm is None:   # no final norm: linear as it is
            u += a[:, None] * w
            bias += b
        elif isinstance(model.norm, nn.RMSNorm):                          # AIMv2: scaled, neither centred nor shifted
            u += a[:, None] * (model.norm.weight * w) / final.pow(2).mean(dim=-1, keepdim=True).add(
                model.norm.eps).sqrt()
            bias += b
        else:                                                            # normalise each token, then pool
            norm = _final_norm_of(model, a)
            r = _centred(norm.weight * w)                                # (D,)
            u += a[:, None] * r / _std(final, norm)                      # (T, D): each token its own σ
            bias += w @ norm.bias + b
    return u, float(bias)


def _final_norm_of(model: VisionTransformer, weights: torch.Tensor) -> nn.LayerNorm:
    """The final LayerNorm of the tokens a readout weighs: ``norm``, or DINOv3's untied ``cls_norm`` when it reads
    prefix tokens only (CLS, registers)."""
    if model.cls_norm is None:
        return model.norm
    n = model.cfg.num_prefix_tokens
    on_prefix, on_patches = bool(weights[:n].any()), bool(weights[n:].any())
    if on_prefix and on_patches:
        raise NotLinear("Direct logit attribution reads one final norm, but this readout weighs prefix tokens (their "
                        "own cls_norm) and patches (norm) together.")
    return model.cls_norm if on_prefix else model.norm


def _head_direction(model: VisionTransformer, head: nn.Module, final: torch.Tensor, a: torch.Tensor,
                    classes: Classes, index: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(w (D,), b): the class's logit = w · features + b, features = the normalised pooled vector the head reads."""
    if classes.texts is None:
        return head.weight[index], (head.bias[index] if head.bias is not None else final.new_zeros(()))
    # CLIP: s · t · (P f) / |P f|, with |P f| frozen at this photo's embedding
    features = model.fc_norm(a @ final) if isinstance(model.fc_norm, nn.LayerNorm) else a @ model.norm(final)
    embedding = model.proj(features)
    text = classes.texts.embeddings[index].to(final)
    w = classes.texts.logit_scale * (text @ model.proj.weight) / embedding.norm()
    b = final.new_zeros(()) if model.proj.bias is None else \
        classes.texts.logit_scale * (text @ model.proj.bias) / embedding.norm()    # open_clip's timm towers' bias
    return w, b
