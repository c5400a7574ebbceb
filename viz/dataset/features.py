"""One PCA over a folder's patch features (``--features`` on a folder; DINOv2's Figure 1): the same part gets the
same colour in every photo.

Each image adds the mean and the second moment of its patch features (``image_values``: "features.mean" (D,) and
"features.moment" (D, D)) to the run's exact sums (``viz.dataset.statistics``), so processes and resumed sessions add
up as one run does; every image has the same number of patches, so their averages are the moments of all the
patches together, and the PCA fitted from them (``viz.features.fit_moments``) is the PCA of all the patches stacked.
``write_joint`` then runs the model once more on the first ``SHOWN`` photos to colour them by it:
summary/features_pca_joint.png and features_pca_joint.npz (mean, components, explained_variance_ratio, images, pcs).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from vit.image_file import open_image

from ..analysis import capture, model_input
from ..features import fit_moments, layer_features, moments
from ..features.pictures import joint_picture
from .statistics import Statistics

FEATURES = "features."      # prefix of the per-image feature moments
SHOWN = 16                  # photos coloured in features_pca_joint.png


def declared(width: int) -> dict[str, tuple[int, ...]]:
    """The per-image feature values and their shapes, for a model of token width ``width``."""
    return {FEATURES + "mean": (width,), FEATURES + "moment": (width, width)}


def image_values(captured, b: int, layer: int) -> dict[str, np.ndarray]:
    """Image ``b`` of a batch captured with its stream -> its patch features' mean and second moment at ``layer``."""
    mean, second = moments(layer_features(captured.stream[b], layer, captured.num_prefix, captured.final_norm))
    return {FEATURES + "mean": mean, FEATURES + "moment": second}


def write_joint(folder: Path, stats: Statistics, loaded, paths: list[Path], layer: int, device: torch.device,
                dtype: torch.dtype = torch.float32) -> None:
    """The folder's PCA from the summed moments, and the first ``SHOWN`` photos coloured by it, into ``folder``."""
    mean, second = stats.sums[FEATURES + "mean"], stats.sums[FEATURES + "moment"]
    height, width = loaded.preprocess.crop
    layout = loaded.model.token_layout(height, width)
    patches = layout.grid[0] * layout.grid[1]
    pca = fit_moments(mean.mean(), second.mean(), mean.count * patches)
    photos, projections = [], []
    for path in paths[:SHOWN]:
        crop = loaded.preprocess.crop_image(open_image(path))
        x = model_input(torch.from_numpy(np.array(crop)).unsqueeze(0), loaded.preprocess, device)
        captured = capture(loaded.model, x, None, dtype=dtype, keep_stream=True)
        features = layer_features(captured.stream[0], layer, captured.num_prefix, captured.final_norm)
        photos.append(crop)
        projections.append(pca.project(features).reshape(*layout.grid, 3))
    joint_picture(photos, projections, layer, pca.explained_variance_ratio).save(folder / "features_pca_joint.png")
    np.savez(folder / "features_pca_joint.npz", layer=np.int64(layer), mean=pca.mean, components=pca.components,
             explained_variance_ratio=pca.explained_variance_ratio, images=np.array([str(p) for p in paths[:SHOWN]]),
             pcs=np.stack(projections), patches=np.int64(pca.count))

