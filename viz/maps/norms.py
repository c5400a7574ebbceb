"""Token norms after every block, and the high-norm "artifact" tokens among them.

Large ViTs repurpose a few low-information patch tokens (often in corners and borders) as global
scratch space; their norms grow many times larger than the others and they attract much of the
attention, which spoils attention maps (Darcet et al. 2023, "Vision Transformers Need Registers").
The AugReg ViT-Ti in ../shared/weights shows them in its four corners from block 7 on, with norms
16–46× the median patch; ordinary patches stay below 2.9× the median in it and below 2.4× in DeiT-Ti (measured
on the example photos), so a patch is flagged when its norm exceeds ``ratio`` (default 3) times the
median patch norm of the same block — a robust rule that needs no absolute scale.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .layout import to_grid


def token_norm_maps(norms: np.ndarray, num_prefix: int, grid: tuple[int, int]) -> np.ndarray:
    """Token L2 norms per block (L, T) -> patch norms (L, gh, gw)."""
    norms = np.asarray(norms, dtype=np.float32)
    if norms.ndim != 2:
        raise ValueError(f"Wrong token-norm shape! Expected (layers, tokens) but got {norms.shape}!")
    return to_grid(norms, num_prefix, grid)


def flag_high_norm(norms: np.ndarray, num_prefix: int, grid: tuple[int, int], ratio: float = 3.0) -> np.ndarray:
    """Token norms (L, T) -> bool (L, gh, gw): patches whose norm exceeds ``ratio`` × that block's median patch norm."""
    if ratio <= 1.0:
        raise ValueError(f"ratio must be greater than 1 (a multiple of the median) but got {ratio}!")
    maps = token_norm_maps(norms, num_prefix, grid)
    median = np.median(maps.reshape(maps.shape[0], -1), axis=1)[:, None, None]
    return maps > ratio * median


def artifact_mask(flags: np.ndarray, from_layer: int = 0) -> np.ndarray:
    """Per-block flags (L, gh, gw) -> (gh, gw): patches flagged in any block from ``from_layer`` on.

    This is the mask to pass as ``drop_patches`` to ``viz.maps.rollout.rollout_map``.
    """
    flags = np.asarray(flags, dtype=bool)
    return flags[from_layer:].any(axis=0)


# When do the artifact tokens dominate a map? Measured on the example photos (cat, coffee, camera) with the
# AugReg ViT-Ti, whose four corner tokens are flagged (4 of 196 patches, a uniform share of 2 %): in the
# maps a student misreads — the last layers' CLS attention and the default rollout (discard 0.9) — the
# corners hold 19–64 % of the mass (layers 8–11, mean of heads) or are the brightest patches by
# 1.5–2.0× while holding 4.8–5.7× their uniform share (rollout, cat and coffee). In layers 0–6 the same
# corners reach at most 4.2× their uniform share (one head of the cat's layer 0, where they are not the
# brightest), and at most 4.1× where they are (head 0 of the cat's layers 4 and 5, 4.0× and 4.1×: these two
# get the note); the camera photo's rollout peaks elsewhere. DeiT-Ti has no flagged tokens, so no map of it is
# ever noted.
DOMINANT_SHARE = 0.25    # flagged tokens hold at least a quarter of the map's mass, or …
DOMINANT_EXCESS = 4.0    # … at least 4× the share uniform attention would give them …
DOMINANT_PEAK = 1.25     # … and the brightest of them is 1.25× the brightest other patch (it sets the colour scale)


@dataclass(frozen=True)
class ArtifactShare:
    """How much of a map the flagged tokens take, and whether they dominate it (``artifact_share``)."""
    count: int          # flagged patches
    share: float        # their share of the map's mass, in [0, 1]
    excess: float       # share ÷ (count / patches): 1 = what uniform attention would give them
    peak_ratio: float   # brightest flagged value ÷ brightest unflagged value (0 when none is flagged)
    dominates: bool


def artifact_share(values: np.ndarray, flagged: np.ndarray) -> ArtifactShare:
    """A map (gh, gw) of non-negative values (CLS attention, rollout, a query row) and the flagged patches
    (gh, gw) bool -> ArtifactShare. They dominate when they hold ``DOMINANT_SHARE`` of the mass, or
    ``DOMINANT_EXCESS``× their uniform share while the map's brightest patch is one of them by
    ``DOMINANT_PEAK`` (see the measurements above)."""
    values = np.asarray(values, dtype=np.float64)
    flagged = np.asarray(flagged, dtype=bool)
    if values.shape != flagged.shape:
        raise ValueError(f"Map and flags differ in shape! Expected the same (gh, gw) but got {values.shape} and "
                         f"{flagged.shape}.")
    count, total = int(flagged.sum()), float(values.sum())
    if count == 0 or count == flagged.size or total <= 0:
        return ArtifactShare(count, 0.0 if count == 0 or total <= 0 else 1.0, 1.0, 0.0, False)
    share = float(values[flagged].sum()) / total
    excess = share / (count / flagged.size)
    rest = float(values[~flagged].max())
    peak = float(values[flagged].max()) / rest if rest > 0 else float("inf")
    dominates = share >= DOMINANT_SHARE or (excess >= DOMINANT_EXCESS and peak >= DOMINANT_PEAK)
    return ArtifactShare(count, share, excess, peak, bool(dominates))


def artifacts_dominate(values: np.ndarray, flagged: np.ndarray) -> bool:
    """Whether the flagged tokens dominate the map (see ``artifact_share``)."""
    return artifact_share(values, flagged).dominates
