"""THE tables of explanation methods and of the model passes they need: every method by name, each one entry;
every family of methods (one model pass) one record.

A method names its ``family`` and the formula that turns that pass's arrays into a (gh, gw) map over the photo's
patch grid. The runner (``viz.explain.explainer``) gives every method the same call signature,
``explain_map(name, model, x, target) -> (gh, gw)``, runs each family's pass once per (image, target) and
evaluates every formula of that family (and of the families it also serves) on it, so one backward serves gae,
grad_rollout, gradcam, attention and rollout together. Every model runs the same passes and formulas: they read
the model's description (``vit.architecture``), whatever its blocks and merges are.

A method that has no meaning for some architectures names what it needs of the description (``Requirement``:
e.g. vit-explain's gradient rollout needs one sequence of tokens) and says why in one sentence where that is
missing (``refusals``); ``methods_for`` lists the methods a description has.

A new method whose family exists is one entry in ``METHODS``. A new family is one ``Family`` record in
``FAMILIES``; a new kind of model pass is one function in ``viz.explain.explainer.PASSES`` (and its model side
in ``vit.explain``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from vit.architecture import Architecture

from .arrays import ExplainArrays
from .baselines import attention_map, random_map, rollout_map
from .gae import gae_map
from .grad_rollout import ONE_SEQUENCE, grad_rollout_map
from .gradcam import gradcam_map
from .lrp import attnlrp_map, cp_lrp_map


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
    Family("gradient", "one forward and one backward of the plain model (every block's attention and Grad-CAM's "
           "activation, with their gradients)", "gradient", serves=("attention",)),
    Family("attnlrp", "one forward and one backward with the AttnLRP rules", "relevance", rules="attnlrp"),
    Family("cp_lrp", "one forward and one backward with the CP-LRP rules", "relevance", rules="cp_lrp"),
    Family("attention", "one forward with attention capture, no backward (also served by the gradient pass)",
           "attention"),
    Family("none", "no model pass", "none"),
]}


@dataclass(frozen=True)
class Requirement:
    """What a method needs of a model's description, and why it has no meaning without it (one sentence)."""
    holds: Callable[[Architecture], bool]
    why: str


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
    requires: Requirement | None = None                # what it needs of the architecture (None: any)

    def refusal(self, architecture: Architecture) -> str | None:
        """Why the method has no meaning for this architecture (one sentence), or None when it has."""
        return None if self.requires is None or self.requires.holds(architecture) else self.requires.why


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
           "jacobgil/vit-explain, vit_grad_rollout.py, with its issues #6 and #16 fixed", True,
           requires=Requirement(lambda architecture: architecture.one_sequence, ONE_SEQUENCE)),
    Method("gradcam", "gradient", gradcam_map, "Grad-CAM on the last block's norm1 tokens",
           "Selvaraju et al. 2017, Grad-CAM (ICCV); pytorch-grad-cam's ViT and Swin recipes", True),
    Method("attention", "attention", attention_map, "attention of the readout, last block, mean of heads",
           "Dosovitskiy et al. 2021; Caron et al. 2021 (DINO)", False),
    Method("rollout", "attention", rollout_map, "attention rollout",
           "Abnar & Zuidema 2020, Quantifying Attention Flow in Transformers (ACL)", False),
    Method("random", "none", random_map, "random baseline (seeded uniform)", "a uniform map, seed 0", False),
]}


def refusals(names: list[str], architecture: Architecture) -> dict[str, str]:
    """{method: why} for the named methods that have no meaning for this architecture (one sentence each, from
    its description), in the order given."""
    return {n: why for n in names if (why := METHODS[n].refusal(architecture)) is not None}


def methods_for(architecture: Architecture) -> list[str]:
    """Every method of ``METHODS`` that has a meaning for this architecture, in the table's order."""
    return [n for n in METHODS if METHODS[n].refusal(architecture) is None]


def method_names(text: str | list[str] | tuple[str, ...], architecture: Architecture | None = None) -> list[str]:
    """"gae,attnlrp" or a list -> checked method names in the given order, duplicates dropped.

    Raises ValueError listing every method that exists for an unknown name; with an ``architecture`` (a model's
    description), ValueError saying why (``refusals``) for a method that has no meaning for it.
    """
    names = [n.strip() for n in text.split(",")] if isinstance(text, str) else [str(n).strip() for n in text]
    names = list(dict.fromkeys(n for n in names if n))
    unknown = [n for n in names if n not in METHODS]
    if unknown or not names:
        raise ValueError(f"Unknown explanation method{'s' if len(unknown) > 1 else ''} "
                         f"{', '.join(map(repr, unknown)) or '(none given)'}! Expected names from: "
                         f"{', '.join(METHODS)}.")
    refused = {} if architecture is None else refusals(names, architecture)
    if refused:
        raise ValueError(" ".join(refused.values()))
    return names


def families_of(names: list[str]) -> list[str]:
    """The model passes the methods need, in FAMILIES order: a family another wanted family serves is dropped
    (the gradient pass serves "attention")."""
    wanted = {METHODS[n].family for n in names}
    served = {s for f in wanted for s in FAMILIES[f].serves}
    return [f for f in FAMILIES if f in wanted and f not in served]


def served_by(family: str) -> set[str]:
    """The families whose maps one pass of ``family`` gives: itself and those it also serves."""
    return {family, *FAMILIES[family].serves}


DEFAULT_METHOD = next(iter(METHODS))   # the table's first method: what the page and the API explain by default
