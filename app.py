"""ViT Attention Explorer: drop a photo, see the top-5 classes and what the Vision Transformer looked at.

    python app.py [--weights PATH | --model NAME] [--host 127.0.0.1] [--port 7860] [--share] [--device auto]

This file only wires Gradio components to functions: the model, checkpoints and upload decoding live in
vit/, the analysis, maps and rendering in viz/ (``viz.explorer`` is what each tab shows). Handlers first,
then the layout, then the events. The model runs once per (photo, model), one run at a time (event group
"model"), and the analysis goes into a cache shared by every session and bounded in bytes; every slider
move or click re-renders from it (group "render", several at once), so the page stays responsive while
someone else's photo is analysed.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import gradio as gr
import torch
from gradio import processing_utils
from PIL import Image

import vit
from vit.cache import LRUCache
from vit.device import pick_device
from vit.image_file import MAX_BYTES, ImageFileError
from viz import explorer
from viz.explorer import Controls, Session
from viz.i18n import LANGUAGES, t
from viz.result import Analysis

EXAMPLES_DIR = Path(__file__).resolve().parent / "examples"
MAX_SESSIONS = 100           # browser sessions remembered (~100 KB each: Gradio copies the page config per session)
ANALYSES_MEMORY = 200 * 2**20  # bytes of analyses kept for re-rendering, shared by all sessions (ViT-B/16: 14 MB each)
MODELS_IN_MEMORY = 2         # checkpoints kept loaded at once
RENDER_CONCURRENCY = 4       # re-renders running at once (milliseconds of numpy each)
DEVICE = torch.device("cpu")  # where the models run (--device, set before the first model loads)
MODELS = LRUCache(lambda source: explorer.serve(vit.load(source), DEVICE), MODELS_IN_MEMORY)
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
# Whether the Model box (and /analyze's ``model``) may name any path or known model, or only those listed. A
# server reachable by others must not let them read files by path or download any model: launch() decides.
ANY_MODEL = True


class PhotoInput(gr.Image):
    """gr.Image that hands the handler the uploaded file unopened.

    gr.Image opens every upload with Pillow and may convert and re-save it before the handler runs, so a
    broken file or a decompression bomb would fail (or be decoded) there, without a message of ours.
    Decoding is ``vit.image_file.open_image``'s job; this only passes the file's path on.
    """
    is_template = True  # shown by the browser's ordinary Image component

    def preprocess(self, payload):
        if payload is None:
            return None
        if payload.url and payload.url.startswith("data:"):  # pasted images may arrive inline
            return processing_utils.save_base64_to_cache(payload.url, self.GRADIO_CACHE)  # bytes saved, not decoded
        return payload.path


# ---- handlers ---------------------------------------------------------------------------------------------

def analyze_key(key: tuple[str, str]) -> Analysis:
    """(photo file, model source) -> its analysis: the one model call of a photo."""
    photo, source = key
    return explorer.analyze_photo(photo, MODELS.get(source))


# (photo file, model source) -> Analysis, shared by every session. An analysis dropped to make room is computed
# again when its session re-renders (one forward pass), so memory stays bounded however many people are on the page.
ANALYSES = LRUCache(analyze_key, ANALYSES_MEMORY, weigh=explorer.cached_bytes)


def _served(source: str) -> explorer.ServedModel:
    source = str(source).strip()
    if not ANY_MODEL and source not in model_choices():
        raise gr.Error("This server only runs the models in its Model list. Typed paths and other model names "
                       "load when the app runs on your own machine (python app.py).", print_exception=False)
    try:
        return MODELS.get(source)
    except (ValueError, OSError) as err:  # vit.load: bad checkpoint (ValueError), nothing found (FileNotFoundError)
        raise gr.Error(f"Could not load the model {source!r}. {err}", print_exception=False) from None


def _controls(a: Analysis, fusion, discard_ratio, start_layer, opacity, mask_artifacts, layer, head, mean_of_heads,
              dino_mask, through_all_layers) -> Controls:
    """The ten control values, in the order of the page's ``controls`` list, made valid for the analysis's model."""
    c = Controls(fusion=fusion, discard_ratio=float(discard_ratio), start_layer=int(start_layer),
                 opacity=float(opacity), mask_artifacts=bool(mask_artifacts), layer=int(layer),
                 head=None if mean_of_heads else int(head), dino_mask=bool(dino_mask), rolled=bool(through_all_layers))
    return explorer.clamp_controls(c, a.depth, a.heads)


def _analysis(key: tuple[str, str]) -> Analysis:
    """The cached analysis of (photo file, model source), computed if it is not (or no longer) cached."""
    try:
        return ANALYSES.get(key)
    except ImageFileError as err:
        raise gr.Error(str(err), print_exception=False) from None
    except (ValueError, OSError) as err:  # the model could not be loaded again, the photo file is gone
        raise gr.Error(f"This photo could not be analysed again ({err}). Upload it again.",
                       print_exception=False) from None


def _session_analysis(session: Session | None) -> Analysis | None:
    if session is None:
        gr.Warning("There is no analysed photo in this session yet (or the server forgot this session): "
                   "upload a photo or press Analyze.")
        return None
    return _analysis(session.key)


@torch.inference_mode()
def analyze(photo, model, fusion="mean", discard_ratio=0.9, start_layer=0, opacity=0.6, mask_artifacts=False,
            layer=-1, head=0, mean_of_heads=True, dino_mask=False, through_all_layers=False,
            session: Session | None = None):
    """Classify the photo and render every panel. The only required input is the photo file.

    Returns the top-5 classes, a summary, and the rollout, attention, all-heads, patch-query, position
    embedding, attention distance, token norm, architecture and filter panels. Layers and heads are 0-based;
    out-of-range values are clamped to the model.
    """
    if not photo:  # the photo was cleared: so are the session and the 14 outputs
        return (None,) * 15
    served = _served(model)
    key = (str(photo), str(model).strip())
    if session is None or session.key != key:
        session = Session(key)
    a = _analysis(key)
    c = _controls(a, fusion, discard_ratio, start_layer, opacity, mask_artifacts, layer, head, mean_of_heads,
                  dino_mask, through_all_layers)
    session, heads_grid = explorer.heads_view(session, a, c)
    attends_to, attended_by = explorer.query_views(session, a, c)
    norm_maps, norm_curves = explorer.norms_views(a)
    return (session, explorer.top_classes(a), explorer.summary(a), explorer.rollout_view(a, c),
            explorer.attention_view(a, c), heads_grid, explorer.query_photo(session, a), attends_to, attended_by,
            served.position, explorer.distance_view(a), norm_maps, norm_curves, explorer.architecture(served, a),
            served.filters)


@torch.inference_mode()
def change_model(model, head):
    """Load the picked model (or refuse it: gr.Error, then ``keep_model`` puts the picker back) and fit the
    sliders to its depth and heads."""
    served = _served(model)
    L, H = served.depth, served.heads
    return (model, gr.Dropdown(choices=model_choices(model), value=model),
            gr.Slider(maximum=L - 1, value=L - 1), gr.Slider(maximum=H - 1, value=min(int(head), H - 1)),
            gr.Slider(maximum=L - 1, value=0))


def keep_model(current):
    return gr.Dropdown(choices=model_choices(current), value=current)


def rerender_rollout(session, *controls):
    if (a := _session_analysis(session)) is None:
        return gr.skip()
    return explorer.rollout_view(a, _controls(a, *controls))


def rerender_layer(session, *controls):
    """Layer or head changed: the attention map, the framed thumbnail and the patch query follow."""
    if (a := _session_analysis(session)) is None:
        return (gr.skip(),) * 5
    c = _controls(a, *controls)
    session, heads_grid = explorer.heads_view(session, a, c)
    return (session, explorer.attention_view(a, c), heads_grid) + explorer.query_views(session, a, c)


def pick_head(evt: gr.SelectData, session, *controls):
    """A click on the all-heads grid selects that layer and head and opens the Attention tab.

    (Gradio passes the click as ``evt``; it must come before ``*controls`` to be recognised.)"""
    if (a := _session_analysis(session)) is None or (cell := explorer.head_at(session, *evt.index)) is None:
        return (gr.skip(),) * 9
    layer, head = cell
    c = replace(_controls(a, *controls), layer=layer, head=head)
    session, heads_grid = explorer.heads_view(session, a, c)
    return (session, layer, head, False, explorer.attention_view(a, c), heads_grid,
            *explorer.query_views(session, a, c), gr.Tabs(selected="attention"))


def pick_patch(evt: gr.SelectData, session, *controls):
    """A click on the photo of the Patch query tab queries the patch under it."""
    if (a := _session_analysis(session)) is None:
        return (gr.skip(),) * 4
    session = explorer.select_patch(session, a, *evt.index)
    return (session, explorer.query_photo(session, a)) + explorer.query_views(session, a, _controls(a, *controls))


def rerender_query(session, *controls):
    if (a := _session_analysis(session)) is None:
        return (gr.skip(),) * 2
    return explorer.query_views(session, a, _controls(a, *controls))


# ---- layout -----------------------------------------------------------------------------------------------

_BASE_CHOICES: list[str] = []


def model_choices(extra: str | None = None) -> list[str]:
    """The models on offer: the one the server started with, the files in weights/, and ``extra`` (a path)."""
    choices = list(dict.fromkeys(_BASE_CHOICES + vit.list_local_checkpoints()))
    return choices + [extra] if extra and extra not in choices else choices


def example_photos() -> list[str]:
    return sorted(str(p) for p in EXAMPLES_DIR.glob("*") if p.suffix.lower() in (".jpg", ".jpeg", ".png", ".webp"))


# Overlays are rendered at the model's 224 pixels (re-rendering stays at milliseconds) and enlarged by the browser.
# Clickable images keep their natural size: Gradio maps a click to image pixels only up to a scale of 1.
CSS = ".enlarge img { width: 100%; height: 100%; object-fit: contain; }"


class Picture(gr.Image):
    """Output gr.Image whose saved pictures are never rewritten in place.

    Gradio saves an output picture under a hash of its bytes and rewrites that file (truncate, then write)
    whenever the same picture is produced again: the model-only panels on every analysis, every panel when two
    people analyse the same example photo. Someone downloading it at that moment got a truncated file (seen
    with 16 simultaneous API clients). Here a picture already saved is reused, and a new one appears at once,
    written under a temporary name and renamed.
    """
    is_template = True  # shown by the browser's ordinary Image component

    def postprocess(self, value):
        if isinstance(value, Image.Image):
            value = _saved_once(value, self.GRADIO_CACHE, self.format)
        return super().postprocess(value)


def _saved_once(image: Image.Image, cache_dir: str, fmt: str) -> str:
    """Path of the picture in Gradio's cache, where Gradio itself would put it; written atomically, once."""
    data = processing_utils.encode_pil_to_bytes(image, fmt)
    folder = Path(cache_dir) / processing_utils.hash_bytes(data)
    path = folder / f"image.{fmt}"
    if not path.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, suffix=".part", delete=False) as part:
            part.write(data)
        os.replace(part.name, path)
    return str(path)


