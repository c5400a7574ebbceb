"""Benchmark: ``python -m bench.run [--weights PATH] [--rounds N]`` prints one table of ratios measured in one run.

ViT-B/16 at 224, batch 1, on the CPU with torch's default thread count, randomly initialised (weights do
not change timings) unless ``--weights`` names a checkpoint. Every number comes from this run:

- the architecture rows (``bench.architectures``, one entry per family): forward with full capture
  (``forward_with_attention``: every layer's maps and token norms) against torchvision's ``vit_b_16`` plain forward,
  and our own plain (SDPA) forward; the analysis of a photo against the capture; a GAE class map against the plain
  forward;
- the full analysis exactly as the app's ``/analyze`` handler does it (``vit_explorer.api.analyze``: decode the
  upload, one forward, every panel rendered to an image) against one plain forward;
- re-rendering after a layer/head change, a patch click, a heads-grid click, a rollout control, the opacity and
  the language switch: the functions the page's events call (found by name in the built app), on a cached
  session;
- the attention cache kept per image, and the peak RSS of ``python app.py`` serving ViT-B/16 while
  analysing photos sent through gradio_client (the API round trip is timed too);
- scaling with the input size (224 and 384 with ViT-B/16, 518 with ViT-B/14 as DINOv2 runs it), and the
  analysis (without rendering) against the capture forward at 224 and 518 on the CPU and, when CUDA is
  present, on the GPU (issue 16's targets: ≤ 1.10 on the CPU, ≤ 2 on a GPU);
- the pipeline people use today (``bench.today``) on the same photo, interleaved with ours, and the speed-up;
- class-specific explanations (``viz.analysis.explain``) for a new target against one plain forward: the
  gradient family (gae, grad_rollout, gradcam from one backward) and AttnLRP, the bytes cached per
  (photo, target), and re-rendering an explanation from them;
- the inside views (``bench.inside``): lens + DLA, head importance estimated and exact, patching, each ÷ one forward;
- a rotary family (``bench.rotary``): DINOv3 ViT-S/16 with full capture ÷ timm's forward at 224 and 512;
- high resolution (``bench.highres``, in a child process): a DINOv2 ViT-S/14 at 1022×1022 as the page analyses it,
  its ratio to the plain forward, a patch click, the bytes cached and the process's peak RSS.
- every other entry of ``bench.architectures`` (a Swin-T against torchvision's ``swin_t``): the same rows.
- concepts (``bench.concepts``): caching a layer's tokens ÷ the plain forward, SAE training ÷ overcomplete's own loop,
  the peak RSS while caching.
- loading (``bench.loading``): ViT-B/16 opened with and without the check against its own library, and again.

Timings are medians of interleaved rounds after a warm-up (see ``bench.measure``).
"""
from __future__ import annotations

import argparse
import gc
import itertools
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import torch
from PIL import Image

try:
    from skimage import data
except ImportError:  # the bench's photos come from scikit-image, today's pipeline needs transformers: test requirements
    sys.exit("python -m bench.run needs scikit-image and transformers, which the app does not: "
             "pip install -r requirements-test.txt")

import vit
from bench.measure import (Row, interleaved, median, ms, peak_rss_delta_mb, proc_status_kb, synchronized,
                           table)
from bench.trust import thorough_rows
from vit.image_file import open_image
from viz.query.view import query_photo

MB = 2 ** 20
SERVED = "ViT-B/16"     # the entry of bench.architectures whose model the page serves here (random, or --weights)
# glibc's malloc as vit_explorer.server.return_freed_memory_to_the_os tunes it, for a child process that does not
# import the server (bench.highres imports no Gradio): two arenas, every buffer of 512 KB or more mapped afresh
MALLOC_AS_THE_SERVER = {"MALLOC_ARENA_MAX": "2", "MALLOC_MMAP_THRESHOLD_": str(512 * 2**10)}


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    return (f"{cpu}, {os.cpu_count()} cores, torch {torch.__version__} with {torch.get_num_threads()} threads, "
            f"Python {platform.python_version()}")


