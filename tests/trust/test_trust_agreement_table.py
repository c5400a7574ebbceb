"""Protects docs/trust.md's five-photo table: the preprocessing it names, Kendall τ between every pair of protocols
on each photo (with the tie rule) and every method's verdict are what ``python -m bench.protocol_agreement`` computes
with the current code (AugReg ViT-Ti, five scikit-image photos, four protocols). Numbers are checked at the precision
the page prints them (tests/printed.py), so a CPU whose kernels round otherwise agrees with the page; words and
verdicts line for line."""
from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from bench.protocol_agreement import agreement_tables
from printed import agrees

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow      # five thorough checks of 8 methods: minutes on a CPU


def test_the_docs_agreement_table_is_what_the_generator_computes(real_weights_dir):
    computed, reports = agreement_tables(real_weights_dir)
    text = (REPO / "docs" / "trust.md").read_text(encoding="utf-8")
    rows = {name: re.search(rf"^\| {name} \((.+), (\d\.\d\d)\) \| (.+) \|$", text, re.M) for name in reports}
    words = [line for line in computed.splitlines() if line and not any(line.startswith(f"| {n} (") for n in rows)]
    missing = [line for line in words if line not in text.splitlines()]
    assert not missing, "docs/trust.md differs from python -m bench.protocol_agreement:\n" + "\n".join(missing)
    for name, r in reports.items():
        assert rows[name], f"docs/trust.md lost the row of {name}"
        label, probability, cells = rows[name].groups()
        protocols, tau = r.agreement()
        pairs = [(i, j) for i in range(len(protocols)) for j in range(i + 1, len(protocols))]
        quoted = [c.strip() for c in cells.split("|")]
        assert label == r.first.target["name"] and agrees(probability, r.first.probability), (name, label, probability)
        assert len(quoted) == len(pairs), (name, quoted)
        for q, (i, j) in zip(quoted, pairs):
            assert (q == "–") if math.isnan(tau[i, j]) else agrees(q, tau[i, j]), (name, protocols[i], protocols[j],
                                                                                 q, tau[i, j])
    assert len(reports) == 5 and all(len(r.protocols) == 4 for r in reports.values())