def _picture(label: str, height: int = 380, enlarge: bool = True, **kw) -> gr.Image:
    """An output image: JPEG keeps encoding at a few ms (PNG takes tens of ms for a heads grid)."""
    return Picture(label=label, interactive=False, format="jpeg", buttons=["download", "fullscreen"], height=height,
                    elem_classes=["enlarge"] if enlarge else None, **kw)


def build_app(default_model: str) -> gr.Blocks:
    """The Blocks app; ``default_model`` (a source for vit.load) is loaded now to size the sliders."""
    served = _served_at_startup(default_model)
    _BASE_CHOICES[:] = [default_model]
    L, H = served.depth, served.heads
    with gr.Blocks(title="ViT Attention Explorer", delete_cache=(600, 3600), analytics_enabled=False) as demo:
        session = gr.State(None)
        current_model = gr.State(default_model)
        gr.Markdown("# ViT Attention Explorer\nDrop a photo: the Vision Transformer classifies it once, then "
                    "every tab shows what it looked at. Sliders and clicks re-render instantly.")
        with gr.Row():
            with gr.Column(scale=2):
                photo = PhotoInput(label="Photo", type="filepath", image_mode=None, elem_id="photo-input",
                                   sources=["upload", "webcam", "clipboard"], height=320)
                photos = example_photos()
                if photos:
                    gr.Examples(photos, inputs=photo, cache_examples=False, api_visibility="private",
                                label="Example photos")
            with gr.Column(scale=3):
                top5 = gr.Label(num_top_classes=5, label="Top-5 classes", elem_id="top5")
                summary = gr.Markdown(label="Summary", elem_id="summary")
                with gr.Row(equal_height=True):
                    model = gr.Dropdown(model_choices(), value=default_model, allow_custom_value=True, scale=4,
                                        label="Model", elem_id="model-picker",
                                        info="a checkpoint in weights/, or type a path and press Enter")
                    rerun = gr.Button("Analyze", variant="primary", scale=1)
        with gr.Tabs() as tabs:
            with gr.Tab("Rollout", id="rollout"):
                with gr.Row():
                    fusion = gr.Radio(["mean", "max", "min"], value="mean", label="Head fusion")
                    discard = gr.Slider(0.0, 0.99, value=0.9, step=0.01, label="Discard ratio",
                                        info="lowest share of each layer's attention set to 0")
                    start_layer = gr.Slider(0, L - 1, value=0, step=1, label="Start layer")
                    opacity = gr.Slider(0.0, 1.0, value=0.6, step=0.05, label="Opacity")
                    mask_artifacts = gr.Checkbox(False, label="Mask high-norm artifact tokens")
                rollout_img = _picture("Attention rollout (CLS)", elem_id="rollout-image")
            with gr.Tab("Attention", id="attention"):
                with gr.Row():
                    layer = gr.Slider(0, L - 1, value=L - 1, step=1, label="Layer", elem_id="layer-slider")
                    head = gr.Slider(0, H - 1, value=0, step=1, label="Head")
                    mean_heads = gr.Checkbox(True, label="Mean of heads")
                    dino_mask = gr.Checkbox(False, label="Outline the patches holding 60% of the attention (DINO)")
                attention_img = _picture("CLS attention", elem_id="attention-image")
            with gr.Tab("All heads", id="heads"):
                gr.Markdown("The CLS attention of every layer (rows) and head (columns). Click a thumbnail to "
                            "open it in the Attention tab.")
                heads_img = _picture("Layers × heads", height=720, enlarge=False, elem_id="heads-image")
            with gr.Tab("Patch query", id="query"):
                gr.Markdown("Click a patch of the photo: where it attends (its attention row) and which patches "
                            "attend to it (its column), in the layer and head picked in the Attention tab.")
                rolled = gr.Checkbox(False, label="Through all layers (rollout) instead of one layer")
                with gr.Row():
                    query_photo = _picture("Click a patch", enlarge=False, elem_id="query-photo")
                    query_out = _picture("Where this patch attends", elem_id="query-out")
                    query_in = _picture("Which patches attend to it", elem_id="query-in")
            with gr.Tab("Position embeddings", id="position"):
                gr.Markdown("Cosine similarity of each patch's learnt position embedding with all others "
                            "(ViT paper, Figure 7 centre): nearby patches, rows and columns are alike.")
                position_img = Picture(label="Position embedding similarity", interactive=False, format="png")
            with gr.Tab("Attention distance", id="distance"):
                gr.Markdown("Mean distance in pixels over which each head attends, by depth (Figure 7 right): "
                            "early layers mix local and global heads, late layers attend globally.")
                distance_img = Picture(label="Mean attention distance", interactive=False, format="png")
            with gr.Tab("Token norms", id="norms"):
                gr.Markdown("The length of every token after each block. A few background patches grow very "
                            "long and soak up attention (Darcet et al. 2023); they are outlined in cyan.")
                norms_img = _picture("Patch token norms per block", height=160)
                norm_curves_img = Picture(label="Token norms by depth", interactive=False, format="png")
            with gr.Tab("Model", id="model"):
                architecture = gr.Markdown(label="Architecture")
                gr.Markdown("Principal components of the patch-embedding filters (Figure 7 left): what the first "
                            "layer looks for in each 16×16 patch.")
                filters_img = Picture(label="Embedding filters", interactive=False, format="png")

        # ---- events ---------------------------------------------------------------------------------------
        controls = [fusion, discard, start_layer, opacity, mask_artifacts, layer, head, mean_heads, dino_mask, rolled]
        analyze_outputs = [session, top5, summary, rollout_img, attention_img, heads_img, query_photo, query_out,
                           query_in, position_img, distance_img, norms_img, norm_curves_img, architecture,
                           filters_img]
        model_work = dict(concurrency_id="model", concurrency_limit=1)
        render = dict(concurrency_id="render", concurrency_limit=RENDER_CONCURRENCY, show_progress="minimal",
                      api_visibility="private", trigger_mode="always_last")
        analyze_inputs = [photo, model, *controls, session]

        gr.on([photo.change, rerun.click], analyze, analyze_inputs, analyze_outputs, api_name="analyze",
              **model_work)
        picked = model.input(change_model, [model, head], [current_model, model, layer, head, start_layer],
                             api_visibility="private", **model_work)
        picked.success(analyze, analyze_inputs, analyze_outputs, api_visibility="private", **model_work)
        picked.failure(keep_model, current_model, model, api_visibility="private")  # a refused checkpoint
        gr.on([c.input for c in (fusion, discard, start_layer, opacity, mask_artifacts)],
              rerender_rollout, [session, *controls], rollout_img, **render)
        gr.on([c.input for c in (layer, head, mean_heads, dino_mask)],
              rerender_layer, [session, *controls], [session, attention_img, heads_img, query_out, query_in], **render)
        gr.on([c.input for c in (rolled, fusion, discard, start_layer, opacity)],
              rerender_query, [session, *controls], [query_out, query_in], **render)
        heads_img.select(pick_head, [session, *controls],
                         [session, layer, head, mean_heads, attention_img, heads_img, query_out, query_in, tabs],
                         **render)
        query_photo.select(pick_patch, [session, *controls], [session, query_photo, query_out, query_in], **render)
    return demo