def random_vit_checkpoint(path: Path, name: str = "vit_b_16", img_size: int = 224) -> Path:
    """Save a randomly initialised ViT of the named variant with our checkpoint format (no download)."""
    torch.manual_seed(0)
    model = vit.VisionTransformer(vit.variant(name, img_size=img_size)).eval()
    preprocess = vit.Preprocess.for_crop(img_size, interpolation="bilinear")
    return vit.save_checkpoint(path, model, vit.imagenet_labels(), preprocess, extra={"name": f"{name} (random init)"})


def write_photos(folder: Path) -> list[Path]:
    """Real photos shipped with scikit-image, as JPEG files (decoding the upload is part of the analysis)."""
    photos = {"cat": data.chelsea(), "astronaut": data.astronaut(), "coffee": data.coffee(), "rocket": data.rocket(),
              "motorcycle": data.stereo_motorcycle()[0], "camera": data.camera()}
    paths = []
    for name, pixels in photos.items():
        path = folder / f"{name}.jpg"
        Image.fromarray(pixels).save(path, quality=90)
        paths.append(path)
    return paths


# ---- 1. forward and full analysis ---------------------------------------------------------------------------

def speed(weights: str, photo: Path, rounds: int, today_rounds: int) -> tuple[list[Row], dict]:
    """The served model's architecture rows (``bench.architectures``: ViT-B/16 against torchvision's ``vit_b_16``) and,
    timed in the same rounds, the page's full analysis and today's pipeline."""
    from bench.architectures import entry, measure
    from bench.architectures import rows as architecture_rows
    from bench.today import TodayPipeline
    from vit_explorer import api, state

    served = state.MODELS.get(weights)
    today = TodayPipeline()
    analyses = []

    def full_analysis():
        state.ANALYSES.clear()  # a photo the server has not seen: decode, forward, every panel
        session = api.analyze(str(photo), weights)[0]
        analyses.append((session, state.ANALYSES.get(session.key)))

    vit_b = entry(SERVED)
    t = measure(vit_b, served.loaded, open_image(photo), rounds,
                extra={"full": full_analysis, "today": lambda: today(str(photo))}, rounds_of={"today": today_rounds})
    position = interleaved({"today position": today.render_position}, 1, warmup=0)["today position"]
    tv, full = (median(t[k]) for k in ("reference", "full"))
    decode = median(interleaved({"decode": lambda: open_image(photo)}, rounds)["decode"])
    timings = {k: median([a.timings[k] for _, a in analyses[1:]]) for k in ("preprocess", "forward", "to_numpy")}
    render = full - decode - sum(timings.values())
    today_stages = {k: median(v[1:]) for k, v in today.stages.items()}  # its warm-up call left out
    today_total = median(t["today"])
    rows = architecture_rows(vit_b, t, named=False) + [
        Row("full analysis (`/analyze`'s handler: decode → every panel rendered)", ms(full)),
        Row("&nbsp;&nbsp;decode upload / preprocess / forward with capture and torch post-processing / to numpy "
            "(float16) / panels",
            " / ".join(ms(v) for v in (decode, timings["preprocess"], timings["forward"], timings["to_numpy"], render))),
        Row("rendering the panels (ViT-B/16, CPU)", ms(render), "< 64 ms", render < 0.064),
        Row("**full analysis ÷ torchvision plain forward**", f"{full / tv:.2f}", "≤ 1.50", full / tv <= 1.5),
        Row("today: HF `output_attentions` + vit-explain rollout + pyplot, per photo", ms(today_total)),
        Row("&nbsp;&nbsp;" + " / ".join(today_stages), " / ".join(ms(v) for v in today_stages.values())),
        Row("&nbsp;&nbsp;(today, per model: position-similarity figure, not in the total)", ms(median(position))),
        Row("**speed-up of our full analysis over today's pipeline**", f"{today_total / full:.1f}×"),
    ]
    session, analysis = analyses[-1]
    return rows, {"session": session, "analysis": analysis, "full": full, "today": today_total}


# ---- 2. re-render from the cached analysis: the page's own event handlers ------------------------------------------

