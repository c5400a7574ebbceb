"""A guided walk through the ViT on one photo: run the model's own modules step by step and keep what each
step produced, so that every shape a student is shown is the shape of a real tensor of this model.

The steps follow the paper (Dosovitskiy et al. 2021, Eq. 1–4):

    crop (H×W×C) -> patches (N × P²·C) -> patch embeddings x_p E (N × D) -> [CLS; …] (T × D)
    -> z₀ = [CLS; x_p E] + E_pos (T × D) -> L encoder layers (T × D, attention H×T×T) -> y = LN(z_L⁰) (D)
    -> logits (K) -> softmax (K)

Everything is taken from tensors the model computes (``patch_embed``, ``embed``, every ``Block``, ``norm``,
``forward_head``); nothing is derived from the config. The pictures and sentences are in ``viz.learn.steps``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from PIL import Image

from vit.preprocess import upright_rgb
from vit.architecture import require_one_sequence

from ..maps.embeddings import position_similarity


@dataclass(frozen=True)
class Walkthrough:
    """What each step of the forward pass produced for one image (batch dimension dropped everywhere)."""
    image: Image.Image                 # the crop the model saw (RGB, width × height)
    resized: tuple[int, int]           # (width, height) of the photo after the resize, before the crop
    stretched: bool                    # the resize gave up the photo's aspect ratio (squash)
    patch_size: int                    # P
    grid: tuple[int, int]              # (gh, gw) patches
    prefix_names: tuple[str, ...]      # the tokens before the patches, e.g. ("CLS",) or ("CLS", "DIST")
    pool: str                          # the readout (vit.readout): "cls" the CLS output, "mean" of the patches, …
    shapes: dict                       # step -> shape of its real tensor (see ``STEPS``)
    patches: np.ndarray                # (N, C·P·P) every patch of the normalised input, flattened as (C, P, P)
    embeddings: np.ndarray             # (N, D) patch embeddings: the output of ``patch_embed``
    tokens: np.ndarray                 # (T, D) the prefix tokens prepended, before the position embeddings
    embedded: np.ndarray               # (T, D) z₀: the output of ``embed`` (position embeddings added)
    # (N, N) cosine similarity of the patches' position embeddings; for a rotary model without them the similarity
    # its rotation implies (``VisionTransformer.rotary_kernel``); None for a model with neither (BEiT)
    position_similarity: np.ndarray | None
    cls_attention: np.ndarray          # (L, H, T) every layer's attention row of the first token (CLS)
    output: np.ndarray                 # (D,) y: what the head reads (the final CLS token, or the pooled patches)
    logits: np.ndarray                 # (K,)
    probabilities: np.ndarray          # (K,) softmax of the logits
    labels: tuple[str, ...]            # K class names
    positions: str = "table"           # how positions enter: "table" (added), "rotary" (q and k rotated), "none"

    @property
    def depth(self) -> int:
        return self.cls_attention.shape[0]

    @property
    def heads(self) -> int:
        return self.cls_attention.shape[1]

    def patch_index(self, row: int, col: int) -> int:
        """Row-major index of patch (row, col) among the N patches (ValueError outside the grid)."""
        gh, gw = self.grid
        if not (0 <= row < gh and 0 <= col < gw):
            raise ValueError(f"Patch ({row}, {col}) is outside the {gh}×{gw} grid! Expected 0 <= row < {gh}, "
                             f"0 <= col < {gw}.")
        return row * gw + col


# The steps in order; ``Walkthrough.shapes`` has one entry per step.
STEPS = ("image", "patches", "embeddings", "tokens", "embedded", "layers", "attention", "output", "logits",
         "probabilities")


@torch.inference_mode()
def walk(model, preprocess, image: Image.Image, labels=None) -> Walkthrough:
    """Run ``model`` (a ``vit.VisionTransformer``) on ``image`` one module at a time -> Walkthrough.

    ``preprocess``: a ``vit.Preprocess`` (its crop sets the input size, e.g. (224, 320)); ``labels``: the class
    names (default "class i"). The logits are those of ``model(x)``: the steps are the model's own forward.
    """
    require_one_sequence(model, "The guided walk through the forward pass")
    crop = preprocess.crop_image(image)
    x = preprocess.to_tensor(crop).to(next(model.parameters()).device)    # (1, C, H, W)
    P = model.patch_embed.patch_size
    patches = x.unfold(2, P, P).unfold(3, P, P)                           # (1, C, gh, gw, P, P)
    _, C, gh, gw = patches.shape[:4]
    patches = patches.permute(0, 2, 3, 1, 4, 5).reshape(1, gh * gw, C * P * P)  # (1, N, C·P·P) in conv order
    embeddings = model.patch_embed(x)                                     # (1, N, D)
    embedded = model.embed(x)                                             # (1, T, D) = z₀
    tokens = _prepended(model, embeddings)                                # (1, T, D) before E_pos
    where = model.token_positions(*x.shape[-2:], x.device)          # relative bias, rotary angles (or None)
    z, rows, layer_shape, attention_shape = embedded, [], None, None
    for block in model.blocks:
        z, attn = block(z, True, where)                                   # (1, T, D), (1, H, T, T)
        rows.append(attn[0, :, 0, :])                                     # (H, T): where the first token looks
        layer_shape, attention_shape = tuple(z.shape[1:]), tuple(attn.shape[1:])
    output = _head_input(model, z)                                        # (1, D)
    logits = model.forward_head(z)                                        # (1, K)
    probabilities = logits.float().softmax(dim=-1)
    table = model.resampled_pos_embed((gh, gw))                          # (1, prefix + N, D) or None
    if table is not None:                                                 # the patches' position embeddings' similarity
        positions, similarity = "table", position_similarity(table[0, -gh * gw:].detach().float().cpu().numpy(),
                                                             (gh, gw))
    elif model.cfg.rope:                                                  # what the rotation implies on this grid
        positions, similarity = "rotary", model.rotary_kernel((gh, gw)).cpu().numpy()
    else:
        positions, similarity = "none", None
    K = logits.shape[-1]
    names = tuple(labels) if labels is not None and len(labels) == K else tuple(f"class {i}" for i in range(K))
    cfg = model.cfg
    prefix = ("CLS",) * int(cfg.class_token) + ("DIST",) * int(cfg.distilled) + ("REG",) * cfg.num_reg_tokens
    shapes = {
        "image": tuple(np.asarray(crop).shape),                           # (H, W, C)
        "patches": tuple(patches.shape[1:]),
        "embeddings": tuple(embeddings.shape[1:]),
        "tokens": tuple(tokens.shape[1:]),
        "embedded": tuple(embedded.shape[1:]),
        "layers": layer_shape,
        "attention": attention_shape,
        "output": tuple(output.shape[1:]),
        "logits": tuple(logits.shape[1:]),
        "probabilities": tuple(probabilities.shape[1:]),
    }
    as_numpy = lambda t: t[0].detach().float().cpu().numpy()
    upright = upright_rgb(image).size
    resized = preprocess.resized_size(upright)
    scale_x, scale_y = resized[0] / upright[0], resized[1] / upright[1]
    return Walkthrough(image=crop, resized=resized, stretched=abs(scale_x / scale_y - 1.0) > 0.01, patch_size=P,
                       grid=(gh, gw), prefix_names=prefix,
                       pool=cfg.readout, shapes=shapes, patches=as_numpy(patches), embeddings=as_numpy(embeddings),
                       tokens=as_numpy(tokens), embedded=as_numpy(embedded),
                       position_similarity=similarity, positions=positions,
                       cls_attention=torch.stack(rows).float().cpu().numpy(), output=as_numpy(output),
                       logits=as_numpy(logits), probabilities=as_numpy(probabilities), labels=names)


def _prepended(model, embeddings: torch.Tensor) -> torch.Tensor:
    """(1, N, D) patch embeddings -> (1, T, D) with the model's learnt prefix tokens in front, in the order
    ``model.embed`` puts them (CLS, DIST, then the registers), before any position embedding."""
    first = [t for t in (model.cls_token, model.dist_token) if t is not None]
    registers = [model.reg_token] if model.reg_token is not None else []
    return torch.cat(first + registers + [embeddings], dim=1)


def _head_input(model, z: torch.Tensor) -> torch.Tensor:
    """Final tokens (1, T, D) -> y (1, D), what the classifier reads: as ``forward_head`` pools them."""
    return model.pool(z)[0]
