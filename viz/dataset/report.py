"""The summary of a data-set run, in ``DIR/summary/``: ``statistics.json``, ``statistics.md`` and plots.

``statistics.json`` (lists are per block, and per head within a block; distances in pixels of the model input). A
value is there where the model's description (``vit.architecture``) gives it a meaning:

    images                  images in the statistics (unreadable files are not counted; see ``failed``)
    failed                  files that could not be read
    mean_distance           L lists of H values: mean attention distance, averaged over images (Figure 7 right); H
                            is the most heads of any block, null past a block's own (a model of stages)
    mean_distance_std       L × H: its standard deviation over images
    entropy, entropy_std    L × H: attention entropy in nats (mean over query tokens), over images
    prefix_share(_std)      L: share of each block's attention on the prefix tokens (CLS, DIST, registers); a model
                            with prefix tokens only
    high_norm_share(_std)   L: share on the high-norm artifact patches (flagged after any block, --norm-ratio); one
                            sequence of tokens only
    high_norm_patches(_std) L: patches flagged high-norm after each block; one sequence of tokens only
    labelled_images, top1, top5   only when the folder is labelled: accuracy over the labelled images
    inside                  only with --inside: {"head_importance": L × H mean Δ target logit when each head
                            alone is ablated, "head_importance_std", "images", and for labelled folders "lens_top1":
                            L, the logit lens's top-1 accuracy after each layer, "lens_top1_std", "labelled_images"}
    faithfulness            only when methods scored the images: {method: {score: {mean, std, images}}} (scores
                            deletion_auc, insertion_auc, and the curves deletion, insertion, sanity); then also
                            faithfulness.json and faithfulness.md (``write_faithfulness``)
    model, weights, input_size, architecture (the family), grid (block 0's, the photo's patch grid), patch_size,
    num_prefix_tokens, stages (each stage's grid, window, heads, blocks, shifts, token size: as result.json), depth,
    heads (one number when every block has as many, else one per block), options {norm_ratio,
    distance_renormalise}, device, dtype, processes; with one sequence of tokens also tokens, uniform_distance and
    uniform_entropy (what uniform attention over it gives); input_varies: true for a NaFlex model, whose photos each
    keep their aspect ratio (input_size, grid, tokens and the uniform values are then a square photo's; the
    per-block statistics do not depend on the grid)

Values that do not exist (no image was readable) are ``null``.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Sequence

import numpy as np

from ..drawing.dataset_plots import heads_by_depth_plot, shares_plot
from ..drawing.plots import figure_to_image
from ..trust.chefer import SIGNS, chefer_markdown, chefer_summary
from ..trust.dataset import folder_agreement, folder_table, folder_verdicts
from .statistics import CHEFER, FAITHFULNESS, INSIDE, Statistics

PER_IMAGE = ("mean_distance", "entropy", "prefix_share", "high_norm_share", "high_norm_patches")
PER_HEAD = ("mean_distance", "entropy")      # (L, most heads): null past a block's own heads


def _plain(values: np.ndarray):
    """Array -> nested lists of floats, NaN as None (JSON has no NaN)."""
    return [_plain(v) for v in values] if np.ndim(values) else (None if math.isnan(values) else float(values))


def _heads_only(values: np.ndarray, heads: Sequence[int] | None) -> np.ndarray:
    """An (L, most heads) table with NaN past each block's ``heads`` (None: every block has them all)."""
    if heads is None:
        return values
    values = np.array(values, dtype=np.float64)
    for layer, count in enumerate(heads):
        values[layer, count:] = np.nan
    return values


def summary(stats: Statistics, info: dict, heads: Sequence[int] | None = None) -> dict:
    """The contents of statistics.json: ``info`` (what the run was) and every statistic (module docstring).
    ``heads``: each block's heads (the per-head tables are null past them)."""
    out = {"images": stats.images, **info}
    for name in PER_IMAGE:
        if name in stats.sums:
            s = stats.sums[name]
            mean, std = (_heads_only(v, heads) if name in PER_HEAD else v for v in (s.mean(), s.std()))
            out[name], out[f"{name}_std"] = _plain(mean), _plain(std)
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


