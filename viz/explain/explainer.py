"""Explain an image for a target: the model passes of ``vit.explain``, then the formulas of ``viz.explain``.

Every method of ``viz.explain.METHODS`` has the same call signature here, for every architecture::

    explain_map(name, model, x, target) -> (gh, gw) numpy map

and ``explain`` / ``explain_tensor`` compute several at once, running each family's model pass once per
(image, target): one backward serves gae, grad_rollout and gradcam, AttnLRP and CP-LRP need one each,
attention and rollout come from the gradient pass's attention (or one capture forward), random needs none.
The passes and the formulas read the model's description (``vit.architecture``); a method that has no meaning
for it is refused with its sentence (``viz.explain.methods.refusals``). The result, an ``Explanation``, holds
only the (gh, gw) maps, so it can be cached per (photo, model, target) and re-rendered (colour map, opacity,
contrast) without the model.
"""
from __future__ import annotations

import time
from typing import Callable, Sequence

import numpy as np
import torch
from PIL import Image

from vit.explain import RULE_SETS, ClassTarget, Target, TextTarget, class_target, gradient_pass, readout, relevance_pass

from ..explain.arrays import ExplainArrays
from ..explain.explanation import Explanation
from ..explain.methods import FAMILIES, METHODS, Family, families_of, method_names, methods_for, served_by


def _numpy(t: torch.Tensor) -> np.ndarray:
    return t.detach().float().cpu().numpy()


def _gradient(model, x: torch.Tensor, target: Target, family: Family) -> tuple[torch.Tensor, dict]:
    p = gradient_pass(model, x, target)
    return p.output, dict(attention=[_numpy(a[0]) for a in p.attention],
                          attention_grad=[_numpy(g[0]) for g in p.attention_grad],
                          tokens=_numpy(p.tokens[0]), tokens_grad=_numpy(p.tokens_grad[0]),
                          probe=None if p.probe is None else p.probe[0])


def _relevance(model, x: torch.Tensor, target: Target, family: Family) -> tuple[torch.Tensor, dict]:
    p = relevance_pass(model, x, target, RULE_SETS[family.rules])
    return p.output, {"relevance": {family.rules: _numpy(p.relevance[0])}}


def _attention(model, x: torch.Tensor, target: Target, family: Family) -> tuple[torch.Tensor, dict]:
    maps = []
    with torch.inference_mode():
        for tokens, attention, *_ in model.blocks_with_attention(x):   # each block's map on its own layout
            maps.append(_numpy(attention[0]))
        output, probe = model.forward_head(tokens, return_probe=True)
    return output, {"attention": maps, "probe": None if probe is None else probe[0]}   # probe: (H, T) "map" pooling


def _none(model, x: torch.Tensor, target: Target, family: Family) -> tuple[None, dict]:
    return None, {}


# a family's model pass (viz.explain.Family.model_pass) -> (model, x (1, C, H, W), target, family) -> (output,
# ExplainArrays fields)
PASSES: dict[str, Callable] = {"gradient": _gradient, "relevance": _relevance, "attention": _attention, "none": _none}
assert {f.model_pass for f in FAMILIES.values()} <= set(PASSES), "every family of viz.explain.FAMILIES needs a pass here"


def concrete_target(target: Target, output: torch.Tensor, labels: Sequence[str]) -> Target:
    """A class target with its index and name filled in (top-1 taken from the model's ``output``), a text target
    fixed to its best text when none was chosen; other targets as they are. The explainer and the trust checks
    both call it, so a map and its curves explain the same class."""
    if isinstance(target, TextTarget):
        return target.resolved(output)
    if not isinstance(target, ClassTarget):
        return target
    index = int(target.indices(output)[0]) if target.index is None else target.index
    return ClassTarget(index, target.name or (labels[index] if index < len(labels) else f"class {index}"))


