"""Benchmark rows of the load's check against its own library (``vit.checkpoints.verify``): a random ViT-B/16 saved
in timm's layout (safetensors, 346 MB) opened by ``vit.load`` with and without the check, and opened again (the
process keeps the check's result for an unchanged file), on the CPU. The check costs timm's model built on the meta
device and one forward of each model at 224; the ratio is the checked load over the unchecked one.

``python -m bench.loading [--rounds N]`` prints these rows alone; ``bench.run`` prints them with the rest.
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import torch

from bench.measure import Row, interleaved, median, ms, table


def load_rows(rounds: int) -> list[Row]:
    import timm
    from safetensors.torch import save_file

    import vit
    from vit.checkpoints import verify

    torch.manual_seed(0)
    model = timm.create_model("vit_base_patch16_224").eval()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "vit_base_patch16_224.safetensors"
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(path))
        del model

        def checked():
            verify.CACHE.clear()
            return vit.load(path)

        t = {k: median(v) for k, v in interleaved({"unchecked": lambda: vit.load(path, verify=False),
                                                   "checked": checked, "again": lambda: vit.load(path)},
                                                  rounds).items()}
    ratio = t["checked"] / t["unchecked"]
    return [Row("load ViT-B/16 (timm's layout, 346 MB): unchecked / checked against timm / the same file again",
                " / ".join(ms(t[k]) for k in ("unchecked", "checked", "again"))),
            Row("**checked load ÷ unchecked load** (timm's model on the meta device + one forward of each at 224)",
                f"{ratio:.2f}")]


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.loading", description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=5, help="timed rounds per measurement (median reported)")
    args = p.parse_args(argv)
    print(f"torch {torch.__version__} with {torch.get_num_threads()} threads; medians of {args.rounds} interleaved "
          f"rounds\n")
    print(table(load_rows(args.rounds)))


if __name__ == "__main__":
    main()
