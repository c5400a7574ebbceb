"""What the page's Trust tab shows, in the visitor's language (no Gradio here): the verdict of every method in
words a student reads correctly, every AUC with its sampling error, the gains over the random map with the
margin they must exceed, how far the ways of removing patches agree, what a check costs, and the figure.

A check runs one protocol ("fast": patches dropped from the tokens) or all four ("thorough"); both give a
``viz.trust.ProtocolsReport``. With one protocol a verdict is marked "(one protocol)" and the page says that
another way of removing patches may change it; with several, a method is called faithful (or not) only where
every protocol agrees, and otherwise the page says that it depends on how patches are removed and shows the
gain under each.
"""
from __future__ import annotations

import numpy as np
from PIL import Image

from ..drawing.plots import figure_to_image
from .figure import trust_figure
from ..i18n import t
from ..records import Analysis
from .protocols import PROTOCOLS
from .verdicts import ProtocolsReport, Verdict

MARKS = {"faithful": "✓", "not_faithful": "✗", "inside": "≈", "depends_on_protocol": "?"}
ORDER = ("faithful", "depends_on_protocol", "inside", "not_faithful")   # how the verdicts are listed


def verdict_kind(v: Verdict) -> str:
    """faithful, not_faithful, inside (no protocol tells it from random) or depends_on_protocol (they disagree)."""
    if v.verdict == "depends_on_protocol" and all(abs(g) <= v.margin[p] for p, g in v.abpc_gain.items()):
        return "inside"
    return v.verdict


def verdict_words(v: Verdict, lang: str = "en") -> str:
    """The verdict as the page writes it: "✓ faithful (one protocol)", "✓ faithful on this photo under all 4 ways of
    removing patches", "? depends on how patches are removed (tokens ✗ · mean colour ✓ · …): see the table", …
    (the marks say which protocols it passes, readable on a phone where the table scrolls)."""
    kind, n = verdict_kind(v), len(v.abpc_gain)
    if n == 1:
        return t(f"trust.verdict.{kind}.one", lang)
    marks = " · ".join(f"{protocol_name(p, lang)} {cell_mark(g, v.margin[p])}" for p, g in v.abpc_gain.items())
    return t(f"trust.verdict.{kind}.all", lang, n=n, marks=marks)


def cell_mark(gain: float, margin: float) -> str:
    """✓ beyond the margin, ✗ below minus the margin, ≈ within it."""
    return MARKS["faithful"] if gain > margin else MARKS["not_faithful"] if gain < -margin else MARKS["inside"]


def protocol_name(protocol: str, lang: str = "en") -> str:
    return t(f"trust.protocol.{protocol}", lang)


def method_name(method: str, lang: str = "en") -> str:
    """A method as people read it ("grad × attention", "梯度×注意力"), not as the code calls it ("gae")."""
    return t(f"method.{method}", lang)


def _seconds(seconds: float | None, lang: str) -> str:
    if seconds is None:
        return ""
    if seconds < 1:
        return t("trust.took_under", lang)
    return t("trust.took", lang, seconds=f"{seconds:.1f}" if seconds < 10 else f"{seconds:.0f}")


def _sanity(m, lang: str) -> str:
    if m.sanity is None:
        return "—"
    return f"{m.sanity[-1]:.2f}" + (f" {t('trust.flagged', lang)}" if m.flagged else "")


def _head(report: ProtocolsReport, lang: str, seconds: float | None) -> str:
    first = report.first
    kind = "thorough" if len(report.protocols) > 1 else "fast" if report.protocols[0] == "tokens" else "one"
    names = t("trust.comma", lang).join(protocol_name(p, lang) for p in report.protocols)
    return t(f"trust.head.{kind}", lang, target=first.target["name"], probability=first.probability,
             n=len(report.protocols), protocols=names, points=len(first.fractions)) + _seconds(seconds, lang)


def _auc(value: float, error: float) -> str:
    return f"{value:.3f} ± {error:.3f}"


def trust_table(report: ProtocolsReport, lang: str = "en", seconds: float | None = None) -> str:
    """The Trust tab's main text (Markdown). One protocol: a table of every method, most faithful first, with its
    verdict "(one protocol)", both AUCs ± their errors, the gain over random ± its margin and (after a sanity run)
    ρ with every layer randomised; and why another protocol may disagree. Several: each method's verdict in
    words, its gain over random under each protocol, and the protocols' agreement on the ranking."""
    if len(report.protocols) == 1:
        return _fast_table(report, lang, seconds)
    return _thorough_table(report, lang, seconds)


