"""Two checkpoints on the same photo: what fine-tuning (or another recipe, size or resolution) changed.

    side_a = compare_side(loaded_a, photo)            # viz.compare.side: each model runs once (viz.analysis)
    c = compare(photo, side_a, side_b, layer=-1)       # comparison: both sides' maps on the same photo pixels
    comparison_record(c)   -> dict: compare.json (names, sha256 prefixes, top-5 with the change, differences)
    comparison_figure(c)   -> matplotlib Figure with everything; comparison_image(c) -> the same as a PIL image

- ``side``: a loaded checkpoint's side (its analysis of the photo, file name, sha256, crop box); it runs the model,
  so it is imported on its own (``from viz.compare.side import compare_side``), not here;
- ``comparison``: ``compare`` and ``comparison_record``, arrays only; ``align``: the two crops' common box and the
  resampling of a map onto it; ``figure``: the pictures. The CLI's ``--compare`` is ``viz.cli.compare``.
"""
from . import texts  # noqa: F401  (the tab's texts in the catalogue)
from .comparison import ClassChange, Comparison, MapPair, Side, compare, comparison_record
from .figure import comparison_figure, comparison_image, pair_overlays

__all__ = ["ClassChange", "Comparison", "MapPair", "Side", "compare", "comparison_figure", "comparison_image",
           "comparison_record", "pair_overlays"]
