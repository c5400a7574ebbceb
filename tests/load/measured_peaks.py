"""Each job of the page run as the page runs it, in this process, its peak memory measured from /proc and set beside
the estimate of ``viz.analysis.peak``: what ``test_peaks.py`` runs in a process of its own per model and size.

    python tests/load/measured_peaks.py WEIGHTS SIDE JOB [JOB …]     # one JSON line per job

A job's peak is VmHWM after it, less VmRSS before it, with the peak reset (/proc/self/clear_refs) and malloc's free
memory given back first; glibc's malloc is tuned as the server tunes it (``return_freed_memory_to_the_os``), so a
job's freed buffers leave the process as they do on the server. The photo is the cat, analysed at SIDE×SIDE first
(the ``analysis`` job, when asked, measures exactly that).
"""
from __future__ import annotations

import gc
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path[:0] = [str(HERE.parents[2]), str(HERE.parents[1])]
os.environ.setdefault("GRADIO_TEMP_DIR", tempfile.mkdtemp(prefix="vit-explorer-peaks-"))

import torch  # noqa: E402

from bench.measure import proc_status_kb, release_free_memory, reset_peak_rss  # noqa: E402
from handler_steps import finished  # noqa: E402
from vit_explorer import server, state, views  # noqa: E402
from vit_explorer.controls import ControlValues  # noqa: E402
from vit_explorer.tabs import compare, features, inside, learn, trust  # noqa: E402
from vit_explorer.tabs import explain as explain_tab  # noqa: E402
from viz.analysis import peak  # noqa: E402
from viz.controls import AnalysisKey, Session  # noqa: E402
from viz.explain.explainer import explain_tensor  # noqa: E402

REPO = HERE.parents[2]
CAT, COFFEE = REPO / "examples" / "chelsea.jpg", REPO / "examples" / "coffee.jpg"
OTHER_MODEL = "deit_tiny_patch16_224.pipevit_ln_fixedpoint.safetensors"   # Compare's B, beside the weights
CONTROLS = dict(discard_ratio=dict(discard_ratio=0.8), fusion=dict(fusion="max"), start_layer=dict(start_layer=2),
                opacity=dict(opacity=0.5), rolled=dict(rolled=True), layer=dict(layer=3),
                head=dict(mean_heads=False, head=1))
FAMILY_METHOD = {"gradient": "gae", "attnlrp": "attnlrp", "cp_lrp": "cp_lrp", "attention": "attention"}


