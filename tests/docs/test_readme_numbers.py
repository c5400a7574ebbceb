"""Every number the docs quote (timing tables aside) is the one the code gives today: this test reads the pages of
docs/ where each number lives (and both tutorials), finds each quoted number and recomputes it (probabilities,
shapes, shares and ratios with the real AugReg ViT-Ti and DeiT-Ti on the example photos, parameter counts, cache
sizes, limits). A quote that disappears fails too, so a reworded page must bring its number back into this test.
docs/trust.md's table of AUCs is recomputed by tests/test_trust_real.py."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest
import vit
from PIL import Image
from vit.image_file import MAX_BYTES, MAX_PIXELS, open_image

from printed import agrees, assert_agrees
from viz import panels
from viz.analysis import analyze
from viz.learn.walkthrough import walk
from viz.model.view import stages, total_params
from viz.analysis.serve import ATTENTION_DTYPE
from viz.analysis.cost import kept_bytes
from viz.maps import norms
from viz.records import Analysis
from viz.attention.view import attention_map_panel
from viz.heads.grid import heads_grid_panel
from viz.position.view import filters_panel
from viz.rollout.view import rollout_map_panel

REPO = Path(__file__).resolve().parents[2]


def page(path: str) -> tuple[str, str]:
    """(text, path) of a page of the docs."""
    return (REPO / path).read_text(encoding="utf-8"), path


MAPS = page("docs/maps.md")                 # what the maps show: the checkpoint, the corners, the walk
EXPLAIN = page("docs/explain.md")           # the two-object photo
APP = page("docs/app.md")                   # the tabs, the cache, the limits
DEVELOPMENT = page("docs/development.md")   # the parameter counts of the model tests
TUTORIAL = page("docs/tutorial.md")
TUTORIAL_ZH = page("docs/zh-CN/tutorial.md")
PHOTOS = ("camera", "chelsea", "coffee")
AUGREG = "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors"
DEIT = "deit_tiny_patch16_224.pipevit_ln_fixedpoint.safetensors"


def quoted(pattern: str, where: tuple[str, str]) -> list[tuple[str, ...]]:
    """Every match of ``pattern`` (its groups) in a page; at least one, or the quote has gone from the page."""
    text, path = where
    found = [m.groups() for m in re.finditer(pattern, text)]
    assert found, f"{path} no longer quotes {pattern!r}: put the number back or change this test with it"
    return found


@pytest.fixture(scope="module")
def augreg(real_weights_dir):
    return vit.load(real_weights_dir / AUGREG)


@pytest.fixture(scope="module")
def examples(real_weights_dir, augreg) -> dict[str, dict[str, Analysis]]:
    """The example photos as the app reads them (the JPEG files), through both real checkpoints."""
    deit = vit.load(real_weights_dir / DEIT)
    return {model: {name: analyze(loaded, open_image(REPO / "examples" / f"{name}.jpg"), ATTENTION_DTYPE)
                    for name in PHOTOS} for model, loaded in (("augreg", augreg), ("deit", deit))}


def test_the_cats_probability(examples):
    label, p = examples["augreg"]["chelsea"].top_k(1)[0]
    assert label == "Egyptian cat"
    for (value,) in quoted(r"Egyptian cat[\"”]? (0\.\d\d)", MAPS):
        assert_agrees(value, p, "the cat's probability (docs/maps.md):")


def test_the_two_object_photo_probabilities(augreg):
    """The explanation section's photo (the cat and the espresso side by side): both classes as quoted."""
    probabilities = dict(analyze(augreg, Image.open(REPO / "examples" / "two_objects" / "cat_and_coffee.png"),
                                 ATTENTION_DTYPE).top_k(5))
    ((cat, cup),) = quoted(r'gives\s+"Egyptian cat" (0\.\d\d) and "espresso" (0\.\d\d), both in its top 5', EXPLAIN)
    assert_agrees(cat, probabilities["Egyptian cat"], "the cat (docs/explain.md):")
    assert_agrees(cup, probabilities["espresso"], "the espresso (docs/explain.md):")


