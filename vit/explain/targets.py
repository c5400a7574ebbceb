"""What an explanation explains: a ``Target`` turns the model's output into one differentiable score per image.

Every explanation method differentiates (or propagates relevance from) ``target.score(output)``, so the
methods never need to know whether the score is a class logit (``ClassTarget``) or, for a CLIP image
tower, the similarity to a typed text (``TextTarget``: ``exp(logit_scale) · cosine(image_embedding,
text_embedding)``): such a target is one more class with these three methods, and no method changes.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Protocol, Sequence, runtime_checkable

import torch
import torch.nn.functional as F


@runtime_checkable
class Target(Protocol):
    """The quantity an explanation is about.

    ``output`` is what ``model(x)`` returns for a batch of B images: logits (B, K) for a classifier, an
    embedding (B, E) for an image tower.
    """

    def score(self, output: torch.Tensor) -> torch.Tensor:
        """(B,) differentiable score: what the methods explain (its gradient, or relevance started from it)."""
        ...

    def probability(self, output: torch.Tensor) -> torch.Tensor:
        """(B,) in [0, 1]: what faithfulness curves plot while patches are removed."""
        ...

    def describe(self) -> dict:
        """JSON-ready description for result files and cache keys, e.g. ``{"index": 281, "name": "tabby"}``."""
        ...


@dataclass(frozen=True)
class ClassTarget:
    """One class of a classifier: the score is its logit (before the softmax, as Grad-CAM, GAE and AttnLRP
    explain it), the probability its softmax probability.

    ``index=None`` means each image's own top-1 class, resolved from the same forward pass that is
    explained (``indices``), so the default target costs no extra forward pass.
    """
    index: int | None = None
    name: str = ""

    def indices(self, output: torch.Tensor) -> torch.Tensor:
        """(B, K) logits -> (B,) class index per image (the fixed index, or each row's argmax)."""
        if output.ndim != 2:
            raise ValueError(f"A class target needs logits (batch, classes) but got an output of shape "
                             f"{tuple(output.shape)}! (A backbone without a head has no classes to explain.)")
        B, K = output.shape
        if self.index is None:
            return output.detach().argmax(dim=1)
        if not 0 <= self.index < K:
            raise ValueError(f"Class {self.index} does not exist! Expected 0 <= class < {K}.")
        return torch.full((B,), self.index, dtype=torch.long, device=output.device)

    def score(self, output: torch.Tensor) -> torch.Tensor:
        return output.gather(1, self.indices(output)[:, None])[:, 0]

    def probability(self, output: torch.Tensor) -> torch.Tensor:
        return output.softmax(dim=1).gather(1, self.indices(output)[:, None])[:, 0]

    def describe(self) -> dict:
        return {"index": self.index, "name": self.name}


@dataclass(frozen=True, eq=False)
class TextTarget:
    """CLIP: the image–text score of one typed text, s = exp(logit_scale) · cos(image embedding, text embedding).

    ``output`` is the image tower's embedding (B, E) (``model(x)`` of a CLIP image tower). ``texts`` are the
    texts typed together (the zero-shot choices), ``embeddings`` their L2-normalised text embeddings (n, E), no
    gradient (the text side is fixed; what is explained is the image); ``index`` which text is explained, or
    None for each image's best-scoring text. The score is CLIP's logit of that text, the probability its
    zero-shot probability among ``texts`` (softmax of the n logits). Build one with ``vit.clip.text_target``.
    """
    texts: tuple[str, ...]
    embeddings: torch.Tensor      # (n, E) normalised
    logit_scale: float            # exp(logit_scale): 100 for OpenAI's released models
    index: int | None = None

    def logits(self, output: torch.Tensor) -> torch.Tensor:
        """(B, E) image embeddings -> (B, n) CLIP logits exp(logit_scale) · cosine, differentiable in ``output``."""
        if output.ndim != 2 or output.shape[1] != self.embeddings.shape[1]:
            raise ValueError(f"A text target needs image embeddings (batch, {self.embeddings.shape[1]}) from a CLIP "
                             f"image tower but got an output of shape {tuple(output.shape)}!")
        texts = self.embeddings.to(device=output.device, dtype=output.dtype)
        return self.logit_scale * F.normalize(output, dim=-1) @ texts.T

    def indices(self, output: torch.Tensor) -> torch.Tensor:
        """(B, E) -> (B,) the explained text per image (the fixed index, or each image's best text)."""
        logits = self.logits(output)
        if self.index is None:
            return logits.detach().argmax(dim=1)
        return torch.full((output.shape[0],), self.index, dtype=torch.long, device=output.device)

    def score(self, output: torch.Tensor) -> torch.Tensor:
        logits = self.logits(output)
        return logits.gather(1, self.indices(output)[:, None])[:, 0]

    def probability(self, output: torch.Tensor) -> torch.Tensor:
        return self.logits(output).softmax(dim=1).gather(1, self.indices(output)[:, None])[:, 0]

    def resolved(self, output: torch.Tensor) -> "TextTarget":
        """With ``index`` None: the same target fixed to the first image's best text (so later passes agree)."""
        if self.index is not None:
            return self
        return TextTarget(self.texts, self.embeddings, self.logit_scale, int(self.indices(output)[0]))

    def describe(self) -> dict:
        """{"index": i among the texts, "name": the text, "text": the text} (index and names None until resolved)."""
        text = None if self.index is None else self.texts[self.index]
        return {"index": self.index, "name": text, "text": text}


def class_target(labels: Sequence[str], text: str | int) -> ClassTarget:
    """A class chosen by index ("281", 281) or by name ("tabby", any case) -> ClassTarget with both.

    Raises ValueError saying how many classes exist and, for an unknown name, the closest names with
    their indices (never the whole list of 1000); a name shared by several classes (ImageNet has two
    "crane"s) asks for the index.
    """
    K = len(labels)
    if K == 0:
        raise ValueError("This model has no classes (a backbone without a classifier head), so there is no "
                         "class to explain.")
    stripped = str(text).strip()
    if stripped.lstrip("-").isdigit():
        index = int(stripped)
        if not 0 <= index < K:
            raise ValueError(f"Class {index} does not exist! The model has {K} classes, numbered 0 to {K - 1}.")
        return ClassTarget(index, labels[index])
    wanted = stripped.casefold()
    hits = [i for i, label in enumerate(labels) if label.casefold() == wanted]
    if len(hits) == 1:
        return ClassTarget(hits[0], labels[hits[0]])
    if hits:
        raise ValueError(f"{stripped!r} names {len(hits)} classes ({', '.join(map(str, hits))}); give the index.")
    close = close_classes(labels, stripped)
    hint = f"close matches: {', '.join(close)}." if close else f"give a class name or an index 0 to {K - 1}."
    raise ValueError(f"Unknown class {stripped!r}! The model has {K} classes; {hint}")


def close_classes(labels: Sequence[str], text: str, n: int = 6) -> list[str]:
    """Up to ``n`` class names like ``text`` as "'name' (index)": names containing it first, then similar spellings."""
    wanted = text.casefold()
    folded = [label.casefold() for label in labels]
    found = [i for i, label in enumerate(folded) if wanted and wanted in label]
    for name in difflib.get_close_matches(wanted, folded, n=n, cutoff=0.6):
        found += [i for i, label in enumerate(folded) if label == name and i not in found]
    return [f"{labels[i]!r} ({i})" for i in found[:n]]