def _model_line(s: dict) -> str:
    """What ran, in words: the tokens of one sequence, or the stages' grids; the blocks and heads."""
    if "tokens" in s:
        return (f"{s['grid'][0]}×{s['grid'][1]} patches + {s['num_prefix_tokens']} prefix = {s['tokens']} tokens, "
                f"{s['depth']} blocks × {s['heads']} heads")
    grids = " → ".join(f"{st['grid'][0]}×{st['grid'][1]}" for st in s["stages"])
    heads = s["heads"] if isinstance(s["heads"], int) else f"{min(s['heads'])}–{max(s['heads'])}"
    return f"{len(s['stages'])} stages of {grids} patch tokens, {s['depth']} blocks × {heads} heads"


def _heads_cell(values: list, spread: list, digits: int) -> str:
    """A block's heads as mean [lowest–highest] ± mean spread (the heads it has)."""
    heads = np.array([v for v in values if v is not None], dtype=float)
    spread = np.array([v for v in spread if v is not None], dtype=float)
    return (f"{heads.mean():.{digits}f} [{heads.min():.{digits}f}–{heads.max():.{digits}f}] "
            f"± {spread.mean():.{digits}f}")


def markdown(s: dict) -> str:
    """statistics.md: what was run, accuracy, one row per block (heads summarised; the statistics the model has,
    its stage where it has several), the faithfulness table."""
    processes = f", {s['processes']} processes" if s["processes"] > 1 else ""
    failed = f" {s['failed']} files could not be read." if s["failed"] else ""
    size = f"{s['input_size'][0]}×{s['input_size'][1]}"
    at = (f"at each photo's own size (its aspect ratio kept; {size} and the numbers below for a square photo)"
          if s.get("input_varies") else f"at {size}")
    lines = [f"# Attention statistics over {s['images']} images", "",
             f"Model **{s['model']}** {at} ({_model_line(s)}), {s['dtype']} on {s['device']}{processes}.{failed}"]
    if "top1" in s:
        lines += ["", f"Accuracy over {s['labelled_images']} labelled images: top-1 **{s['top1']:.4f}**, "
                      f"top-5 **{s['top5']:.4f}**."]
    if s["images"]:
        uniform = (f" Uniform attention would give a distance of {s['uniform_distance']:.1f} px and an entropy of "
                   f"{s['uniform_entropy']:.2f} nats." if "uniform_distance" in s else "")
        stage_of = {b: i for i, st in enumerate(s.get("stages", [])) for b in st["blocks"]}
        stages = len(s.get("stages", [])) > 1
        shares = [(name, title, digits) for name, title, digits in
                  (("prefix_share", "prefix share", 3), ("high_norm_share", "high-norm share", 3),
                   ("high_norm_patches", "high-norm patches", 1)) if name in s]
        lines += ["", "Per block, mean over images (± standard deviation over images); heads as mean "
                      "[lowest–highest]." + uniform, "",
                  "| block |" + (" stage |" if stages else "") + " mean distance (px) | entropy (nats) |"
                  + "".join(f" {title} |" for _, title, _ in shares),
                  "|---:|" + ("---:|" if stages else "") + "---|---|" + "---:|" * len(shares)]
        for l in range(s["depth"]):
            cells = [str(stage_of[l])] if stages else []
            cells += [_heads_cell(s["mean_distance"][l], s["mean_distance_std"][l], 1),
                      _heads_cell(s["entropy"][l], s["entropy_std"][l], 2)]
            for name, _, digits in shares:
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


