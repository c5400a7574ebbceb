"""The five-photo protocol-agreement table of docs/trust.md: how far the four ways of removing a patch agree on the
eight methods' ranking (Kendall τ per pair of protocols and photo), and each method's verdict per photo, on the
AugReg ViT-Ti (through its own preprocessing) and five photos that ship with scikit-image (astronaut, chelsea,
coffee, motorcycle, rocket), each photo's predicted class, 11 points per curve.

    python -m bench.protocol_agreement [--weights DIR]      # prints the Markdown (a few minutes on a CPU)

``agreement_tables(weights_dir)`` returns it (and the reports); tests/trust/test_trust_agreement_table.py checks
that docs/trust.md quotes it.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
from PIL import Image
from skimage import data

import vit
from viz.trust import PROTOCOLS
from viz.trust.job import protocols_report
from viz.trust.view import verdict_kind

REPO = Path(__file__).resolve().parent.parent
AUGREG = "vit_tiny_patch16_224.augreg_in21k_ft_in1k.safetensors"
PHOTOS = {"astronaut": data.astronaut, "chelsea": data.chelsea, "coffee": data.coffee,
          "motorcycle": lambda: data.stereo_motorcycle()[0], "rocket": data.rocket}
WORDS = {"faithful": "✓ faithful", "not_faithful": "✗ not faithful", "depends_on_protocol": "? depends",
         "inside": "≈ random"}


def preprocessing(loaded) -> str:
    """How the checkpoint's own preprocessing makes the model input of a photo, in words."""
    p = loaded.preprocess
    return (f"each photo's short side resized to {p.resize} pixels ({p.interpolation}), the centre {p.crop[0]}×"
            f"{p.crop[1]} cropped, normalised with mean {p.mean[0]:g} and std {p.std[0]:g}")


def reports(loaded) -> dict:
    """{photo: ProtocolsReport} of every method under the four protocols, for each photo's predicted class."""
    out = {}
    for name, photo in PHOTOS.items():
        x = loaded.preprocess.to_tensor(loaded.preprocess.crop_image(Image.fromarray(photo())))
        out[name] = protocols_report(loaded.model, x, None, None, protocols=list(PROTOCOLS), labels=loaded.labels)
    return out


def agreement_tables(weights_dir: Path) -> tuple[str, dict]:
    """(Markdown: the preprocessing, the Kendall τ table and the verdict table, {photo: ProtocolsReport})."""
    loaded = vit.load(Path(weights_dir) / AUGREG)
    found = reports(loaded)
    protocols = list(PROTOCOLS)
    pairs = [(i, j) for i in range(len(protocols)) for j in range(i + 1, len(protocols))]
    lines = [f"AugReg ViT-Ti, {preprocessing(loaded)}.", "",
             "| photo (predicted class, probability) | " +
             " | ".join(f"{protocols[i]}–{protocols[j]}" for i, j in pairs) + " |",
             "|---|" + "---:|" * len(pairs)]
    for name, r in found.items():
        _, tau = r.agreement()
        cells = ["–" if np.isnan(tau[i, j]) else f"{tau[i, j]:+.2f}" for i, j in pairs]
        lines.append(f"| {name} ({r.first.target['name']}, {r.first.probability:.2f}) | " + " | ".join(cells) + " |")
    verdicts = {name: r.verdicts() for name, r in found.items()}
    methods = list(next(iter(verdicts.values())))
    lines += ["", "| method | " + " | ".join(found) + " |", "|---|" + "---|" * len(found)]
    for m in methods:
        lines.append(f"| `{m}` | " + " | ".join(WORDS[verdict_kind(verdicts[p][m])] for p in found) + " |")
    return "\n".join(lines) + "\n", found


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.protocol_agreement", description=__doc__.split("\n")[0])
    p.add_argument("--weights", type=Path,
                   default=Path(os.environ.get("VIT_TEST_WEIGHTS", REPO.parent / "shared" / "weights")),
                   help="folder holding the AugReg ViT-Ti checkpoint (default: $VIT_TEST_WEIGHTS or ../shared/weights)")
    print(agreement_tables(p.parse_args(argv).weights)[0], end="")


if __name__ == "__main__":
    main()
