"""Protects the page's Trust tab (``vit_explorer.tabs.trust``): it shows what ``viz.trust.job`` computes for the
Explain tab's target, fast (one protocol) and thorough (all four), with each method's verdict in words, every AUC
with its error and the protocols' agreement; it reports progress step by step, reuses its cache (fast results
serve thorough), quotes what each choice costs, and — served — another visitor's analysis comes back while a trust
check runs (it waits for one step at most: test_page_model_turn.py counts the turns)."""
from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest
from gradio_client import Client, handle_file
from PIL import Image

import app_server
import vit
from handler_steps import finished
from vit.explain import class_target
from viz.trust import PROTOCOLS, ProtocolsReport
from viz.trust.job import check_steps, protocols_report, trust_report
from viz.trust.view import cell_mark, method_name, verdict_kind, verdict_words
from viz.cache import Cache
from vit_explorer import api, state
from vit_explorer.layout import build_app
from vit_explorer.tabs import trust
from vit_explorer.tabs.explain import TOP1

pytestmark = pytest.mark.slow   # trust checks through a served app



@pytest.fixture(scope="module")
def cat_path(tmp_path_factory, cat) -> str:
    path = tmp_path_factory.mktemp("trust") / "cat.jpg"
    cat.save(path, quality=95)
    return str(path)


def _rows(table: str) -> dict[str, list[str]]:
    """The Markdown table's method rows: {method: [the other cells]} (fast: verdict, deletion AUC ± error,
    insertion AUC ± error, gain over random ± margin, sanity; thorough: the gain under each protocol)."""
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines() if line.startswith("| ")]
    return {row[0]: row[1:] for row in cells[1:]}


def test_the_trust_tab_shows_the_librarys_numbers_for_the_chosen_class_with_progress(augreg_weights, cat_path, monkeypatch):
    build_app(augreg_weights)
    monkeypatch.setattr(state, "TRUST", Cache(None, 8 * 2**20))      # nothing cached by earlier tests of the same photo
    session = api.analyze(cat_path, augreg_weights)[0]
    seen: list[float] = []
    values = finished(trust.check(session, "tabby", "", False, False, trust.FAST, "en",
                         progress=lambda f, desc=None: seen.append(f)))
    rows = _rows(values["trust_table"])

    loaded = vit.load(augreg_weights)
    x = loaded.preprocess.to_tensor(state.ANALYSES.get(session.key).image)
    report = trust_report(loaded.model, x, class_target(loaded.labels, "tabby"), labels=loaded.labels)
    verdicts = ProtocolsReport({"tokens": report}).verdicts()
    rows = {name: rows[method_name(name)] for name in report.methods}  # the table names each method for people
    assert list(_rows(values["trust_table"])) == [method_name(n) for n in report.ranking()]
    for name, m in report.methods.items():
        f = m.faithfulness
        assert rows[name][1] == f"{f.deletion_auc:.3f} ± {f.auc_error['deletion']:.3f}", name
        assert rows[name][2] == f"{f.insertion_auc:.3f} ± {f.auc_error['insertion']:.3f}", name
        if name != "random":
            v = verdicts[name]
            assert rows[name][0] == verdict_words(v, "en") and rows[name][0].endswith("(one protocol)"), name
            assert rows[name][3] == f"{v.abpc_gain['tokens']:+.3f} ± {v.margin['tokens']:.3f}", name
    assert "tabby" in values["trust_table"] and "**Thorough** runs all 4" in values["trust_table"]
    assert values["trust_more"].visible is False and values["trust_aucs"] == ""
    shown = SimpleNamespace(analysis=state.ANALYSES.get(session.key), session=session, lang="en",
                            served=state.model_of(session.key))         # what the page's Shown holds
    cost, steps = trust.show(shown)["trust_cost"], check_steps(loaded.model, (224, 224))   # quoted before a run
    assert f"fast about {steps['tokens']} forward passes" in cost
    assert f"thorough about {sum(steps.values())}, {steps['road']} of them on ROAD images" in cost
    assert len(seen) > 10 and seen == sorted(seen) and seen[-1] == pytest.approx(1.0)
    assert isinstance(values["trust_picture"], Image.Image) and values["trust_picture"].width >= 800

    cached = len(state.TRUST)
    again: list[float] = []
    repeated = finished(trust.check(session, "tabby", "", False, False, trust.FAST, "en",
                           progress=lambda f, desc=None: again.append(f)))["trust_table"]
    assert repeated.split("\n")[1:] == values["trust_table"].split("\n")[1:]   # all but the time it took
    assert len(state.TRUST) == cached and len(again) < len(seen)       # every method's curves came from the cache