def write(folder: Path, stats: Statistics, info: dict, scores: tuple[list, np.ndarray] | None = None,
          heads: Sequence[int] | None = None) -> dict:
    """Write statistics.json, statistics.md and the plots into ``folder``; returns the JSON's contents. ``scores``:
    the per-image AUC table (columns, (images, columns)) of the faithfulness run, for its intervals and verdicts;
    with --protocol chefer2021 also chefer2021.json and .md. ``heads``: each block's heads (``summary``)."""
    folder.mkdir(parents=True, exist_ok=True)
    s = summary(stats, info, heads)
    if scores is not None and len(scores[1]):
        protocols, tau = folder_agreement(folder_table(*scores))
        s["protocol_agreement"] = {"protocols": protocols, "kendall_tau": _plain(tau)}
    lines = [f" {json.dumps(key)}: {json.dumps(value)}" for key, value in s.items()]  # one key per line
    (folder / "statistics.json").write_text("{\n" + ",\n".join(lines) + "\n}\n")
    (folder / "statistics.md").write_text(markdown(s))
    if "faithfulness" in s:
        write_faithfulness(folder, s, scores)
    if info.get("chefer2021"):
        write_chefer(folder, stats, s)
    if s["images"]:
        n = f"mean over {s['images']} images, ± std"
        figures = {
            "mean_distance": heads_by_depth_plot(s["mean_distance"], s["mean_distance_std"],
                                                 "Mean attention distance (pixels)", f"Mean attention distance, {n}",
                                                 s.get("uniform_distance"), "uniform"),
            "entropy": heads_by_depth_plot(s["entropy"], s["entropy_std"], "Attention entropy (nats)",
                                           f"Attention entropy, {n}", s.get("uniform_entropy"), "uniform"),
        }
        shares = {label: (s[name], s[f"{name}_std"]) for name, label in
                  (("prefix_share", "prefix tokens"), ("high_norm_share", "high-norm patches")) if name in s}
        if shares:
            figures["attention_shares"] = shares_plot(shares, f"Where the attention goes, {n}")
        for name, fig in figures.items():
            figure_to_image(fig).save(folder / f"{name}.png")
    return s


def faithfulness_table(s: dict, per_image: tuple[list, np.ndarray] | None = None) -> dict:
    """statistics.json's "faithfulness" -> faithfulness.json: {method: {"deletion_auc", "insertion_auc" (means over
    images), "deletion_auc_std", "insertion_auc_std", "deletion", "insertion" (mean curves, points values),
    ["sanity" (mean ρ after 1 … L randomised layers)], "images"}}, methods in the order they were asked for; with
    the ``per_image`` AUC table also "abpc" (mean insertion − deletion AUC), "ci95" {"deletion_auc", "insertion_auc",
    "abpc": [low, high]} (95 % bootstrap over images, ``viz.trust.dataset``) and "verdict" (over the folder and
    every protocol; null for the random baseline), and with several protocols "by_protocol" {protocol:
    {"deletion_auc", "insertion_auc", "abpc", "ci95"}}. The curves and stds are the first protocol's."""
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
    table = {m: table[m] for m in order if m in table}
    if per_image is not None and len(per_image[1]):
        by_protocol = folder_table(*per_image)
        verdicts = folder_verdicts(by_protocol)
        first = next(iter(by_protocol.values()))
        for m, row in table.items():
            row["abpc"], row["ci95"] = first[m]["abpc"], first[m]["ci95"]
            row["verdict"] = verdicts.get(m)
            if len(by_protocol) > 1:
                row["by_protocol"] = {p: rows[m] for p, rows in by_protocol.items()}
    return table


def _ci(row: dict, score: str) -> str:
    low, high = row["ci95"][score]
    return f" [{low:.3f}, {high:.3f}]"


