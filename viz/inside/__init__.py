"""The inside views' viz side: what ``viz.inside.job`` found for a photo (``report``: numpy containers and
result.json's "inside" entry) and its pictures (``pictures``: the logit lens strip and patch maps, the DLA table with
a head's source map, head importance, activation patching), in English and Chinese. The model side is
``vit.inside``."""
from . import texts  # noqa: F401  (the tab's texts in the catalogue)
from .pictures import (dla_figure, head_sources_figure, heads_figure, lens_figure, lens_strip_figure,
                       patch_figure, patch_lens_figure)
from .report import VIEWS, AblatedView, DLAView, HeadsView, InsideReport, LensView, PatchedView, TopK

__all__ = ["VIEWS", "AblatedView", "DLAView", "HeadsView", "InsideReport", "LensView", "PatchedView", "TopK",
           "dla_figure", "head_sources_figure", "heads_figure", "lens_figure", "lens_strip_figure", "patch_figure",
           "patch_lens_figure"]