def test_the_models_shape(examples):
    a = examples["augreg"]["chelsea"]
    expected = (str(a.depth), str(a.heads), str(a.grid[0]), str(a.grid[1]))
    for where in (MAPS, TUTORIAL):
        assert quoted(r"(\d+) layers × (\d+) heads, (\d+)×(\d+) patches", where) == [expected]
    assert quoted(r"(\d+) 层 × (\d+) 个头，(\d+)×(\d+) 个图块", TUTORIAL_ZH) == [expected]
    T = a.num_prefix + a.grid[0] * a.grid[1]
    for where in (MAPS, TUTORIAL):
        assert quoted(r"\(T = (\d+) for a 14×14 grid with CLS\)", where) == [(str(T),)]
    assert quoted(r"14×14 的网格加 CLS 时 T = (\d+)", TUTORIAL_ZH) == [(str(T),)]
    b16 = stages(vit.variant("vit_b_16"))
    arrow = f"{b16[0].shape} → {b16[1].shape} → {b16[2].shape}"      # 224×224×3 → 196×768 → 197×768
    for where in (APP, TUTORIAL, TUTORIAL_ZH):
        assert quoted(r"[(（](224×224×3 → \d+×\d+ → \d+×\d+) → …[)）]", where) == [(arrow,)]


def test_the_corner_artifacts(examples):
    a = examples["augreg"]["chelsea"]
    flagged = panels.artifact_drop(a, True)
    last = attention_map_panel(a, -1).values
    (share,) = quoted(r"four corner tokens take (\d+) % of the last layer's CLS attention", MAPS)[0]
    assert_agrees(share, 100 * norms.artifact_share(last, flagged).share, "the corners' share:")
    ratios, ordinary, first = [], {"augreg": 0.0, "deit": 0.0}, set()
    for model, analyses in examples.items():
        for a in analyses.values():
            flags = panels.artifact_flags(a)
            maps = norms.token_norm_maps(a.token_norms, a.num_prefix, a.grid)
            ratio = maps / np.median(maps.reshape(a.depth, -1), axis=1)[:, None, None]
            ratios += list(ratio[flags])
            ordinary[model] = max(ordinary[model], float(ratio[~flags].max()))
            if flags.any():
                first.add(int(np.flatnonzero(flags.any(axis=(1, 2)))[0]))
    assert not examples["deit"]["chelsea"].token_norms.size == 0 and not any(
        panels.artifact_flags(a).any() for a in examples["deit"].values())
    low, high = quoted(r"flags its four corners from layer (\d+) on, at (\d+)–(\d+)× the median", MAPS)[0][1:]
    assert quoted(r"flags its four corners from layer (\d+) on", MAPS) == [(str(min(first)),)] and first == {7}
    assert agrees(low, min(ratios)) and agrees(high, max(ratios)), (low, high, min(ratios), max(ratios))
    augreg_below, deit_below = quoted(r"below ([\d.]+)× the median in this checkpoint and below ([\d.]+)× in DeiT-Ti",
                                      MAPS)[0]
    for model, claim in (("augreg", augreg_below), ("deit", deit_below)):
        assert float(claim) - 0.1 <= ordinary[model] < float(claim), (model, ordinary[model])


