"""How the explorer sees an architecture: one description for every model it opens.

A model's description for one input size is an ``Architecture``: its blocks in forward order and, per block, a
``BlockLayout`` — the tokens it holds (prefix tokens, then a grid of patch tokens, frame after frame), how many
heads attend, and whom a token attends to (every token, the tokens of its window, the windows shifted or not, or
a video's groups through time or across space). Three more facts complete it: the stages (blocks on the same grid)
and how a map moves between them, the readout (how the answer reads the last tokens), and the size of the photo's
patches.

Every model class implements ``architecture(height, width) -> Architecture`` (``vit.model.VisionTransformer``,
``vit.swin.SwinTransformer``, ``vit.sam.SamImageEncoder``) and the same capture interface,
``blocks_with_attention(x)``; everything downstream — the views, the explanation methods, the command line's files,
the data-set statistics, the bench — reads the description and never asks which class it holds. A new family is a
model file, its loader entries and this description of it (docs/development.md, "Adding an architecture").

    a ViT-B/16 at 224×224        12 blocks × (1 CLS + 14×14 patches), 12 heads each, global attention; one stage
    a Swin-T at 224×224          stage 0: 2 blocks on 56×56 tokens in 7×7 windows (the second shifted by 3), 3 heads;
                                 a 2×2 merge; stage 1: 2 blocks on 28×28 …; stage 3: 2 blocks on 7×7 (one window)
    a VideoMAE-B/16, 16 frames   12 blocks × 8 time positions (tubelets of 2 frames) × 14×14 patches, no prefix,
                                 global attention over all 1,568 tokens; read out by the mean of the tokens
    a TimeSformer-B, 8 frames    24 attention steps, two per block: "time" (each patch place's 8 tokens through the
                                 frames) then "space" (each frame's 14×14 patches with the CLS token)

**Video.** A video model's blocks hold ``frames`` time positions of the same gh×gw grid, each spanning ``tubelet``
input frames; token ``prefix + τ·gh·gw + r·gw + c`` is patch (r, c) of time position τ. A block is one attention
step, and ``attends`` says whom its tokens attend to (``ATTENDS``): "all" (every token: VideoMAE, ViViT, V-JEPA 2
and every photo model's global blocks), "time" (the tokens of one patch place through the frames; the prefix
tokens take no part and keep themselves) or "space" (the patches of one frame with the prefix tokens; a prefix
token is in every frame's group and takes the mean of its outputs). TimeSformer's divided block is two such steps,
so its description has two ``BlockLayout``s per block, "time" then "space", and a view reads the two apart.
``BlockLayout.groups`` lists a step's groups as stream indices (G, n): one group of every token, one per patch
place, or one per frame. A video model's maps lie on (frames, gh, gw) (``Architecture.patch_shape``).

**How a block's attention is kept.** A block with global attention over T tokens has an (H, T, T) map per image:
the explorer keeps its rows' log-sum-exps and the residual stream, and recomputes any row or column on demand
(``viz.analysis.recompute``). A windowed block's map is (nW, H, N, N) for nW windows of N tokens, small enough to
keep whole; a row of it over the block's grid is zero outside the query's window.

**How a map moves between a block's tokens and the photo's patch grid.** Blocks of one stage share a grid. Between
stages a patch merging turns each fh×fw group of tokens into one (Swin: 2×2). A distribution over a coarser grid
comes down to the finer one through the merge's adjoint: each token's value shared equally by the tokens it was
merged from (``share_down``), so a distribution stays one; ``sum_up`` undoes it. ``to_patch_grid`` carries a map
of any block down to the photo's patch grid (block 0's), the grid every image-level map is drawn on.

**How the readout reads the tokens** (``vit.readout``, the closed set): the CLS token; the mean of the patch tokens
(an average-pooled ViT, a Swin's average pool over its last stage) or of every token; CLS beside the mean; a MAP
probe attending over the patches or every token after the last block; DeiT's two heads averaged. None: no token is
read, the answer is a feature map (SAM's neck), so nothing has a readout's maps.
"""
from __future__ import annotations

