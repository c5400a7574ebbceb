"""Benchmark rows of every architecture the explorer opens, each against its library's model, one entry per family.

An entry (``ENTRIES``) is our model, its library's reference model and the input; every entry is measured by the same
functions, which read the model's description (``vit.architecture``) rather than ask what it is:

- the forward with capture (``forward_with_attention`` with token norms: every block's maps, whatever their layout)
  against the reference's plain forward, and our plain (SDPA) forward;
- the analysis of a photo the command line and the page make (``viz.analysis.analyze``: crop, the capture the
  description asks for, to numpy; then what the first views read from it: the rollout through every block and merge,
  every head's mean distance, the readout's rows, ``viz.panels.select``) against the capture forward alone;
- a class map for a new target (GAE: one forward, one backward, the formulas; ``viz.analysis.explain_tensor``)
  against our plain forward; the rollout from a kept analysis (the formulas alone).

Random init (the cost does not depend on the weights), batch 1, the cat photo, interleaved rounds.
``python -m bench.architectures [NAME ...] [--rounds N] [--device cuda]`` prints the entries' rows alone;
``python -m bench.run`` prints the ViT-B/16's among its own (the model it serves, timed beside the page's analysis)
and every other entry's after them. The next family is one more entry.
"""
from __future__ import annotations

import argparse
import itertools
from dataclasses import dataclass
from typing import Callable

import torch
from PIL import Image

import vit
from bench.measure import Row, interleaved, median, ms, synchronized, table


@dataclass(frozen=True)
class Entry:
    """One architecture's rows: our model and its library's reference at one input size, and how the rows name them."""
    name: str                                     # e.g. "Swin-T"
    size: int                                     # the input's side in pixels
    ours: Callable[[], torch.nn.Module]           # our model, random init (in eval mode once timed)
    reference: Callable[[], torch.nn.Module]      # the library's model of the same shape, random init
    reference_name: str                           # e.g. "torchvision `swin_t`"
    versus: str                                   # the reference as the ratios name it
    captures: str                                 # what our capture keeps, in words
    label: str = ""                               # our model as its rows name it ("" for bench.run's own model)
    through: str = ""                             # how a map moves through the blocks, in words ("" for one sequence)
    capture_target: float | None = None           # capture forward ÷ the reference's plain forward
    analysis_target: float | None = None          # analysis of a photo ÷ the capture forward
    class_map_target: float | None = 3.00         # a class map ÷ our plain forward


def _vit_b_16() -> torch.nn.Module:
    return vit.VisionTransformer(vit.variant("vit_b_16"))


def _torchvision(name: str) -> Callable[[], torch.nn.Module]:
    def build() -> torch.nn.Module:
        import torchvision
        return getattr(torchvision.models, name)()
    return build


def _swin_t() -> torch.nn.Module:
    return vit.SwinTransformer(vit.swin_variant("swin_t"))


ENTRIES = (
    Entry("ViT-B/16", 224, _vit_b_16, _torchvision("vit_b_16"), "torchvision `vit_b_16`", "torchvision",
          "full capture (L×H maps + token norms)", capture_target=1.00),
    Entry("Swin-T", 224, _swin_t, _torchvision("swin_t"), "torchvision `swin_t`", "torchvision `swin_t`",
          "capture (every block's window attention)", label="Swin ", through=" through windows and merges",
          capture_target=1.10, analysis_target=1.20),
)


def entry(name: str) -> Entry:
    """The entry called ``name``; ValueError naming the entries."""
    for e in ENTRIES:
        if e.name == name:
            return e
    raise ValueError(f"No benchmark entry {name!r}! Expected one of {', '.join(e.name for e in ENTRIES)}.")


def random_loaded(e: Entry, device: torch.device):
    """The entry's own model, random init, as ``vit.load`` gives a model (ImageNet's classes, a centre crop)."""
    torch.manual_seed(0)
    model = e.ours().eval().to(device)
    return vit.LoadedModel(model=model, preprocess=vit.Preprocess.for_crop(e.size), labels=vit.imagenet_labels(),
                           name=e.name, source=e.name, config=model.cfg, format="own")


def first_views(a) -> None:
    """What the first pictures of an analysis read from it, for any architecture: the rollout of its readout through
    every block and merge, every head's mean distance, every block's readout rows."""
    from viz.panels import select

    select.rollout_of(a)
    select.mean_distance_of(a)
    for layer in range(a.depth):
        select.layer_readout_rows(a, layer)