def explain_tensor(model, x: torch.Tensor, target: Target | None = None, methods: Sequence[str] | str | None = None,
                   labels: Sequence[str] = ()) -> Explanation:
    """One preprocessed image (1, C, H, W) -> ``Explanation`` with the maps of ``methods`` (default: every method
    this model's architecture has) and of every other method the same passes serve. ``target`` defaults to the
    top-1 class; ``labels`` name it. ValueError (its sentence) for a method that has no meaning for the model."""
    if x.ndim != 4 or x.shape[0] != 1:
        raise ValueError(f"Wrong input shape! Expected one image (1, C, H, W) but got {tuple(x.shape)}.")
    architecture = model.architecture(x.shape[-2], x.shape[-1])
    available = methods_for(architecture)
    names = method_names(available if methods is None else methods, architecture)
    x = x.to(next(model.parameters()).device)
    layout = model.token_layout(x.shape[-2], x.shape[-1])
    target = ClassTarget() if target is None else target
    if isinstance(target, ClassTarget) and not model.cfg.num_classes:
        raise ValueError("This model has no classifier head (a backbone: its output is features, not classes), so a "
                         "class target has nothing to explain! Give a Target that scores its features.")
    ran, fields, relevance, output, timings = ["none"], {}, {}, None, {}
    for family in families_of(names):
        t0 = time.perf_counter()
        out, got = PASSES[FAMILIES[family].model_pass](model, x, target, FAMILIES[family])
        timings[family] = time.perf_counter() - t0
        relevance.update(got.pop("relevance", {}))
        fields.update(got)
        ran += sorted(served_by(family))
        if out is not None:
            output = out if output is None else output
            target = concrete_target(target, out, labels)   # later passes explain the same class as the first
    if output is None:                                   # only "random" asked: the output still names the target
        with torch.inference_mode():
            output = model(x)
        target = concrete_target(target, output, labels)
    t0 = time.perf_counter()
    ro = readout(model, layout, fields.pop("probe", None))   # "map" pooling: the probe's row of this image
    arrays = ExplainArrays(num_prefix=layout.num_prefix, grid=tuple(layout.grid),
                           readout=None if ro.weights is None else _numpy(ro.weights), relevance=relevance,
                           query=ro.query, architecture=architecture, **fields)
    maps = {n: np.asarray(METHODS[n].formula(arrays), dtype=np.float32) for n in available
            if METHODS[n].family in ran}
    timings["formulas"] = time.perf_counter() - t0
    with torch.no_grad():
        score, probability = float(target.score(output)[0]), float(target.probability(output)[0])
    return Explanation(target=target.describe(), maps=maps, grid=tuple(layout.grid), num_prefix=layout.num_prefix,
                       readout=ro.description, query=ro.query, score=score, probability=probability, timings=timings)


def resolve_target(loaded, target: Target | str | int | None, texts: Sequence[str] = (), *,
                   text: bool | None = None) -> Target | None:
    """What a person typed or picked -> a ``Target``: THE rule for the CLI, the page, the API and the trust checks.

    A ``Target`` is kept. ``text`` True: ``target`` is one of the typed ``texts`` (CLIP, ``vit.clip.text_target``:
    its probability among ``texts``; None: the best of them); False: a class name or index
    (``vit.explain.class_target``; None: the top-1 class, returned as None). ``text`` None decides by the
    checkpoint: texts for one with a text tower and no classifier (a CLIP image tower), else classes.
    ValueError for a class the model lacks or texts on a checkpoint without a text tower.
    """
    if isinstance(target, bool) or (target is not None and not isinstance(target, (str, int))):
        return target
    has_text = getattr(loaded, "text", None) is not None
    if text is None:
        text = has_text and not loaded.labels
    if text:
        from vit.clip import text_target
        if target is None and not texts:
            raise ValueError("A CLIP image tower has no classes: give the text to explain (or the texts to choose "
                             "the best-scoring one from).")
        return text_target(loaded, None if target is None else str(target), list(texts))
    if target is None:
        return None
    return class_target(loaded.labels, target)


def explain(loaded, image: Image.Image, target: Target | str | int | None = None,
            methods: Sequence[str] | str | None = None, texts: Sequence[str] = ()) -> Explanation:
    """A photo through a ``vit.LoadedModel`` -> ``Explanation``.

    The photo is cropped and normalised by the checkpoint's own preprocessing (the same pixels as
    ``viz.analysis.analyze``); ``target`` is a ``Target``, a class name or index (``vit.explain.class_target``),
    for a CLIP checkpoint a typed text (``texts``: the other texts typed with it), or None for the top-1 class
    (the best text); ``methods`` a list or "gae,attnlrp" (default: every method).
    """
    target = resolve_target(loaded, target, texts)
    t0 = time.perf_counter()
    x = loaded.preprocess.to_tensor(loaded.preprocess.crop_image(image))
    t1 = time.perf_counter()
    result = explain_tensor(loaded.model, x, target, methods, loaded.labels)
    result.timings["preprocess"] = t1 - t0
    return result


def explain_map(name: str, model, x: torch.Tensor, target: Target | None = None) -> np.ndarray:
    """THE call signature of every method: (model, one image (1, C, H, W), target) -> (gh, gw) map."""
    return explain_tensor(model, x, target, [name]).map(name)