def _fast_table(report: ProtocolsReport, lang: str, seconds: float | None) -> str:
    r, verdicts = report.first, report.verdicts()
    head = [t(f"trust.table.{k}", lang) for k in ("method", "verdict", "deletion", "insertion", "gain", "sanity")]
    rows = [_head(report, lang, seconds), "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in r.ranking():
        m = r.methods[name]
        f = m.faithfulness
        if name in verdicts:
            v = verdicts[name]
            words, gain = verdict_words(v, lang), f"{v.abpc_gain[r.protocol]:+.3f} ± {v.margin[r.protocol]:.3f}"
        else:
            words, gain = t("trust.verdict.baseline", lang), "0"
        rows.append(f"| {method_name(name, lang)} | {words} | {_auc(f.deletion_auc, f.auc_error['deletion'])} | "
                    f"{_auc(f.insertion_auc, f.auc_error['insertion'])} | {gain} | {_sanity(m, lang)} |")
    return "\n".join(rows + ["", t("trust.legend.errors", lang, points=len(r.fractions)), "",
                             t("trust.legend.fast", lang, n=len(PROTOCOLS))])


def _thorough_table(report: ProtocolsReport, lang: str, seconds: float | None) -> str:
    verdicts, first = report.verdicts(), report.first
    ranked = [n for n in first.ranking() if n in verdicts]
    ranked.sort(key=lambda n: ORDER.index(verdict_kind(verdicts[n])))       # stable: ties keep the ranking
    lines = [_head(report, lang, seconds), ""]
    lines += ["- " + t("trust.bullet", lang, method=method_name(n, lang), verdict=verdict_words(verdicts[n], lang))
              for n in ranked]
    sanity = any(first.methods[n].sanity is not None for n in ranked)
    head = [t("trust.table.method", lang), *(protocol_name(p, lang) for p in report.protocols)]
    head += [t("trust.table.sanity", lang)] if sanity else []
    lines += ["", t("trust.legend.gains", lang), "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for n in ranked:
        v = verdicts[n]
        cells = [f"{v.abpc_gain[p]:+.3f} ± {v.margin[p]:.3f} {cell_mark(v.abpc_gain[p], v.margin[p])}"
                 for p in report.protocols]
        cells += [_sanity(first.methods[n], lang)] if sanity else []
        lines.append(f"| {method_name(n, lang)} | " + " | ".join(cells) + " |")
    return "\n".join(lines + ["", agreement_line(report, lang)])


def agreement_line(report: ProtocolsReport, lang: str = "en") -> str:
    """How far the protocols rank the methods alike: Kendall τ of every pair, and their mean."""
    protocols, tau = report.agreement()
    pairs = [(i, j) for i in range(len(protocols)) for j in range(i + 1, len(protocols))]
    values = [tau[i, j] for i, j in pairs]
    cells = [f"{protocol_name(protocols[i], lang)}–{protocol_name(protocols[j], lang)} "
             f"{'–' if np.isnan(v) else f'{v:+.2f}'}" for (i, j), v in zip(pairs, values)]
    finite = [v for v in values if not np.isnan(v)]
    mean = f"{np.mean(finite):+.2f}" if finite else "–"
    return t("trust.agreement", lang, n=len(protocols), pairs=" · ".join(cells), mean=mean)


def auc_tables(report: ProtocolsReport, lang: str = "en") -> str:
    """Every protocol's deletion and insertion AUCs and their difference (ABPC, the sort key), each ± its error,
    one table per protocol (the thorough check's details): what each verdict's gains are computed from."""
    lines = []
    for p, r in report.reports.items():
        head = [t(f"trust.table.{k}", lang) for k in ("method", "deletion", "insertion", "abpc")]
        lines += [t("trust.bullet", lang, method=protocol_name(p, lang), verdict=t(f"trust.variant.{p}", lang)), "",
                  "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for name in r.ranking():
            f = r.methods[name].faithfulness
            lines.append(f"| {method_name(name, lang)} | {_auc(f.deletion_auc, f.auc_error['deletion'])} | "
                         f"{_auc(f.insertion_auc, f.auc_error['insertion'])} | {_auc(f.abpc, f.auc_error['abpc'])} |")
        lines.append("")
    return "\n".join(lines + [t("trust.legend.errors", lang, points=len(report.first.fractions))])


def cost_line(steps: dict[str, int], lang: str = "en", fast: str = "tokens") -> str:
    """What fast (its protocol ``fast``) and thorough cost on this model, from ``viz.trust.job.check_steps``
    ({protocol: steps})."""
    return t("trust.cost", lang, fast=steps[fast], thorough=sum(steps.values()), road=steps.get("road", 0),
             n=len(steps))


def trust_view(report: ProtocolsReport, a: Analysis, lang: str = "en", narrow: bool = False) -> Image.Image:
    """The comparison figure (``viz.trust.figure``) of the first protocol's report, on the photo the model saw."""
    return figure_to_image(trust_figure(report.first, np.asarray(a.image.convert("RGB")), lang=lang, narrow=narrow))
