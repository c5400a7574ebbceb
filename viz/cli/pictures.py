"""Every picture of one analysed image at the model's own size, for the files ``python -m viz`` writes: each tab's
panel from its slice (``image_panels``), and the captions result.json names them by (``captions``)."""
from __future__ import annotations

import numpy as np
from PIL import Image

from ..attention.view import attention_panel, threshold_panel
from ..distance.view import distance_grid, distance_panel
from ..heads.view import heads_panel
from ..i18n import t
from ..maps.layout import patch_token
from ..norms.view import token_norm_curves_panel, token_norms_panel
from ..panels.files import MapOptions, photo
from ..panels.select import (artifact_drop, artifact_flags, attention_caption, attention_of, default_query,
                             heads_caption, mean_distance_of, query_maps, rollout_caption, rollout_of)
from ..query.view import query_panels
from ..records import Analysis
from ..rollout.view import rollout_overlay


def captions(a: Analysis, o: "MapOptions") -> dict[str, str]:
    """Every image-level panel's caption, naming its query: {"rollout", "attention", "threshold", "heads"}."""
    source = attention_caption(a, o.layer, o.head, o.lang) if o.mask_source == "attention" else \
        rollout_caption(a, o.lang)
    return {"rollout": rollout_caption(a, o.lang), "attention": attention_caption(a, o.layer, o.head, o.lang),
            "threshold": t("caption.threshold", o.lang, share=o.share, source=source),
            "heads": heads_caption(a, o.lang)}


def image_panels(a: Analysis, o: MapOptions = MapOptions()) -> tuple[dict[str, Image.Image], dict[str, np.ndarray]]:
    """Every panel that depends on the image -> ({name: image}, {name: array} of the maps drawn). A model of several
    stages gets one heads panel per stage ("heads_stage<s>") instead of "heads"; the one-layer map's array is
    "cls_attention" (beside the whole attention of a model that keeps it) or "attention" (a model whose blocks' maps
    are kept per block)."""
    row, col = o.query if o.query is not None else default_query(a)
    patch_token(row, col, a.num_prefix, a.grid)  # validates the query patch
    rollout_options = dict(fusion=o.fusion, discard_ratio=o.discard_ratio, start_layer=o.start_layer)
    style = dict(cmap=o.cmap, alpha=o.alpha, colorbar=o.colorbar, scale=o.scale, lang=o.lang)
    masking = dict(mask_artifacts=o.mask_artifacts, norm_ratio=o.norm_ratio)
    drop = artifact_drop(a, o.mask_artifacts, o.norm_ratio)
    rollout = rollout_of(a, **rollout_options, **masking)
    query_out, query_in = query_maps(a, row, col, o.layer, o.head, o.query_rollout, **rollout_options, drop=drop)
    distance = mean_distance_of(a, o.distance_renormalise)
    images = {
        "input": photo(a, o.scale),
        "rollout": rollout_overlay(a, rollout, drop, o.cmap, o.alpha, o.colorbar, o.scale, o.lang),
        "attention": attention_panel(a, o.layer, o.head, None, **style, **masking),
        "threshold": threshold_panel(a, o.share, o.mask_source, o.layer, o.head, o.scale, **rollout_options,
                                     **masking),
        "mean_distance": distance_panel(distance, distance_grid(a), a.patch_size, lang=o.lang),
        "token_norms": token_norms_panel(a, o.norm_ratio, lang=o.lang)[0],
        "token_norm_curves": token_norm_curves_panel(a, o.norm_ratio, lang=o.lang),
    }
    stages = a.architecture.stages
    for s, _ in enumerate(stages):
        name = "heads" if len(stages) == 1 else f"heads_stage{s}"
        images[name] = heads_panel(a, cmap=o.cmap, lang=o.lang, stage=s if len(stages) > 1 else None, **masking)[0]
    images["query_row"], images["query_column"] = query_panels(a, row, col, o.layer, o.head, o.query_rollout,
                                                               **rollout_options, **style, **masking)
    one_map = "cls_attention" if a.attention is not None or a.architecture.one_sequence else "attention"
    arrays = {"rollout": rollout, one_map: attention_of(a, o.layer, o.head, drop),
              "query_row": query_out, "query_column": query_in, "query_patch": np.array([row, col]),
              "mean_distance": distance, "high_norm_flags": artifact_flags(a, o.norm_ratio)}
    return images, arrays
