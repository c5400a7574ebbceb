"""The inside views of one photo: ``vit.inside`` run for a target, in steps of about one model pass, into an
``viz.inside.InsideReport`` (numpy only, cacheable, drawn by ``viz.inside.pictures`` without the model).

    job = InsideJob(model, x, labels=loaded.labels, views=("lens", "dla", "heads"), ablate="11.0,11.2",
                    other=x2, other_name="dog")
    for done, total, what in job.steps():    # each step: one forward (+ one backward), or one layer's batch
        ...                                   # report progress, give another request the model's turn, …
    report = job.result()

The first step (one forward, one backward when head importance is asked) already gives the lens, DLA and the
attribution-patching estimate of head importance (``job.partial()`` returns them at once); the exact head
importance and the exact per-head patching follow one layer per step (H ablated copies continued from the kept
stream, ``vit.inside.ablation``). ``inside_report`` runs a whole job from a photo; ``reference_means`` averages the
heads over a folder for mean ablation; ``dataset_values`` gives a data-set batch's per-image values.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np
import torch
from PIL import Image

from vit.explain import Target
from vit.inside import (Classes, ablate, classes_for, direct_logit_attribution, head_importance_linear,
                        head_importance_steps, head_means, head_names, logit_lens, parse_heads, patch_heads_steps,
                        patch_residual_estimate, rank_of, score_for, score_gap, trace, why_not_linear)

from ..inside.report import VIEWS, AblatedView, DLAView, HeadsView, InsideReport, LensView, PatchedView, TopK
from ..trust.sanity import spearman

LENS_NOTE = ("The lens applies the attention-pool probe (MAP) and the head to each layer's tokens; the probe was "
             "trained on the last layer's tokens only, so the early layers' readings are approximate.")


def view_names(text: str | Sequence[str]) -> list[str]:
    """"lens,dla" (or a list) -> ["lens", "dla"]; ValueError for a view that does not exist, listing those that do."""
    names = [n.strip() for n in (text.split(",") if isinstance(text, str) else text) if n.strip()]
    unknown = [n for n in names if n not in VIEWS]
    if unknown or not names:
        problem = f"Unknown inside view {unknown[0]!r}!" if unknown else "No inside view given!"
        raise ValueError(f"{problem} Expected one or more of {', '.join(VIEWS)}, comma-separated.")
    return list(dict.fromkeys(names))


def check_views(model, views: Sequence[str]) -> None:
    """ValueError when a view is undefined for this model's family, saying why and which views it has."""
    reason = why_not_linear(model)
    if "dla" in views and reason:
        valid = ", ".join(v for v in VIEWS if v != "dla")
        raise ValueError(f"The dla view is undefined for this model: {reason} Views for this model: {valid}.")


def _describe(classes: Classes, index: int) -> dict:
    return {"index": int(index), "name": classes.names[index]}