def _served_at_startup(source: str) -> explorer.ServedModel:
    try:
        return MODELS.get(str(source).strip())
    except (ValueError, OSError) as err:
        sys.exit(startup_failure(source, err))


def startup_failure(source: str, err: Exception) -> str:
    """What ``python app.py`` prints when its model does not load (offline, a wrong path): why, then how to
    start with a checkpoint that is on this machine (``--weights``), in English and Chinese."""
    from vit.checkpoints.load import checkpoints_on_this_machine

    found = checkpoints_on_this_machine()
    lines = []
    for lang in LANGUAGES:
        lines += ["", t("message.cannot_start", lang, model=str(source))]
        if lang == "en":
            lines.append(str(err))
        if found:
            lines.append(t("message.start_with", lang))
            lines += [f"    python app.py --weights {_relative(path)}" for path in found]
        else:
            lines.append(t("message.no_checkpoint_here", lang, url="https://download.pytorch.org/models/"
                           "vit_b_16-c867db91.pth", folder=_relative(vit.weights_dir())))
    return "\n".join(lines[1:])


def _relative(path: Path) -> str:
    """A path as short as a student can type it: relative to the current folder when inside or beside it."""
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return str(path)


def return_freed_memory_to_the_os() -> None:
    """Tune glibc's malloc for a long-running server, as MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=524288 would.

    By default each Gradio worker thread gets its own malloc arena, and the mmap threshold rises to the largest
    buffer freed so far, so the attention maps and images of past analyses stayed resident in the arenas' heaps:
    the server's RSS climbed by ~250 MB over 300 analyses. With two arenas and every buffer of 512 KB or more
    mmapped (the cached maps included: one head-fused map of a 12-block ViT at 224 is 0.9 MB), a dropped
    analysis goes back to the OS at once instead of leaving holes in a heap: over 300 analyses of 60 photos the
    RSS grew by 14 MB after warm-up, against 40 MB with a 4 MB threshold. The price, fresh pages for large
    temporaries, is ~5 ms per re-render. No-op where the C library has no mallopt.
    """
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is not None:
        mallopt(-8, 2)            # M_ARENA_MAX: arenas created from now on are limited, so call it early
        mallopt(-3, 512 * 2**10)  # M_MMAP_THRESHOLD, fixed (no longer raised by large frees)


