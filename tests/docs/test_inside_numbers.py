"""The worked example of docs/inside.md is what the code gives today: the command the page quotes is read from it
(the photo, the heads it removes, the second photo), run through ``viz.inside.job_report`` as the CLI runs it
(the real AugReg ViT-Ti, the checkpoint's own crop), and every number and class the section quotes is recomputed:
from which layer the lens says a cat and ranks the answer 2nd and 1st, the largest direct terms, the heads that cost
more than 1 logit and the costliest one's direct term, the two heads removed together, the estimate's Spearman ρ and
its sign error, the patching shares. A quote that disappears fails too."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import vit
from vit.image_file import open_image
from viz.inside.job import inside_report
from viz.inside import views

pytestmark = pytest.mark.slow   # the exact head importance and per-head patching of a real model: tens of seconds

REPO = Path(__file__).resolve().parents[2]
PAGE = "docs/inside.md"
TEXT = re.sub(r"\s+", " ", (REPO / PAGE).read_text(encoding="utf-8"))    # quotes may wrap across lines
CATS = {"tabby", "tiger cat", "Persian cat", "Siamese cat", "Egyptian cat", "lynx"}
COSTLY = views.COSTLY          # the page's threshold for a costly head (1 logit)
NUMBER = r"([+−-]?\d+\.\d\d)"  # a signed number as the page writes it (U+2212 for minus)
HEAD = r"(\d+\.\d+)"


def quoted(pattern: str) -> tuple[str, ...]:
    """The groups of the one match of ``pattern`` in the page; the quote must be there."""
    found = re.search(pattern, TEXT)
    assert found, f"{PAGE} no longer quotes {pattern!r}: put the number back or change this test with it"
    return found.groups()


def value(text: str) -> float:
    return float(text.replace("−", "-"))


def signed(x: float) -> str:
    return f"{x:+.2f}".replace("-", "−")


@pytest.fixture(scope="module")
def report(real_weights_dir):
    photo, ablate, other = quoted(r"python -m viz (\S+) --weights .*? --ablate (\S+) --patch-from (\S+)")
    loaded = vit.load(real_weights_dir / "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors")
    return inside_report(loaded, open_image(REPO / photo), ablate=ablate, other=open_image(REPO / other),
                         other_name=Path(other).stem)


def test_when_the_lens_knows_it_is_a_cat(report):
    lens = report.lens
    top1 = [report.names[i] for i in lens.top1()]
    L = len(top1)
    first_cat = next(l for l in range(L) if all(name in CATS for name in top1[l:]))
    (last_not,) = quoted(r"Up to layer (\d+) the readout's top class is no cat at all")
    (cat_from,) = quoted(r"From layer (\d+) on it is a cat")
    assert int(last_not) == first_cat - 1 and int(cat_from) == first_cat
    assert not any(name in CATS for name in top1[:first_cat])
    target, second_from, p, at, first = quoted(r"the readout ranks (.+?) 2nd from layer (\d+) on \(probability "
                                               r"(0\.\d\d) at layer (\d+), with (.+?) first\)")
    assert target == report.target["name"] and int(second_from) == views.settles(lens.target_rank, 2) == int(at)
    assert lens.target_rank[int(at)] == 2 and p == f"{lens.target_probability[int(at)]:.2f}"
    assert first == top1[int(at)]
    last, output = quoted(r"first at layer (\d+), the model's output \((0\.\d\d)\)")
    assert int(last) == L - 1 == views.settles(lens.target_rank, 1) and output == f"{lens.target_probability[-1]:.2f}"
    (patches_at,) = quoted(r"at layer (\d+) most patches, read alone, already say a cat class")
    said = [report.names[i] for i in lens.patches[int(patches_at)].ravel()]
    assert sum(name in CATS for name in said) > len(said) / 2


def test_who_writes_it(report):
    dla = report.dla
    (logit,) = quoted(r"The logit (\d+\.\d\d) splits exactly")
    assert logit == f"{dla.logit:.2f}" and dla.total() == pytest.approx(dla.logit, rel=1e-4)
    head, h_value, mlp_a, a_value, mlp_b, b_value = quoted(
        rf"The largest direct terms are head {HEAD} {NUMBER}, MLP (\d+) {NUMBER} and MLP (\d+) {NUMBER}")
    L, H = dla.heads.shape
    terms = [(f"head {l}.{h}", float(dla.heads[l, h])) for l in range(L) for h in range(H)]
    terms += [(f"MLP {l}", float(dla.mlp[l])) for l in range(L)]
    largest = sorted(terms, key=lambda term: -abs(term[1]))[:3]
    assert [(name, signed(v)) for name, v in largest] == [(f"head {head}", h_value), (f"MLP {mlp_a}", a_value),
                                                          (f"MLP {mlp_b}", b_value)]
    (source,) = quoted(rf"from which patches head {HEAD} takes what it writes")
    assert source == head


def test_what_breaks(report):
    delta, dla = report.heads.delta, report.dla
    count, listed = quoted(r"(\w+) heads cost more than 1 logit when removed alone: (.+?)\. Head")
    pairs = re.findall(rf"{HEAD} \({NUMBER}\)", listed)
    L, H = delta.shape
    costly = sorted((float(delta[l, h]), f"{l}.{h}") for l in range(L) for h in range(H) if delta[l, h] < -COSTLY)
    assert [(name, signed(d)) for d, name in costly] == pairs
    assert count.lower() == {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}[len(costly)]
    head, direct, cost = quoted(rf"Head {HEAD} is the lesson: it writes only {NUMBER} directly into the readout, yet "
                                r"without it the cat logit falls by (\d+\.\d\d)")
    l, h = map(int, head.split("."))
    assert head == costly[0][1] and direct == signed(dla.heads[l, h]) and cost == f"{-delta[l, h]:.2f}"
    assert abs(dla.heads[l, h]) < 0.1 * abs(delta[l, h])        # almost all of its effect is indirect
    first, second, change, top = quoted(rf"Removing heads {HEAD} and {HEAD} together changes the logit by {NUMBER}, "
                                        r"and the top class becomes (\w+)")
    assert report.ablated.heads == [first, second]
    assert change == signed(report.ablated.delta_logit) and top == report.names[report.ablated.top5.indices[0]]
    rho, heads, wrong, estimate = quoted(rf"Spearman ρ = (0\.\d\d) over the (\d+) heads, and gets head {HEAD} wrong "
                                         rf"in sign \({NUMBER}\)")
    wl, wh = map(int, wrong.split("."))
    linear = report.heads.delta_linear
    assert rho == f"{report.heads.spearman:.2f}" and int(heads) == L * H
    assert wrong == head and estimate == signed(linear[wl, wh]) and np.sign(linear[wl, wh]) != np.sign(delta[wl, wh])


def test_patching_from_the_coffee(report):
    p = report.patched
    target, *found = quoted(rf"the heads that move the (\w+) logit furthest toward the coffee's are {HEAD} "
                            rf"\((0\.\d\d) of the gap\), {HEAD} \((0\.\d\d)\) and {HEAD} \((0\.\d\d)\)")
    assert target == p.target["name"] and p.source == "coffee"
    L, H = p.heads.shape
    order = np.argsort(-p.heads.ravel(), kind="stable")[:3]
    assert found == [x for i in order for x in (f"{i // H}.{i % H}", f"{p.heads.ravel()[i]:.2f}")]
    assert "no single head moves most of it" in TEXT and p.heads.max() < 0.5