class Run:
    """The served model at SIDE, the session's analysis, and each job as a call and its estimate."""

    def __init__(self, weights: str, side: int):
        self.weights, self.side = weights, side
        self.served = state.served(weights, "en", "own", side)
        self.key = AnalysisKey(str(CAT), weights, "own", views.size_key(self.served, side))
        self.session = Session(self.key)
        self.shape = peak.Shape.of(self.served.loaded.model, *self.served.loaded.preprocess.crop,
                                   params=self.served.nbytes)
        self.inside_state = None

    def prepared(self) -> None:
        """The session's analysis cached and its first pictures drawn (what every job but ``analysis`` starts from)."""
        a = state.ANALYSES.get(self.key)
        views.page_views(self.session, self.served, a, ControlValues().for_analysis(a), "en", str(CAT))

    # ---- the jobs: (what runs, its estimate) ----

    def analysis(self):
        return (lambda: views.page_analyze(None, str(CAT), self.weights, ControlValues(), None, "en", "own", self.side),
                peak.of("analysis", self.shape))

    def render(self):
        def redraws():
            for name, change in CONTROLS.items():
                views.redraw(self.session, ControlValues().but(**change), "en", name)
        return redraws, peak.of("render", self.shape)

    def explain(self):
        return (lambda: explain_tab.explain(self.session, "gae", explain_tab.TOP1, explain_tab.NO_CONTRAST, "", False,
                                            0.6, "en"), peak.of("explain", self.shape))

    def family(self, name: str):
        loaded = self.served.loaded
        x = loaded.preprocess.to_tensor(state.ANALYSES.get(self.key).image)
        return (lambda: explain_tensor(loaded.model, x, None, [FAMILY_METHOD[name]], loaded.labels),
                peak.family(self.shape, name))

    def trust(self, depth: str, sanity: bool):
        protocols = trust.protocols_for(self.served.loaded.model, depth)
        return (lambda: finished(trust.check(self.session, explain_tab.TOP1, "", False, sanity, depth, "en")),
                peak.of("trust", self.shape, protocols=protocols, sanity=sanity))

    def inside(self, part: str):
        def views_():
            shown = finished(inside.look_inside(self.session, explain_tab.TOP1, explain_tab.NO_CONTRAST, "", False,
                                                "en"))
            self.inside_state = shown["inside_state"]

        def ablation():
            finished(inside.ablate_heads(self.session, self.inside_state, ["11.0", "11.2"], "en"))

        def patching():
            finished(inside.patch_from(self.session, self.inside_state, str(COFFEE), "en"))
        return {"views": views_, "ablation": ablation, "patching": patching}[part], peak.inside(self.shape, part)

    def compare(self):
        other = str(Path(self.weights).parent / OTHER_MODEL)
        served_b = state.served(other, "en")
        b = peak.Shape.of(served_b.loaded.model, *served_b.loaded.preprocess.crop, params=served_b.nbytes)
        return (lambda: compare.compare(self.session, other, compare.AS_A, "en", ControlValues()),
                peak.of("compare", self.shape, other=b))

    def animation(self):
        return lambda: compare.animate(self.session, "rollout", "en", ControlValues()), peak.of("animation", self.shape)

    def features(self, second: bool):
        def run():
            shown = features.show(self.session, None, 11, False, 0.6, False, "en")
            if second:
                features.add_other(str(COFFEE), shown["features_state"], self.session, 11, False, 0.6, False, "en")
        return run, peak.of("features", self.shape, second=second)

    def walk(self):
        return lambda: learn.show(self.session, 7, 11, "en"), peak.of("walk", self.shape)

    def job(self, name: str):
        known = {"analysis": self.analysis, "render": self.render, "explain": self.explain,
                 "trust_fast": lambda: self.trust("fast", False), "trust_thorough": lambda: self.trust("thorough", False),
                 "trust_sanity": lambda: self.trust("fast", True), "compare": self.compare,
                 "animation": self.animation, "features": lambda: self.features(False),
                 "features_second": lambda: self.features(True), "walk": self.walk,
                 **{f"family_{f}": (lambda f=f: self.family(f)) for f in FAMILY_METHOD},
                 **{f"inside_{p}": (lambda p=p: self.inside(p)) for p in ("views", "ablation", "patching")}}
        return known[name]()


def measure(fn) -> tuple[int, float]:
    """(bytes the peak RSS rose above the RSS before ``fn``, seconds)."""
    gc.collect()
    release_free_memory()
    reset_peak_rss()
    before = proc_status_kb("VmRSS")
    started = time.perf_counter()
    fn()
    return (proc_status_kb("VmHWM") - before) * 1024, time.perf_counter() - started


def main(argv: list[str]) -> None:
    weights, side, jobs = argv[0], int(argv[1]), argv[2:]
    server.return_freed_memory_to_the_os()
    state.SETTINGS.any_model = True
    state.SETTINGS.max_tokens = 100_000
    torch.set_num_threads(min(2, torch.get_num_threads()))
    run = Run(weights, side)
    if jobs[0] != "analysis":
        run.prepared()
    for name in jobs:
        fn, estimate = run.job(name)
        measured, seconds = measure(fn)
        print(json.dumps({"job": name, "side": side, "tokens": run.shape.tokens, "measured": measured,
                          "estimate": estimate, "seconds": round(seconds, 2)}), flush=True)
        if name == "analysis":
            run.prepared()


if __name__ == "__main__":
    main(sys.argv[1:])
