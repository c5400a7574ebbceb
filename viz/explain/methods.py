"""THE tables of explanation methods and of the model passes they need: every method by name, each one entry;
every family of methods (one model pass) one record.

A method names its ``family`` and the formula that turns that pass's arrays into a (gh, gw) map. The runner
(``viz.explain.explainer``) gives every method the same call signature,
``explain_map(name, model, x, target) -> (gh, gw)``, runs each family's pass once per (image, target) and
evaluates every formula of that family (and of the families it also serves) on it, so one backward serves gae,
grad_rollout, gradcam, attention and rollout together.

A new method whose family exists is one entry in ``METHODS``. A new family is one ``Family`` record in
``FAMILIES``; a new kind of model pass is one function in ``viz.explain.explainer.PASSES`` (and its model side
in ``vit.explain``).

A Swin's methods are the same names in their own table, ``WINDOW_METHODS``, whose families run the Swin passes
(``vit.explain.windows``) and whose formulas go through windows and merges (``viz.explain.windows``);
``method_table(model)`` picks a model's table. What a Swin has no entry for says why in ``NOT_FOR_WINDOWS``.
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
from .windows import windows_attention_map, windows_gae_map, windows_gradcam_map, windows_rollout_map


@dataclass(frozen=True)
class Family:
    """Methods that need the same model pass: what the pass is, which other families' arrays it produces too, and
    (for a relevance pass) which rule set it propagates with."""
    name: str
    needs: str                         # what the model does for it, once per image and target, in words
    model_pass: str                    # the pass that runs it: a key of viz.explain.explainer.PASSES
    serves: tuple[str, ...] = ()       # the families whose arrays the same pass also produces
    rules: str | None = None           # the relevance rules (a key of vit.explain.RULE_SETS) of an LRP pass

    @property
    def runs_model(self) -> bool:
        """Whether the family needs the model at all (the random baseline does not)."""
        return self.model_pass != "none"


FAMILIES: dict[str, Family] = {f.name: f for f in [
    Family("gradient", "one forward and one backward of the plain model (attention and norm1 gradients)",
           "gradient", serves=("attention",)),
    Family("attnlrp", "one forward and one backward with the AttnLRP rules", "relevance", rules="attnlrp"),
    Family("cp_lrp", "one forward and one backward with the CP-LRP rules", "relevance", rules="cp_lrp"),
    Family("attention", "one forward with attention capture, no backward (also served by the gradient pass)",
           "attention"),
    Family("none", "no model pass", "none"),
    # a Swin's (vit.explain.windows): the same passes through windows and patch merging
    Family("windows", "one forward and one backward of the Swin (every block's window attention and the last block's "
           "norm1, with their gradients)", "windows", serves=("window_attention",)),
    Family("window_attnlrp", "one forward and one backward of the Swin with the AttnLRP rules", "window_relevance",
           rules="attnlrp"),
    Family("window_cp_lrp", "one forward and one backward of the Swin with the CP-LRP rules", "window_relevance",
           rules="cp_lrp"),
    Family("window_attention", "one forward of the Swin with window-attention capture, no backward (also served by "
           "its gradient pass)", "window_attention"),
]}


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


# A Swin's methods: the same names, maps over stage 0's patch grid (docs/swin.md defines them).
WINDOW_METHODS: dict[str, Method] = {m.name: m for m in [
    Method("gae", "windows", windows_gae_map, "GAE through windows and patch merging",
           "Chefer, Gur & Wolf 2021 (ICCV), through the hierarchy as docs/swin.md defines it", True),
    Method("attnlrp", "window_attnlrp", attnlrp_map, "AttnLRP relevance",
           "Achtibat et al. 2024, AttnLRP (ICML); lxt's rules on the Swin v1 blocks", True, signed=True),
    Method("cp_lrp", "window_cp_lrp", cp_lrp_map, "CP-LRP relevance (no relevance through the softmax)",
           "Ali et al. 2022 (ICML); lxt's rules on the Swin v1 blocks", True, signed=True),
    Method("gradcam", "windows", windows_gradcam_map, "Grad-CAM on the last stage's norm1 tokens",
           "Selvaraju et al. 2017, Grad-CAM (ICCV); pytorch-grad-cam's Swin recipe", True),
    Method("attention", "window_attention", windows_attention_map,
           "attention of the average pool, last block, mean of heads", "Liu et al. 2021 (Swin); the mean of the last "
           "stage's query rows", False),
    Method("rollout", "window_attention", windows_rollout_map, "attention rollout through windows and patch merging",
           "Abnar & Zuidema 2020 (ACL), through the hierarchy as docs/swin.md defines it", False),
    Method("random", "none", random_map, "random baseline (seeded uniform)", "a uniform map, seed 0", False),
]}
NOT_FOR_WINDOWS = {   # methods of METHODS with no Swin entry, and why
    "grad_rollout": "vit-explain's gradient-weighted rollout is defined for one sequence of tokens with a CLS row; for "
                    "a Swin use gae, the gradient-weighted map through windows and patch merging.",
}


def method_table(model) -> dict[str, Method]:
    """The methods a model has: ``WINDOW_METHODS`` for a Swin, ``METHODS`` for every ViT."""
    return WINDOW_METHODS if getattr(model.cfg, "family", "") == "swin" else METHODS


def method_names(text: str | list[str] | tuple[str, ...], table: dict[str, Method] = METHODS) -> list[str]:
    """"gae,attnlrp" or a list -> checked method names in the given order, duplicates dropped.

    Raises ValueError listing every method that exists for an unknown name (``table``: a model's, see
    ``method_table``; a method a Swin has no entry for says why).
    """
    names = [n.strip() for n in text.split(",")] if isinstance(text, str) else [str(n).strip() for n in text]
    names = list(dict.fromkeys(n for n in names if n))
    if table is WINDOW_METHODS and any(n in NOT_FOR_WINDOWS for n in names):
        raise ValueError(" ".join(NOT_FOR_WINDOWS[n] for n in names if n in NOT_FOR_WINDOWS))
    unknown = [n for n in names if n not in table]
    if unknown or not names:
        raise ValueError(f"Unknown explanation method{'s' if len(unknown) > 1 else ''} "
                         f"{', '.join(map(repr, unknown)) or '(none given)'}! Expected names from: {', '.join(table)}.")
    return names


def families_of(names: list[str], table: dict[str, Method] = METHODS) -> list[str]:
    """The model passes the methods need, in FAMILIES order: a family another wanted family serves is dropped
    (the gradient pass serves "attention")."""
    wanted = {table[n].family for n in names}
    served = {s for f in wanted for s in FAMILIES[f].serves}
    return [f for f in FAMILIES if f in wanted and f not in served]


def served_by(family: str) -> set[str]:
    """The families whose maps one pass of ``family`` gives: itself and those it also serves."""
    return {family, *FAMILIES[family].serves}


DEFAULT_METHOD = next(iter(METHODS))   # the table's first method: what the page and the API explain by default
