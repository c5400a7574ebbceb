"""CLIP zero-shot classification with typed texts, and the image–text score as a differentiable target.

For an image embedding u = model(x) and text embeddings t_i (both L2-normalised), CLIP's logits are
s_i = exp(logit_scale) · cos(u, t_i) and its zero-shot probabilities softmax_i(s_i). Prompts such as
"a photo of a {}" are the caller's: every text is encoded as given.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn.functional as F
from PIL import Image

from .text import TextTransformer
from .tokenizer import Tokenizer


@dataclass
class TextTower:
    """A CLIP checkpoint's text side: the model and the tokenizer whose ids it was trained on."""
    model: TextTransformer
    tokenizer: Tokenizer

    @property
    def logit_scale(self) -> float:
        """exp(logit_scale): the factor on the cosine similarities (100 for OpenAI's released models)."""
        return float(self.model.logit_scale.detach().exp())


def text_tower(loaded) -> TextTower:
    """``loaded.text``, or a ValueError that says this checkpoint has none."""
    text = getattr(loaded, "text", None)
    if text is None:
        raise ValueError(f"{getattr(loaded, 'name', 'This checkpoint')} has no text tower: zero-shot texts need a "
                         f"CLIP checkpoint with one (OpenAI, open_clip or a Hugging Face CLIPModel folder).")
    return text


def _image_tensor(loaded, image_or_tensor) -> torch.Tensor:
    """PIL image -> (1, 3, H, W) with the checkpoint's preprocessing; a tensor (B, 3, H, W) is used as given."""
    if isinstance(image_or_tensor, Image.Image):
        image_or_tensor = loaded.preprocess(image_or_tensor)
    return image_or_tensor.to(next(loaded.model.parameters()).device)


def encode_texts(loaded, texts: list[str]) -> torch.Tensor:
    """Texts -> their L2-normalised embeddings (n, E); no gradient (the texts are the fixed side), but usable in
    a graph that back-propagates into the image."""
    if isinstance(texts, str) or not texts:
        raise ValueError(f"Expected a non-empty list of texts but got {texts!r}.")
    text = text_tower(loaded)
    tokens = text.tokenizer(list(texts), text.model.cfg.context_length).to(text.model.logit_scale.device)
    with torch.no_grad():
        return F.normalize(text.model(tokens).float(), dim=-1)


def image_text_logits(loaded, image_embedding: torch.Tensor, text_embeddings: torch.Tensor) -> torch.Tensor:
    """Image embeddings (B, E) (``model(x)``, any scale) and normalised text embeddings (n, E) -> CLIP's logits
    (B, n) = exp(logit_scale) · cosine. Differentiable in the image embedding."""
    if image_embedding.shape[-1] != text_embeddings.shape[-1]:
        raise ValueError(f"Image and text embeddings differ in width! Image {image_embedding.shape[-1]}, text "
                         f"{text_embeddings.shape[-1]}: the image tower needs CLIP's projection (proj_dim).")
    return text_tower(loaded).logit_scale * F.normalize(image_embedding, dim=-1) @ text_embeddings.T


def zero_shot(loaded, image_or_tensor, texts: list[str]) -> torch.Tensor:
    """Zero-shot probabilities (B, n) = softmax over the texts of exp(logit_scale) · cos(image, text).

    ``image_or_tensor``: a PIL image (preprocessed as the checkpoint wants; B = 1) or a model input
    (B, 3, H, W). ``texts``: class names or whole prompts, encoded as given.
    """
    text_embeddings = encode_texts(loaded, texts)
    with torch.inference_mode():
        image_embedding = loaded.model(_image_tensor(loaded, image_or_tensor)).float()
        return image_text_logits(loaded, image_embedding, text_embeddings).softmax(dim=-1)


def text_scorer(loaded, text: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """One text -> a function of the image embedding (B, E) giving its score (B,) = exp(logit_scale) · cosine.

    For explanation methods that already hold the model's output: the text is encoded once, and the
    function is differentiable in the embedding (so in the image).
    """
    target = encode_texts(loaded, [text])                   # (1, E), normalised
    scale = text_tower(loaded).logit_scale
    return lambda image_embedding: scale * (F.normalize(image_embedding, dim=-1) @ target.T)[:, 0]


def text_score(loaded, x: torch.Tensor, text: str) -> torch.Tensor:
    """The score of one text for model inputs x (B, 3, H, W): (B,) = exp(logit_scale) · cos(model(x), text),
    differentiable in x (run it outside ``torch.no_grad`` to back-propagate). The target of the image–text score."""
    return text_scorer(loaded, text)(loaded.model(x))


def text_target(loaded, text: str | None, texts: list[str] | tuple[str, ...] = ()):
    """A ``vit.explain.TextTarget``: explain ``text``'s image–text score (every class-specific method accepts it).

    ``texts``: the texts typed together (the zero-shot choices); the target's probability is its zero-shot
    probability among them (``text`` is added when missing; alone it is 1). ``text`` None: each image's best
    text among ``texts``. The texts are encoded once, here.
    """
    from ..explain.targets import TextTarget

    choices = list(dict.fromkeys(list(texts) + ([text] if text is not None else [])))
    if not choices:
        raise ValueError("A text target needs a text, or texts to choose the best-scoring one from.")
    if any(not isinstance(t, str) or not t.strip() for t in choices):
        raise ValueError(f"Expected non-empty texts but got {choices!r}.")
    embeddings = encode_texts(loaded, choices)                       # (n, E) normalised
    index = None if text is None else choices.index(text)
    return TextTarget(tuple(choices), embeddings, text_tower(loaded).logit_scale, index)