class PageEvents:
    """The functions the page's events call (what Gradio calls, the page's wrapper included), found by name in the
    built app, called with their inputs by component name as Gradio passes them."""

    def __init__(self, demo):
        self.fns = {block.name: block.fn for block in demo.fns.values()}

    def __call__(self, name: str, **values):
        import inspect

        from vit_explorer.controls import NAMES, ControlValues

        fn = self.fns[name]
        controls = values.pop("controls", ControlValues())
        values.update({n: getattr(controls, n) for n in NAMES})
        return fn(*(values[p] for p in inspect.signature(fn).parameters))


def rerender(events: PageEvents, session, a, rounds: int) -> list[Row]:
    import gradio as gr

    from vit_explorer.controls import ControlValues

    L, H = a.depth, a.heads
    gh, gw = a.grid
    W, Hpx = query_photo(session, a).size  # the clickable photo (shown enlarged)
    layers_heads = itertools.cycle([(layer, head) for layer in range(L) for head in range(H)])
    patches = itertools.cycle([(r, c) for r in range(gh) for c in range(gw)])
    discards = itertools.cycle([0.0, 0.5, 0.9, 0.95])
    opacities = itertools.cycle([0.3, 0.6, 0.9])
    languages = itertools.cycle(["zh-CN", "en"])
    page = dict(session=session, lang="en", photo=session.key[0])

    def controls(layer=L - 1, head=0, mean_heads=True, discard=0.9, opacity=0.6):
        return ControlValues(discard_ratio=discard, opacity=opacity, layer=layer, head=head, mean_heads=mean_heads)

    def layer_head():
        layer, head = next(layers_heads)
        events("layer_changed", **page, controls=controls(layer, head, mean_heads=False))

    def patch_click():
        r, c = next(patches)
        events("pick_patch", **page, controls=controls(),
               evt=gr.SelectData(None, {"index": [(c + 0.5) * W / gw, (r + 0.5) * Hpx / gh], "value": None}))

    heads_session = events("layer_changed", **page, controls=controls(0, 0, mean_heads=False))[0]   # with the grid
    cells = itertools.cycle([heads_session.heads_layout.box(layer, head) for layer in range(L) for head in range(H)])

    def heads_click():
        x0, y0, x1, y1 = next(cells)
        events("pick_head", **{**page, "session": heads_session}, controls=controls(),
               evt=gr.SelectData(None, {"index": [(x0 + x1) / 2, (y0 + y1) / 2], "value": None}))

    def rollout_control():
        events("discard_ratio_changed", **page, controls=controls(discard=next(discards)))

    def opacity():
        events("opacity_changed", **page, controls=controls(opacity=next(opacities)))

    def language():
        events("switch_language", language_switch=next(languages), session=session, photo=session.key[0],
               controls=controls())

    t = interleaved({"layer/head": layer_head, "patch": patch_click, "heads grid": heads_click,
                     "rollout": rollout_control, "opacity": opacity, "language": language}, rounds, warmup=2)
    names = {"layer/head": "the layer or head slider (`layer_changed`: attention map, framed grid, patch query)",
             "patch": "a patch click (`pick_patch`: framed photo, attention row and column)",
             "heads grid": "a click on the layers × heads grid (`pick_head`: grid, attention map, patch query)",
             "rollout": "a rollout control, discard 0–0.95 (`discard_ratio_changed`: the rollout alone)",
             "opacity": "the opacity slider (`opacity_changed`: rollout, attention map, grid, patch query)",
             "language": "the language switch (`switch_language`: every picture and text, the crop)"}
    return [Row(f"re-render after {names[k]}", ms(median(v)), "≤ 50 ms", median(v) <= 0.05) for k, v in t.items()]


# ---- 3. memory -------------------------------------------------------------------------------------------------

def cache_rows(a) -> list[Row]:
    from viz.records import cached_bytes

    total = cached_bytes(a)
    T = a.num_prefix + a.grid[0] * a.grid[1]
    return [Row(f"what recomputes the attention, per image ({a.stream.dtype} stream {a.stream.shape[0]}×{T}×"
                f"{a.stream.shape[2]}, readout rows, log-sum-exps; instead of {a.depth}×{a.heads}×{T}² maps)",
                f"{a.source.nbytes / MB:.1f} MB"),
            Row("**everything the server caches per image** (that, head-fused copies, norms, cropped photo)",
                f"{total / MB:.1f} MB", "≤ 15 MB", total <= 15 * MB)]


