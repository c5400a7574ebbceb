"""Relevance rules, one small module per module kind, and a rule-wired view of a model.

An explanation needs the model's backward pass, but some methods change how that backward treats some
modules (AttnLRP, Achtibat et al. 2024, "AttnLRP: Attention-Aware Layer-wise Relevance Propagation for
Transformers"). Each rule here wraps one module kind, keeps its forward values exactly, and changes only
its gradient, so that gradient × input gives LRP relevance (the paper's "efficient" implementation, as the
authors' ``lxt`` package does it):

- ``ElementwiseIdentity`` (GELU, QuickGELU, SiLU, Tanh): the identity rule (Eq. 9): the gradient becomes f(x)/x, so the
  relevance f(x)·g of the output passes to the input unchanged;
- ``LayerNormIdentity``: the identity rule for LayerNorm: the standard deviation is treated as a constant
  (its derivative is left out), so LayerNorm acts as the linear map (x - mean)/std·w + b; one fused op;
- ``RuleAttention``: our attention with the gradients of q, k, v scaled by a bilinear rule:
  ``UNIFORM_SPLIT`` (AttnLRP's uniform rule, Eq. 7: relevance of q·kᵀ split equally between q and k, and of
  A·v between A and v, i.e. gradients of q and k × 1/4 and of v × 1/2) or ``NO_SOFTMAX_FLOW`` (CP-LRP, Ali et
  al. 2022, "XAI for Transformers: Better Explanations through Conservative Propagation": q and k get no
  gradient, so no relevance flows through the softmax). The softmax itself keeps its own gradient:
  with gradient × input that *is* the paper's softmax rule, R_in = x·(R_out - s·ΣR_out) (Prop. 3.1).

Linear layers, LayerScale, dropout (eval), mean pooling and identities need no rule: their gradient × input is already
LRP-0's relevance (no gamma or epsilon variants: lxt's plain efficient rules). A rule set (``RuleSet``) is a
table from module kind to rule; ``rewired`` builds a view of a model with every module of a listed kind
wrapped and refuses a module kind it knows nothing about, so a new block type fails loudly until its
rule is added here: one entry, one small class.

Views share the model's parameters and never change the model, so concurrent explanations and plain
forwards on the same model do not interfere.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..model import (Attention, AttentionPool, Block, DropPath, LayerScale, Mlp, QuickGELU, RelativePositionMlp,
                     SwiGLU, VisionTransformer, PositionMlp)
from ..swin import (CosineWindowAttention, PatchEmbed as SwinPatchEmbed, PatchMerging, SwinBlock, SwinMlp, SwinStage,
                    SwinTransformer, WindowAttention)

IDENTITY_EPS = 1e-10  # the identity rule's f(x)/(x + eps), as lxt computes it (x = 0 gives 0, not NaN)


class _IdentityRuleFn(torch.autograd.Function):
    """y = f(x) forward; backward multiplies the incoming gradient by f(x)/(x + eps) (identity rule)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, fn: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
        y = fn(x)
        ctx.save_for_backward(y / (x + IDENTITY_EPS))
        return y

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (ratio,) = ctx.saved_tensors
        return ratio * grad, None


class _ScaleGradientFn(torch.autograd.Function):
    """Identity forward; backward multiplies the gradient by ``scale`` (a number, or a tensor that broadcasts)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, scale) -> torch.Tensor:
        ctx.scale = scale
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return grad * ctx.scale, None


def scale_gradient(x: torch.Tensor, scale) -> torch.Tensor:
    """x unchanged; its gradient multiplied by ``scale`` (1/2 for each factor of a bilinear product: the uniform rule)."""
    return _ScaleGradientFn.apply(x, scale)


class _LayerNormConstantStdFn(torch.autograd.Function):
    """LayerNorm over the last dimension whose backward treats the standard deviation as a constant.

    Forward: the fused ``F.layer_norm`` (the model's own values). Backward of y = (x - mean(x))·rstd·w + b with
    rstd constant: ∂/∂x = rstd·(g·w - mean(g·w)) — the centring stays, the std's own derivative is left out.
    Weight and bias get no gradient (explanations never need one). One fused op forward and four small
    ones backward, instead of the dozen element-wise ops of the same formula spelt out.
    """

    @staticmethod
    def forward(ctx, x: torch.Tensor, weight, bias, eps: float) -> torch.Tensor:
        var, _ = torch.var_mean(x, dim=-1, unbiased=False, keepdim=True)       # (…, 1)
        ctx.save_for_backward((var + eps).rsqrt(), weight)
        return F.layer_norm(x, x.shape[-1:], weight, bias, eps)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        rstd, weight = ctx.saved_tensors
        g = grad if weight is None else grad * weight
        return (g - g.mean(dim=-1, keepdim=True)) * rstd, None, None, None


class _RMSNormConstantScaleFn(torch.autograd.Function):
    """RMSNorm over the last dimension whose backward treats 1/rms(x) as a constant: y = x·r·w, ∂/∂x = g·w·r (AIMv2's
    norms: the LayerNorm rule without the centring)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, weight, eps: float) -> torch.Tensor:
        r = (x.pow(2).mean(dim=-1, keepdim=True) + eps).rsqrt()
        ctx.save_for_backward(r, weight)
        return F.rms_norm(x, x.shape[-1:], weight, eps)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        r, weight = ctx.saved_tensors
        return (grad if weight is None else grad * weight) * r, None, None


