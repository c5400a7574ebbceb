"""The model on fewer patches, and the model with its top blocks re-initialised: the two interventions that test
whether an explanation is faithful (perturbation curves, Petsiuk et al. 2018; Chefer et al. 2021) and whether it
depends on the model at all (cascading model randomisation, Adebayo et al. 2018).

``forward_kept(model, x, keep)`` drops patch tokens from the sequence instead of greying or blurring pixels, so
the model never sees an out-of-distribution patch: image b keeps its prefix tokens (CLS, DIST, registers) and the
patches ``keep[b]``, and each kept patch keeps its own position, whatever the scheme:

- learned / sine-cosine table: the table is added before the tokens are gathered (``model.embed``);
- rotary (EVA-02): the kept patches' own rotation angles, per image;
- relative position bias (BEiT): the (prefix + K)² sub-matrix of the bias index, per image;
- mean / MAP pooling: over the kept patches only (the pooling sees the shorter sequence).

Every step of ``model.embed`` acts on each token alone (patch projection, + position, CLIP's norm_pre), so
gathering after it equals embedding only the kept tokens. B differently perturbed copies of one photo run as
one batch of B sequences of the same length.
"""
from __future__ import annotations

import copy
from typing import Iterator

import torch
import torch.nn as nn

from ..positions import TokenPositions


def _kept_positions(model, height: int, width: int, keep: torch.Tensor) -> TokenPositions | None:
    """The rotary angles and relative-position rows of the kept tokens (None for position tables or none)."""
    full = model.token_positions(height, width, keep.device)
    if full is None:
        return None
    n = full.num_prefix
    rope = None
    if full.rope is not None:
        sin, cos = full.rope                                                    # each (N, Dh)
        rope = (sin[keep].unsqueeze(1), cos[keep].unsqueeze(1))                # each (B, 1, K, Dh): per image, all heads
    rel_index = None
    if full.rel_index is not None:
        B = keep.shape[0]
        prefix = torch.arange(n, device=keep.device).expand(B, n)               # (B, n)
        tokens = torch.cat([prefix, keep + n], dim=1)                           # (B, n + K) rows of the full layout
        rel_index = full.rel_index[tokens[:, :, None], tokens[:, None, :]]      # (B, n + K, n + K)
    return TokenPositions(n, rope, rel_index)


def forward_kept(model, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """The model's output when image b sees only its prefix tokens and the patches ``keep[b]``.

    x: (B, C, H, W) or one image (1, C, H, W) shared by every row of ``keep``; keep: (B, K) long, row-major patch
    indices in [0, N) (any order: positions travel with the tokens, so the order does not change the output)
    -> output (B, num_classes) (or the embedding, as ``model(x)``). K = 0 keeps the prefix tokens alone, which
    only a model that reads a class token can classify: mean and MAP pooling have nothing to pool and raise.
    """
    if keep.ndim != 2:
        raise ValueError(f"keep must be (B, K) patch indices but got shape {tuple(keep.shape)}!")
    B, K = keep.shape
    if x.shape[0] not in (1, B):
        raise ValueError(f"x must hold one image or one per row of keep ({B}) but holds {x.shape[0]}!")
    layout = model.token_layout(x.shape[-2], x.shape[-1])
    N, n = layout.grid[0] * layout.grid[1], layout.num_prefix
    if K and (int(keep.min()) < 0 or int(keep.max()) >= N):
        raise ValueError(f"keep holds patch indices outside [0, {N}) for a {layout.grid[0]}×{layout.grid[1]} grid: "
                         f"got {int(keep.min())}…{int(keep.max())}!")
    if K == 0 and model.cfg.global_pool != "token":
        raise ValueError(f"A model with global_pool={model.cfg.global_pool!r} pools the patches, so it needs at "
                         f"least one kept patch; got none.")
    keep = keep.to(x.device)
    tokens = model.embed(x)                                                     # (B or 1, T, D), positions added
    D = tokens.shape[-1]
    tokens = tokens.expand(B, -1, -1)                                           # (B, T, D)
    patches = torch.gather(tokens[:, n:], 1, keep[:, :, None].expand(B, K, D))  # (B, K, D): the kept patches
    h = torch.cat([tokens[:, :n], patches], dim=1)                              # (B, n + K, D)
    positions = _kept_positions(model, x.shape[-2], x.shape[-1], keep)
    for blk in model.blocks:
        h, _ = blk(h, False, positions)
    return model.forward_head(h)


# --- cascading model randomisation (Adebayo et al. 2018) -----------------------------------------------------------

def _reinitialise(block: nn.Module, generator: torch.Generator) -> None:
    """Draw a block's weights afresh as ``VisionTransformer.__init__`` does (truncated normal 0.02 for linear maps,
    zero biases, identity LayerNorms), with the relative-position table drawn like timm's (normal 0.02, not zero,
    so that a randomised BEiT block does not lose its positions to a constant). LayerScale keeps its learnt
    gains: re-initialised to 1e-5 the randomised block would all but vanish from the residual stream, and the
    check would test a shallower model instead of a random one."""
    with torch.no_grad():
        for m in block.modules():
            if isinstance(m, (nn.Linear, nn.Conv2d)):
                nn.init.trunc_normal_(m.weight, std=0.02, generator=generator)
                if m.bias is not None:
                    m.bias.zero_()
            elif isinstance(m, nn.LayerNorm):
                m.weight.fill_(1.0)
                m.bias.zero_()
            for name in ("q_bias", "v_bias"):
                if isinstance(getattr(m, name, None), nn.Parameter):
                    getattr(m, name).zero_()
            table = getattr(m, "relative_position_bias_table", None)
            if isinstance(table, nn.Parameter):
                nn.init.trunc_normal_(table, std=0.02, generator=generator)


def randomize_block(model, index: int, seed: int = 0) -> None:
    """Re-initialise block ``index`` of ``model`` IN PLACE (call it on a copy), seeded by (seed, index) so block
    ``index`` gets the same weights in every cascade, whichever blocks were randomised before it."""
    generator = torch.Generator().manual_seed(seed * 1_000_003 + index)
    _reinitialise(model.blocks[index], generator)


def randomized_copy(model, blocks: int, seed: int = 0):
    """A copy of ``model`` with its top ``blocks`` blocks re-initialised (0 <= blocks <= L); the model is untouched."""
    L = len(model.blocks)
    if not 0 <= blocks <= L:
        raise ValueError(f"blocks must be between 0 and the model's depth {L} but got {blocks}!")
    randomized = copy.deepcopy(model)
    for index in range(L - 1, L - 1 - blocks, -1):
        randomize_block(randomized, index, seed)
    return randomized.eval()


def cascading_randomization(model, seed: int = 0) -> Iterator[tuple[int, object]]:
    """Yield ``(k, copy with the top k blocks randomised)`` for k = 1 … L, from the top block down (Adebayo et al.'s
    cascading randomisation). One copy is made and randomised one more block per step (the yielded model is the
    same object each time), so the whole cascade costs one copy of the weights; the caller's model is untouched."""
    randomized = copy.deepcopy(model).eval()
    L = len(model.blocks)
    for k in range(1, L + 1):
        randomize_block(randomized, L - k, seed)
        yield k, randomized
