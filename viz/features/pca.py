"""Principal components of patch features, and DINOv2's pictures of them (Oquab et al. 2023, Figure 1).

A PCA here is fitted from the mean and the second moment of the features (``fit_moments``), in float64, so that one
fit serves a single photo (``fit_pca``) and a whole folder whose moments were summed image by image
(``viz.features.joint``): the same numbers either way. The components are the eigenvectors of the covariance with
the largest eigenvalues; each is signed so that its largest entry in absolute value is positive (a PCA's signs are
arbitrary; this makes them reproducible). ``explained_variance_ratio`` is each eigenvalue over their sum, as
scikit-learn's ``PCA`` reports it.

- ``pca_rgb``: the first three components' projections, each scaled to [0, 1] over the patches, as red, green and
  blue: patches whose features are alike get alike colours.
- ``foreground_rgb``: DINOv2's foreground option: the first component thresholded (the side of it that holds less of
  the photo's border is the foreground), the PCA fitted again on the foreground patches alone, the background black.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

COMPONENTS = 3                 # red, green, blue
FOREGROUND_THRESHOLD = 0.5     # on the first component scaled to [0, 1]


@dataclass(frozen=True)
class Pca:
    """A fitted PCA: ``project(x) = (x - mean) @ components.T``."""
    mean: np.ndarray                      # (D,) float64
    components: np.ndarray                # (k, D) float64, orthonormal rows, largest variance first
    explained_variance: np.ndarray        # (k,) the covariance's top eigenvalues (divided by count - 1)
    explained_variance_ratio: np.ndarray  # (k,) each over the total variance (the trace)
    count: int                            # patches it was fitted on

    def project(self, features: np.ndarray) -> np.ndarray:
        """(..., D) -> (..., k) float32: the unscaled projections on the components."""
        return ((np.asarray(features, dtype=np.float64) - self.mean) @ self.components.T).astype(np.float32)


def moments(features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(N, D) -> (mean (D,), second moment (D, D)) in float64: what a PCA is fitted from (``fit_moments``)."""
    x = np.asarray(features, dtype=np.float64)
    return x.mean(axis=0), x.T @ x / len(x)


def fit_moments(mean: np.ndarray, second: np.ndarray, count: int, k: int = COMPONENTS) -> Pca:
    """A PCA from the mean (D,) and the second moment E[x xᵀ] (D, D) of ``count`` samples (count ≥ k + 1)."""
    if count < k + 1:
        raise ValueError(f"A PCA with {k} components needs at least {k + 1} patches but got {count}!")
    mean = np.asarray(mean, dtype=np.float64)
    covariance = (np.asarray(second, dtype=np.float64) - np.outer(mean, mean)) * (count / (count - 1))
    values, vectors = np.linalg.eigh((covariance + covariance.T) / 2)    # ascending
    order = np.argsort(values)[::-1][:k]
    components = vectors[:, order].T                                      # (k, D)
    largest = np.abs(components).argmax(axis=1)
    components *= np.sign(components[np.arange(k), largest])[:, None]
    values = np.clip(values, 0.0, None)
    total = values.sum()
    top = values[order]
    ratio = top / total if total > 0 else np.zeros(k)
    return Pca(mean, components, top, ratio, int(count))


def fit_pca(features: np.ndarray, k: int = COMPONENTS) -> Pca:
    """A PCA of the rows of ``features`` (N, D)."""
    return fit_moments(*moments(features), len(features), k)


def unit_range(values: np.ndarray) -> np.ndarray:
    """Each last-axis channel scaled to [0, 1] by its own minimum and maximum over the other axes (a constant
    channel reads 0) -> float32."""
    values = np.asarray(values, dtype=np.float32)
    flat = values.reshape(-1, values.shape[-1])
    low, high = flat.min(axis=0), flat.max(axis=0)
    span = np.where(high > low, high - low, 1.0)
    return ((values - low) / span).astype(np.float32)


def pca_rgb(features: np.ndarray, grid: tuple[int, int]) -> tuple[np.ndarray, Pca]:
    """Patch features (gh·gw, D) -> (the first three components as RGB in [0, 1] (gh, gw, 3), the PCA)."""
    pca = fit_pca(features)
    return unit_range(pca.project(features)).reshape(*grid, COMPONENTS), pca


def border(grid: tuple[int, int]) -> np.ndarray:
    """(gh·gw,) bool: the patches on the grid's edge."""
    edge = np.zeros(grid, dtype=bool)
    edge[0], edge[-1], edge[:, 0], edge[:, -1] = True, True, True, True
    return edge.ravel()


def foreground(features: np.ndarray, grid: tuple[int, int], pca: Pca | None = None,
               threshold: float = FOREGROUND_THRESHOLD) -> np.ndarray:
    """DINOv2's foreground: the first component scaled to [0, 1], turned so that the photo's border lies mostly
    low (the background usually touches the border), then above ``threshold`` -> (gh·gw,) bool."""
    pca = pca or fit_pca(features)
    first = unit_range(pca.project(features)[:, :1])[:, 0]
    edge = border(grid)
    if first[edge].mean() > first.mean():
        first = 1.0 - first
    return first > threshold


def foreground_rgb(features: np.ndarray, grid: tuple[int, int],
                   threshold: float = FOREGROUND_THRESHOLD) -> tuple[np.ndarray, np.ndarray, Pca | None]:
    """DINOv2's foreground picture -> (RGB (gh, gw, 3) in [0, 1] with the background black, the foreground
    (gh, gw) bool, the PCA refitted on the foreground or None when it has fewer than four patches (then all is
    black: there is no foreground to colour))."""
    mask = foreground(features, grid, threshold=threshold)
    rgb = np.zeros((len(features), COMPONENTS), dtype=np.float32)
    pca = None
    if mask.sum() > COMPONENTS:
        pca = fit_pca(features[mask])
        rgb[mask] = unit_range(pca.project(features[mask]))
    return rgb.reshape(*grid, COMPONENTS), mask.reshape(grid), pca
