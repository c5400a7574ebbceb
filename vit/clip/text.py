"""CLIP's text tower, written with the image model's own blocks (same pre-norm block, causal attention).

    tokens (B, 77) -> token embedding + learnt position embedding    -> (B, 77, W)
      -> L × Block with a causal mask (token t sees tokens ≤ t)      -> (B, 77, W)
      -> LayerNorm -> the EOT token's vector (B, W) -> Linear W→E, no bias -> (B, E) text embedding

The EOT token is the last one every earlier token could reach, so it summarises the text (OpenAI's and
open_clip's "argmax" pooling, Hugging Face's EOS pooling). ``logit_scale`` is the learnt log temperature
that CLIP shares between the two towers: a logit is exp(logit_scale) · cosine(image, text).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import torch
import torch.nn as nn

from ..model import Block, ViTConfig, init_weights


@dataclass(frozen=True)
class TextConfig:
    vocab_size: int = 49408        # token ids (CLIP's BPE: 49,406 words and merges + SOT + EOT)
    context_length: int = 77       # tokens per text, padded with zeros after EOT
    width: int = 512               # W: token width
    depth: int = 12                # transformer blocks
    num_heads: int = 8             # attention heads (OpenAI: W / 64)
    mlp_dim: int = 2048            # hidden width of each block's MLP (4·W)
    mlp_act: str = "quick_gelu"    # "quick_gelu" for OpenAI's models, "gelu" for most trained with open_clip
    layer_norm_eps: float = 1e-5   # torch's default, as in every CLIP implementation
    proj_dim: int = 512            # E: width of the shared image–text space
    eot_token_id: int = 49407      # the token whose final vector is the text's embedding

    def block_config(self) -> ViTConfig:
        """The blocks are ViT blocks of the text's width: this is their config."""
        return ViTConfig(embed_dim=self.width, depth=self.depth, num_heads=self.num_heads, mlp_dim=self.mlp_dim,
                         mlp_act=self.mlp_act, layer_norm_eps=self.layer_norm_eps, num_classes=0)


class TextTransformer(nn.Module):
    def __init__(self, cfg: TextConfig):
        super().__init__()
        self.cfg = cfg
        W = cfg.width
        self.token_embedding = nn.Embedding(cfg.vocab_size, W)
        self.pos_embed = nn.Parameter(torch.zeros(cfg.context_length, W))  # (77, W)
        self.blocks = nn.ModuleList([Block(cfg.block_config(), 0.0, causal=True) for _ in range(cfg.depth)])
        self.norm = nn.LayerNorm(W, eps=cfg.layer_norm_eps)
        self.proj = nn.Linear(W, cfg.proj_dim, bias=False)
        self.logit_scale = nn.Parameter(torch.tensor(2.6592))  # log(1/0.07), CLIP's initial temperature
        self.apply(init_weights)
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.pos_embed, std=0.01)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Token ids (B, context_length) -> text embeddings (B, E), not normalised."""
        B, T = tokens.shape
        if T != self.cfg.context_length:
            raise ValueError(f"Wrong number of tokens! Expected {self.cfg.context_length} per text but got {T}.")
        x = self.token_embedding(tokens) + self.pos_embed      # (B, T, W)
        for blk in self.blocks:
            x, _ = blk(x)
        x = self.norm(x)
        eot = (tokens == self.cfg.eot_token_id).int().argmax(dim=-1)  # (B,) first EOT of each text
        return self.proj(x[torch.arange(B), eot])              # (B, E)


def infer_text_config(sd: dict, **overrides) -> TextConfig:
    """TextConfig from a text tower's tensors in our key names (``token_embedding.weight``, ``blocks.N.*``, …).

    Heads are not visible in the shapes: W / 64, as in every OpenAI and open_clip text tower, unless given.
    """
    need = ("token_embedding.weight", "pos_embed", "proj.weight", "logit_scale")
    missing = [k for k in need if k not in sd]
    if missing:
        raise ValueError(f"Incomplete CLIP text tower: no {', '.join('text.' + k for k in missing)} in the checkpoint.")
    V, W = sd["token_embedding.weight"].shape
    blocks = {int(m[1]) for k in sd if (m := re.match(r"blocks\.(\d+)\.", k))}
    fields = dict(vocab_size=int(V), width=int(W), context_length=int(sd["pos_embed"].shape[0]),
                  depth=max(blocks) + 1 if blocks else 0, num_heads=max(int(W) // 64, 1),
                  mlp_dim=int(sd["blocks.0.mlp.fc1.weight"].shape[0]) if "blocks.0.mlp.fc1.weight" in sd else 4 * int(W),
                  proj_dim=int(sd["proj.weight"].shape[0]))
    return TextConfig(**{**fields, **overrides})