def faithfulness_markdown(table: dict, s: dict) -> str:
    """faithfulness.md: Table 2 of Chefer et al. 2021 laid out for this run: methods as rows, the mean deletion
    (lower is better) and insertion (higher is better) AUC for the explained class, ± standard deviation, with
    the 95 % bootstrap interval, the ABPC and the verdict over the folder when they were computed."""
    what = s.get("faithfulness_class", "predicted")
    cls = "the predicted class" if what == "predicted" else f"the class {what}"
    protocols = s.get("perturbation", "tokens")
    protocols = [protocols] if isinstance(protocols, str) else list(protocols)
    how = ("dropped from the token sequence" if protocols[0] == "tokens"
           else f"replaced in pixel space ({protocols[0]})")
    intervals = any("ci95" in row for row in table.values())
    lines = [f"# Faithfulness over {s['images']} images", "",
             f"Model **{s['model']}**; patches {how}, most relevant first, {s.get('steps', 11)} fractions; area under "
             f"the probability of {cls} (`np.trapezoid`, not normalised), mean ± standard deviation over images"
             + (", [95 % bootstrap interval of the mean] (1,000 seeded resamples of the images)" if intervals else "")
             + ".", "",
             f"| method | deletion AUC ↓ ({what}) | insertion AUC ↑ ({what}) |"
             + (" ABPC ↑ | verdict |" if intervals else ""),
             "|---|---:|---:|" + ("---:|---|" if intervals else "")]
    for method, row in table.items():
        cells = [f"{_f(row['deletion_auc'])} ± {_f(row['deletion_auc_std'])}", 
                 f"{_f(row['insertion_auc'])} ± {_f(row['insertion_auc_std'])}"]
        if intervals:
            cells = [cells[0] + _ci(row, "deletion_auc"), cells[1] + _ci(row, "insertion_auc"),
                     f"{row['abpc']:.3f}" + _ci(row, "abpc"), (row["verdict"] or "baseline").replace("_", " ")]
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    if intervals:
        lines += ["", f"The verdict holds over the folder under every protocol run ({', '.join(protocols)}): "
                      "faithful when the ABPC interval's lower bound lies above the random map's upper bound under "
                      "each, not faithful when its upper bound lies below random's lower bound under each, else "
                      "depends on the protocol."]
    agreement = s.get("protocol_agreement")
    if agreement and len(agreement["protocols"]) > 1:
        names, tau = agreement["protocols"], agreement["kendall_tau"]
        pairs = [f"{names[i]}–{names[j]} {_f(tau[i][j], 2)}" for i in range(len(names)) for j in range(i + 1, len(names))]
        lines += ["", "Protocols' agreement on the ranking by mean ABPC (Kendall τ): " + ", ".join(pairs) + "."]
    return "\n".join(lines) + "\n"


def write_faithfulness(folder: Path, s: dict, scores: tuple[list, np.ndarray] | None = None) -> None:
    """DIR/summary/faithfulness.json and faithfulness.md (see ``faithfulness_table``)."""
    table = faithfulness_table(s, scores)
    (folder / "faithfulness.json").write_text(json.dumps(table, indent=1) + "\n")
    (folder / "faithfulness.md").write_text(faithfulness_markdown(table, s))


def write_chefer(folder: Path, stats: Statistics, s: dict) -> None:
    """DIR/summary/chefer2021.json and chefer2021.md from the summed per-image hits (``viz.trust.chefer``)."""
    accuracy = {sign: {} for sign in SIGNS}
    images = 0
    for name in sorted(n for n in stats.sums if n.startswith(CHEFER)):
        sign, method = name[len(CHEFER):].split(".", 1)
        accuracy[sign][method] = stats.sums[name].mean()
        images = stats.sums[name].count
    order = s.get("chefer_methods") or list(accuracy["positive"])
    accuracy = {sign: {m: accuracy[sign][m] for m in order if m in accuracy[sign]} for sign in SIGNS}
    out = chefer_summary(accuracy, s["chefer2021"], images, s.get("chefer_classes") == 1000)
    (folder / "chefer2021.json").write_text(json.dumps(out, indent=1) + "\n")
    (folder / "chefer2021.md").write_text(chefer_markdown(out, s["model"]))


def write_distance_npz(folder: Path, stats: Statistics, heads: Sequence[int], names: list[str],
                       per_image: list[np.ndarray] | None) -> None:
    """``mean_distance.npz``: the mean over images (L, H) and its ``std``, and ``heads`` (L,) each block's heads (the
    tables hold 0 past them, where a block has fewer than H); when the run wrote per-image files also ``per_image``
    (N, L, H), read back from them, and the ``images`` in run order (the mean is then theirs)."""
    s = stats.sums["mean_distance"]
    arrays = {"mean_distance": s.mean(), "std": s.std(), "heads": np.array(heads)}
    if per_image:
        arrays.update(mean_distance=np.mean(per_image, axis=0), per_image=np.stack(per_image), images=np.array(names))
    np.savez(folder / "mean_distance.npz", **arrays)