def cropped_photos(photo: Path, n: int, folder: Path) -> list[Path]:
    """``n`` different photos (the server caches per photo file): the photo cropped by i pixels, i = 1 … n."""
    image = Image.open(photo)
    paths = []
    for i in range(1, n + 1):
        paths.append(folder / f"{photo.stem}_crop{i}.jpg")
        image.crop((i, i, image.width - i, image.height)).save(paths[-1], quality=90)
    return paths


def app_rows(weights: str, photos: list[Path], twins: list[Path], fill: list[Path], log: Path) -> list[Row]:
    """Serve ViT-B/16 with ``python app.py``; analyse the photos and their ``twins`` (the same photos, cropped:
    new to the server) in one session each, timing the round trips; then each of the ``fill`` photos in a new
    session: more than the app's cache of analyses holds."""
    from gradio_client import handle_file

    from bench.app_process import AppProcess

    def memory(pid: int) -> str:
        rss, anon, file = (proc_status_kb(f, pid) / 1024 for f in ("VmRSS", "RssAnon", "RssFile"))
        return f"{rss:.0f} MB ({anon:.0f} + {file:.0f})"

    with AppProcess(weights, log=log) as server:
        started = memory(server.pid)
        client, bare = server.client(), server.client(download_files=False)
        trips = {client: [], bare: []}
        for pair in zip(photos, twins):  # a photo the server has not analysed yet on every call
            for c, photo in zip((client, bare), pair):
                t0 = time.perf_counter()
                out = c.predict(handle_file(str(photo)), api_name="/analyze")
                trips[c].append(time.perf_counter() - t0)
                if not out[0]:
                    raise RuntimeError(f"/analyze returned no classes for {photo}")
        few = proc_status_kb("VmHWM", server.pid) / 1024
        for photo in fill:
            client.reset_session()  # a new visitor with a new photo
            client.predict(handle_file(str(photo)), api_name="/analyze")
        peak = proc_status_kb("VmHWM", server.pid) / 1024
        full = memory(server.pid)
    return [Row("`python app.py` serving ViT-B/16: RSS (anonymous + file-backed) after start", started),
            Row(f"**peak RSS of the app process** (VmHWM) after {2 * len(photos)} analyses in 2 sessions",
                f"{few:.0f} MB", "≤ 1536 MB", few <= 1536),
            Row(f"**peak RSS** after {len(fill)} more photos, one per new session (the cache of analyses full; "
                f"RSS then {full})", f"{peak:.0f} MB", "≤ 1536 MB", peak <= 1536),
            Row("`/analyze` round trip through gradio_client: upload, queue, analysis, 11 panels encoded",
                ms(median(trips[bare][1:]))),
            Row("&nbsp;&nbsp;the same and the 11 panel files downloaded one after another (gradio_client's default)",
                ms(median(trips[client][1:])))]


# ---- 4. class-specific explanations ----------------------------------------------------------------------------

def explain_rows(loaded, photo: Path, rounds: int) -> list[Row]:
    """A class map for a new target (every call explains another class, nothing is cached) ÷ one plain forward."""
    from viz.explain.explainer import explain
    from viz.explain.panels import explanation_panel

    image = open_image(photo)
    x = loaded.preprocess(image)
    classes = itertools.count(1)
    results = []

    @torch.inference_mode()
    def plain():
        loaded.model(x)

    def family(method: str):
        return lambda: results.append(explain(loaded, image, next(classes) % len(loaded.labels), [method]))

    t = interleaved({"plain": plain, "gradient": family("gae"), "attnlrp": family("attnlrp")}, rounds)
    plain_s, gradient_s, lrp_s = (median(t[k]) for k in ("plain", "gradient", "attnlrp"))
    every = explain(loaded, image, 281)
    crop = loaded.preprocess.crop_image(image)
    maps = itertools.cycle(every.maps.items())

    def render_one():
        method, values = next(maps)
        explanation_panel(crop, values, method)

    render = median(interleaved({"render": render_one}, max(rounds, 16))["render"])
    formulas = median([r.timings["formulas"] for r in results if "gradient" in r.timings])
    return [
        Row("class map for a new target, gradient pass (gae + grad_rollout + gradcam from one backward, with formulas)",
            f"{ms(gradient_s)} (formulas {ms(formulas)})"),
        Row("**gradient-family class map ÷ our plain forward**", f"{gradient_s / plain_s:.2f}", "≤ 3.00",
            gradient_s / plain_s <= 3.0),
        Row("class map for a new target, AttnLRP pass", ms(lrp_s)),
        Row("**AttnLRP class map ÷ our plain forward**", f"{lrp_s / plain_s:.2f}", "≤ 3.00", lrp_s / plain_s <= 3.0),
        Row(f"explanation cached per (photo, target): {len(every.maps)} maps of {every.grid[0]}×{every.grid[1]} float32",
            f"{every.nbytes} bytes"),
        Row("re-render of an explanation from the cached map (overlay + colour bar)", ms(render), "≤ 50 ms", render <= 0.05),
    ]