class RMSNormIdentity(nn.Module):
    """RMSNorm over the last dimension with its scale treated as a constant (the identity rule, as LayerNorm's)."""

    def __init__(self, inner: nn.RMSNorm):
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = None if self.inner.weight is None else self.inner.weight.detach()
        eps = self.inner.eps if self.inner.eps is not None else torch.finfo(x.dtype).eps
        return _RMSNormConstantScaleFn.apply(x, weight, eps)


class ElementwiseIdentity(nn.Module):
    """An element-wise non-linearity (GELU, Tanh) with the identity rule: gradient × input of its input
    equals gradient × output of its output, element by element."""

    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _IdentityRuleFn.apply(x, self.inner)


class LayerNormIdentity(nn.Module):
    """LayerNorm over the last dimension with the standard deviation treated as a constant (identity rule)."""

    def __init__(self, inner: nn.LayerNorm):
        super().__init__()
        if len(inner.normalized_shape) != 1:
            raise ValueError(f"LayerNormIdentity normalises the last dimension only but got normalized_shape "
                             f"{tuple(inner.normalized_shape)}!")
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ln = self.inner
        weight = None if ln.weight is None else ln.weight.detach()
        bias = None if ln.bias is None else ln.bias.detach()
        return _LayerNormConstantStdFn.apply(x, weight, bias, ln.eps)


# A bilinear rule scales the gradients of q, k and v, as one (3, 1, 1) factor on the packed (B, T, 3, H, Dh) tensor.
UNIFORM_SPLIT = (0.25, 0.25, 0.5)
"""AttnLRP's uniform rule (Eq. 7): q and k each get 1/2 of q·kᵀ's relevance, which is itself A's 1/2 of A·v's:
gradients × 1/4; v gets 1/2 of A·v's: gradient × 1/2."""
NO_SOFTMAX_FLOW = (0.0, 0.0, 1.0)
"""CP-LRP: the attention weights are treated as constants (q and k get no gradient); all relevance goes through v."""


