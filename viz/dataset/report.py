"""The summary of a data-set run, in ``DIR/summary/``: ``statistics.json``, ``statistics.md`` and plots.

``statistics.json`` (lists are per block, and per head within a block; distances in pixels of the model input):

    images                  images in the statistics (unreadable files are not counted; see ``failed``)
    failed                  files that could not be read
    mean_distance           L lists of H values: mean attention distance, averaged over images (Figure 7 right)
    mean_distance_std       L × H: its standard deviation over images
    entropy, entropy_std    L × H: attention entropy in nats (mean over query tokens), over images
    prefix_share(_std)      L: share of each block's attention on the prefix tokens (CLS, DIST, registers)
    high_norm_share(_std)   L: share on the high-norm artifact patches (flagged after any block, --norm-ratio)
    high_norm_patches(_std) L: patches flagged high-norm after each block
    labelled_images, top1, top5   only when the folder is labelled: accuracy over the labelled images
    inside                  only with --inside: {"head_importance": L × H mean Δ target logit when each head
                            alone is ablated, "head_importance_std", "images", and for labelled folders "lens_top1":
                            L, the logit lens's top-1 accuracy after each layer, "lens_top1_std", "labelled_images"}
    faithfulness            only when methods scored the images: {method: {score: {mean, std, images}}} (scores
                            deletion_auc, insertion_auc, and the curves deletion, insertion, sanity); then also
                            faithfulness.json and faithfulness.md (``write_faithfulness``)
    model, weights, input_size, grid, patch_size, num_prefix_tokens, depth, heads, tokens, uniform_distance,
    uniform_entropy, options {norm_ratio, distance_renormalise}, device, dtype, processes

Values that do not exist (no image was readable) are ``null``.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from ..drawing.dataset_plots import heads_by_depth_plot, shares_plot
from ..drawing.plots import figure_to_image
from .statistics import FAITHFULNESS, INSIDE, Statistics

PER_IMAGE = ("mean_distance", "entropy", "prefix_share", "high_norm_share", "high_norm_patches")


def _plain(values: np.ndarray):
    """Array -> nested lists of floats, NaN as None (JSON has no NaN)."""
    return [_plain(v) for v in values] if np.ndim(values) else (None if math.isnan(values) else float(values))


def summary(stats: Statistics, info: dict) -> dict:
    """The contents of statistics.json: ``info`` (what the run was) and every statistic (module docstring)."""
    out = {"images": stats.images, **info}
    for name in PER_IMAGE:
        if name in stats.sums:
            out[name] = _plain(stats.sums[name].mean())
            out[f"{name}_std"] = _plain(stats.sums[name].std())
    labelled = stats.sums.get("top1")
    if labelled is not None and labelled.count:
        out.update(labelled_images=labelled.count, top1=float(labelled.mean()), top5=float(stats.sums["top5"].mean()))
    inside = inside_summary(stats)
    if inside:
        out["inside"] = inside
    methods: dict = {}
    for name in sorted(n for n in stats.sums if n.startswith(FAITHFULNESS)):
        method, _, score = name[len(FAITHFULNESS):].rpartition(".")
        s = stats.sums[name]
        methods.setdefault(method, {})[score] = {"mean": _plain(s.mean()), "std": _plain(s.std()), "images": s.count}
    if methods:
        out["faithfulness"] = methods
    return out


def inside_summary(stats: Statistics) -> dict:
    """statistics.json's "inside": the means and spreads of the inside views' per-image values, with their counts."""
    out: dict = {}
    for name, count in (("head_importance", "images"), ("lens_top1", "labelled_images")):
        s = stats.sums.get(INSIDE + name)
        if s is not None and s.count:
            out.update({name: _plain(s.mean()), f"{name}_std": _plain(s.std()), count: s.count})
    return out


def _inside_markdown(s: dict) -> list[str]:
    inside = s["inside"]
    lines = ["", "## Inside the model", ""]
    if "head_importance" in inside:
        delta = np.array(inside["head_importance"], dtype=float)
        order = np.argsort(delta, axis=None, kind="stable")[:5]
        heads = ", ".join(f"{l}.{h} ({delta[l, h]:+.2f})" for l, h in zip(*np.unravel_index(order, delta.shape)))
        lines.append(f"Heads whose ablation alone costs the target logit most, mean over {inside['images']} images: "
                     f"{heads}.")
    if "lens_top1" in inside:
        accuracy = " | ".join(_f(v, 3) for v in inside["lens_top1"])
        lines += ["", f"Logit lens top-1 accuracy after each layer ({inside['labelled_images']} labelled images):", "",
                  "| " + " | ".join(str(l) for l in range(len(inside["lens_top1"]))) + " |",
                  "|" + "---:|" * len(inside["lens_top1"]), f"| {accuracy} |"]
    return lines


def _f(value, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def markdown(s: dict) -> str:
    """statistics.md: what was run, accuracy, one row per block (heads summarised), the faithfulness table."""
    processes = f", {s['processes']} processes" if s["processes"] > 1 else ""
    failed = f" {s['failed']} files could not be read." if s["failed"] else ""
    lines = [f"# Attention statistics over {s['images']} images", "",
             f"Model **{s['model']}** at {s['input_size'][0]}×{s['input_size'][1]} "
             f"({s['grid'][0]}×{s['grid'][1]} patches + {s['num_prefix_tokens']} prefix = {s['tokens']} tokens, "
             f"{s['depth']} blocks × {s['heads']} heads), {s['dtype']} on {s['device']}{processes}.{failed}"]
    if "top1" in s:
        lines += ["", f"Accuracy over {s['labelled_images']} labelled images: top-1 **{s['top1']:.4f}**, "
                      f"top-5 **{s['top5']:.4f}**."]
    if s["images"]:
        lines += ["", "Per block, mean over images (± standard deviation over images); heads as mean "
                      "[lowest–highest]. "
                      f"Uniform attention would give a distance of {s['uniform_distance']:.1f} px and an entropy of "
                      f"{s['uniform_entropy']:.2f} nats.", "",
                  "| block | mean distance (px) | entropy (nats) | prefix share | high-norm share "
                  "| high-norm patches |",
                  "|---:|---|---|---:|---:|---:|"]
        for l in range(s["depth"]):
            cells = []
            for name in ("mean_distance", "entropy"):
                heads, spread = np.array(s[name][l], dtype=float), np.array(s[f"{name}_std"][l], dtype=float)
                cells.append(f"{heads.mean():.1f} [{heads.min():.1f}–{heads.max():.1f}] ± {spread.mean():.1f}"
                             if name == "mean_distance" else
                             f"{heads.mean():.2f} [{heads.min():.2f}–{heads.max():.2f}] ± {spread.mean():.2f}")
            for name, digits in (("prefix_share", 3), ("high_norm_share", 3), ("high_norm_patches", 1)):
                cells.append(f"{_f(s[name][l], digits)} ± {_f(s[f'{name}_std'][l], digits)}")
            lines.append(f"| {l} | " + " | ".join(cells) + " |")
    if "inside" in s:
        lines += _inside_markdown(s)
    if "faithfulness" in s:
        lines += ["", "## Faithfulness", "", "| method | score | mean | std | images |", "|---|---|---:|---:|---:|"]
        for method, scores in s["faithfulness"].items():
            for score, v in scores.items():
                if isinstance(v["mean"], list):      # the mean curves: in faithfulness.json
                    continue
                lines.append(f"| {method} | {score} | {_f(v['mean'], 4)} | {_f(v['std'], 4)} | {v['images']} |")
    return "\n".join(lines) + "\n"


def write(folder: Path, stats: Statistics, info: dict) -> dict:
    """Write statistics.json, statistics.md and the plots into ``folder``; returns the JSON's contents."""
    folder.mkdir(parents=True, exist_ok=True)
    s = summary(stats, info)
    lines = [f" {json.dumps(key)}: {json.dumps(value)}" for key, value in s.items()]  # one key per line
    (folder / "statistics.json").write_text("{\n" + ",\n".join(lines) + "\n}\n")
    (folder / "statistics.md").write_text(markdown(s))
    if "faithfulness" in s:
        write_faithfulness(folder, s)
    if s["images"]:
        n = f"mean over {s['images']} images, ± std"
        figures = {
            "mean_distance": heads_by_depth_plot(s["mean_distance"], s["mean_distance_std"],
                                                 "Mean attention distance (pixels)", f"Mean attention distance, {n}",
                                                 s["uniform_distance"], "uniform"),
            "entropy": heads_by_depth_plot(s["entropy"], s["entropy_std"], "Attention entropy (nats)",
                                           f"Attention entropy, {n}", s["uniform_entropy"], "uniform"),
            "attention_shares": shares_plot({"prefix tokens": (s["prefix_share"], s["prefix_share_std"]),
                                             "high-norm patches": (s["high_norm_share"], s["high_norm_share_std"])},
                                            f"Where the attention goes, {n}"),
        }
        for name, fig in figures.items():
            figure_to_image(fig).save(folder / f"{name}.png")
    return s


