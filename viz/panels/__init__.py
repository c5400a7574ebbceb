"""Every panel of the explorer as a PIL image, from a cached ``Analysis``. Two jobs, one module each:

- ``model_size``: the panels at the model's own size for the CLI and its files (``image_panels``,
  ``render_all``, ``rollout_panel``, ``attention_panel``, ``heads_panel``, ``query_panels``, Figure 7 …);
- ``display``, ``heads`` and ``crop``: the page's panels at display size, in multiples of uniform attention,
  with shared scales, patch-true drawing and artifact notes (``Display``, ``MapPanel``, ``rollout_map_panel``,
  ``attention_map_panel``, ``query_map_panels``, ``heads_grid_panel`` / ``HeadsGrid``, ``head_stats``,
  ``crop_panel``).

Every name stays importable as ``viz.panels.NAME``.
"""
from .crop import crop_panel
from .display import (Display, MapPanel, _uniform_ticks, attention_layers, attention_map_panel, display_photo,
                      query_map_panels, rollout_map_panel, uniform_tokens)
from .heads import HeadsGrid, HeadsLayout, HeadStats, head_stats, heads_grid_panel
from .model_size import (FUSIONS, MapOptions, artifact_drop, artifact_flags, attention_caption, attention_of,
                         attention_panel, captions, check_options, default_query, distance_panel, filters_panel,
                         heads_caption, heads_panel, image_panels, mean_distance_of, model_panels, photo,
                         position_panel, position_similarity_of, query_label, query_maps, query_panels,
                         render_all, rollout_caption, rollout_of, rollout_overlay, rollout_panel, threshold_panel,
                         token_norm_curves_panel, token_norms_panel, where_name)

__all__ = [name for name in dir() if not name.startswith("__")]