@pytest.mark.slow    # thorough twice (the page's and the library's): minutes on a shared CPU
def test_a_thorough_check_gives_every_verdict_its_gains_auc_tables_and_agreement(augreg_weights, cat_path):
    """Thorough runs the four protocols (the fast ones come from the cache), in steps of one forward or one image,
    and the page says, per method, what the library's verdict says, with the gain under each protocol."""
    build_app(augreg_weights)
    session = api.analyze(cat_path, augreg_weights)[0]
    finished(trust.check(session, "tabby", "", False, False, trust.FAST, "en", progress=lambda f, desc=None: None))
    seen: list[str] = []
    values = finished(trust.check(session, "tabby", "", False, False, trust.THOROUGH, "en",
                         progress=lambda f, desc=None: seen.append(desc)))
    loaded = vit.load(augreg_weights)
    x = loaded.preprocess.to_tensor(state.ANALYSES.get(session.key).image)
    report = protocols_report(loaded.model, x, class_target(loaded.labels, "tabby"), protocols="all",
                              labels=loaded.labels)
    table = values["trust_table"]
    for name, v in report.verdicts().items():
        assert f"- **{method_name(name)}**: {verdict_words(v, 'en')}" in table, name
        cells = [f"{v.abpc_gain[p]:+.3f} ± {v.margin[p]:.3f} {cell_mark(v.abpc_gain[p], v.margin[p])}" for p in PROTOCOLS]
        assert _rows(table)[method_name(name)] == cells, name
    kinds = {verdict_kind(v) for v in report.verdicts().values()}
    assert "depends_on_protocol" in kinds and "faithful" in kinds       # the cat: some methods pass every protocol
    assert "under all 4 ways of removing patches" in table and "depends on how patches are removed" in table
    protocols, tau = report.agreement()
    assert f"tokens–ROAD {tau[0, 3]:+.2f}" in table and "Kendall τ" in table
    assert values["trust_more"].visible is True
    for p, r in report.reports.items():
        f = r.methods["gae"].faithfulness
        assert f"| {method_name('gae')} | {f.deletion_auc:.3f} ± {f.auc_error['deletion']:.3f} |" in values["trust_aucs"], p
    assert any("ROAD" in d for d in seen) and any("mean colour" in d for d in seen)
    steps = check_steps(loaded.model, (224, 224))                     # what the page quotes as the cost
    assert len(seen) == steps["mean_colour"] + steps["blur"] + steps["road"]    # tokens: all from the cache


def test_the_trust_tab_speaks_chinese(augreg_weights, cat_path):
    build_app(augreg_weights)
    session = api.analyze(cat_path, augreg_weights)[0]
    table = finished(trust.check(session, TOP1, "", False, False, trust.FAST, "zh-CN",
                                 progress=lambda f, desc=None: None))
    assert "删除 AUC" in table["trust_table"] and "插入 AUC" in table["trust_table"]
    assert "（单一协议）" in table["trust_table"] and "**全面**检验" in table["trust_table"]


def _fresh_photos(cat: Image.Image, folder, n: int) -> list[str]:
    """``n`` different photos (never cached by the server): the cat shifted by a few pixels each time."""
    rng = np.random.default_rng(0)
    paths = []
    for i in range(n):
        pixels = np.asarray(cat).astype(np.int16) + rng.integers(-3, 4, size=(1, 1, 3))
        path = folder / f"cat{i}.png"
        Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(path)
        paths.append(str(path))
    return paths


def test_another_visitors_analysis_is_served_while_a_trust_check_runs(augreg_weights, cat, tmp_path):
    fresh = _fresh_photos(cat, tmp_path, 5)            # the check's photo too: nothing of it in the trust cache
    with app_server.running_app(augreg_weights) as url:
        checker, visitor = Client(url, verbose=False), Client(url, verbose=False)

        def analysis(photo: str) -> None:
            visitor.predict(handle_file(photo), api_name="/analyze")

        analysis(fresh[0])                                           # warm-up: the server's first analysis
        checker.predict(handle_file(fresh[4]), api_name="/analyze")
        finished = threading.Event()
        job = checker.submit("tabby", "", False, True, trust.FAST, False, api_name="/trust")   # last: not a phone
        job.add_done_callback(lambda _: finished.set())
        deadline = time.monotonic() + 60
        while job.status().code.name not in ("PROCESSING", "PROGRESS") and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)                                              # well inside the check's steps
        analysis(fresh[3])
        # the outcome, whatever the machine's speed: the other visitor's analysis came back while the check was
        # still running (it waited for one step of it at most: test_page_model_turn.py counts the turns)
        assert not finished.is_set(), "the other visitor's analysis waited for the whole trust check"
        table, *_ = job.result(timeout=600)
    sanity = {name: row[4] for name, row in _rows(table).items()}
    assert "⚠" in sanity[method_name("random")]                   # random ignores the model,
    assert "⚠" not in sanity[method_name("gae")]                  # GAE does not
