"""Dense features, as DINOv2 and DINOv3 show them: the patch tokens of any layer after the final LayerNorm
(``tokens``), their principal components as colours with DINOv2's foreground option and one PCA over several
photos (``pca``), and the cosine similarity of a patch to every patch, of its photo or another (``similarity``);
``pictures`` draws them. Arrays in, arrays and PIL images out: the features come from an analysis' kept residual
stream (``viz.analysis.analyze(..., keep_stream=True)``)."""
from . import texts  # noqa: F401  (the tab's texts in the catalogue)
from .pca import Pca, fit_moments, fit_pca, foreground_rgb, moments, pca_rgb, unit_range
from .similarity import best_match, cosine_to, patch_similarity
from .tokens import check_features, layer_features, patch_features

__all__ = ["Pca", "best_match", "check_features", "cosine_to", "fit_moments", "fit_pca", "foreground_rgb",
           "layer_features", "moments", "patch_features", "patch_similarity", "pca_rgb", "unit_range"]