from dataclasses import dataclass
import math
from typing import Literal, get_args

import numpy as np

from .readout import READOUT_NAMES, Readout

Attends = Literal["all", "time", "space"]
ATTENDS: tuple[str, ...] = get_args(Attends)


@dataclass(frozen=True)
class BlockLayout:
    """One block's tokens and whom each attends to, for one input size.

    The block holds T = prefix + frames·gh·gw tokens: ``prefix`` tokens (CLS, distillation, registers), then the
    patch tokens frame by frame, each frame's gh×gw grid in row-major order. With a ``window`` a token attends only
    to the tokens of its window: the grid rolled by −shift and cut into wh×ww tiles, row-major (on the grid itself
    the tiles displaced by ``shift`` and cut at the border; ``viz.maps.windows.window_index`` lists them); without
    one, a token attends to the tokens of its groups (``attends``, ``groups``): every token, or a video's groups
    through time or across space. A grid that is no whole number of windows is padded at the bottom and right with
    zero tokens to whole windows (``padded_grid``; SAM's windowed blocks), keys like any other.
    """
    index: int                                # the block in forward order, 0-based (the page's "layer")
    stage: int                                # blocks of a stage share their grid and heads (a plain ViT: one stage)
    block: int                                # the block within its stage, 0-based
    heads: int                                # H: attention heads
    grid: tuple[int, int]                     # (gh, gw) patch tokens per frame
    token_size: int                           # pixels of the input one patch token spans (patch size · merges)
    prefix: int = 0                           # tokens before the patches
    window: tuple[int, int] | None = None     # (wh, ww) tokens of a window; None: global attention
    shift: tuple[int, int] = (0, 0)           # (sh, sw) the windows' cyclic shift
    frames: int = 1                           # time positions (a video model's tubelets); 1 for a photo
    tubelet: int = 1                          # input frames one time position spans (1 for a photo)
    attends: Attends = "all"                  # whom a token attends to (``ATTENDS``, module docstring)

    def __post_init__(self):
        if self.attends not in ATTENDS:
            raise ValueError(f"Unknown attention {self.attends!r}! Expected one of {ATTENDS}.")
        if self.attends != "all" and self.window is not None:
            raise ValueError("A block attends inside windows or in a video's groups, not both.")

    @property
    def num_tokens(self) -> int:
        """T: every token of the block, prefix included."""
        return self.prefix + self.frames * self.grid[0] * self.grid[1]

    @property
    def windowed(self) -> bool:
        return self.window is not None

    @property
    def padded_grid(self) -> tuple[int, int]:
        """The grid the windows tile: ``grid`` rounded up to whole windows (``grid`` itself for global attention)."""
        if self.window is None:
            return self.grid
        return tuple(math.ceil(g / w) * w for g, w in zip(self.grid, self.window))

    @property
    def num_windows(self) -> int:
        """nW: windows tiling the (padded) grid (1 for global attention)."""
        if self.window is None:
            return 1
        (ph, pw), (wh, ww) = self.padded_grid, self.window
        return (ph // wh) * (pw // ww)

    @property
    def window_area(self) -> int:
        """N: tokens of one window (every token for global attention)."""
        return self.num_tokens if self.window is None else self.window[0] * self.window[1]

    @property
    def num_patches(self) -> int:
        """frames·gh·gw: the patch tokens."""
        return self.frames * self.grid[0] * self.grid[1]

    def tokens(self) -> tuple[int, tuple[int, int]]:
        """(prefix, grid): the layout an attention source reports for this block."""
        return self.prefix, self.grid

    def groups(self) -> np.ndarray:
        """(G, n) int64: the stream token of every slot of each group of tokens that attend to each other (slot j of
        group g is row and column j of that group's attention): "all" one group of every token; "time" one group per
        patch place, its ``frames`` tokens in time order; "space" one group per time position, the prefix tokens then
        that frame's patches. A windowed block's groups are its windows (``viz.maps.windows.window_index``)."""
        if self.window is not None:
            raise ValueError("A windowed block's groups are its windows: viz.maps.windows.window_index lists them.")
        P, N = self.prefix, self.grid[0] * self.grid[1]
        patches = P + np.arange(self.frames * N, dtype=np.int64).reshape(self.frames, N)    # (T', N)
        if self.attends == "time":
            return np.ascontiguousarray(patches.T)                                           # (N, T')
        if self.attends == "space":
            prefix = np.broadcast_to(np.arange(P, dtype=np.int64), (self.frames, P))
            return np.concatenate([prefix, patches], axis=1)                                 # (T', P + N)
        return np.arange(self.num_tokens, dtype=np.int64)[None]                              # (1, T)

    def places(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(τ, row, column) of every patch token (T'·gh·gw,), in stream order after the prefix."""
        gw, N = self.grid[1], self.grid[0] * self.grid[1]
        patch = np.arange(self.frames * N, dtype=np.int64)
        tau, place = np.divmod(patch, N)
        row, col = np.divmod(place, gw)
        return tau, row, col


@dataclass(frozen=True)
class Architecture:
    """A model's blocks for one input size (``BlockLayout`` each, forward order), its readout and its family.

    ``blocks[0].grid`` is the photo's patch grid; a later block's grid is the same (one stage) or a whole merge of
    it, ``merge_factor`` per axis coarser."""
    family: str                               # the family, as result.json names it: "vit", "dinov3", "swin", …
    blocks: tuple[BlockLayout, ...]
    readout: Readout | None                   # how the answer reads the last block's tokens (``vit.readout``); None:
                                              # no token is read (a feature map's answer: SAM)
    patch_size: int                           # P: pixels of the photo one patch token of block 0 spans

    def __post_init__(self):
        if not self.blocks:
            raise ValueError("An architecture needs at least one block!")
        if self.readout is not None and self.readout not in READOUT_NAMES:
            raise ValueError(f"Unknown readout {self.readout!r}! Expected one of {READOUT_NAMES}.")
        for before, after in zip(self.blocks, self.blocks[1:]):
            self.merge_factor(before, after)                   # a grid that is no merge of the one before: ValueError

    @classmethod
    def plain(cls, depth: int, heads: int, grid: tuple[int, int], patch_size: int, prefix: int = 1,
              readout: Readout = "cls", family: str = "vit") -> "Architecture":
        """``depth`` blocks of global attention with ``heads`` heads over prefix + gh·gw tokens, one stage: a plain
        ViT's description (``VisionTransformer.architecture`` makes it for a model)."""
        return cls(family, tuple(BlockLayout(index=i, stage=0, block=i, heads=heads, grid=tuple(grid),
                                             token_size=patch_size, prefix=prefix) for i in range(depth)),
                   readout, patch_size)

    # -- what the blocks are ----------------------------------------------------------------------------------------
    @property
    def depth(self) -> int:
        """L: blocks in all stages together."""
        return len(self.blocks)

    @property
    def heads(self) -> tuple[int, ...]:
        """Heads of each block."""
        return tuple(b.heads for b in self.blocks)

    @property
    def max_heads(self) -> int:
        return max(self.heads)

    @property
    def grid(self) -> tuple[int, int]:
        """(gh, gw): the photo's patch grid, block 0's, where every image-level map is drawn."""
        return self.blocks[0].grid

    @property
    def num_prefix(self) -> int:
        """Tokens before the patches in block 0 (0 for a model without CLS or registers)."""
        return self.blocks[0].prefix

    @property
    def input_size(self) -> tuple[int, int]:
        """(H, W) in pixels of the model input."""
        return self.grid[0] * self.patch_size, self.grid[1] * self.patch_size

    @property
    def stages(self) -> tuple[tuple[int, ...], ...]:
        """The blocks of each stage, as block indices."""
        out: dict[int, list[int]] = {}
        for b in self.blocks:
            out.setdefault(b.stage, []).append(b.index)
        return tuple(tuple(indices) for _, indices in sorted(out.items()))

    @property
    def one_sequence(self) -> bool:
        """Whether every block attends globally over the same tokens: one sequence of T tokens through the whole
        model, so a token has its own row in every block, the (L, H, T, T) array exists, and a token can be dropped
        from the sequence (the views and methods that read one token through every layer need this)."""
        first = self.blocks[0]
        return all(b.window is None and b.attends == "all" and
                   (b.prefix, b.grid, b.frames) == (first.prefix, first.grid, first.frames) for b in self.blocks)

    @property
    def windowed(self) -> bool:
        """Whether any block attends inside windows."""
        return any(b.window is not None for b in self.blocks)

    @property
    def frames(self) -> int:
        """T': time positions of block 0 (1 for a photo)."""
        return self.blocks[0].frames

    @property
    def tubelet(self) -> int:
        """Input frames one time position spans (1 for a photo)."""
        return self.blocks[0].tubelet

    @property
    def video(self) -> bool:
        """Whether the model reads a clip of several frames (frames × tubelet > 1) rather than a photo."""
        return self.frames * self.tubelet > 1

    @property
    def patch_shape(self) -> tuple[int, ...]:
        """Where every input-level map lies: (gh, gw) for a photo, (frames, gh, gw) for a video."""
        return (self.frames, *self.grid) if self.video else self.grid

    @property
    def steps(self) -> tuple[str, ...]:
        """Each block's ``attends``, in forward order ("time", "space" … for a TimeSformer)."""
        return tuple(b.attends for b in self.blocks)

    def block(self, layer: int) -> BlockLayout:
        """Block ``layer`` (negative counts from the end); IndexError names the range."""
        if not -self.depth <= layer < self.depth:
            raise IndexError(f"Layer {layer} does not exist! Expected 0 <= layer < {self.depth} (or negative from the "
                             f"end).")
        return self.blocks[layer]

    # -- how a map moves between grids ------------------------------------------------------------------------------
    @staticmethod
    def merge_factor(finer: BlockLayout, coarser: BlockLayout) -> tuple[int, int]:
        """(fh, fw): tokens of ``finer``'s grid merged into one of ``coarser``'s, per axis ((1, 1) within a stage)."""
        (gh, gw), (ch, cw) = finer.grid, coarser.grid
        if ch < 1 or cw < 1 or gh % ch or gw % cw:
            raise ValueError(f"A {ch}×{cw} grid is no merge of a {gh}×{gw} grid: expected each block's grid equal to "
                             f"the one before or a whole merge of it.")
        return gh // ch, gw // cw

    def token_of(self, row: int, col: int, layer: int) -> tuple[int, int]:
        """The token (row, col) of block ``layer``'s grid that covers patch (row, col) of the photo's grid."""
        gh0, gw0 = self.grid
        if not (0 <= row < gh0 and 0 <= col < gw0):
            raise ValueError(f"Patch ({row}, {col}) is outside the {gh0}×{gw0} patch grid!")
        gh, gw = self.block(layer).grid
        return row * gh // gh0, col * gw // gw0

    def to_patch_grid(self, values: np.ndarray, layer: int) -> np.ndarray:
        """A map over block ``layer``'s patches (gh_l, gw_l), or a video's (frames, gh_l, gw_l), or flat -> over the
        input's patch grid (``patch_shape``: (gh0, gw0), or (frames, gh0, gw0)), shared down through every merge
        (``share_down``): a distribution stays one."""
        block = self.block(layer)
        flat = np.asarray(values, np.float32).reshape(block.frames, -1)
        return share_down(flat, block.grid, self.grid).reshape(self.patch_shape)


def architecture_of(model, x) -> Architecture:
    """The description of ``model`` for its input ``x``: images (B, C, H, W), or clips (B, F, C, H, W), whose frame
    count the description follows (``VideoTransformer.architecture(height, width, frames)``)."""
    if x.ndim == 5:
        return model.architecture(x.shape[-2], x.shape[-1], frames=x.shape[1])
    return model.architecture(x.shape[-2], x.shape[-1])


NO_READOUT = ("This model reads no token: its answer is a feature map (SAM's image encoder: what its mask decoder "
              "reads), not a class, so it has no readout's maps and no class maps to draw (rollout, the readout's "
              "attention, explanations, faithfulness and sanity checks, the views inside the model); vit.load opens "
              "it, checked against its library, and model.forward_with_attention(x) gives every block's attention on "
              "its own layout.")


def require_readout(model) -> None:
    """ValueError (``NO_READOUT``) for a model whose description reads no token; nothing for other models."""
    if model.architecture(*model.cfg.img_size).readout is None:
        raise ValueError(NO_READOUT)


def require_one_sequence(model, what: str) -> None:
    """ValueError saying that ``what`` (a view or pass that follows one token through every layer) needs one sequence
    of tokens, which ``model`` has not (its blocks change grid or attend inside windows); nothing for other models."""
    if not model.architecture(*model.cfg.img_size).one_sequence:
        raise ValueError(f"{what} reads one sequence of tokens through every layer; this model's blocks change grid or "
                         f"attend inside windows, so it has none.")


def share_down(values: np.ndarray, grid: tuple[int, int], finer: tuple[int, int]) -> np.ndarray:
    """Values (…, gh·gw) over a merged grid -> (…, gh'·gw') over the ``finer`` grid it was merged from: each token's
    value shared equally by the fh×fw tokens merged into it (the merge's adjoint r·M, M[p, c] = 1/(fh·fw))."""
    values = np.asarray(values, dtype=np.float32)
    (gh, gw), (fh, fw) = grid, (finer[0] // grid[0], finer[1] // grid[1])
    if values.shape[-1] != gh * gw or fh * gh != finer[0] or fw * gw != finer[1]:
        raise ValueError(f"Expected values over a {gh}×{gw} grid merged from {finer[0]}×{finer[1]} but got shape "
                         f"{values.shape}.")
    if (fh, fw) == (1, 1):
        return values
    parents = values.reshape(values.shape[:-1] + (gh, 1, gw, 1)) / float(fh * fw)
    return np.broadcast_to(parents, values.shape[:-1] + (gh, fh, gw, fw)).reshape(values.shape[:-1] + (gh * fh * gw * fw,))


def sum_up(values: np.ndarray, grid: tuple[int, int], coarser: tuple[int, int]) -> np.ndarray:
    """Values (…, gh·gw) over a grid -> (…, ch·cw) over the ``coarser`` grid merged from it: each group summed
    (undoes ``share_down``)."""
    values = np.asarray(values, dtype=np.float32)
    (gh, gw), (ch, cw) = grid, coarser
    fh, fw = gh // ch, gw // cw
    return values.reshape(values.shape[:-1] + (ch, fh, cw, fw)).sum(axis=(-3, -1)).reshape(
        values.shape[:-1] + (ch * cw,))


def stage_records(arch: Architecture) -> list[dict]:
    """The stages as result.json and statistics.json write them: each stage's grid, window (null: global attention),
    heads, blocks, each block's shift and the pixels one of its tokens spans."""
    out = []
    for blocks in arch.stages:
        first = arch.blocks[blocks[0]]
        out.append({"grid": list(first.grid), "window": None if first.window is None else list(first.window),
                    "heads": first.heads, "blocks": list(blocks), "shifts": [list(arch.blocks[b].shift) for b in blocks],
                    "token_size": first.token_size})
    return out