def measure(e: Entry, loaded, image: Image.Image, rounds: int, device: torch.device = torch.device("cpu"),
            extra: dict | None = None, rounds_of: dict | None = None) -> dict[str, list[float]]:
    """Seconds per call of the entry's contenders (module docstring), timed in interleaved rounds on ``device`` with
    ``loaded`` as our model (``random_loaded`` or a served checkpoint) and ``image`` as the photo; ``extra``: more
    contenders timed in the same rounds (``rounds_of``: fewer rounds for some)."""
    from viz.analysis import analyze, explain_tensor
    from viz.analysis.serve import ATTENTION_DTYPE
    from viz.panels import select
    from vit.explain import ClassTarget

    torch.manual_seed(0)
    reference = e.reference().eval().to(device)
    model = loaded.model
    x = loaded.preprocess(image).to(device)
    classes = itertools.count(1)
    kept = analyze(loaded, image, ATTENTION_DTYPE, on_demand=True)

    def plain(m: torch.nn.Module):
        return torch.inference_mode()(lambda: m(x))

    @torch.inference_mode()
    def capture():
        model.forward_with_attention(x, return_token_norms=True)

    def analysis():
        first_views(analyze(loaded, image, ATTENTION_DTYPE, on_demand=True))

    def class_map():
        explain_tensor(model, x, ClassTarget(next(classes) % model.cfg.num_classes), ["gae"])

    contenders = {"reference": plain(reference), "plain": plain(model), "capture": capture, "analysis": analysis,
                  "class map": class_map, "rollout": lambda: select.rollout_of(kept), **(extra or {})}
    return interleaved({k: synchronized(fn, device) for k, fn in contenders.items()}, rounds, rounds_of=rounds_of)


def _ratio(measure_name: str, ratio: float, target: float | None) -> Row:
    if target is None:
        return Row(measure_name, f"{ratio:.2f}")
    return Row(measure_name, f"{ratio:.2f}", f"≤ {target:.2f}", ratio <= target)


def rows(e: Entry, t: dict[str, list[float]], device: torch.device = torch.device("cpu"),
         named: bool = True) -> list[Row]:
    """The entry's rows from ``measure``'s seconds; ``named``: the first says the model, its input and the device
    (bench.run's own model is named by its table's caption instead)."""
    ref, plain, cap, ana, cmap, roll = (median(t[k]) for k in ("reference", "plain", "capture", "analysis",
                                                               "class map", "rollout"))
    who, where = e.label, "CPU" if device.type == "cpu" else device.type.upper()
    return [
        Row(f"{e.reference_name} plain forward" + (f", {e.name} @ {e.size}, {where}" if named else ""), ms(ref)),
        Row(f"our {who}plain forward (SDPA)", ms(plain)),
        Row(f"our {who}forward with {e.captures}", ms(cap)),
        _ratio(f"**{who}capture forward ÷ {e.versus} plain forward**", cap / ref, e.capture_target),
        Row(f"our {who}plain forward ÷ {e.versus} plain forward", f"{plain / ref:.2f}"),
        Row(f"{who}analysis of a photo (crop, capture, token norms, to numpy; rollout, distances, the readout's rows)",
            ms(ana)),
        _ratio(f"**{who}analysis of a photo ÷ {who}capture forward**", ana / cap, e.analysis_target),
        Row(f"{who}class map for a new target (GAE{e.through}: forward + backward + formulas)", ms(cmap)),
        _ratio(f"**{who}class map ÷ our plain forward**", cmap / plain, e.class_map_target),
        Row(f"{who}rollout{e.through} from a capture (formulas alone)", ms(roll)),
    ]


def cat() -> Image.Image:
    from skimage import data
    return Image.fromarray(data.chelsea())


def entry_rows(e: Entry, rounds: int = 7, device: torch.device = torch.device("cpu")) -> list[Row]:
    """The entry's rows with its own model, random init, on ``device`` (the CPU by default)."""
    return rows(e, measure(e, random_loaded(e, device), cat(), rounds, device), device)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.architectures", description=__doc__.split("\n")[0])
    p.add_argument("names", nargs="*", metavar="NAME",
                   help=f"entries to time [default: all of {', '.join(e.name for e in ENTRIES)}]")
    p.add_argument("--rounds", type=int, default=7, help="timed rounds per measurement (median reported)")
    p.add_argument("--device", default="cpu", help="cpu or cuda [default: cpu]")
    args = p.parse_args(argv)
    try:
        chosen = [entry(name) for name in args.names] or list(ENTRIES)
    except ValueError as error:
        p.error(str(error))
    device = torch.device(args.device)
    print(f"torch {torch.__version__} with {torch.get_num_threads()} threads; medians of {args.rounds} interleaved "
          f"rounds\n")
    print(table([row for e in chosen for row in entry_rows(e, args.rounds, device)]))


if __name__ == "__main__":
    main()