def only_this_machine(host: str, share: bool) -> bool:
    """Whether a server on ``host`` (with or without a share link) is reachable from this machine alone."""
    return host in LOCAL_HOSTS and not share


def launch(demo: gr.Blocks, host: str, port: int, share: bool = False, **kwargs):
    """Serve with the queue set up: model work one at a time, re-renders alongside; bounded session memory; a
    server others can reach loads only the models in its list."""
    global ANY_MODEL
    return_freed_memory_to_the_os()
    ANY_MODEL = only_this_machine(host, share)
    demo.queue(default_concurrency_limit=1)
    return demo.launch(server_name=host, server_port=port, share=share, state_session_capacity=MAX_SESSIONS,
                       max_file_size=MAX_BYTES, show_error=True, css=CSS, **kwargs)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="ViT Attention Explorer: a Gradio app to explore what a ViT attends to.")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--weights", help="checkpoint file or Hugging Face folder to start with")
    which.add_argument("--model", default="default",
                       help="known model name or file in weights/ (default: torchvision's ViT-B/16)")
    p.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                   help="address to serve on (default 127.0.0.1; 0.0.0.0 serves the network)")
    p.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", 7860)),
                   help="port to serve on (default 7860)")
    p.add_argument("--share", action="store_true", help="also serve through a temporary public gradio.live link")
    p.add_argument("--device", default="auto", metavar="{auto,cpu,cuda,mps}",
                   help="where the models run (default auto: CUDA when available, else the CPU; also cuda:N)")
    return p.parse_args(argv)


if __name__ == "__main__":
    args = parse_args()
    try:
        DEVICE = pick_device(args.device)
    except ValueError as err:
        sys.exit(f"Cannot start: {err}")
    launch(build_app(args.weights or args.model), args.host, args.port, args.share)