class InsideJob:
    """The inside views of one photo x (1, C, H, W), run in steps (module docstring).

    ``target``/``contrast``: ``vit.explain`` targets (None: the top-1; a CLIP tower needs text targets);
    ``views``: a subset of ``VIEWS``; ``ablate``: heads ``"L.H,…"`` or [(l, h)] ablated together; ``means``: the
    heads' reference means (L, H, T, Dh) for mean instead of zero ablation (``reference_means``); ``other``: a second
    photo (1, C, H, W) to patch from, ``other_name`` its name, ``patch_target`` the patched class (default: the
    other photo's top-1); ``head_importance``: an exact (L, H) table already computed for this photo and target
    (a data-set run's), so its steps are skipped.
    """

    def __init__(self, model, x: torch.Tensor, target: Target | None = None, contrast: Target | None = None,
                 views: Sequence[str] = VIEWS, labels: Sequence[str] = (), ablate: str | Sequence | None = None,
                 means: torch.Tensor | None = None, other: torch.Tensor | None = None, other_name: str = "",
                 patch_target: Target | None = None, head_importance: np.ndarray | None = None):
        if x.ndim != 4 or x.shape[0] != 1:
            raise ValueError(f"Wrong input shape! Expected one image (1, C, H, W) but got {tuple(x.shape)}.")
        self.model = model
        self.views = view_names(views) if views else []
        check_views(model, self.views)
        device = next(model.parameters()).device
        self.x = x.to(device)
        self.other = None if other is None else other.to(device)
        if self.other is not None and self.other.shape != self.x.shape:
            raise ValueError(f"The photo to patch from must have the same input size: {tuple(self.x.shape[-2:])} "
                             f"but got {tuple(self.other.shape[-2:])}.")
        cfg = model.cfg
        self.ablate = parse_heads(ablate, cfg.depth, cfg.num_heads) if ablate else []
        self.means = means
        self.other_name = other_name
        self.target, self.contrast, self.patch_target = target, contrast, patch_target
        self.classes = classes_for(model, labels, target, contrast, patch_target)
        self.precomputed = head_importance
        self._trace = self._score = self._other = self._patch_score = self._patch_trace = None
        self._heads = self._patches = None          # the exact tables' layer-by-layer generators, once started
        self._parts: dict = {}
        self._exact: list = []
        self._shares: list = []
        self.timings: dict[str, float] = {}
        self._steps = self._plan()
        self._done = 0

    # --- what runs -----------------------------------------------------------------------------------------------

    def _plan(self) -> list[tuple[str, Callable[[], None]]]:
        L = self.model.cfg.depth
        steps = [("forward", self._first)]
        if "heads" in self.views and self.precomputed is None:
            steps += [(f"head importance, layer {l}", self._heads_layer) for l in range(L)]
        if self.ablate:
            steps.append(("ablation", self._ablated))
        if self.other is not None:
            steps += [("other photo", self._other_photo), ("patching gradient", self._patch_gradient)]
            steps += [(f"patching, layer {l}", self._patch_layer) for l in range(L)]
        return steps

    @property
    def total(self) -> int:
        return len(self._steps)

    def steps(self) -> Iterator[tuple[int, int, str]]:
        """Run the remaining steps one at a time, yielding (steps done, steps in all, what the last step did)."""
        while self._done < len(self._steps):
            what, run = self._steps[self._done]
            t0 = time.perf_counter()
            run()
            self.timings[what] = time.perf_counter() - t0
            self._done += 1
            yield self._done, len(self._steps), what

    def result(self) -> InsideReport:
        """Run what is left and assemble the report."""
        for _ in self.steps():
            pass
        return self.partial()

    def _score_of(self, output: torch.Tensor) -> torch.Tensor:
        return score_for(self.classes, output, self.target, self.contrast)(output)

    def _first(self) -> None:
        """One forward (and one backward for head importance): the lens, DLA and the linear estimate."""
        want_heads = "heads" in self.views
        self._trace = trace(self.model, self.x, attention="dla" in self.views,
                            score=self._score_of if want_heads else None)
        t = self._trace
        self._score = score_for(self.classes, t.output, self.target, self.contrast)
        probabilities = self.classes.logits(t.output).softmax(dim=-1)[0].float().cpu().numpy()
        self._parts["top5"] = TopK.of(probabilities)
        layout = t.layout
        if "lens" in self.views:
            lens = logit_lens(self.model, t, self.classes)
            L = t.depth
            p = lens.logits[0].softmax(dim=-1).cpu().numpy()                        # (L, K)
            index = int(self._score.index[0])
            self._parts["lens"] = LensView(
                top5=[TopK.of(p[l]) for l in range(L)], target_probability=p[:, index].astype(np.float64),
                target_rank=rank_of(lens.logits[0], torch.full((L,), index)).cpu().numpy(),
                patches=lens.patches[0].reshape(L, *layout.grid).cpu().numpy(), approximate=lens.approximate)
        if "dla" in self.views:
            d = direct_logit_attribution(self.model, t, self._score)
            self._parts["dla"] = DLAView(d.logit, d.head_bias, d.embedding, d.attention_bias.numpy(),
                                         d.heads.numpy(), d.mlp.numpy(), d.sources.float().numpy(),
                                         layout.num_prefix, tuple(layout.grid))
        if want_heads:
            self._parts["linear"] = head_importance_linear(t, self.means)[0].numpy()
            self._heads = head_importance_steps(self.model, t, self._score, self.means)

    def _heads_layer(self) -> None:
        _, delta = next(self._heads)
        self._exact.append(delta[0].numpy())

    def _ablated(self) -> None:
        t = self._need_trace()
        with torch.inference_mode():
            output = ablate(self.model, self.x, self.ablate, self.means)
        probabilities = self.classes.logits(output).softmax(dim=-1)[0].float().cpu().numpy()
        delta = float(self._score(output)[0] - self._score(t.output)[0])
        self._parts["ablated"] = AblatedView(head_names(self.ablate), TopK.of(probabilities), delta,
                                             "zero" if self.means is None else "mean")

    def _other_photo(self) -> None:
        self._need_trace()
        self._other = trace(self.model, self.other)
        self._patch_score = score_for(self.classes, self._other.output, self.patch_target, self.contrast)

    def _patch_gradient(self) -> None:
        """This photo's backward for the patched class (the first step's serves when it is the same class)."""
        same = self._trace.heads_grad is not None and torch.equal(self._patch_score.index, self._score.index)
        self._patch_trace = self._trace if same else trace(self.model, self.x, score=self._patch_score)
        self._parts["residual"] = patch_residual_estimate(self._patch_trace, self._other, self._patch_score).numpy()
        self._patches = patch_heads_steps(self.model, self._trace, self._other, self._patch_score)

    def _patch_layer(self) -> None:
        _, share = next(self._patches)
        self._shares.append(share.numpy())

    def _need_trace(self):
        if self._trace is None:
            self._first()
        return self._trace

    # --- the report ----------------------------------------------------------------------------------------------

    def partial(self) -> InsideReport:
        """The report of the steps run so far (the exact tables None or absent until all their layers ran)."""
        t = self._need_trace()
        L = t.depth
        heads = None
        if "heads" in self.views:
            exact = self.precomputed if self.precomputed is not None else \
                (np.stack(self._exact) if len(self._exact) == L else None)
            linear = self._parts["linear"]
            heads = HeadsView("zero" if self.means is None else "mean", exact, linear,
                              None if exact is None else spearman(exact, linear))
        patched = None
        if self.other is not None and len(self._shares) == L:
            s_this, s_other = score_gap(t, self._other, self._patch_score)
            patched = PatchedView(self.other_name, _describe(self.classes, int(self._patch_score.index[0])),
                                  np.stack(self._shares), self._parts["residual"], s_this, s_other,
                                  t.layout.num_prefix, tuple(t.layout.grid))
        notes = [LENS_NOTE] if "lens" in self._parts and self._parts["lens"].approximate else []
        return InsideReport(
            names=self.classes.names, target=_describe(self.classes, int(self._score.index[0])),
            top5=self._parts["top5"], grid=tuple(t.layout.grid), num_prefix=t.layout.num_prefix,
            contrast=None if self._score.contrast is None else _describe(self.classes, int(self._score.contrast[0])),
            lens=self._parts.get("lens"), dla=self._parts.get("dla"), heads=heads, ablated=self._parts.get("ablated"),
            patched=patched, notes=notes, timings=dict(self.timings))


