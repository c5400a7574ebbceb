"""``--features [--features-layer L] [--query ROW COL]``: the patch features of one layer, as DINOv2 and DINOv3 show
them (``viz.features``), per image: features_pca.png (the first three principal components as RGB, fitted on this
photo's patches), features_similarity.png (the cosine similarity of the ``--query`` patch, default the centre, to
every patch), ``features_pcs`` (gh, gw, 3: the unscaled projections) and ``features_similarity`` (gh, gw) in
attention.npz, and result.json's "features": {"layer", "explained_variance_ratio", "query"}. A folder adds one PCA
fitted on every photo's patches (``viz.dataset.features``): summary/features_pca_joint.png and .npz.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass

from .. import panels
from ..features import patch_features, patch_similarity, pca_rgb
from ..features.pictures import pca_picture, similarity_picture
from ..i18n import t
from ..maps.layout import layer_index
from ..records import Analysis


@dataclass(frozen=True)
class FeaturesRequest:
    """--features and --features-layer, checked against the model before any image."""
    layer: int                          # 0-based block whose output is read (after the final LayerNorm)


def features_request(args: argparse.Namespace, loaded) -> FeaturesRequest | None:
    """The features options -> FeaturesRequest (None without --features); ValueError says what is wrong."""
    if not args.features:
        if args.features_layer is not None:
            raise ValueError("--features-layer picks the layer of --features: add --features.")
        return None
    depth = loaded.model.cfg.depth
    layer = -1 if args.features_layer is None else args.features_layer
    try:
        return FeaturesRequest(layer_index(layer, depth))
    except ValueError:
        raise ValueError(f"--features-layer {layer} does not exist: the model has {depth} layers, 0 to {depth - 1} "
                         f"(or -1 for the last).") from None


def features_outputs(a: Analysis, request: FeaturesRequest, o: panels.MapOptions) -> tuple[dict, dict, dict]:
    """One image's feature pictures, arrays and result.json entry -> ({name: image}, {name: array}, entry)."""
    features = patch_features(a, request.layer)                            # (gh·gw, D)
    rgb, pca = pca_rgb(features, a.grid)
    row, col = o.query if o.query is not None else panels.default_query(a)
    row, col = row % a.grid[0], col % a.grid[1]
    similarity = patch_similarity(features, a.grid, row, col)
    photo = panels.photo(a, o.scale)
    label = t("colorbar.similarity", o.lang, row=row, col=col, layer=request.layer)
    images = {"features_pca": pca_picture(photo, rgb, request.layer, pca.explained_variance_ratio, lang=o.lang),
              "features_similarity": similarity_picture(photo, similarity, (row, col), label=label if o.colorbar else "",
                                                        cmap=o.cmap, alpha=o.alpha, lang=o.lang)}
    arrays = {"features_pcs": pca.project(features).reshape(*a.grid, 3), "features_similarity": similarity}
    entry = {"layer": request.layer, "explained_variance_ratio": [float(r) for r in pca.explained_variance_ratio],
             "query": [int(row), int(col)]}
    return images, arrays, entry