def trust_rows(loaded, photo: Path, rounds: int) -> list[Row]:
    """Faithfulness curves and the comparison of every method (viz.trust.job), each ÷ one plain forward of
    the same model, batched as the CLI runs them (8 packed rows per step) and as the page does (1 row per step, so
    a step never holds another visitor back by more than one forward); and the whole comparison on a ViT-Ti
    (random init: the cost does not depend on the weights)."""
    from viz.trust.job import ROWS_PER_STEP, TrustJob
    from vit.explain import ClassTarget

    x = loaded.preprocess(open_image(photo))
    target = ClassTarget(281)

    def job(model, methods, rows=ROWS_PER_STEP):
        return lambda: TrustJob(model, x, target, methods, rows_per_step=rows).result()

    # seconds of one plain forward, of the curves of one map (the random map: no model pass for the map itself, so
    # the whole photo's probability costs a forward too), and of the whole comparison (every method's map with its
    # backward passes, every curve)
    plain = torch.inference_mode()(lambda: loaded.model(x))
    t = interleaved({"plain": plain, "curves": job(loaded.model, ["random"]), "page curves": job(loaded.model, ["random"], 1),
                     "compare": job(loaded.model, None), "page compare": job(loaded.model, None, 1)}, rounds,
                    rounds_of={"page compare": 1})
    ratio = {k: median(t[k]) / median(t["plain"]) for k in ("curves", "page curves", "compare", "page compare")}
    tiny = random_loaded("vit_ti_16", 224, torch.device("cpu"))
    tiny_t = interleaved({"plain": torch.inference_mode()(lambda: tiny.model(x)), "compare": job(tiny.model, None)},
                         rounds)
    tiny_s, tiny_plain = median(tiny_t["compare"]), median(tiny_t["plain"])
    methods = len(TrustJob(loaded.model, x, target, None).names)
    flops = curve_flops(tiny.config, TrustJob(tiny.model, x, target, None).curve_lengths())
    peak = matmul_rate()
    return [
        Row(f"**deletion + insertion curves of one map ÷ our plain forward** (22 points; packed rows, {ROWS_PER_STEP} "
            "per step, as the CLI runs them)", f"{ratio['curves']:.2f}", "≤ 10", ratio["curves"] <= 10),
        Row("&nbsp;&nbsp;the same, one row per step (the page)", f"{ratio['page curves']:.2f}"),
        Row(f"**whole comparison of {methods} methods ÷ our plain forward** (maps with their backward passes, "
            "all curves, as the CLI runs it)", f"{ratio['compare']:.1f}", "≤ 80", ratio["compare"] <= 80),
        Row("&nbsp;&nbsp;the same, one row per step (the page; one round)", f"{ratio['page compare']:.1f}"),
        Row(f"whole comparison of {methods} methods, ViT-Ti/16 at 224 on this CPU (÷ its plain forward of "
            f"{ms(tiny_plain)}: {tiny_s / tiny_plain:.1f}; measured, not a target)", f"{tiny_s:.2f} s"),
        Row(f"&nbsp;&nbsp;its curves alone cannot take less on this CPU: {flops / 1e9:.0f} GFLOP of matrix products "
            f"at this CPU's peak rate ({peak / 1e9:.0f} GFLOP/s, one 2048² product)", f"≥ {flops / peak:.2f} s"),
    ]


