"""Starting the server: the command line, where the models run, the memory tuning of a long-running process, the
start-up messages (no model, no Chinese font), and Gradio's launch with the queue and the limits set.

    python app.py [--weights PATH | --model NAME] [--host 127.0.0.1] [--port 7860] [--share] [--public]
                  [--device auto] [--max-tokens N] [--max-memory SIZE] [--no-verify] [--sae DIR ...]

``main(argv)`` is that command (``app.py`` calls it; an installed package can name it as its console command).
"""
from __future__ import annotations

import argparse
import ctypes
import os
import sys
from pathlib import Path

import gradio as gr

import vit
from vit.command import program
from vit.device import pick_device
from vit.image_file import MAX_BYTES
from viz.analysis.cost import LOCAL_MAX_TOKENS
from viz.concepts.published import sae_folders
from viz.i18n.fonts import missing_font_message
from viz.i18n import LANGUAGES, t

from . import fair, limits, sessions, state
from .assets import CSS, HEAD
from .layout import build_app
from .site import MIDDLEWARE
from .texts import I18N

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=program("vit_explorer", "app.py"),
                                description="ViT Attention Explorer: a Gradio app to explore what a ViT attends to.")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--weights", help="checkpoint file or Hugging Face folder to start with")
    which.add_argument("--model", default="default",
                       help="known model name, file in weights/ or Hugging Face Hub name such as facebook/dinov2-small "
                            "(default: torchvision's ViT-B/16)")
    p.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                   help="address to serve on (default 127.0.0.1; 0.0.0.0 serves the network)")
    p.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", 7860)),
                   help="port to serve on (default 7860)")
    p.add_argument("--share", action="store_true", help="also serve through a temporary public gradio.live link")
    p.add_argument("--public", action="store_true",
                   help="serve as a public server whatever the host (behind a reverse proxy on 127.0.0.1): only the "
                        "listed models, no typed paths (--host 0.0.0.0 and --share are public anyway)")
    p.add_argument("--device", default="auto", metavar="{auto,cpu,cuda,mps}",
                   help="where the models run (default auto: CUDA when available, else the CPU; also cuda:N)")
    p.add_argument("--max-tokens", type=tokens_arg, metavar="N",
                   help=f"the most tokens one analysis may have: the input size control goes up to it (default "
                        f"{LOCAL_MAX_TOKENS:,} on a server for this machine alone; on one others can reach, as many "
                        f"as keep one analysis within a quarter of the analyses' memory)")
    p.add_argument("--max-memory", type=memory_arg, metavar="SIZE",
                   help=f"the memory the jobs running at once may need at their peaks, above what the server holds at "
                        f"rest, such as 6G or 512M (default {limits.PUBLIC_MAX_MEMORY / 2**30:.0f}G on a server others "
                        f"can reach, three quarters of this machine's memory on one for it alone): a job that would "
                        f"need more is refused with a sentence saying what would fit")
    p.add_argument("--no-verify", action="store_true",
                   help="open models without checking them against their own library's model of the same file (the "
                        "model line then says unverified; default: checked, a difference beyond float32 tolerance "
                        "refused)")
    p.add_argument("--sae", action="append", default=[], metavar="DIR",
                   help="sparse autoencoders the Concepts tab offers (repeat for more): an SAE's folder (python -m "
                        "viz.concepts train's --out, sae-lens' or ViT-Prisma's saved SAE) or a folder of such folders; "
                        "each model is offered those made for it. A public server opens only these")
    return p.parse_args(argv)


def memory_arg(text: str) -> int:
    try:
        return limits.memory_arg(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def tokens_arg(text: str) -> int:
    value = int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"expected at least 2 tokens (a prefix token and a patch) but got {text}")
    return value


def main(argv: list[str] | None = None) -> None:
    """``python app.py ...``: pick the device, load the model (or say how to start with one on this machine),
    serve until stopped."""
    args = parse_args(argv)
    try:
        state.SETTINGS.device = pick_device(args.device)
    except ValueError as err:
        sys.exit(f"Cannot start: {err}")
    source = args.weights or args.model
    # the size control's range depends on it (launch sets it again for a server started from Python)
    state.SETTINGS.any_model = only_this_machine(args.host, args.share) and not args.public
    state.SETTINGS.max_tokens = args.max_tokens
    limits.LIMITS.public = not state.SETTINGS.any_model
    try:
        limits.apply_environment()
    except ValueError as err:
        sys.exit(f"Cannot start: {err}")
    if args.max_memory:
        limits.LIMITS.max_memory = args.max_memory
    state.SETTINGS.verify = not args.no_verify
    try:
        state.SETTINGS.saes = [str(folder.resolve()) for given in args.sae for folder in sae_folders(given)]
    except ValueError as err:
        sys.exit(f"Cannot start: --sae {err}")
    try:
        demo = build_app(source)
    except (ValueError, OSError) as err:
        sys.exit(startup_failure(source, err))
    for sentence in state.MODELS.get(str(source).strip()).loaded.assumptions:  # loaded by build_app, cached
        print(f"assumed ({source}): {sentence}", file=sys.stderr)
    launch(demo, args.host, args.port, args.share, public=args.public)


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


def launch(demo: gr.Blocks, host: str, port: int, share: bool = False, public: bool = False, **kwargs):
    """Serve with the queue set up: model work one at a time, re-renders alongside, every kind of work's queue
    bounded for all visitors and per visitor (``vit_explorer.fair``); sessions bounded in bytes, the ones with work
    kept first, uploads deleted with them (``vit_explorer.sessions``); request bodies, uploads and instant events
    bounded before they are read (``vit_explorer.intake``); every event through the queue (no direct REST calls that
    would skip its limits); the page named in link previews and its documents served (``vit_explorer.site``). A
    public server (``public``, or one others can reach) loads only the models in its list, shows no Python error text
    and keeps every limit of ``vit_explorer.limits``. Says once, at start, where the page is (and how to share it:
    ``--share``, not Gradio's own advice) and when Chinese pictures will come with English labels (no CJK font on this
    machine)."""
    return_freed_memory_to_the_os()
    if (message := missing_font_message()) is not None:
        print(message, file=sys.stderr)
    state.SETTINGS.any_model = only_this_machine(host, share) and not public
    limits.LIMITS.public = not state.SETTINGS.any_model
    demo.queue(default_concurrency_limit=1, api_open=False)
    fair.install(demo)
    quiet, wait = kwargs.pop("quiet", False), not kwargs.pop("prevent_thread_lock", False)
    result = demo.launch(server_name=host, server_port=port, share=share, max_file_size=MAX_BYTES,
                         show_error=state.SETTINGS.any_model, css=CSS, head=HEAD, i18n=I18N, quiet=True,
                         prevent_thread_lock=True, app_kwargs={"middleware": MIDDLEWARE}, **kwargs)
    sessions.install(demo)
    if not quiet:
        print(running_lines(demo.local_url, demo.share_url, share), flush=True)
    if wait:
        demo.block_thread()
    return result


def running_lines(local_url: str, share_url: str | None, share: bool = False) -> str:
    """What ``python app.py`` prints once it serves: the page's address, and the public link (or, unless one was asked
    for and Gradio said why there is none, how to get one with this command's ``--share``), in English and
    Chinese."""
    lines = [t("message.running", lang, url=local_url) for lang in LANGUAGES]
    if share_url:
        lines += [t("message.shared", lang, url=share_url) for lang in LANGUAGES]
    elif not share:
        lines += [t("message.share_hint", lang, command=program("vit_explorer", "app.py")) for lang in LANGUAGES]
    return "\n".join(lines)
