"""How much ``--dtype bfloat16`` / ``float16`` changes the maps: ``python -m bench.dtype_error --weights PATH [PHOTO ...]``.

Runs ``viz.analysis.analyze`` on each photo with the forward in float32 (the reference) and in each 16-bit format
(``torch.autocast``, see ``vit.device``) on ``--device`` (default: the CPU), and prints the largest differences
over all photos: of the attention probabilities, the CLS rollout (relative to its largest value), the mean
attention distance (pixels), the token norms (relative) and the class probabilities, and whether the top-1 class
stays. Photos default to the example photos and a few more from scikit-image.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch
from PIL import Image

import vit
from vit.device import pick_device
from viz.analysis import analyze
from viz.maps.rollout import rollout_map

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def default_photos() -> list[Image.Image]:
    from skimage import data
    photos = [Image.open(p).convert("RGB") for p in sorted(EXAMPLES.glob("*.jpg"))]
    return photos + [Image.fromarray(data.astronaut()), Image.fromarray(data.rocket())]


def differences(reference, other) -> dict[str, float]:
    """Largest differences of one photo's analysis from the float32 one."""
    rollout = [rollout_map(a.attention, a.num_prefix, a.grid) for a in (reference, other)]
    return {
        "attention": float(np.abs(other.attention - reference.attention).max()),
        "rollout": float(np.abs(rollout[1] - rollout[0]).max() / rollout[0].max()),
        "distance": float(np.abs(other.mean_distance[False] - reference.mean_distance[False]).max()),
        "norms": float((np.abs(other.token_norms - reference.token_norms) / reference.token_norms).max()),
        "probabilities": float(np.abs(other.probabilities - reference.probabilities).max()),
        "top1": float(other.probabilities.argmax() == reference.probabilities.argmax()),
    }


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--weights", required=True, help="checkpoint to measure (e.g. the AugReg ViT-Ti)")
    p.add_argument("--device", default="cpu", help="where the forward runs (default: cpu)")
    p.add_argument("photos", nargs="*", help="photos (default: examples/ and scikit-image's astronaut and rocket)")
    args = p.parse_args(argv)
    device = pick_device(args.device)
    loaded = vit.load(args.weights)
    loaded.model.to(device)
    photos = [Image.open(path).convert("RGB") for path in args.photos] or default_photos()
    reference = [analyze(loaded, photo) for photo in photos]
    print(f"{loaded.name} on {device}, {len(photos)} photos; largest difference from the float32 forward:\n")
    print("| forward | attention (probability) | rollout (÷ its max) | mean distance (px) | token norms (relative) "
          "| class probability | same top-1 |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for dtype in (torch.bfloat16, torch.float16):
        found = [differences(r, analyze(loaded, photo, dtype=dtype)) for r, photo in zip(reference, photos)]
        worst = {k: max(d[k] for d in found) for k in found[0]}
        same = sum(d["top1"] for d in found)
        print(f"| {str(dtype).removeprefix('torch.')} | {worst['attention']:.1e} | {worst['rollout']:.1e} | "
              f"{worst['distance']:.2f} | {worst['norms']:.1e} | {worst['probabilities']:.1e} | "
              f"{int(same)} of {len(found)} |")


if __name__ == "__main__":
    main()