def curve_flops(cfg, lengths: list[int]) -> float:
    """Floating-point operations of the matrix products that any exact implementation must still run when
    sequences of these token counts (prefix included) each go through a plain-MLP ViT: a lower bound on the work
    of the curves, whatever the batching or packing. Per token and block, QKV 3D², projection D² and MLP
    2·D·mlp_dim multiply-adds; per sequence and block, Q·Kᵀ and A·V, 2·L²·D (each sequence by itself). Not counted:
    the first block's QKV (a function of the embeddings alone, which every sequence shares, so computable once per
    photo); in the last block of a class-token model, everything but K and V of the tokens the head never reads
    (only the class token's output is read); LayerNorm, GELU, softmax, the maps' own passes."""
    D, hidden, blocks = cfg.embed_dim, cfg.mlp_dim, cfg.depth
    qkv, rest = 3 * D * D, D * D + 2 * D * hidden           # per token and block: QKV; projection and MLP
    macs = 0
    for L in lengths:
        attention = 2 * L * L * D
        macs += L * rest + attention                                       # the first block, QKV shared
        macs += (blocks - 2) * (L * (qkv + rest) + attention)              # the blocks between
        if cfg.readout == "cls":                                     # the last: one query, K and V of all
            macs += (L - 1) * 2 * D * D + (qkv + rest) + 2 * L * D
        else:
            macs += L * (qkv + rest) + attention
    return 2.0 * macs


def matmul_rate(size: int = 2048, rounds: int = 3) -> float:
    """This CPU's float32 matrix-product rate in FLOP/s: the best of ``rounds`` size × size products, about what
    its BLAS reaches at best (smaller products, like a ViT-Ti's, run slower)."""
    a = torch.randn(size, size)
    return 2.0 * size ** 3 / min(interleaved({"product": lambda: a @ a}, rounds)["product"])


# ---- 5. scaling with the input size -------------------------------------------------------------------------

SCALING = (("vit_b_16", 224), ("vit_b_16", 384), ("vit_b_14", 518))   # 518 is not a multiple of 16: ViT-B/14
TARGETS = {"cpu": 1.10, "cuda": 2.0}    # analysis ÷ capture forward, at 224 and 518 (issue 16)


def random_loaded(name: str, size: int, device: torch.device):
    torch.manual_seed(0)
    cfg = vit.variant(name, img_size=size)
    model = vit.VisionTransformer(cfg).eval().to(device)
    return vit.LoadedModel(model=model, preprocess=vit.Preprocess.for_crop(size), labels=vit.imagenet_labels(),
                           name=name, source=name, config=cfg, format="own")


def analysis_timings(loaded, image: Image.Image, rounds: int, device: torch.device) -> dict[str, float]:
    """Median seconds of the plain forward, the capture forward (``forward_with_attention`` with token norms) and
    the analysis without rendering (``viz.analysis.analyze``: crop, forward, post-processing, to the host)."""
    from viz.analysis import analyze
    from viz.analysis.serve import ATTENTION_DTYPE

    model = loaded.model
    x = loaded.preprocess(image).to(device)

    @torch.inference_mode()
    def plain():
        model(x)

    @torch.inference_mode()
    def capture():
        model.forward_with_attention(x, return_token_norms=True)

    contenders = {"plain": plain, "capture": capture,
                  "analysis": lambda: analyze(loaded, image, ATTENTION_DTYPE, on_demand=True)}
    t = interleaved({k: synchronized(fn, device) for k, fn in contenders.items()}, rounds)
    return {k: median(v) for k, v in t.items()}