def faithfulness_table(s: dict) -> dict:
    """statistics.json's "faithfulness" -> faithfulness.json: {method: {"deletion_auc", "insertion_auc" (means over
    images), "deletion_auc_std", "insertion_auc_std", "deletion", "insertion" (mean curves, 11 values),
    ["sanity" (mean ρ after 1 … L randomised layers)], "images"}}, methods in the order they were asked for."""
    table = {}
    for method, scores in s["faithfulness"].items():
        row = {}
        for score in ("deletion_auc", "insertion_auc"):
            row[score], row[f"{score}_std"] = scores[score]["mean"], scores[score]["std"]
        for curve in ("deletion", "insertion", "sanity"):
            if curve in scores:
                row[curve] = scores[curve]["mean"]
        row["images"] = scores["deletion_auc"]["images"]
        table[method] = row
    order = s.get("faithfulness_order") or list(table)
    return {m: table[m] for m in order if m in table}


def faithfulness_markdown(table: dict, s: dict) -> str:
    """faithfulness.md: Table 2 of Chefer et al. 2021 laid out for this run: methods as rows, the mean deletion
    (lower is better) and insertion (higher is better) AUC for the explained class, ± standard deviation."""
    what = s.get("faithfulness_class", "predicted")
    cls = "the predicted class" if what == "predicted" else f"the class {what}"
    lines = [f"# Faithfulness over {s['images']} images", "",
             f"Model **{s['model']}**; patches {'dropped from the token sequence' if s.get('perturbation', 'tokens') == 'tokens' else 'replaced in pixel space (' + s['perturbation'] + ')'}, "
             f"most relevant first, 11 fractions; area under the probability of {cls} (`np.trapezoid`, not "
             "normalised), mean ± standard deviation over images.", "",
             f"| method | deletion AUC ↓ ({what}) | insertion AUC ↑ ({what}) |", "|---|---:|---:|"]
    for method, row in table.items():
        lines.append(f"| {method} | {_f(row['deletion_auc'])} ± {_f(row['deletion_auc_std'])} "
                     f"| {_f(row['insertion_auc'])} ± {_f(row['insertion_auc_std'])} |")
    return "\n".join(lines) + "\n"


def write_faithfulness(folder: Path, s: dict) -> None:
    """DIR/summary/faithfulness.json and faithfulness.md (see ``faithfulness_table``)."""
    table = faithfulness_table(s)
    (folder / "faithfulness.json").write_text(json.dumps(table, indent=1) + "\n")
    (folder / "faithfulness.md").write_text(faithfulness_markdown(table, s))


def write_distance_npz(folder: Path, stats: Statistics, names: list[str], per_image: list[np.ndarray] | None) -> None:
    """``mean_distance.npz``: the mean over images (L, H) and its ``std``; when the run wrote per-image files also
    ``per_image`` (N, L, H), read back from them, and the ``images`` in run order (the mean is then theirs)."""
    s = stats.sums["mean_distance"]
    arrays = {"mean_distance": s.mean(), "std": s.std()}
    if per_image:
        arrays.update(mean_distance=np.mean(per_image, axis=0), per_image=np.stack(per_image), images=np.array(names))
    np.savez(folder / "mean_distance.npz", **arrays)
