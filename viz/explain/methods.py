"""THE table of explanation methods: every method by name, each one entry.

An entry names the model pass it needs (its ``family``) and the formula that turns that pass's arrays into
a (gh, gw) map. The runner (``viz.analysis.explainer``) gives every method the same call signature,
``explain_map(name, model, x, target) -> (gh, gw)``, runs each family's pass once per (image, target) and
evaluates every formula of that family on it, so one backward serves gae, grad_rollout and gradcam together.

A new method whose family exists is one entry here. A new family is one entry in ``FAMILIES`` and one
pass in ``vit.explain`` (wired in ``viz.analysis.explainer.PASSES``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .arrays import ExplainArrays
from .baselines import attention_map, random_map, rollout_map
from .gae import gae_map
from .grad_rollout import grad_rollout_map
from .gradcam import gradcam_map
from .lrp import attnlrp_map, cp_lrp_map

# family -> what the model has to do for it (once per image and target)
FAMILIES = {
    "gradient": "one forward and one backward of the plain model (attention and norm1 gradients)",
    "attnlrp": "one forward and one backward with the AttnLRP rules",
    "cp_lrp": "one forward and one backward with the CP-LRP rules",
    "attention": "one forward with attention capture, no backward (also served by the gradient pass)",
    "none": "no model pass",
}


@dataclass(frozen=True)
class Method:
    """One explanation method: ``formula(arrays) -> (gh, gw)`` on the arrays of its ``family``'s pass."""
    name: str
    family: str                                        # a key of FAMILIES
    formula: Callable[[ExplainArrays], np.ndarray]
    title: str                                         # short name for people
    reference: str                                     # where it is defined
    class_specific: bool                               # does the map change with the target?
    signed: bool = False                               # negative values mean evidence against: diverging colours


METHODS: dict[str, Method] = {m.name: m for m in [
    Method("gae", "gradient", gae_map, "GAE (gradient × attention, accumulated)",
           "Chefer, Gur & Wolf 2021, Generic Attention-model Explainability (ICCV)", True),
    Method("attnlrp", "attnlrp", attnlrp_map, "AttnLRP relevance",
           "Achtibat et al. 2024, AttnLRP: Attention-Aware Layer-wise Relevance Propagation for Transformers (ICML)",
           True, signed=True),
    Method("cp_lrp", "cp_lrp", cp_lrp_map, "CP-LRP relevance (no relevance through the softmax)",
           "Ali et al. 2022, XAI for Transformers: Better Explanations through Conservative Propagation (ICML)",
           True, signed=True),
    Method("grad_rollout", "gradient", grad_rollout_map, "gradient-weighted rollout (vit-explain, fixed)",
           "jacobgil/vit-explain, vit_grad_rollout.py, with its issues #6 and #16 fixed", True),
    Method("gradcam", "gradient", gradcam_map, "Grad-CAM on the last block's norm1 tokens",
           "Selvaraju et al. 2017, Grad-CAM (ICCV); pytorch-grad-cam's ViT recipe", True),
    Method("attention", "attention", attention_map, "attention of the readout, last block, mean of heads",
           "Dosovitskiy et al. 2021; Caron et al. 2021 (DINO)", False),
    Method("rollout", "attention", rollout_map, "attention rollout",
           "Abnar & Zuidema 2020, Quantifying Attention Flow in Transformers (ACL)", False),
    Method("random", "none", random_map, "random baseline (seeded uniform)", "a uniform map, seed 0", False),
]}


def method_names(text: str | list[str] | tuple[str, ...]) -> list[str]:
    """"gae,attnlrp" or a list -> checked method names in the given order, duplicates dropped.

    Raises ValueError listing every method that exists for an unknown name.
    """
    names = [n.strip() for n in text.split(",")] if isinstance(text, str) else [str(n).strip() for n in text]
    names = list(dict.fromkeys(n for n in names if n))
    unknown = [n for n in names if n not in METHODS]
    if unknown or not names:
        raise ValueError(f"Unknown explanation method{'s' if len(unknown) > 1 else ''} "
                         f"{', '.join(map(repr, unknown)) or '(none given)'}! Expected names from: {', '.join(METHODS)}.")
    return names


def families_of(names: list[str]) -> list[str]:
    """The model passes the methods need, in FAMILIES order ("attention" is dropped when "gradient" runs)."""
    wanted = {METHODS[n].family for n in names}
    if "gradient" in wanted:
        wanted.discard("attention")
    return [f for f in FAMILIES if f in wanted]