def scaling(rounds: int) -> tuple[list[list[str]], list[Row]]:
    """The scaling table on the CPU, and the analysis ÷ capture-forward targets at 224 and 518."""
    from viz.analysis import analyze
    from viz.analysis.serve import ATTENTION_DTYPE
    from viz.records import cached_bytes

    cpu = torch.device("cpu")
    image = Image.fromarray(data.chelsea())
    out, targets = [], []
    for name, size in SCALING:
        loaded = random_loaded(name, size, cpu)
        t = analysis_timings(loaded, image, rounds, cpu)
        delta, a = peak_rss_delta_mb(lambda m=loaded: analyze(m, image, ATTENTION_DTYPE, on_demand=True))
        T = a.num_prefix + a.grid[0] * a.grid[1]
        maps = loaded.config.depth * loaded.config.num_heads * T * T
        ratio = t["analysis"] / t["capture"]
        out.append([f"{name} @ {size}", f"{a.grid[0]}×{a.grid[1]} + {a.num_prefix} = {T}", ms(t["plain"]),
                    ms(t["capture"]), ms(t["analysis"]), f"{ratio:.2f}", f"{maps * 4 / MB:.0f} MB",
                    f"{cached_bytes(a) / MB:.1f} MB", f"{delta:.0f} MB"])
        if size in (224, 518):
            targets.append(Row(f"**analysis ÷ capture forward**, {name} @ {size}, CPU", f"{ratio:.2f}",
                               f"≤ {TARGETS['cpu']:.2f}", ratio <= TARGETS["cpu"]))
        del loaded, a
        gc.collect()
    return out, targets


def gpu_rows(rounds: int, device: torch.device) -> list[Row]:
    """On a CUDA GPU: capture forward, analysis without rendering and their ratio at 224 and 518 (issue 16's
    target: ≤ 2), and the same analysis with the forward in bfloat16. Printed only when CUDA is present."""
    from viz.analysis import analyze
    from viz.analysis.serve import ATTENTION_DTYPE

    image = Image.fromarray(data.chelsea())
    rows = []
    for name, size in (SCALING[0], SCALING[-1]):
        loaded = random_loaded(name, size, device)
        t = analysis_timings(loaded, image, rounds, device)
        half = interleaved({"bf16": synchronized(lambda m=loaded: analyze(m, image, ATTENTION_DTYPE, torch.bfloat16,
                                                                          on_demand=True), device)}, rounds)
        ratio = t["analysis"] / t["capture"]
        rows += [Row(f"{name} @ {size}: plain forward / capture forward / analysis (no rendering) / analysis with a "
                     f"bfloat16 forward", " / ".join(ms(v) for v in (t["plain"], t["capture"], t["analysis"],
                                                                      median(half["bf16"])))),
                 Row(f"**analysis ÷ capture forward**, {name} @ {size}, {device.type}", f"{ratio:.2f}",
                     f"≤ {TARGETS['cuda']:.2f}", ratio <= TARGETS["cuda"])]
        del loaded
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return rows


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n")[0])
    p.add_argument("--weights", help="checkpoint to benchmark instead of a randomly initialised ViT-B/16")
    p.add_argument("--rounds", type=int, default=7, help="timed rounds per measurement (median reported)")
    p.add_argument("--today-rounds", type=int, default=3, help="timed rounds of today's (slow) pipeline")
    p.add_argument("--no-app", action="store_true", help="skip the app process (peak RSS, API round trip)")
    p.add_argument("--no-scaling", action="store_true", help="skip the 224/384/518 scaling table")
    p.add_argument("--no-gpu", action="store_true", help="skip the GPU rows (printed only when CUDA is present)")
    p.add_argument("--no-highres", action="store_true", help="skip the DINOv2 ViT-S/14 rows at 1022 (bench.highres)")
    p.add_argument("--only-highres", action="store_true", help="only the DINOv2 ViT-S/14 rows at 1022")
    p.add_argument("--no-concepts", action="store_true", help="skip the SAE rows (bench.concepts)")
    return p.parse_args(argv)


