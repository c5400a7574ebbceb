"""The paper's own protocol: the positive and negative perturbation test of Chefer, Gur & Wolf 2021 ("Transformer
Interpretability Beyond Attention Visualization", CVPR, Sec. 4.2), done as their public code does it
(``baselines/ViT/generate_visualizations.py`` and ``pertubation_eval_from_hdf5.py`` of
hila-chefer/Transformer-Explainability):

- the map (gh, gw) is upsampled to the input's pixels, bilinearly (``F.interpolate(..., scale_factor=patch,
  mode="bilinear")``, their ``scale_factor=16``), and min-max normalised;
- for each step s of 0.1, 0.2, …, 0.9 the ``int(H·W·s)`` pixels of highest relevance (``torch.topk``) are set to
  0 in [0, 1] pixel space, every channel (black; here the model input's value of a black pixel, as the model's
  own normalisation gives it): **positive** perturbation removes the most relevant first, **negative** the least
  relevant first (the map negated);
- each perturbed image counts a hit when the model's top-1 class equals the image's **label** (whatever class the
  map explains); the unperturbed image's hit is the first point;
- over a labelled folder the accuracy at each step, x = 0, 0.1, …, 0.9, and the area ``np.trapz(acc, x) * 100``
  (``np.trapezoid``, its name since numpy 2.0): positive, lower is better; negative, higher is better.

The map explains each image's predicted class ("predicted", their ``--vis-class top``) or its label ("target",
``--vis-class target``). Their images are resized to 224 × 224 without a crop and normalised with mean = std =
0.5 for their ViT-B/16; here each checkpoint's own preprocessing is used, so numbers compare with the paper's only
for that model on ImageNet's validation set.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

STEPS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)      # their ``perturbation_steps`` for ``--scale per``
X = np.array((0.0,) + STEPS)                                # the unperturbed point first
SIGNS = ("positive", "negative")
ISSUES = "https://github.com/hila-chefer/Transformer-Explainability/issues/"
PUBLISHED = {
    "source": "Chefer, Gur & Wolf 2021, Transformer Interpretability Beyond Attention Visualization, CVPR, Table 2 "
              "(arXiv:2012.09838): ViT-B/16 on the ImageNet validation set, positive and negative perturbation "
              "AUC for the predicted and the target class",
    "numbers": None,
    "note": "the table itself could not be read from a public source reachable when this was written; four of its "
            "numbers are quoted in the authors' issue tracker (\"quoted\", each with its thread): compare with the "
            "paper's Table 2 for the rest",
    "quoted": [   # (their method, perturbation, class, AUC as quoted, where)
        {"method": "transformer_attribution (the paper's own method; not one of this project's)",
         "perturbation": "negative", "class": "predicted", "auc": 54.16, "source": ISSUES + "52"},
        {"method": "transformer_attribution (the paper's own method; not one of this project's)",
         "perturbation": "positive", "class": "predicted", "auc": 17.03, "source": ISSUES + "52"},
        {"method": "rollout", "perturbation": "negative", "class": "predicted", "auc": 53.1, "source": ISSUES + "31"},
        {"method": "gradcam (their variant: Grad-CAM on the last attention map)", "perturbation": "negative",
         "class": "predicted", "auc": 41.52, "source": ISSUES + "31"},
    ],
}


def pixel_relevance(relevance: np.ndarray, patch: int) -> torch.Tensor:
    """A (gh, gw) map -> (gh·patch · gw·patch,) pixel relevance: bilinear upsampling, min-max normalised (their
    ``Res``; a constant map stays 0)."""
    r = torch.as_tensor(np.asarray(relevance, dtype=np.float32))[None, None]
    r = F.interpolate(r, scale_factor=patch, mode="bilinear")
    span = r.max() - r.min()
    return ((r - r.min()) / span if span > 0 else torch.zeros_like(r)).reshape(-1)


def perturbed_inputs(x: torch.Tensor, relevance: torch.Tensor, black: torch.Tensor, sign: str) -> torch.Tensor:
    """x (1, C, H, W), relevance (H·W,), black (C,) the input's value of a black pixel -> (9, C, H, W): at each
    step the top ``int(H·W·step)`` pixels (of the map, or of its negation for "negative") set to black."""
    if sign not in SIGNS:
        raise ValueError(f"Unknown perturbation {sign!r}! Expected positive or negative.")
    C, H, W = x.shape[1:]
    vis = relevance if sign == "positive" else -relevance
    out = []
    for step in STEPS:
        _, idx = torch.topk(vis, int(H * W * step))
        removed = torch.zeros(H * W, dtype=torch.bool)
        removed[idx] = True
        image = x[0].reshape(C, H * W).clone()
        image[:, removed] = black[:, None].to(image.dtype)
        out.append(image.reshape(C, H, W))
    return torch.stack(out)


def black_pixel(mean, std) -> torch.Tensor:
    """The model input of a black pixel under the normalisation (x − mean) / std: (C,)."""
    return -torch.as_tensor(mean, dtype=torch.float32) / torch.as_tensor(std, dtype=torch.float32)


def chefer_hits(model, x: torch.Tensor, label: int, maps: dict[str, np.ndarray], black: torch.Tensor,
                patch: int) -> dict[str, dict[str, np.ndarray]]:
    """One labelled image: {"positive" | "negative": {method: (10,) 1.0 where the top-1 class is the label}}, the
    unperturbed image first, then the 9 steps (9 forwards per method and sign, as one batch)."""
    device = next(model.parameters()).device
    with torch.inference_mode():
        plain = float(int(model(x.to(device)).argmax(dim=1)[0]) == label)
        out = {sign: {} for sign in SIGNS}
        for name, relevance in maps.items():
            r = pixel_relevance(relevance, patch)
            for sign in SIGNS:
                predicted = model(perturbed_inputs(x.cpu(), r, black, sign).to(device)).argmax(dim=1).cpu()
                out[sign][name] = np.r_[plain, (predicted == label).numpy().astype(np.float64)]
    return out


def chefer_auc(accuracy) -> float:
    """np.trapz(acc, x) · 100 over x = 0, 0.1, …, 0.9 (accuracy: (10,) in [0, 1], the unperturbed point first)."""
    accuracy = np.asarray(accuracy, dtype=np.float64)
    if accuracy.shape != X.shape:
        raise ValueError(f"Expected the accuracy at {len(X)} points (unperturbed, then 9 steps) but got {accuracy.shape}!")
    return float(np.trapezoid(accuracy, X) * 100)


def chefer_summary(accuracy: dict[str, dict[str, np.ndarray]], cls: str, images: int, imagenet: bool) -> dict:
    """summary/chefer2021.json: {"positive": {method: auc}, "negative": {...}, "accuracy": {sign: {method: [10]}},
    "x": [10], "class": "predicted" | "target", "images", "published": {... "source"}} (``accuracy``: the mean
    hits over the folder's labelled images)."""
    return {"positive": {m: chefer_auc(a) for m, a in accuracy["positive"].items()},
            "negative": {m: chefer_auc(a) for m, a in accuracy["negative"].items()},
            "accuracy": {s: {m: [float(v) for v in a] for m, a in accuracy[s].items()} for s in SIGNS},
            "x": [float(v) for v in X], "class": cls, "images": images,
            "published": {**PUBLISHED, "imagenet_classes": imagenet}}


def chefer_markdown(summary: dict, model: str) -> str:
    """summary/chefer2021.md: our AUCs per method, and what the published numbers are and whether they compare."""
    lines = [f"# Chefer et al. 2021 perturbation test over {summary['images']} labelled images", "",
             f"Model **{model}**; the map explains each image's {summary['class']} class; top-1 accuracy against the "
             "image's label as the 0, 10, …, 90 % most (positive) or least (negative) relevant pixels are set to "
             "black; AUC = `np.trapz(acc, x) * 100`.", "",
             "| method | positive AUC ↓ | negative AUC ↑ |", "|---|---:|---:|"]
    for m in summary["positive"]:
        lines.append(f"| {m} | {summary['positive'][m]:.2f} | {summary['negative'][m]:.2f} |")
    published = summary["published"]
    lines += ["", f"Published: {published['source']}."]
    if not published["imagenet_classes"]:
        lines += ["", "**This folder is not ImageNet**: the model's classes are not ImageNet's 1,000, so the "
                      "published numbers do not apply to it."]
    else:
        lines += ["", "The published numbers compare only when this folder is ImageNet's validation set and the "
                      "model is their ViT-B/16 (otherwise they are a reference, not a target)."]
    if published["numbers"] is None:
        lines += ["", f"Note: {published['note']}."]
    if published.get("quoted"):
        lines += ["", "| published method (quoted) | perturbation | class | AUC | quoted in |",
                  "|---|---|---|---:|---|"]
        lines += [f"| {q['method']} | {q['perturbation']} | {q['class']} | {q['auc']:.2f} | {q['source']} |"
                  for q in published["quoted"]]
    return "\n".join(lines) + "\n"
