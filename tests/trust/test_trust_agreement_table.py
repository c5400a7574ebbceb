"""Protects docs/trust.md's five-photo table: the preprocessing it names, Kendall τ between every pair of protocols
on each photo and every method's verdict are what ``python -m bench.protocol_agreement`` computes with the current
code (AugReg ViT-Ti, five scikit-image photos, four protocols), line for line."""
from __future__ import annotations

from pathlib import Path

import pytest

from bench.protocol_agreement import agreement_tables

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow      # five thorough checks of 8 methods: minutes on a CPU


def test_the_docs_agreement_table_is_what_the_generator_computes(real_weights_dir):
    computed, reports = agreement_tables(real_weights_dir)
    text = (REPO / "docs" / "trust.md").read_text(encoding="utf-8").splitlines()
    missing = [line for line in computed.splitlines() if line and line not in text]
    assert not missing, "docs/trust.md differs from python -m bench.protocol_agreement:\n" + "\n".join(missing)
    assert len(reports) == 5 and all(len(r.protocols) == 4 for r in reports.values())