def highres_table() -> str:
    """bench.highres in a child process of its own (its peak RSS is then the analysis', not this run's)."""
    import json
    import subprocess

    from bench.highres import rows

    env = {**os.environ, **MALLOC_AS_THE_SERVER}
    result = subprocess.run([sys.executable, "-m", "bench.highres", "--json"], capture_output=True, text=True,
                            check=True, cwd=Path(__file__).resolve().parent.parent, env=env)
    return table(rows(json.loads(result.stdout.strip().splitlines()[-1])))


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.only_highres:
        print(f"# python -m bench.run {' '.join(sys.argv[1:])}".rstrip())
        print(f"Machine: {machine()}\n")
        print(highres_table())
        return
    os.environ.setdefault("VIT_OFFLINE", "1")
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    from vit_explorer import state  # the page: the benchmark times exactly what /analyze and the sliders run
    from vit_explorer.layout import build_app
    from vit_explorer.server import return_freed_memory_to_the_os
    return_freed_memory_to_the_os()  # malloc tuned as the server tunes it, so re-renders cost what they cost there

    print(f"# python -m bench.run {' '.join(sys.argv[1:])}".rstrip())
    print(f"Machine: {machine()}\n")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        weights = args.weights or str(random_vit_checkpoint(tmp / "vit_b_16_random.pt"))
        photos = write_photos(tmp)
        rows, result = speed(weights, photos[0], args.rounds, args.today_rounds)
        rows += rerender(PageEvents(build_app(weights)), result["session"], result["analysis"], max(args.rounds, 20))
        rows += cache_rows(result["analysis"])
        loaded = state.MODELS.get(weights).loaded
        rows += explain_rows(loaded, photos[0], args.rounds)
        rows += trust_rows(loaded, photos[0], max(3, args.rounds // 2))
        rows += thorough_rows(loaded, loaded.preprocess(open_image(photos[0])), 2)
        from bench.inside import inside_rows   # the inside views (bench/inside.py): cat, patched from the coffee
        rows += inside_rows(loaded, photos[0], photos[2], max(3, args.rounds // 2))
        from bench.rotary import rotary_rows     # a rotary family (bench/rotary.py): DINOv3 ViT-S/16 at 224 and 512
        rows += rotary_rows(args.rounds)
        from bench.architectures import ENTRIES, entry_rows   # every other architecture against its library's model
        for other in ENTRIES:
            if other.name != SERVED:
                rows += entry_rows(other, max(3, args.rounds // 2))
        if not args.no_concepts:
            from bench.concepts import concepts_rows   # SAEs: caching and training (bench/concepts.py)
            rows += concepts_rows(max(2, args.rounds // 2))
        from bench.loading import load_rows    # vit.load with and without its check against timm (bench/loading.py)
        rows += load_rows(max(3, args.rounds // 2))
        if not args.no_app:
            from viz.records import cached_bytes
            fill = cropped_photos(photos[0], state.ANALYSES_MEMORY // cached_bytes(result["analysis"]) + 4, tmp)
            (tmp / "twins").mkdir()
            twins = [cropped_photos(photo, 1, tmp / "twins")[0] for photo in photos]
            rows += app_rows(weights, photos, twins, fill, tmp / "app.log")
        print(f"Model: {result['analysis'].model_name}, photo: {photos[0].name} "
              f"({Image.open(photos[0]).size[0]}×{Image.open(photos[0]).size[1]}), batch 1; "
              f"medians of {args.rounds} interleaved rounds (today's pipeline: {args.today_rounds}).\n")
        print(table(rows))
    if not args.no_scaling:
        print("\nScaling with the input size (random init; analysis = `viz.analysis.analyze`, the model call of a "
              "new photo without rendering, float16 cache; peak RSS rise = during one analysis, after malloc_trim):\n")
        rows, targets = scaling(max(3, args.rounds // 2))
        print(table(rows, header=("model @ input", "grid + prefix = tokens T", "plain forward", "forward with capture",
                                  "analysis", "analysis ÷ capture", "attention, float32 (L·H·T²)",
                                  "cached per photo", "peak RSS rise")))
        print()
        print(table(targets))
    if not args.no_highres:
        print("\nHigh resolution (bench.highres: a random DINOv2 ViT-S/14 at 1022×1022 as the page analyses it, in a "
              "process of its own):\n")
        print(highres_table())
    if torch.cuda.is_available() and not args.no_gpu:
        device = torch.device("cuda")
        print(f"\nOn the GPU ({torch.cuda.get_device_name(device)}), batch 1, random init, medians of {args.rounds} "
              f"interleaved rounds, each ended by torch.cuda.synchronize():\n")
        print(table(gpu_rows(args.rounds, device)))


if __name__ == "__main__":
    main()