def test_the_dominance_rule(examples):
    rule = (r"at least (\d+) % of its mass, or at least (\d+)× the share uniform attention would\s+give them while the "
            r"map's brightest patch is one of them by ([\d.]+)×")
    assert quoted(rule, MAPS) == [(str(round(100 * norms.DOMINANT_SHARE)), f"{norms.DOMINANT_EXCESS:g}",
                                   f"{norms.DOMINANT_PEAK:g}")]
    late, rollout_excess, early, early_peaked = [], {}, 0.0, 0.0
    for name, a in examples["augreg"].items():
        flagged = panels.artifact_drop(a, True)
        late += [norms.artifact_share(attention_map_panel(a, layer).values, flagged).share
                 for layer in range(8, 12)]
        rollout = norms.artifact_share(rollout_map_panel(a, discard_ratio=0.9).values, flagged)
        if rollout.peak_ratio >= 1.0:                                  # the rollout peaks on a corner
            rollout_excess[name] = rollout.excess
        for layer in range(7):
            for head in [None, *range(a.heads)]:
                share = norms.artifact_share(attention_map_panel(a, layer, head).values, flagged)
                early = max(early, share.excess)
                if share.peak_ratio >= norms.DOMINANT_PEAK:
                    early_peaked = max(early_peaked, share.excess)
    low, high = quoted(r"layers 8–11 \(mean of\s+heads\) holds (\d+)–(\d+) %", MAPS)[0]
    assert agrees(low, 100 * min(late)) and agrees(high, 100 * max(late)), (low, high, min(late), max(late))
    assert set(rollout_excess) == {"chelsea", "coffee"}               # "(cat, coffee)"
    low, high = quoted(r"hold ([\d.]+)–([\d.]+)× their uniform share \(cat, coffee\)", MAPS)[0]
    assert agrees(low, min(rollout_excess.values())) and agrees(high, max(rollout_excess.values())), rollout_excess
    ((most, most_peaked),) = quoted(r"they\s+reach at most ([\d.]+)× their share, and at most ([\d.]+)× in the maps "
                                    r"whose brightest patch is a corner", MAPS)
    assert agrees(most, early) and agrees(most_peaked, early_peaked), (early, early_peaked)
    cat = examples["augreg"]["chelsea"]
    marked = [layer for layer in range(cat.depth) if attention_map_panel(cat, layer).note]
    first, last = quoted(r"On the cat it marks layers\s+(\d+)–(\d+) and the default rollout", MAPS)[0]
    assert marked == list(range(int(first), int(last) + 1))
    assert rollout_map_panel(cat, discard_ratio=0.9).note is not None
    assert not any(attention_map_panel(a, layer).note for a in examples["deit"].values()
                   for layer in range(a.depth))                        # "none of its maps gets the note"


def test_why_the_heads_grid_has_a_scale_per_layer(examples):
    """docs/maps.md's reason: on one scale for all, layers 0–7 of the cat peak far below the brightest layer."""
    a = examples["augreg"]["chelsea"]
    top = heads_grid_panel(a, 1100, shared_scale=False).layer_max           # each layer's brightest thumbnail
    ((low, high, overall, layer),) = quoted(r"layers 0–7 on the cat peak at ([\d.]+)–(\d+)× uniform against (\d+)× "
                                            r"in layer (\d+)", MAPS)
    assert (low, high) == (f"{top[:8].min():.1f}", f"{top[:8].max():.0f}")
    assert (overall, layer) == (f"{top.max():.0f}", str(int(np.argmax(top))))


def test_the_walk_through_the_vit(augreg):
    w = walk(augreg.model, augreg.preprocess, open_image(REPO / "examples" / "chelsea.jpg"), augreg.labels)
    x = lambda shape: "×".join(map(str, shape))
    P, C = w.patch_size, w.shapes["image"][2]
    rows = [f"| the crop the model sees | {x(w.shapes['image'])} |",
            f"| cut into patches, one flattened | {x(w.shapes['patches'])} ({P}·{P}·{C} = {P * P * C} numbers each) |",
            f"| linear projection to D | {x(w.shapes['embeddings'])} |",
            f"| CLS prepended | {x(w.shapes['tokens'])} |",
            f"| position embeddings added | {x(w.shapes['embedded'])} |",
            f"| {w.depth} encoder layers | {x(w.shapes['layers'])}, attention {x(w.shapes['attention'])} |",
            f"| the CLS output | {x(w.shapes['output'])} |",
            f"| logits and softmax | {x(w.shapes['logits'])} |"]
    for row in rows:
        assert row in MAPS[0], f"docs/maps.md's walk-through table lacks {row!r}"
    assert f"`logits_picture`: \"Egyptian cat\" {w.probabilities.max():.2f}" in MAPS[0]
    assert f"the crop {x(w.shapes['image'])} → {w.shapes['patches'][0]} patches of {P}·{P}·{C} = {P * P * C} numbers " \
           f"each" in TUTORIAL[0].replace("\n", " ")
    assert f"裁剪图像 {x(w.shapes['image'])} → {w.shapes['patches'][0]} 个图块，每个 {P}·{P}·{C} = {P * P * C} 个数" in \
        TUTORIAL_ZH[0]


