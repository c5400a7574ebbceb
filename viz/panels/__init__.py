"""What every tab's panels share: which numbers an analysis gives for the options, and their captions (``select``:
``rollout_of``, ``attention_of``, ``query_maps``, ``mean_distance_of``, ``artifact_drop``, …), how a map is drawn
at display size for the page (``display``: ``Display``, ``MapPanel``, ``draw_map``, ``display_photo``), the map
options of the command line and the photo at the model's size (``files``: ``MapOptions``, ``check_options``,
``photo``), and the upload with its crop outlined (``crop``). Each tab's own panels live in its slice
(``viz.rollout``, ``viz.attention``, ``viz.heads``, ``viz.query``, ``viz.distance``, ``viz.norms``,
``viz.position``, …).
"""
from .crop import crop_panel
from .display import Display, MapPanel, display_photo, draw_map, uniform_ticks, uniform_tokens
from .files import FUSIONS, MapOptions, check_options, photo
from .select import (artifact_drop, artifact_flags, attention_caption, attention_of, check_head_of, default_query,
                     heads_caption, layer_readout_rows, mean_distance_of, position_similarity_of, query_label,
                     query_maps, readout_rows_all, readout_rows_of, rollout_caption, rollout_of, token_norm_maps_of,
                     where_name, window_note)

__all__ = [name for name in dir() if not name.startswith("__")]
