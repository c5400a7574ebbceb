"""A checkpoint served to the explorer's visitors: loaded once, warmed up, with the panels that depend on the
model alone, and one photo analysed for the page (``analyze_photo``). The page (``vit_explorer``) keeps these
in its caches; nothing here knows about Gradio."""
from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass, field, replace

import numpy as np
from PIL import Image

from vit.architecture import require_readout
from vit.image_file import open_image

from ..records import Analysis, ModelArrays
from .capture import analyze, model_arrays
from .video import blank_clip

ATTENTION_DTYPE = np.float16  # the kept stream and head-fused maps: half the bytes of float32


@dataclass(frozen=True)
class ServedModel:
    """A loaded checkpoint with what the app derives from it: its arrays, and its image-free pictures (Figure 7's
    filters and position similarity: ``drawn``), each drawn the first time a visitor needs it, in that visitor's
    language: a model loads without drawing a Chinese picture nobody asked for (nor looking for a CJK font)."""
    loaded: object                  # vit.LoadedModel
    arrays: ModelArrays
    own_side: int = 0               # the checkpoint's own input side once ``at_size`` changed it (0: not changed)
    _drawn: dict = field(default_factory=dict, repr=False, compare=False)   # (panel, language) -> Image
    _drawing: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def depth(self) -> int:
        return self.arrays.depth

    @property
    def heads(self) -> int:
        return self.arrays.heads

    @property
    def architecture(self):
        """The model's description at its served input size (``vit.architecture.Architecture``)."""
        return self.loaded.model.architecture(*self.loaded.preprocess.crop)

    @property
    def nbytes(self) -> int:
        """Memory the served model holds: its parameters and buffers, and the arrays copied out of it."""
        model = self.loaded.model
        tensors = [*model.parameters(), *model.buffers()]
        if self.has_text_tower:
            tensors += [*self.loaded.text.model.parameters(), *self.loaded.text.model.buffers()]
        arrays = self.arrays.patch_weight.nbytes + (0 if self.arrays.pos_embed is None else self.arrays.pos_embed.nbytes)
        return sum(t.nelement() * t.element_size() for t in tensors) + arrays

    def drawn(self, key: tuple, draw) -> Image.Image:
        """A picture that depends on the model alone (Figure 7's filters and position similarity, in one language and
        for one screen: ``key``), drawn by ``draw()`` the first time anyone asks and kept with the served model."""
        with self._drawing:   # two visitors asking at once get one drawing
            if key not in self._drawn:
                self._drawn[key] = draw()
            return self._drawn[key]

    def with_preprocess(self, choice: str) -> "ServedModel":
        """The same served model (the same model object, arrays and drawn panels) turning photos into inputs as
        ``choice`` says: "own", "crop" or "squash" (``vit.LoadedModel.with_preprocess``; ValueError for another)."""
        if choice == self.loaded.preprocess_choice:
            return self
        return replace(self, loaded=self.loaded.with_preprocess(choice))

    @property
    def native_side(self) -> int:
        """The longer side of the checkpoint's own input, in pixels (whatever size it now runs at)."""
        return self.own_side or max(self.loaded.own_preprocess.crop)

    def at_size(self, side: int) -> "ServedModel":
        """The same served model turning photos into a side×side input (its own preprocessing at that size, then the
        same own/crop/squash choice); 0 or the native side: unchanged. ValueError when the model's position
        information cannot follow the size or the side is no multiple of its patch size (``token_layout``)."""
        if not side or (side, side) == tuple(self.loaded.own_preprocess.crop):
            return self
        self.loaded.model.token_layout(side, side)
        loaded = dataclasses.replace(self.loaded, own_preprocess=self.loaded.own_preprocess.at_size((side, side)))
        return replace(self, loaded=loaded.with_preprocess(self.loaded.preprocess_choice), own_side=self.native_side)

    @property
    def has_text_tower(self) -> bool:
        """A CLIP checkpoint with its text side: the page offers typed texts."""
        return getattr(self.loaded, "text", None) is not None


def serve(loaded, device=None) -> ServedModel:
    """vit.LoadedModel -> ServedModel: moves the model to ``device`` (when given), copies the embedding arrays,
    and runs the model once on a blank image (a video model: a blank clip), so that the first person's photo does not
    pay PyTorch's warm-up."""
    require_readout(loaded.model)          # a model that reads no token (SAM's encoder) has no maps to draw
    if device is not None:
        loaded.model.to(device)
    height, width = loaded.preprocess.crop
    blank = blank_clip(loaded.preprocess) if loaded.model.architecture(height, width).video else \
        Image.new("RGB", (width, height))
    analyze(loaded, blank, ATTENTION_DTYPE, on_demand=True)
    return ServedModel(loaded, model_arrays(loaded.model, loaded.name))


def analyze_photo(photo: str, model: ServedModel, turn=None) -> Analysis:
    """Decode the photo file and run the model once on it (vit.image_file.ImageFileError for a bad file), keeping
    what recomputes any map on demand (``viz.analysis.capture``: memory that grows with the tokens, not their
    square) and the residual stream the Features tab reads; ``turn``: the context every later recomputation takes
    (the server's model turn). A model with windows keeps every block's window maps instead (a few MB at Swin-T)."""
    return analyze(model.loaded, open_image(photo), ATTENTION_DTYPE, on_demand=True, turn=turn)