class RuleAttention(Attention):
    """Our ``Attention`` (same weights, same code, same values) with a bilinear rule on q, k, v.

    x (B, T, D) -> (B, T, D). Only ``project`` differs: q, k and v leave it with their gradients scaled; everything
    after is the model's own attention (``Block.step`` runs it), and each part of the families' attention passes
    relevance as its kind needs:

    - q/v biases (BEiT, EVA-02): part of the linear qkv map; like every bias they are model constants that
      keep (absorb) the relevance gradient × input would give them;
    - rotary embedding (EVA-02, RoPE-ViT with axial or mixed frequencies, DINOv3): a rotation of q and k, linear,
      so relevance passes through it as gradient × input of a linear map; the bilinear rule's scale on q and k
      commutes with it;
    - relative position bias (BEiT's table, or timm's computed by an MLP from the grid alone): a constant added to
      the logits; it absorbs its gradient × input share of the softmax's relevance, as any bias does;
    - the softmax keeps its own gradient (fused or explicit: both are the exact gradient of
      softmax(q·kᵀ/√d + bias)·v);
    - the sub-LayerNorm on the heads' output (EVA-02 CLIP's attn_norm): its own rule (a child the view walks);
    - a causal mask (CLIP's text tower): the model's own mask.
    """

    KNOWN_MODULES = {"qkv", "attn_drop", "norm", "proj", "proj_drop", "rel_pos"}  # the parts the model's attention runs
    KNOWN_PARAMETERS = {"q_bias", "v_bias", "relative_position_bias_table", "rope_freqs"}
    walk_children = True   # ``rewired`` gives qkv, norm, proj, proj_drop their own rules

    def __init__(self, inner: Attention, qkv_scale: tuple[float, float, float]):
        nn.Module.__init__(self)
        extra = sorted(n for n in inner._modules if n not in self.KNOWN_MODULES)
        extra += sorted(n for n in inner._parameters if n not in self.KNOWN_PARAMETERS)
        if extra:  # e.g. q/k norms: the rule was not written for them
            raise ValueError(f"RuleAttention reproduces Attention made of {', '.join(sorted(self.KNOWN_MODULES))} "
                             f"with {', '.join(sorted(self.KNOWN_PARAMETERS))} only, but this one also has "
                             f"{', '.join(extra)}; extend RuleAttention for them.")
        shared = ("_modules", "_parameters", "_buffers")      # shallow: the same tensors, a dict of our own
        self.__dict__.update({k: dict(v) if k in shared else v for k, v in inner.__dict__.items()})
        self.qkv_scale = qkv_scale

    def project(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        q, k, v = super().project(x)                                    # each (B, H, T, Dh)
        sq, sk, sv = self.qkv_scale
        return scale_gradient(q, sq), scale_gradient(k, sk), scale_gradient(v, sv)


class RuleWindowAttention(WindowAttention):
    """A Swin v1 block's window attention (``vit.swin.WindowAttention``, same weights, same code, same values) with a
    bilinear rule on q, k, v: only ``project`` differs, as in ``RuleAttention``. The block's bias (relative position
    bias + shift mask) is a constant that absorbs its share, as every bias does; the softmax keeps its gradient.
    lxt's rules applied to timm's Swin are these: its ``wrap_attention_forward`` scales q, k, v the same way."""

    KNOWN_MODULES = {"qkv", "attn_drop", "proj", "proj_drop"}
    walk_children = True

    def __init__(self, inner: WindowAttention, qkv_scale: tuple[float, float, float]):
        nn.Module.__init__(self)
        extra = sorted(set(inner._modules) - self.KNOWN_MODULES) + \
            sorted(set(inner._parameters) - {"relative_position_bias_table"})
        if extra:
            raise ValueError(f"RuleWindowAttention reproduces WindowAttention made of "
                             f"{', '.join(sorted(self.KNOWN_MODULES))} and its bias table only, but this one also has "
                             f"{', '.join(extra)}; extend it for them.")
        shared = ("_modules", "_parameters", "_buffers")      # shallow: the same tensors, a dict of our own
        self.__dict__.update({k: dict(v) if k in shared else v for k, v in inner.__dict__.items()})
        self.qkv_scale = qkv_scale

    def project(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        q, k, v = super().project(x)                                    # each (B, nW, H, N, Dh)
        sq, sk, sv = self.qkv_scale
        return scale_gradient(q, sq), scale_gradient(k, sk), scale_gradient(v, sv)


def no_cosine_rule(module: CosineWindowAttention) -> nn.Module:
    """Swin v2's attention has no AttnLRP or CP-LRP rule: refused in one sentence."""
    raise ValueError("AttnLRP and CP-LRP are not defined for Swin v2: lxt has no rule for its scaled cosine attention "
                     "(queries and keys divided by their norms), so its relevance would be a rule of our own; GAE, "
                     "Grad-CAM, rollout and the attention map apply.")


# The MAP probe's query is the learnt latent, a constant: its logits q·kᵀ are linear in k, so k takes all of them.
PROBE_UNIFORM = (0.5, 0.5)
"""AttnLRP on the probe: A·v splits its relevance equally between A and v; A's half reaches k whole (q is constant)."""
PROBE_NO_SOFTMAX_FLOW = (0.0, 1.0)
"""CP-LRP on the probe: the attention weights are constants, all relevance goes through v."""


class RuleAttentionPool(nn.Module):
    """SigLIP's attention pooling (``AttentionPool``, same weights, same values) with the bilinear rule on k, v.

    Tokens (B, N, D) -> pooled (B, D). Its own attention gets the same softmax and bilinear rules as a block's
    (``PROBE_UNIFORM`` or ``PROBE_NO_SOFTMAX_FLOW``); its LayerNorm and MLP are children the view gives their rules.
    """

    walk_children = True

    def __init__(self, inner: AttentionPool, kv_scale: tuple[float, float]):
        super().__init__()
        known = {"q", "kv", "proj", "norm", "mlp"}
        extra = sorted(set(inner._modules) - known) + sorted(set(inner._parameters) - {"latent"})
        if extra:
            raise ValueError(f"RuleAttentionPool reproduces AttentionPool made of {', '.join(sorted(known))} and "
                             f"latent only, but this one also has {', '.join(extra)}; extend it for them.")
        self.q, self.kv, self.proj, self.norm, self.mlp = inner.q, inner.kv, inner.proj, inner.norm, inner.mlp
        self.latent = inner.latent
        self.num_heads, self.head_dim, self.scale = inner.num_heads, inner.head_dim, inner.scale
        self.kv_scale = kv_scale

    def forward(self, x: torch.Tensor, return_attn: bool = False) -> tuple[torch.Tensor, None]:
        B, N, D = x.shape
        H, Dh = self.num_heads, self.head_dim
        q = self.q(self.latent).reshape(1, 1, H, Dh).transpose(1, 2).expand(B, -1, -1, -1)   # (B, H, 1, Dh)
        kv = self.kv(x).reshape(B, N, 2, H, Dh)                                             # (B, N, 2, H, Dh)
        scale = torch.tensor(self.kv_scale, dtype=kv.dtype, device=kv.device).reshape(2, 1, 1)
        k, v = scale_gradient(kv, scale).permute(2, 0, 3, 1, 4).unbind(0)                   # each (B, H, N, Dh)
        x = F.scaled_dot_product_attention(q, k, v, scale=self.scale)                       # (B, H, 1, Dh)
        x = self.proj(x.transpose(1, 2).reshape(B, D))                                      # (B, D)
        return (x + self.mlp(self.norm(x)) if self.mlp is not None else x), None            # AIMv2's head: no MLP


GATE_UNIFORM = (0.5, 0.5)
"""AttnLRP on a gated product SiLU(gate) ⊙ value: each factor gets half (lxt's ``gated_mlp_forward``)."""
GATE_NO_FLOW = (0.0, 1.0)
"""CP-LRP on a gated product: the gate is treated as a constant, all relevance goes to the value (lxt's
``cp_gated_mlp_forward``)."""


class RuleSwiGLU(nn.Module):
    """EVA-02's gated MLP (``SwiGLU``, same values): SiLU(x·W_g) ⊙ (x·W_x) with a rule on the product.

    The gate and the value are both functions of the input, so their element-wise product is bilinear:
    ``GATE_UNIFORM`` gives each factor half of its relevance (gradients × 1/2, AttnLRP's rule for products),
    ``GATE_NO_FLOW`` all of it to the value (CP-LRP); the SiLU gets its rule (identity) and the inner LayerNorm
    its own, as children the view walks.
    """

    walk_children = True

    def __init__(self, inner: SwiGLU, scales: tuple[float, float] = GATE_UNIFORM):
        super().__init__()
        for name, child in inner._modules.items():    # fc1_g, fc1_x, act, drop1, norm, fc2, drop2
            self.add_module(name, child)
        self.scales = scales

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, value = self.act(self.fc1_g(x)), self.fc1_x(x)                 # (B, T, mlp_dim) each
        hidden = scale_gradient(gate, self.scales[0]) * scale_gradient(value, self.scales[1])
        return self.drop2(self.fc2(self.norm(self.drop1(hidden))))


# Module kinds that need no rule: linear maps and dropout (eval), whose plain gradient × input already is
# LRP-0's relevance, and the containers of our model, whose forwards only chain their children with sums,
# concatenations, token selection and means (all linear); and the relative-position MLP, whose input is the grid's
# offsets, never the image, so no relevance flows through it. Matched by exact type: a subclass may change forward.
PASSTHROUGH: tuple[type, ...] = (nn.Linear, nn.Conv2d, nn.Dropout, nn.Identity, LayerScale, DropPath,
                                 nn.Sequential, nn.ModuleList, Mlp, Block, VisionTransformer, RelativePositionMlp,
                                 PositionMlp,
                                 # a Swin's containers: rolls, window partitions, 2×2 concatenation, the mean pool
                                 SwinTransformer, SwinStage, SwinBlock, SwinPatchEmbed, PatchMerging, SwinMlp)


@dataclass(frozen=True)
class RuleSet:
    """A named table: module kind (exact type) -> rule (a callable wrapping one module of that kind)."""
    name: str
    rules: dict = field(default_factory=dict)
    passthrough: tuple[type, ...] = PASSTHROUGH

    def rule_for(self, module: nn.Module) -> Callable[[nn.Module], nn.Module] | None:
        return self.rules.get(type(module))


ATTN_LRP = RuleSet("attnlrp", {
    nn.LayerNorm: LayerNormIdentity,
    nn.RMSNorm: RMSNormIdentity,
    nn.GELU: ElementwiseIdentity,
    QuickGELU: ElementwiseIdentity,
    nn.SiLU: ElementwiseIdentity,
    nn.Tanh: ElementwiseIdentity,
    SwiGLU: RuleSwiGLU,
    Attention: lambda m: RuleAttention(m, UNIFORM_SPLIT),
    AttentionPool: lambda m: RuleAttentionPool(m, PROBE_UNIFORM),
    WindowAttention: lambda m: RuleWindowAttention(m, UNIFORM_SPLIT),
    CosineWindowAttention: no_cosine_rule,
})
CP_LRP = RuleSet("cp_lrp", {**ATTN_LRP.rules, Attention: lambda m: RuleAttention(m, NO_SOFTMAX_FLOW),
                            SwiGLU: lambda m: RuleSwiGLU(m, GATE_NO_FLOW),
                            AttentionPool: lambda m: RuleAttentionPool(m, PROBE_NO_SOFTMAX_FLOW),
                            WindowAttention: lambda m: RuleWindowAttention(m, NO_SOFTMAX_FLOW)})
RULE_SETS = {r.name: r for r in (ATTN_LRP, CP_LRP)}


def rewired(model: nn.Module, replace: Callable[[str, nn.Module], nn.Module | None],
            passthrough: tuple[type, ...] | None = None) -> nn.Module:
    """A view of ``model`` in which ``replace(name, module)`` swaps modules (None: keep, look inside).

    Only the containers on the way to a swapped module are copied (shallowly); parameters, buffers and
    every other module are shared, and ``model`` itself is never changed. With ``passthrough``, every module
    that is not swapped must be of one of these exact kinds, else ValueError names it: a rule set then
    cannot silently run a module whose non-linearity it has no rule for. A swapped module with
    ``walk_children = True`` (a rule that reproduces a module from its children) has its children walked too.
    """
    def walk(name: str, module: nn.Module) -> nn.Module:
        swapped = replace(name, module)
        if swapped is not None:
            if getattr(swapped, "walk_children", False):   # a rule running the module's own children: theirs too
                swapped.__dict__["_modules"] = {n: walk(f"{name}.{n}", c) for n, c in swapped._modules.items()}
            return swapped
        if passthrough is not None and type(module) not in passthrough:
            raise ValueError(f"No relevance rule for {name or 'the model'} ({type(module).__name__})! Expected a "
                             f"module kind with a rule or one of {', '.join(k.__name__ for k in passthrough)}; "
                             f"add its rule in vit/explain/rules.py.")
        children = {n: walk(f"{name}.{n}" if name else n, c) for n, c in module._modules.items()}
        if all(children[n] is c for n, c in module._modules.items()):
            return module
        clone = copy.copy(module)  # a new object sharing parameters, buffers and hooks; only its children differ
        clone.__dict__["_modules"] = children
        return clone

    return walk("", model)


def without_parameter_grads(model: nn.Module) -> nn.Module:
    """A view of ``model`` whose parameters are detached (same storage, ``requires_grad=False``).

    Weight gradients are never needed here, but while a parameter requires grad autograd records and
    saves for it: on this view the backward only carries gradients along the activations (about half the
    work). The model's own parameters keep their ``requires_grad``; every module is copied shallowly.
    """
    def walk(module: nn.Module) -> nn.Module:
        clone = copy.copy(module)
        clone.__dict__["_modules"] = {n: walk(c) for n, c in module._modules.items()}
        clone.__dict__["_parameters"] = {n: None if p is None else p.detach() for n, p in module._parameters.items()}
        return clone

    return walk(model)


def rule_view(model: nn.Module, rules: RuleSet, first: Callable[[str, nn.Module], nn.Module | None]) -> nn.Module:
    """``rewired`` with every module of a kind in ``rules`` wrapped by its rule; ``first`` may swap before."""
    def replace(name: str, module: nn.Module) -> nn.Module | None:
        swapped = first(name, module)
        if swapped is not None:
            return swapped
        rule = rules.rule_for(module)
        return rule(module) if rule is not None else None

    return rewired(model, replace, rules.passthrough)