def inside_report(loaded, photo: Image.Image, target=None, contrast=None, views: Sequence[str] = VIEWS,
                  ablate: str | Sequence | None = None, other: Image.Image | None = None, other_name: str = "",
                  means: torch.Tensor | None = None, texts: Sequence[str] = ()) -> InsideReport:
    """A photo through a ``vit.LoadedModel`` -> ``InsideReport``: the checkpoint's own crop and normalisation (the
    pixels ``viz.analysis.analyze`` sees); ``target``/``contrast`` typed names or indices, or for a CLIP checkpoint
    texts (``texts``: the other texts typed with them), as ``viz.analysis.resolve_target`` reads them."""
    from ..explain.explainer import resolve_target

    x = loaded.preprocess.to_tensor(loaded.preprocess.crop_image(photo))
    second = None if other is None else loaded.preprocess.to_tensor(loaded.preprocess.crop_image(other))
    job = InsideJob(loaded.model, x, resolve_target(loaded, target, texts), resolve_target(loaded, contrast, texts)
                    if contrast is not None else None, views, loaded.labels, ablate, means, second, other_name)
    return job.result()


def reference_means(loaded, paths: Sequence[Path], batch_size: int = 8) -> torch.Tensor:
    """Every head's mean output per token position over the photos ``paths`` -> (L, H, T, Dh) (streamed, a batch of
    ``batch_size`` at a time), for mean ablation (``--reference FOLDER``)."""
    from vit.image_file import open_image

    device = next(loaded.model.parameters()).device

    def batches():
        for i in range(0, len(paths), batch_size):
            yield torch.cat([loaded.preprocess(open_image(p)) for p in paths[i:i + batch_size]]).to(device)

    return head_means(loaded.model, batches())


def dataset_values(model, x: torch.Tensor, labels: Sequence[int | None], target: Target | None = None,
                   contrast: Target | None = None, views: Sequence[str] = ("heads",), class_names: Sequence[str] = (),
                   means: torch.Tensor | None = None) -> list[dict[str, np.ndarray]]:
    """A data-set batch (B, C, H, W) -> each image's values for the summary: "inside.head_importance" (L, H) (exact,
    with "heads" in ``views``; zero ablation, or ``means``), "inside.lens_top1" (L,) 1.0 where the lens's top-1
    after block l is the image's label (labelled images only). ``target`` None: each image's own top-1. The batch
    runs together: one forward, then one batch of B·H ablations per layer."""
    classes = classes_for(model, class_names, target, contrast)
    t = trace(model, x)
    score = score_for(classes, t.output, target, contrast)
    values: list[dict[str, np.ndarray]] = [{} for _ in labels]
    if "heads" in views:
        delta = torch.stack([d for _, d in head_importance_steps(model, t, score, means)], dim=1)   # (B, L, H)
        for b, v in enumerate(values):
            v["inside.head_importance"] = delta[b].double().numpy()
    if any(label is not None for label in labels):
        top1 = logit_lens(model, t, classes, patches=False).logits.argmax(dim=-1).cpu().numpy()   # (B, L)
        for b, label in enumerate(labels):
            if label is not None:
                values[b]["inside.lens_top1"] = (top1[b] == label).astype(np.float64)
    return values
