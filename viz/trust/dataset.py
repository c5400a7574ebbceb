"""A folder's faithfulness with its uncertainty: each method's mean AUCs and ABPC with a 95 % bootstrap confidence
interval over the images, the verdict over the folder, and the protocols' agreement.

Per image and protocol, every method's deletion and insertion AUC (and the random map's) form one row of a table
(``score_columns`` / ``image_scores``). The interval of a mean is the percentile bootstrap (Efron 1979): the
images are resampled with replacement ``RESAMPLES`` times with a seeded generator, the same resampled sets for every
column (so that differences between methods are resampled as pairs), and the 2.5th and 97.5th percentiles of the
resampled means are the interval. Over the folder, a method is **faithful** when, under every protocol run, the
lower bound of its ABPC's interval lies above the upper bound of the random map's, **not_faithful** when its upper
bound lies below random's lower bound under every protocol, and **depends_on_protocol** otherwise.
"""
from __future__ import annotations

import numpy as np

from .verdicts import agreement

RESAMPLES = 1000          # bootstrap resamples of the images
SEED = 0                  # of the resampling generator, so that the intervals are reproducible
LEVEL = 0.95              # the intervals' coverage
SCORES = ("deletion_auc", "insertion_auc")


def score_columns(protocols, methods) -> list[tuple[str, str, str]]:
    """The per-image table's columns: (protocol, method, score) for every protocol, every method and the random
    map (added when not asked for), deletion and insertion AUC."""
    names = list(dict.fromkeys(list(methods) + ["random"]))
    return [(p, m, s) for p in protocols for m in names for s in SCORES]


def image_scores(report, columns: list[tuple[str, str, str]]) -> np.ndarray:
    """One image's row of the table: a ``TrustReport`` or ``ProtocolsReport`` -> (len(columns),) float64."""
    reports = getattr(report, "reports", None) or {report.protocol: report}
    row = []
    for p, m, s in columns:
        r = reports[p]
        f = r.methods[m].faithfulness if m in r.methods else r.random
        row.append(getattr(f, s))
    return np.array(row, dtype=np.float64)


def bootstrap_ci(values: np.ndarray, resamples: int = RESAMPLES, seed: int = SEED,
                 level: float = LEVEL) -> np.ndarray:
    """values (images, k) -> (k, 2): the percentile bootstrap interval of each column's mean over the images, the
    same resampled image sets for every column."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2 or values.shape[0] == 0:
        raise ValueError(f"Expected an (images, columns) table with at least one image but got {values.shape}!")
    picks = np.random.default_rng(seed).integers(0, values.shape[0], size=(resamples, values.shape[0]))
    means = values[picks].mean(axis=1)                                   # (resamples, k)
    tail = (1 - level) / 2 * 100
    return np.percentile(means, [tail, 100 - tail], axis=0).T


def folder_table(columns: list[tuple[str, str, str]], values: np.ndarray, **bootstrap) -> dict:
    """{protocol: {method: {"deletion_auc", "insertion_auc", "abpc" (means over the images), "ci95": {score: [low,
    high]}}}} from the per-image table (``bootstrap``: resamples, seed, level of ``bootstrap_ci``)."""
    values = np.asarray(values, dtype=np.float64)
    index = {c: i for i, c in enumerate(columns)}
    protocols = list(dict.fromkeys(p for p, _, _ in columns))
    methods = list(dict.fromkeys(m for _, m, _ in columns))
    derived, names = [], []
    for p in protocols:
        for m in methods:
            d, i = values[:, index[(p, m, "deletion_auc")]], values[:, index[(p, m, "insertion_auc")]]
            derived += [d, i, i - d]
            names += [(p, m, "deletion_auc"), (p, m, "insertion_auc"), (p, m, "abpc")]
    table = np.stack(derived, axis=1)
    ci = bootstrap_ci(table, **bootstrap)
    mean = table.mean(axis=0)
    out: dict = {}
    for k, (p, m, s) in enumerate(names):
        row = out.setdefault(p, {}).setdefault(m, {"ci95": {}})
        row[s] = float(mean[k])
        row["ci95"][s] = [float(ci[k, 0]), float(ci[k, 1])]
    return out


def folder_verdicts(table: dict) -> dict[str, str]:
    """{method: verdict} over the folder from ``folder_table``'s result (every method but random)."""
    out = {}
    methods = [m for m in next(iter(table.values())) if m != "random"]
    for m in methods:
        ci = {p: rows[m]["ci95"]["abpc"] for p, rows in table.items()}
        baseline = {p: rows["random"]["ci95"]["abpc"] for p, rows in table.items()}
        if all(ci[p][0] > baseline[p][1] for p in table):
            out[m] = "faithful"
        elif all(ci[p][1] < baseline[p][0] for p in table):
            out[m] = "not_faithful"
        else:
            out[m] = "depends_on_protocol"
    return out


def folder_agreement(table: dict) -> tuple[list[str], np.ndarray]:
    """(protocols, Kendall τ-b between the protocols' rankings of the methods by mean ABPC over the folder)."""
    return agreement({p: {m: row["abpc"] for m, row in rows.items()} for p, rows in table.items()})
