"""Noisy linear imputation, the fill of ROAD (Rong et al. 2022, "A Consistent and Efficient Evaluation Strategy for
Attribution Methods", ICML; the authors' code is ``imputations.py`` of tleemann/road_evaluation, which
pytorch-grad-cam ships as ``pytorch_grad_cam.metrics.road.NoisyLinearImputer``).

Mean or blurred fills leave the removed region's *shape* in the image, and a network can read the class from the
shape of the mask alone (the paper's "class information leakage"). ROAD fills every removed pixel with the weighted
mean of its 8 neighbours, 1/6 for the four sharing a side and 1/12 for the four sharing a corner (neighbours
outside the image are left out and the weights of the others are not renormalised), solved for all removed
pixels at once: with U the removed pixels, for each i in U

    (Σ_{j ∈ nb(i)} w_j) · x_i − Σ_{j ∈ nb(i) ∩ U} w_j · x_j = Σ_{j ∈ nb(i) \\ U} w_j · v_j

a sparse symmetric positive-definite system (one unknown per removed pixel, one right-hand side per channel), then
adds Gaussian noise of standard deviation ``noise`` (0.01 in the paper, in the units of the model input), seeded.

The system is solved with scipy's sparse LU (SuperLU), the solver the authors use, in its symmetric mode
(``SOLVER``), once for the three colour channels. With nothing kept every constant solves the
system; the fill is then the image's mean colour (the constant that keeps its average), plus the noise.
"""
from __future__ import annotations

import numpy as np
import torch

NOISE = 0.01             # standard deviation of the noise added to the imputed pixels (the paper's default)
# SuperLU told that A is symmetric and needs no pivoting (it is diagonally dominant): minimum-degree ordering on
# A + Aᵀ, the diagonal kept as pivots. The same solution as its default partial pivoting (to 1e-15 in float64),
# about 1.5 times faster for 50 to 90 % of the patches removed.
SOLVER = dict(permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0, options=dict(SymmetricMode=True))
NEIGHBOURS = (((1, 1), 1 / 12), ((0, 1), 1 / 6), ((-1, 1), 1 / 12), ((1, -1), 1 / 12), ((0, -1), 1 / 6),
              ((-1, -1), 1 / 12), ((1, 0), 1 / 6), ((-1, 0), 1 / 6))   # ((row offset, column offset), weight)


def imputation_system(keep: np.ndarray, image: np.ndarray):
    """The linear system of the removed pixels: keep (H, W) bool (False: removed), image (C, H, W) float ->
    (A (n, n) scipy CSC matrix, b (n, C), removed (n,) flat pixel indices, row-major)."""
    from scipy import sparse

    H, W = keep.shape
    known = keep.ravel()
    removed = np.flatnonzero(~known)
    n = removed.size
    unknown_id = np.full(H * W, -1, dtype=np.int64)
    unknown_id[removed] = np.arange(n)
    values = image.reshape(image.shape[0], -1)
    r, c = np.divmod(removed, W)
    rows, cols, entries = [np.arange(n)], [np.arange(n)], []
    diagonal = np.zeros(n)
    b = np.zeros((n, image.shape[0]))
    for (dr, dc), w in NEIGHBOURS:
        rr, cc = r + dr, c + dc
        inside = (rr >= 0) & (rr < H) & (cc >= 0) & (cc < W)
        diagonal[inside] += w
        at = np.flatnonzero(inside)
        j = rr[inside] * W + cc[inside]
        kept = known[j]
        b[at[kept]] += w * values[:, j[kept]].T                # known neighbours: the right-hand side
        rows.append(at[~kept])
        cols.append(unknown_id[j[~kept]])                      # removed neighbours: unknowns
        entries.append(np.full(int((~kept).sum()), -w))
    A = sparse.csc_matrix((np.concatenate([diagonal] + entries), (np.concatenate(rows), np.concatenate(cols))),
                          shape=(n, n))
    return A, b, removed


def noisy_linear_imputation(image: torch.Tensor, keep: torch.Tensor | np.ndarray, noise: float = NOISE,
                            generator: torch.Generator | None = None) -> torch.Tensor:
    """ROAD's fill: image (C, H, W), keep (H, W) (nonzero / True: kept) -> (C, H, W), the kept pixels unchanged and
    the removed ones imputed plus ``noise`` · N(0, 1) drawn from ``generator`` (the global one when None), in the
    order pytorch-grad-cam draws them (one (n, C) block, channel fastest), so the same seed gives the same noise."""
    from scipy.sparse.linalg import splu

    keep = np.asarray(keep.cpu() if isinstance(keep, torch.Tensor) else keep) > 0.5
    if keep.shape != tuple(image.shape[-2:]):
        raise ValueError(f"keep must be the image's (H, W) {tuple(image.shape[-2:])} but got {keep.shape}!")
    work = image.detach().cpu()
    work = work if work.dtype in (torch.float32, torch.float64) else work.float()
    pixels = work.numpy()                                       # (C, H, W); numpy: small copies stay cheap
    out = pixels.reshape(pixels.shape[0], -1).copy()
    if not keep.all():
        values = pixels.astype(np.float64)
        if not keep.any():                                      # every constant solves it: the mean colour
            removed = np.arange(keep.size)
            solution = np.broadcast_to(values.reshape(values.shape[0], -1).mean(axis=1), (keep.size, values.shape[0]))
        else:
            A, b, removed = imputation_system(keep, values)
            solution = splu(A, **SOLVER).solve(b)                # (n, C): one factorisation, every channel
        drawn = torch.randn((solution.shape[1], solution.shape[0]), generator=generator, dtype=work.dtype)  # (C, n)
        out[:, removed] = solution.T.astype(pixels.dtype) + pixels.dtype.type(noise) * drawn.numpy()
    return torch.from_numpy(out).reshape(image.shape).to(image.device, image.dtype)
