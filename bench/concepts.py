"""Benchmark rows of the concepts (``viz.concepts``): caching a layer's tokens over a folder against the plain forward
over the same photos, training an SAE on the cached tokens against overcomplete's own loop on the same tokens held in
memory, and the peak RSS while caching.

- **caching**: ``viz.concepts.activations.cache`` over a folder (decode, the blocks up to the layer, the patch tokens
  copied into the shard buffer, the shards written) ÷ the same photos decoded the same way and run through the whole
  model (``model(x)``), batch 16, at the last layer (where caching runs every block) and a middle one;
- **training**: ``viz.concepts.train.train`` (the tokens streamed from the shards, shuffled, normalised) ÷
  ``overcomplete.sae.train_sae`` on a ``DataLoader`` of the same normalised tokens in memory, the same model, loss,
  optimiser, schedule, batch and epochs; tokens per second of each;
- **memory**: a child process caching two shards' worth of photos, then one caching eight: their peak RSS above the
  loaded model, against one shard's buffer.
- **the tab**: the page's Concepts tab opened on a photo just analysed (its first pictures, with an SAE of random
  weights on the middle layer and top patches spread over the photos), ÷ 1 s and ÷ one plain forward.

``python -m bench.concepts [--rounds N] [--device cuda]`` prints these rows alone (a random ViT-S/16 at 224); ``bench.run``
prints them with the rest.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from bench.measure import (Row, interleaved, median, ms, proc_status_kb, release_free_memory, reset_peak_rss,
                           table)

PHOTOS, BATCH, CROPS = 48, 16, 3
TARGETS = {"caching": 0.9, "training": 0.95}


def random_vit(path: Path, name: str = "vit_s_16") -> str:
    import vit

    torch.manual_seed(0)
    model = vit.VisionTransformer(vit.variant(name)).eval()
    return str(vit.save_checkpoint(path, model, vit.imagenet_labels(), vit.Preprocess.for_crop(224),
                                   extra={"name": f"{name} (random init)"}))


def write_photos(folder: Path, count: int, seed: int = 0) -> Path:
    """``count`` photos of 320×240, scikit-image's photos cut at random places (decoding is part of the work)."""
    from skimage import data

    folder.mkdir(parents=True, exist_ok=True)
    sources = [data.chelsea(), data.astronaut(), data.coffee(), data.rocket()]
    rng = np.random.default_rng(seed)
    for i in range(count):
        source = sources[i % len(sources)]
        top, left = rng.integers(0, source.shape[0] - 240), rng.integers(0, source.shape[1] - 320)
        Image.fromarray(source[top:top + 240, left:left + 320]).save(folder / f"{i:04d}.jpg", quality=90)
    return folder


