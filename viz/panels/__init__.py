"""Every panel of the explorer as a PIL image, from a cached ``Analysis``. One module per job:

- ``select``: which map an analysis gives for the options, and its caption (``rollout_of``, ``attention_of``,
  ``query_maps``, ``mean_distance_of``, ``artifact_drop``, …): the values both kinds of panel draw;
- ``files``: the panels at the model's own size for the CLI and the files it writes (``MapOptions``,
  ``image_panels``, ``model_panels``, ``attention_panel``, ``heads_panel``, ``query_panels``, Figure 7 …);
- ``display``, ``heads`` and ``crop``: the page's panels at display size, in multiples of uniform attention,
  with shared scales, patch-true drawing and artifact notes (``Display``, ``MapPanel``, ``rollout_map_panel``,
  ``attention_map_panel``, ``query_map_panels``, ``heads_grid_panel`` / ``HeadsGrid``, ``head_stats``,
  ``crop_panel``).

Every name stays importable as ``viz.panels.NAME``.
"""
from .crop import crop_panel
from .display import (Display, MapPanel, _uniform_ticks, attention_layers, attention_map_panel, display_photo,
                      norms_grid_panel, query_map_panels, rollout_map_panel, uniform_tokens)
from .files import (FUSIONS, MapOptions, attention_panel, captions, check_options, distance_grid, distance_panel,
                    filters_panel,
                    heads_panel, image_panels, model_panels, photo, position_panel, query_panels, rollout_overlay,
                    threshold_panel, token_norm_curves_panel, token_norms_panel)
from .heads import HeadsGrid, HeadsLayout, HeadStats, StagesLayout, head_stats, heads_grid_panel
from .select import (artifact_drop, artifact_flags, attention_caption, attention_of, default_query, heads_caption,
                     layer_readout_rows, mean_distance_of, position_similarity_of, query_label, query_maps,
                     readout_rows_all, readout_rows_of, rollout_caption, rollout_of, token_norm_maps_of, where_name)

__all__ = [name for name in dir() if not name.startswith("__")]
