"""CLIP's typed texts as an explanation target: the image–text score of one text among several.

``TextTarget`` has the three methods of ``vit.explain.Target`` (``score``, ``probability``, ``describe``), so
every class-specific method of ``viz.explain`` explains a text exactly as it explains a class: the score is
exp(logit_scale) · cos(image embedding, text embedding) (``vit.clip.text_scorer``), the probability the
zero-shot softmax over all the texts given (``vit.clip.zero_shot``).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from vit.clip.zero_shot import encode_texts, image_text_logits


@dataclass(frozen=True, eq=False)
class TextTarget:
    """Text ``index`` of ``texts`` for the CLIP checkpoint ``loaded`` (a ``vit.LoadedModel`` with a text tower)."""
    loaded: object
    texts: tuple[str, ...]
    index: int
    embeddings: torch.Tensor          # (n, E) the texts' normalised embeddings, encoded once

    def score(self, output: torch.Tensor) -> torch.Tensor:
        """Image embeddings (B, E) -> (B,) the text's logit: exp(logit_scale) · cosine."""
        return image_text_logits(self.loaded, output, self.embeddings)[:, self.index]

    def probability(self, output: torch.Tensor) -> torch.Tensor:
        """(B,) the text's zero-shot probability: softmax over ``texts``."""
        return image_text_logits(self.loaded, output, self.embeddings).softmax(dim=-1)[:, self.index]

    def describe(self) -> dict:
        return {"index": self.index, "name": self.texts[self.index], "kind": "text"}


def text_target(loaded, texts: list[str], chosen: str) -> TextTarget:
    """The target "``chosen`` among ``texts``" (``chosen`` is added when it is not one of them); ValueError when
    the checkpoint has no text tower (its message says so)."""
    texts = tuple(dict.fromkeys([*texts, chosen]))
    return TextTarget(loaded, texts, texts.index(chosen), encode_texts(loaded, list(texts)))
