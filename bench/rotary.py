"""Benchmark rows of a rotary family: DINOv3 ViT-S/16 (random init, timm's layout, opened with ``vit.load``) with full
capture (``forward_with_attention``: every layer's maps and token norms) ÷ timm's own forward of the same weights
(``vit_small_patch16_dinov3``, its default mean pooling, its fused attention), at 224 and at 512, batch 1, on the CPU. Our plain
forward is timed beside them: the rotation is computed per forward from the grid, as timm's dynamic-size model does.
With CUDA present, the same rows on the GPU (each call ended by a synchronize; no target there).

``python -m bench.rotary [--rounds N]`` prints these rows alone; ``bench.run`` prints them with the rest.
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import torch

from bench.measure import Row, interleaved, median, ms, table

SIZES = (224, 512)
# capture ÷ timm's plain forward: at 224 the maps may cost at most a tenth more than not keeping them (capture of the
# plain ViT-B/16 meets the same bound against torchvision); at 512 the L·H·T² maps of 1029 tokens are written out
# where timm's fused kernel keeps none, so the ratio is printed without a target
TARGETS = {224: 1.10}


def rotary_rows(rounds: int, device: torch.device = torch.device("cpu")) -> list[Row]:
    import timm
    from safetensors.torch import save_file

    import vit

    torch.manual_seed(0)
    reference = timm.create_model("vit_small_patch16_dinov3").eval()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "vit_small_patch16_dinov3.safetensors"
        save_file({k: v.contiguous() for k, v in reference.state_dict().items()}, str(path))
        model = vit.load(path).model.to(device)
    reference = reference.to(device)
    where = "CPU" if device.type == "cpu" else "GPU"

    def timed(fn):                       # a GPU call ends when its kernels have run
        return fn if device.type == "cpu" else lambda: (fn(), torch.cuda.synchronize(device))

    rows = []
    for size in SIZES:
        x = torch.randn(1, 3, size, size, generator=torch.Generator().manual_seed(1)).to(device)
        with torch.inference_mode():
            contenders = {"timm": timed(lambda: reference(x)), "ours plain": timed(lambda: model(x)),
                          "capture": timed(lambda: model.forward_with_attention(x, return_token_norms=True))}
            t = {k: median(v) for k, v in interleaved(contenders, rounds).items()}
        tokens = 5 + (size // 16) ** 2
        ratio = t["capture"] / t["timm"]
        target = TARGETS.get(size) if device.type == "cpu" else None
        rows += [Row(f"DINOv3 ViT-S/16 @ {size} ({tokens} tokens), {where}: timm's forward / our plain forward / "
                     f"our capture", " / ".join(ms(t[k]) for k in ("timm", "ours plain", "capture"))),
                 Row(f"**DINOv3 ViT-S/16 capture ÷ timm's forward** @ {size}, {where}", f"{ratio:.2f}",
                     f"≤ {target:.2f}" if target else "", ratio <= target if target else None)]
    return rows


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.rotary", description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=7, help="timed rounds per measurement (median reported)")
    args = p.parse_args(argv)
    print(f"torch {torch.__version__} with {torch.get_num_threads()} threads; medians of {args.rounds} interleaved "
          f"rounds\n")
    rows = rotary_rows(args.rounds)
    if torch.cuda.is_available():
        rows += rotary_rows(args.rounds, torch.device("cuda"))
    print(table(rows))


if __name__ == "__main__":
    main()
