"""Benchmark rows of the load's check against its own library (``vit.checkpoints.verify``): a random ViT-B/16 saved
in timm's layout (safetensors, 346 MB) opened by ``vit.load`` with and without the check, and opened again (the
process keeps the check's result for an unchanged file), on the CPU. The check costs timm's model built on the meta
device and one forward of each model at 224 (ours fused but for its last block); the target: what the check adds is
at most one extra forward of ours plus the library's build (and its forward).

``python -m bench.loading [--rounds N]`` prints these rows alone; ``bench.run`` prints them with the rest. With
``--video`` it also times the check of a video model: a random VideoMAE-B/16 (16 frames, 1,568 tokens) saved by
transformers' ``save_pretrained``, checked against transformers' own classifier made from the folder on one clip.
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
    from vit.checkpoints.load import _load
    from vit.checkpoints.references import reference

    torch.manual_seed(0)
    model = timm.create_model("vit_base_patch16_224").eval()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "vit_base_patch16_224.safetensors"
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(path))
        del model

        def checked():
            verify.CACHE.clear()
            return vit.load(path)

        loaded = _load(path, False, {})   # vit.load's model with the Origin its check reads
        x = verify.check_image(loaded.config)
        made = reference(loaded.origin, loaded.config)

        def ours():   # the check's own forward: fused but for the last block, whose attention is written out
            return verify._ours(loaded.model, x)

        def plain():
            with torch.no_grad():
                return loaded.model(x)

        t = {k: median(v) for k, v in interleaved({
            "unchecked": lambda: vit.load(path, verify=False), "checked": checked, "again": lambda: vit.load(path),
            "build": lambda: reference(loaded.origin, loaded.config), "theirs": lambda: made.run(x),
            "ours": ours, "plain": plain}, rounds).items()}
    ratio = t["checked"] / t["unchecked"]
    extra = t["checked"] - t["unchecked"]
    return [Row("load ViT-B/16 (timm's layout, 346 MB): unchecked / checked against timm / the same file again",
                " / ".join(ms(t[k]) for k in ("unchecked", "checked", "again"))),
            Row("&nbsp;&nbsp;the check's parts: timm's model built (meta device, the file's tensors assigned) / timm's "
                "forward with its last block's attention / ours with its last block's attention, at 224",
                " / ".join(ms(t[k]) for k in ("build", "theirs", "ours"))),
            Row("&nbsp;&nbsp;our plain forward at 224, batch 1 (for scale)", ms(t["plain"])),
            Row("**what the check adds ÷ (timm's build and forward + one plain forward of ours)**",
                f"{extra / (t['build'] + t['theirs'] + t['plain']):.2f}", "≤ 1.10",
                extra <= 1.10 * (t['build'] + t['theirs'] + t['plain'])),
            Row("checked load ÷ unchecked load (the unchecked one maps the file and reads no weight yet)",
                f"{ratio:.1f}")]


def video_load_rows(rounds: int) -> list[Row]:
    """The load's check of a video folder: VideoMAE-B/16, 16 frames of 224×224, saved by transformers."""
    import transformers

    import vit
    from vit.checkpoints import verify
    from vit.checkpoints.load import _load
    from vit.checkpoints.references import reference

    torch.manual_seed(0)
    model = transformers.VideoMAEForVideoClassification(transformers.VideoMAEConfig(num_labels=400)).eval()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "videomae-base"
        model.save_pretrained(folder)
        del model

        def checked():
            verify.CACHE.clear()
            return vit.load(folder)

        loaded = _load(folder, False, {})
        x = verify.check_image(loaded.config)
        made = reference(loaded.origin, loaded.config)

        def plain():
            with torch.no_grad():
                return loaded.model(x)

        t = {k: median(v) for k, v in interleaved({
            "unchecked": lambda: vit.load(folder, verify=False), "checked": checked,
            "build": lambda: reference(loaded.origin, loaded.config), "theirs": lambda: made.run(x),
            "ours": lambda: verify._ours(loaded.model, x), "plain": plain}, rounds).items()}
    extra = t["checked"] - t["unchecked"]
    scale = t["build"] + t["theirs"] + t["plain"]
    return [Row("load VideoMAE-B/16 (transformers' folder, 16 frames, 1,568 tokens): unchecked / checked against "
                "transformers", " / ".join(ms(t[k]) for k in ("unchecked", "checked"))),
            Row("&nbsp;&nbsp;the check's parts: transformers' from_pretrained on the folder / its forward with its last "
                "step's attention (eager) / ours fused with its last step's attention recomputed, on one clip",
                " / ".join(ms(t[k]) for k in ("build", "theirs", "ours"))),
            Row("&nbsp;&nbsp;our plain forward of the clip (for scale)", ms(t["plain"])),
            Row("**what the check adds ÷ (transformers' build and forward + one plain forward of ours)**",
                f"{extra / scale:.2f}", "≤ 1.10", extra <= 1.10 * scale)]


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.loading", description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=5, help="timed rounds per measurement (median reported)")
    p.add_argument("--video", action="store_true", help="also the check of a VideoMAE-B/16 folder (minutes)")
    args = p.parse_args(argv)
    print(f"torch {torch.__version__} with {torch.get_num_threads()} threads; medians of {args.rounds} interleaved "
          f"rounds\n")
    print(table(load_rows(args.rounds) + (video_load_rows(args.rounds) if args.video else [])))


if __name__ == "__main__":
    main()
