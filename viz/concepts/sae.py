"""A sparse autoencoder as it is used once trained: one form for the SAEs trained here (``viz.concepts.train``), for
sae-lens' and for ViT-Prisma's (``viz.concepts.published``), in plain torch (nothing beyond the base install).

For the tokens x (N, D) of one hook point:

    x_in  = normalise(x)                                  the SAE's input normalisation (below)
    pre   = (x_in − b_pre) @ W_enc + b_enc                (N, M) M latents; b_pre = b_dec for sae-lens and Prisma
    codes = activation(pre)                               topk: the k largest of relu(pre), the rest 0; relu;
                                                          jumprelu: relu(pre) where pre > θ (sae-lens);
                                                          batchtopk: relu(pre) where it is ≥ θ (overcomplete)
    x̂     = denormalise(codes @ W_dec + b_dec)            (N, D)

Input normalisations: ``none``; ``centre_scale`` (x − mean) · scale, one mean and one number fitted on the training
tokens (what ``viz.concepts.train`` uses: the tokens centred, their mean squared norm D); ``layer_norm`` per token,
(x − μ) / (σ + ε) in and y · σ + μ out, σ the unbiased standard deviation (sae-lens' and Prisma's run-time layer
norm); ``constant_norm_rescale`` x · √D / ‖x‖ per token. Each is affine per token, so latent i adds
codes_i · W_dec[i] · s(x) to x̂, s(x) the token's output scale (``contribution``): switching the latent off removes
that from the token, scaling it by f adds (f − 1) times it (``edit``).

Files: ``save`` / ``load`` write and read ``DIR/sae.safetensors`` (W_enc (D, M), b_enc (M,), W_dec (M, D), b_dec
(D,), b_pre (D,), input_mean (D,), threshold (M,) for jumprelu and batchtopk) and ``DIR/sae.json`` (model,
weights, layer, hook_point, d_model, latents, k, kind, input_normalisation, and how it was trained).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import torch
from safetensors.torch import load_file, save_file

KINDS = ("topk", "batchtopk", "relu", "jumprelu")
Kind = Literal["topk", "batchtopk", "relu", "jumprelu"]
NORMALISATIONS = ("none", "centre_scale", "layer_norm", "constant_norm_rescale")
WEIGHTS, CONFIG = "sae.safetensors", "sae.json"
FORMAT = "vit-attention-explorer SAE"


@dataclass
class SaeInfo:
    """What an SAE was made for (sae.json): the model, the layer, the hook point; and where it came from."""
    layer: int                          # 0-based block
    hook_point: str                     # vit.inside.hooks.HOOK_POINTS
    model: str = ""                     # the model's name when trained (or the published SAE's model_name)
    weights: str = ""                   # --weights as given
    weights_sha256: str = ""            # a hash of the model's first and last tensors (viz.folders.identity)
    source: str = "trained"             # "trained", "sae-lens" or "vit-prisma"
    extra: dict = field(default_factory=dict)   # the rest of sae.json (training settings, the published config)


class SparseAutoencoder(torch.nn.Module):
    """Encoder, activation and decoder of one SAE, with its input normalisation (see the module docstring)."""

    def __init__(self, W_enc: torch.Tensor, b_enc: torch.Tensor, W_dec: torch.Tensor, b_dec: torch.Tensor,
                 kind: Kind, k: int | None = None, threshold: torch.Tensor | None = None,
                 normalisation: str = "none", input_mean: torch.Tensor | None = None, scale: float = 1.0,
                 eps: float = 1e-5, b_pre: torch.Tensor | None = None, info: SaeInfo | None = None):
        super().__init__()
        D, M = W_enc.shape
        if W_dec.shape != (M, D) or b_enc.shape != (M,) or b_dec.shape != (D,):
            raise ValueError(f"Inconsistent SAE weights: W_enc {tuple(W_enc.shape)}, b_enc {tuple(b_enc.shape)}, "
                             f"W_dec {tuple(W_dec.shape)}, b_dec {tuple(b_dec.shape)}; expected (D, M), (M,), (M, D), "
                             f"(D,).")
        if kind not in KINDS:
            raise ValueError(f"Unknown SAE kind {kind!r}! Expected one of {', '.join(KINDS)}.")
        if normalisation not in NORMALISATIONS:
            raise ValueError(f"Unknown input normalisation {normalisation!r}! Expected one of "
                             f"{', '.join(NORMALISATIONS)}.")
        if kind == "topk" and not (k and 0 < k <= M):
            raise ValueError(f"A top-k SAE needs k between 1 and its {M} latents, but got k={k}.")
        if kind in ("jumprelu", "batchtopk") and threshold is None:
            raise ValueError(f"A {kind} SAE needs its threshold.")
        f32 = lambda t: t.detach().to(torch.float32).contiguous()          # noqa: E731
        self.register_buffer("W_enc", f32(W_enc))
        self.register_buffer("b_enc", f32(b_enc))
        self.register_buffer("W_dec", f32(W_dec))
        self.register_buffer("b_dec", f32(b_dec))
        self.register_buffer("b_pre", f32(b_pre) if b_pre is not None else torch.zeros(D))
        self.register_buffer("input_mean", f32(input_mean) if input_mean is not None else torch.zeros(D))
        self.register_buffer("threshold", f32(threshold.expand(M)) if threshold is not None else torch.zeros(M))
        self.kind, self.k, self.normalisation, self.scale, self.eps = kind, k, normalisation, float(scale), eps
        self.info = info

    @property
    def d_model(self) -> int:
        return self.W_enc.shape[0]

    @property
    def latents(self) -> int:
        return self.W_enc.shape[1]

    # --- the input normalisation: x_in = (x − shift) / scale_in, and back: x = y · scale_out + shift -----------------
    def _affine(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Per token of x (N, D): the shift (N or 1, D), the input's divisor and the output's factor (N or 1, 1)."""
        ones, zeros = x.new_ones(1, 1), x.new_zeros(1, x.shape[-1])
        if self.normalisation == "none":
            return zeros, ones, ones
        if self.normalisation == "centre_scale":
            return self.input_mean.unsqueeze(0), ones / self.scale, ones / self.scale
        if self.normalisation == "layer_norm":        # sae-lens and Prisma: ÷ (σ + ε) in, × σ out
            mu = x.mean(-1, keepdim=True)
            sigma = (x - mu).std(-1, keepdim=True)
            return mu, sigma + self.eps, sigma
        norm = x.norm(dim=-1, keepdim=True) / math.sqrt(self.d_model)
        return zeros, norm, norm

    def normalise(self, x: torch.Tensor) -> torch.Tensor:
        shift, scale, _ = self._affine(x)
        return (x - shift) / scale

    def pre_activation(self, x: torch.Tensor) -> torch.Tensor:
        """Tokens (N, D) -> the encoder's pre-activations (N, M)."""
        return (self.normalise(x.float()) - self.b_pre) @ self.W_enc + self.b_enc

    def activate(self, pre: torch.Tensor) -> torch.Tensor:
        codes = pre.relu()
        if self.kind == "topk":
            top = torch.topk(codes, self.k, dim=-1)
            return torch.zeros_like(codes).scatter_(-1, top.indices, top.values)
        if self.kind == "jumprelu":
            return codes * (pre > self.threshold)
        if self.kind == "batchtopk":
            return codes * (codes >= self.threshold)
        return codes

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """Tokens (N, D) -> codes (N, M), non-negative."""
        with torch.inference_mode():
            return self.activate(self.pre_activation(x))

    def decode(self, codes: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Codes (N, M) of the tokens ``x`` (N, D) (their normalisation's scale) -> the reconstruction (N, D)."""
        with torch.inference_mode():
            shift, _, scale = self._affine(x.float())
            return (codes @ self.W_dec + self.b_dec) * scale + shift

    def reconstruct(self, x: torch.Tensor) -> torch.Tensor:
        """Tokens (N, D) -> their reconstruction x̂ (N, D)."""
        return self.decode(self.encode(x), x)

    def contribution(self, x: torch.Tensor, codes: torch.Tensor, latent: int) -> torch.Tensor:
        """What latent ``latent`` adds to each token's reconstruction (N, D): codes_i · W_dec[i] · s(x)."""
        _, _, scale = self._affine(x.float())
        return codes[:, latent:latent + 1] * scale * self.W_dec[latent]

    def edit(self, x: torch.Tensor, changes: dict[int, float]) -> torch.Tensor:
        """Tokens (N, D) with latents scaled: {latent: factor}; factor 0 switches the latent off (its decoder
        direction times its activation removed from each token), 2 doubles what it adds. Everything the SAE does
        not reconstruct stays in the tokens."""
        if not changes:
            return x
        codes = self.encode(x)
        out = x.float().clone()
        for latent, factor in changes.items():
            out += (float(factor) - 1.0) * self.contribution(x, codes, latent)
        return out.to(x.dtype)

    def direction(self, latent: int) -> torch.Tensor:
        """Latent ``latent``'s decoder direction in the model's token space, unit length (D,)."""
        d = self.W_dec[latent] / (self.scale if self.normalisation == "centre_scale" else 1.0)
        return d / d.norm().clamp_min(1e-12)

    # --- files ---------------------------------------------------------------------------------------------------
    def config(self) -> dict:
        """sae.json's contents."""
        info = self.info or SaeInfo(0, "residual")
        normalisation = {"kind": self.normalisation}
        if self.normalisation == "centre_scale":
            normalisation.update(scale=self.scale, mean="input_mean in sae.safetensors")
        elif self.normalisation == "layer_norm":
            normalisation.update(eps=self.eps)
        return {"format": FORMAT, "model": info.model, "weights": info.weights, "weights_sha256": info.weights_sha256,
                "layer": info.layer, "hook_point": info.hook_point, "d_model": self.d_model, "latents": self.latents,
                "k": self.k, "kind": self.kind, "input_normalisation": normalisation, "source": info.source,
                **info.extra}

    def save(self, folder: Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        tensors = {name: getattr(self, name).contiguous() for name in
                   ("W_enc", "b_enc", "W_dec", "b_dec", "b_pre", "input_mean")}
        if self.kind in ("jumprelu", "batchtopk"):
            tensors["threshold"] = self.threshold.contiguous()
        save_file(tensors, folder / WEIGHTS)
        (folder / CONFIG).write_text(json.dumps(self.config(), indent=2) + "\n")

    @classmethod
    def load(cls, folder: Path) -> "SparseAutoencoder":
        """An SAE saved by ``save`` (DIR/sae.json and DIR/sae.safetensors)."""
        folder = Path(folder)
        config = json.loads((folder / CONFIG).read_text())
        if config.get("format") != FORMAT:
            raise ValueError(f"{folder / CONFIG} is not an SAE written by this tool (no \"format\": \"{FORMAT}\").")
        t = load_file(folder / WEIGHTS)
        norm = config["input_normalisation"]
        known = {"format", "model", "weights", "weights_sha256", "layer", "hook_point", "d_model", "latents", "k",
                 "kind", "input_normalisation", "source"}
        info = SaeInfo(config["layer"], config["hook_point"], config.get("model", ""), config.get("weights", ""),
                       config.get("weights_sha256", ""), config.get("source", "trained"),
                       {k: v for k, v in config.items() if k not in known})
        return cls(t["W_enc"], t["b_enc"], t["W_dec"], t["b_dec"], config["kind"], config.get("k"),
                   t.get("threshold"), norm["kind"], t.get("input_mean"), norm.get("scale", 1.0),
                   norm.get("eps", 1e-5), t.get("b_pre"), info)