def caching_rows(loaded, folder: Path, work: Path, rounds: int, device: torch.device) -> tuple[list[Row], Path]:
    from torch.utils.data import DataLoader

    from viz.analysis import model_input
    from viz.concepts.activations import CacheOptions, PhotoViews, cache, folder_photos
    from viz.folders.loader import collate

    model = loaded.model
    entries = folder_photos(folder)
    depth = len(model.blocks)

    def plain():
        loader = DataLoader(PhotoViews(entries, loaded.preprocess, 0, 0), batch_size=BATCH, collate_fn=collate)
        with torch.inference_mode():
            for batch in loader:
                model(model_input(batch.pixels[:, 0], loaded.preprocess, device))
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    def caching(layer: int):
        def run():
            cache(loaded, folder, work / f"layer{layer}", CacheOptions(layer=layer, batch_size=BATCH, progress=False))
        return run

    layers = {"last": depth - 1, "middle": depth // 2}
    t = interleaved({"plain": plain, **{k: caching(layer) for k, layer in layers.items()}}, rounds)
    rows = [Row(f"plain forward over {PHOTOS} photos (decode included), batch {BATCH}", ms(median(t["plain"])))]
    for key, layer in layers.items():
        ratio = median(t["plain"]) / median(t[key])
        rows.append(Row(f"caching layer {layer}'s residual tokens over the same photos (decode, blocks 0–{layer}, "
                        f"shards written)", ms(median(t[key]))))
        rows.append(Row(f"**caching throughput ÷ plain forward throughput**, layer {layer} ({key})", f"{ratio:.2f}",
                        f"≥ {TARGETS['caching']:g}", ratio >= TARGETS["caching"]))
    return rows, work / f"layer{layers['middle']}"


def training_rows(acts_folder: Path, rounds: int, device: torch.device, latents: int = 1536, k: int = 32,
                  epochs: int = 2) -> list[Row]:
    from torch.utils.data import DataLoader, TensorDataset

    from viz.concepts.activations import Activations
    from viz.concepts.metrics import moments
    from viz.concepts.train import TrainOptions, build, input_statistics, overcomplete_sae, train

    sae = overcomplete_sae()
    from overcomplete.sae.losses import top_k_auxiliary_loss

    acts = Activations.load(acts_folder)
    stats = input_statistics(moments(acts, "train"))
    options = TrainOptions(latents=latents, k=k, epochs=epochs, progress=False, device=device)
    tokens = torch.cat([p["tokens"] for p in acts.chunks("train")])
    normalised = (tokens - torch.from_numpy(stats.mean).float()) * stats.scale
    steps = len(normalised) // options.batch_size

    def ours():
        train(acts, options, stats=stats)

    def theirs():
        model = build(options, acts.d_model, options.batch_size)
        loader = DataLoader(TensorDataset(normalised), batch_size=options.batch_size, shuffle=True, drop_last=True)
        optimizer = torch.optim.Adam(model.parameters(), lr=options.lr)
        total = epochs * steps
        scheduler = sae.CosineScheduler(optimizer, options.lr, options.lr / 10, total, int(options.warmup * total))
        with contextlib.redirect_stdout(io.StringIO()):
            sae.train_sae(model, loader, lambda *a: top_k_auxiliary_loss(*a, penalty=options.aux_penalty), optimizer,
                          scheduler, nb_epochs=epochs, device=device)

    t = interleaved({"ours": ours, "theirs": theirs}, rounds)
    trained_tokens = epochs * steps * options.batch_size
    rate = {key: trained_tokens / median(v) for key, v in t.items()}
    ratio = rate["ours"] / rate["theirs"]
    return [Row(f"SAE training, {acts.d_model} → {latents} latents, k = {k}, {options.batch_size} tokens a step, "
                f"{epochs} epochs of {steps * options.batch_size} tokens: ours / overcomplete's loop on the tokens in "
                f"memory", f"{rate['ours']:,.0f} / {rate['theirs']:,.0f} tokens/s"),
            Row("**training tokens/s ÷ overcomplete's own loop**", f"{ratio:.2f}", f"≥ {TARGETS['training']:g}",
                ratio >= TARGETS["training"])]


def rss_child(weights: str, folder: str, out: str) -> dict:
    """In this process: the RSS with the model loaded, then the peak while caching ``folder`` (MiB)."""
    import vit
    from viz.concepts.activations import CacheOptions, cache
    from viz.cli.concepts import fixed_mmap_threshold

    fixed_mmap_threshold()                       # as python -m viz.concepts train does
    loaded = vit.load(weights)
    height, width = loaded.preprocess.crop
    x = torch.randn(BATCH * (1 + CROPS), 3, height, width)
    reset_peak_rss()
    before = proc_status_kb("VmRSS")
    with torch.inference_mode():
        loaded.model(x)                          # one batch's plain forward: what any run of this batch needs
    forward = proc_status_kb("VmHWM") - before
    del x
    release_free_memory()
    reset_peak_rss()
    before = proc_status_kb("VmRSS")
    options = CacheOptions(layer=len(loaded.model.blocks) // 2, crops=CROPS, batch_size=BATCH, progress=False)
    acts = cache(loaded, folder, out, options)
    shard = max(s["tokens"] for s in acts.shards) * acts.d_model * 4
    return {"before": before / 1024, "peak": proc_status_kb("VmHWM") / 1024, "shard": shard / 2**20,
            "forward": forward / 1024, "tokens": acts.tokens}


def memory_rows(weights: str, root: Path) -> list[Row]:
    import vit
    from viz.concepts.activations import CacheOptions, shard_photos

    cfg = vit.load(weights).model.cfg
    per_shard = shard_photos(CacheOptions(layer=0), 1 + CROPS, cfg.grid[0] * cfg.grid[1], cfg.embed_dim)
    results = []
    for count in (2 * per_shard, 8 * per_shard):
        folder = write_photos(root / f"rss{count}", count, seed=count)
        run = subprocess.run([sys.executable, "-m", "bench.concepts", "--rss", weights, str(folder),
                              str(root / f"rss_out{count}")], capture_output=True, text=True, check=True,
                             cwd=Path(__file__).resolve().parent.parent)
        results.append({**json.loads(run.stdout.strip().splitlines()[-1]), "photos": count})
    rise = [r["peak"] - r["before"] for r in results]
    bound = results[1]["forward"] + 2 * results[1]["shard"]
    return [Row(f"peak RSS while caching (ViT-S/16, 1 + {CROPS} views a photo, batch {BATCH}): above the loaded model, "
                f"{results[0]['photos']} / {results[1]['photos']} photos (2 / 8 shards, {results[0]['tokens']:,} / "
                f"{results[1]['tokens']:,} tokens)", f"{rise[0]:.0f} MB / {rise[1]:.0f} MB"),
            Row(f"&nbsp;&nbsp;one batch's plain forward ({BATCH * (1 + CROPS)} images, input included) / one shard's "
                f"buffer (float32 tokens) / the loaded model's RSS",
                f"{results[1]['forward']:.0f} MB / {results[1]['shard']:.0f} MB / {results[1]['before']:.0f} MB"),
            Row("**peak RSS rise while caching ÷ (one batch's forward + 2 shards: the buffer and its copy as the file is "
                "written)**", f"{rise[1] / bound:.2f}", "≤ 1.10", rise[1] <= 1.10 * bound),
            Row("**peak RSS rise, 8 shards − 2 shards** (flat: nothing grows with the folder)",
                f"{rise[1] - rise[0]:+.0f} MB", "≤ 10 MB", rise[1] - rise[0] <= 10)]


def random_sae(folder: Path, loaded, photos: Path, layer: int, latents: int = 1536, k: int = 32) -> Path:
    """An SAE of random weights on ``loaded``'s layer (what the tab draws costs the same whatever the weights), saved
    as ``python -m viz.concepts train`` saves one, with top patches spread over the photos of ``photos``."""
    from viz.concepts.sae import SaeInfo, SparseAutoencoder
    from viz.concepts.top_patches import TOP, TopPatches

    width = loaded.model.cfg.embed_dim
    grid = loaded.model.architecture(*loaded.preprocess.crop).grid
    g = torch.Generator().manual_seed(0)
    info = SaeInfo(layer, "residual", "random init", "", "", extra={
        "tokens": "patches", "grid": list(grid), "preprocess": loaded.preprocess.to_dict(), "folder": str(photos)})
    SparseAutoencoder(torch.randn(width, latents, generator=g) / width ** 0.5, torch.randn(latents, generator=g) * 0.1,
                      torch.randn(latents, width, generator=g) / width ** 0.5, torch.zeros(width), "topk", k,
                      normalisation="layer_norm", info=info).save(folder)
    names = sorted(p.name for p in photos.iterdir())
    rng = np.random.default_rng(0)
    TopPatches(rng.integers(0, len(names), (latents, TOP)).astype(np.int32),
               *(rng.integers(0, n, (latents, TOP)).astype(np.int32) for n in grid),
               -np.sort(-rng.uniform(0.1, 5.0, (latents, TOP)), axis=1).astype(np.float32),
               np.array(names)).save(folder / "top_patches.npz")
    return folder


def tab_rows(weights: str, photos: Path, work: Path, rounds: int) -> list[Row]:
    """The Concepts tab opened on a photo just analysed (``vit_explorer.tabs.concepts.show``, what the page calls:
    the blocks up to the SAE's layer and the codes, the 8 strongest latents' maps with 8 top patches each, the first
    latent's 64 top patches, the photo to click), a new photo each call: with the training photos' thumbnails read
    before (a server that has shown the SAE once) and with none read yet; against one plain forward."""
    import vit
    from vit_explorer import state
    from vit_explorer.tabs import concepts
    from viz.concepts.view import THUMBNAILS
    from viz.controls import AnalysisKey, Session

    loaded = vit.load(weights)
    layer = len(loaded.model.blocks) // 2
    listed = state.SETTINGS.saes
    state.SETTINGS.saes = [str(random_sae(work / "sae", loaded, photos, layer))]
    fresh = iter(sorted(photos.iterdir()))

    def analysed() -> Session:      # a photo not shown yet, analysed as the page does before the tab opens
        key = AnalysisKey(str(next(fresh)), state.model_source(weights), "own")
        state.analysis(key, "en")
        return Session(key)

    sessions = {name: [analysed() for _ in range(rounds + 1)] for name in ("warm", "cold")}
    x = loaded.preprocess.to_tensor(loaded.preprocess.crop_image(Image.open(next(fresh)).convert("RGB")))

    def opened(name: str):
        def run():
            if name == "cold":
                THUMBNAILS.clear()
            shown = concepts.show(sessions[name].pop(), None, None, False, 0.6, True, "en")
            assert shown["concepts_strongest"] is not None and shown["concepts_top"] is not None
        return run

    def plain():
        with torch.inference_mode():
            loaded.model(x)

    try:
        t = interleaved({"plain": plain, "warm": opened("warm"), "cold": opened("cold")}, rounds)
    finally:
        state.SETTINGS.saes = listed
    warm, cold, forward = median(t["warm"]), median(t["cold"]), median(t["plain"])
    sae = f"{loaded.model.cfg.embed_dim} → 1536 latents, k = 32, on layer {layer}"
    return [Row(f"the Concepts tab's first pictures of a new photo after its analysis (SAE {sae}: the codes, 8 maps "
                f"with 8 top patches each, a latent's 64 top patches, the photo): the training photos' thumbnails read "
                f"before / none read yet / one plain forward", f"{ms(warm)} / {ms(cold)} / {ms(forward)}"),
            Row("&nbsp;&nbsp;the tab's first pictures ÷ one plain forward (thumbnails read before)",
                f"{warm / forward:.1f}"),
            Row("**the Concepts tab's first pictures ÷ 1 s** (thumbnails read before)", f"{warm:.2f}", "≤ 1.00",
                warm <= 1.0),
            Row("&nbsp;&nbsp;the same, no thumbnail read yet (the first visitor after the server starts)",
                f"{cold:.2f}")]


def concepts_rows(rounds: int, device: torch.device = torch.device("cpu"), memory: bool = True) -> list[Row]:
    import vit

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        weights = random_vit(tmp / "vit_s_16.pt")
        loaded = vit.load(weights)
        loaded.model.to(device)
        folder = write_photos(tmp / "photos", PHOTOS)
        rows, cached = caching_rows(loaded, folder, tmp / "cache", rounds, device)
        shutil.rmtree(cached)     # the training's tokens: the middle layer with crops
        from viz.concepts.activations import CacheOptions, cache
        cache(loaded, folder, cached, CacheOptions(layer=len(loaded.model.blocks) // 2, crops=CROPS, progress=False))
        rows += training_rows(cached, max(2, rounds // 2), device)
        if device.type == "cpu":
            rows += tab_rows(weights, folder, tmp, rounds)
        if memory and device.type == "cpu":
            rows += memory_rows(weights, tmp)
    return rows


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.concepts", description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3, help="timed rounds per measurement (median reported)")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--rss", nargs=3, metavar=("WEIGHTS", "FOLDER", "OUT"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.rss:
        print(json.dumps(rss_child(*args.rss)))
        return
    from bench.run import machine

    print(f"# python -m bench.concepts {' '.join(sys.argv[1:])}".rstrip())
    print(f"Machine: {machine()}\n")
    print(table(concepts_rows(args.rounds, torch.device(args.device))))


if __name__ == "__main__":
    main()
