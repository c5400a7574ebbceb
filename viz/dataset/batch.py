"""One batch of a data-set run through the model, captured the way the model's description says (``vit.architecture``;
as ``viz.analysis.analyze`` captures one photo): a model whose blocks all attend over one sequence of tokens through
``capture`` (the per-image statistics reduced on the device as the blocks run, no map kept unless the images' files
need it); any other block by block through ``capture_blocks`` (every block's window maps, small enough to keep).

Either way the run loop (``viz.dataset.run``) gets the same three things: the batch's ``timings``, each image's
``Analysis`` for its files (``analyses``), and each image's values for the statistics (``values``,
``viz.dataset.statistics``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np
import torch
from PIL import Image

from ..analysis import Captured, analyses, block_analyses, capture, capture_blocks
from ..maps.windows import WindowedAttention
from ..records import Analysis
from . import features
from .statistics import block_values, image_values

if TYPE_CHECKING:
    from .run import RunOptions


class CapturedBatch(Protocol):
    timings: dict                         # seconds for the whole batch ("forward", and the move to the host)

    def analyses(self, images: list[Image.Image], timings: dict) -> list[Analysis]:
        """One ``Analysis`` per image (its arrays views into the batch's), for the image's files."""

    def values(self, b: int, label: int | None) -> dict[str, np.ndarray]:
        """Image ``b``'s per-image values (``viz.dataset.statistics``)."""


@dataclass
class SequenceBatch:
    """A batch of a model with one sequence of tokens, through ``capture``."""
    loaded: object
    captured: Captured
    options: "RunOptions"

    @property
    def timings(self) -> dict:
        return self.captured.timings

    def analyses(self, images: list[Image.Image], timings: dict) -> list[Analysis]:
        return analyses(self.loaded, self.captured, images, timings)

    def values(self, b: int, label: int | None) -> dict[str, np.ndarray]:
        o = self.options
        values = image_values(self.captured, b, label, o.norm_ratio, o.distance_renormalise)
        if o.features_layer is not None:
            values.update(features.image_values(self.captured, b, o.features_layer))
        return values


@dataclass
class BlocksBatch:
    """A batch of a model captured block by block (windows, stages), through ``capture_blocks``."""
    loaded: object
    captured: dict

    @property
    def timings(self) -> dict:
        return self.captured["timings"]

    def analyses(self, images: list[Image.Image], timings: dict) -> list[Analysis]:
        return block_analyses(self.loaded, self.captured, images, timings)

    def values(self, b: int, label: int | None) -> dict[str, np.ndarray]:
        architecture = self.captured["architecture"]
        source = WindowedAttention([a[b] for a in self.captured["attention"]], architecture.blocks)
        return block_values(source, architecture, self.captured["probabilities"][b], label)


def capture_batch(loaded, x: torch.Tensor, options: "RunOptions", write: bool) -> CapturedBatch:
    """The batch ``x`` (B, C, H, W) on the model's device through the model as its description says (module
    docstring). ``write``: the images' files are written, so a one-sequence capture keeps the maps they draw
    (``options.attention_dtype``); the statistics need none of them."""
    model = loaded.model
    if model.architecture(x.shape[-2], x.shape[-1]).one_sequence:
        captured = capture(model, x, options.attention_dtype if write else None, statistics=options.summary,
                           dtype=options.dtype, distance_renormalise=options.distance_renormalise,
                           keep_stream=options.keep_stream or options.features_layer is not None)
        return SequenceBatch(loaded, captured, options)
    return BlocksBatch(loaded, capture_blocks(model, x, options.dtype))