def test_parameter_counts():
    counts = quoted(r"Ti/16 ([\d,]+) · S/16 ([\d,]+) · B/16 ([\d,]+) · L/16 ([\d,]+) · H/14 ([\d,]+)", DEVELOPMENT)[0]
    for name, quote in zip(("vit_ti_16", "vit_s_16", "vit_b_16", "vit_l_16", "vit_h_14"), counts):
        assert quote == f"{total_params(stages(vit.variant(name))):,}", name


def _app_constant(name: str, module: str = "state") -> int:
    """A number assigned in a module of the page (read, not imported: importing the page starts Gradio)."""
    tree = ast.parse((REPO / "vit_explorer" / f"{module}.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == name:
            return eval(compile(ast.Expression(node.value), f"{module}.py", "eval"), {"__builtins__": {}})
    raise AssertionError(f"vit_explorer/{module}.py has no {name}")


def _limit(name: str) -> int:
    """A limit's default (``vit_explorer.limits.Limits``; that module imports no Gradio)."""
    from vit_explorer.limits import Limits
    return getattr(Limits(), name)


def _analysis_bytes(name: str, side: int, **overrides) -> int:
    """What the server caches for one analysis of this model at side×side (``viz.analysis.cost.kept_bytes``, which
    tests/page/test_page_input_size.py holds equal to ``viz.records.cached_bytes`` of the analysis itself)."""
    return kept_bytes(vit.variant(name, **overrides), side)


def test_memory_and_limits():
    b16, ti16 = _analysis_bytes("vit_b_16", 224), _analysis_bytes("vit_ti_16", 224)
    s14 = _analysis_bytes("small-14", 1022, img_size=518, num_classes=0, layer_scale=True)
    MB = 2 ** 20
    assert quoted(r"— ([\d.]+) MB per photo for ViT-B/16 at 224, ([\d.]+) MB for ViT-Ti", APP) == [
        (f"{b16 / MB:.1f}", f"{ti16 / MB:.1f}")]
    budget = _app_constant("ANALYSES_MEMORY")
    quote = quoted(r"\(`ANALYSES_MEMORY` = (\d+) MB in `vit_explorer/state.py`:\s+(\d+)\s+ViT-B/16\s+or (\d+) "
                   r"ViT-Ti\s+analyses at 224, (\d+) of a ViT-S/14 at 1022\)", APP)[0]
    assert quote == (str(budget // MB), str(budget // b16), str(budget // ti16), str(budget // s14))
    assert quoted(r"the sessions too \(`sessions_memory` = (\d+) MB\)", APP) == [
        (str(_limit("sessions_memory") // MB),)]
    assert quoted(r"one heavy job per visitor, at most (\d+) waiting in all", APP) == \
        [(str(_app_constant("QUEUE_MAX", "heavy")),)]
    assert quoted(r"the limits are (\d+) MB and (\d+) megapixels", APP) == [(str(MAX_BYTES // MB),
                                                                          str(MAX_PIXELS // 1_000_000))]
    assert quoted(r"the top (\d+) principal components", MAPS) == [("28",)]
    assert filters_panel.__defaults__[0] == 28
    assert quoted(r"DINO's (\d+) % mask outline", APP) == [(f"{100 * panels.MapOptions().share:.0f}",)]


def test_the_limits_of_a_public_server():
    """docs/app.md's table of limits says each default as vit_explorer.limits (and its neighbours) hold it, and the
    explanation's peaks as viz.analysis.peak estimates them."""
    from viz.analysis import peak
    from vit_explorer import limits

    L, MB = limits.Limits(), 2**20
    table = APP[0][APP[0].index("### The limits of a public server"):APP[0].index("### What a public server is")]
    rows = {row.split("|")[1].strip(): row.split("|")[2].strip() for row in table.splitlines()
            if row.startswith("| ") and not row.startswith("| limit")}
    said = {
        "the memory of the jobs running at once, each job's peak estimated from its shapes before it runs":
            f"{limits.PUBLIC_MAX_MEMORY // 2**30} GB on a public server",
        "one JSON request body (an event, an inline photo)": f"{L.json_bytes // MB} MB, refused with 413",
        "a photo sent inline (a `data:` URL)": f"{L.inline_photo_bytes // MB} MB",
        "one upload request": f"{L.upload_bytes // MB} MB (one photo at the {MAX_BYTES // MB} MB limit",
        "files in one upload request": f"{L.upload_files} (the page sends one)",
        "uploads from one address": f"{L.upload_bytes_per_client // MB} MB in {L.upload_window / 60:.0f} minutes",
        "an upload no session uses": f"deleted after {L.unused_upload_seconds / 60:.0f} minutes",
        "a closed page's session, and the photos it used": f"after {L.closed_session_seconds / 60:.0f} minutes",
        "the pages' sessions": f"{L.sessions_memory // MB} MB, about {L.sessions_memory // (400 * 2**10) // 10 * 10} "
                               f"pages",
        "events that skip the queue (a tab opened)": f"{L.instant_per_second:.0f} a second per address, in bursts of "
                                                     f"{L.instant_burst}",
        "events waiting per kind of work: analyses and explanations / redraws / each heavy job":
            " / ".join(str(getattr(limits.QUEUES[k], "waiting")) for k in ("model", "render", "trust")) + " in all, " +
            " / ".join(str(limits.QUEUES[k].per_client) for k in ("model", "render", "trust")) + " per address, " +
            " / ".join(str(limits.QUEUES[k].per_session) for k in ("model", "render", "trust")) + " per page",
        "the bodies of one address's waiting events": f"{L.queued_bytes_per_client // MB} MB",
        "heavy jobs (trust checks, looks inside, comparisons, animations, snapshots)":
            f"one per page, {_app_constant('QUEUE_MAX', 'heavy')} waiting in all",
        "large redraws (an analysis of more than 1,200 tokens)": "one at a time",
        "what a message repeats of a visitor's text": f"{L.echo_chars} characters, numbers 16 digits",
        "CLIP's typed texts": f"{L.typed_text_chars} characters each (CLIP reads 77 tokens), {L.typed_texts} at once",
    }
    for limit, text in said.items():
        assert text in rows[limit], (limit, rows[limit], text)
    assert _app_constant("LARGE_REDRAW_TOKENS", "jobs") == 1200 and _app_constant("LONG_NUMBER", "door") == 16
    assert all(len(set(q.__dict__) & {"waiting", "per_client", "per_session"}) == 3 for q in limits.QUEUES.values())
    assert limits.QUEUES["inside"] == limits.QUEUES["compare"] == limits.QUEUES["trust"]
    tiny = vit.VisionTransformer(vit.variant("vit_ti_16"))
    gradient = {side: peak.family(peak.Shape.of(tiny, side, side), "gradient") / 2**30 for side in (640, 1232)}
    budget = limits.PUBLIC_MAX_MEMORY
    side = peak.largest_side("explain", tiny, budget, families=("gradient",))
    lrp = peak.largest_side("explain", tiny, budget, families=("attnlrp", "cp_lrp"))
    assert quoted(r"gradient pass needs about ([\d.]+) GB at 640×640 and ([\d.]+) GB at\s+1232×1232: on a (\d+) GB "
                  r"budget GAE, gradient rollout and Grad-CAM run up to (\d+)×", APP) == [
        (f"{gradient[640]:.1f}", f"{gradient[1232]:.1f}", f"{budget // 2**30}", str(side))]
    assert lrp >= 1232 > side

