"""What the server adds around Gradio's page: the page's own name and description in its HTML (link previews read
the first ``og:title``, which Gradio's page template sets to "Gradio"), the documents the page's texts link to,
``docs/NAME.md``, served as text from the project's docs (a clone's, or an installed copy's share/ folder), and the
example photos' thumbnails, ``examples/NAME``, so that the page's config names them without saying where the server
keeps them (``examples_by_name``).

Two ASGI middlewares (``app_kwargs={"middleware": MIDDLEWARE}`` for ``gr.Blocks.launch``): first the intake
(``vit_explorer.intake``: request bodies, uploads and instant events bounded), then this one: only the page itself,
the listed documents and the example photos pass through it; everything else goes to Gradio untouched.
"""
from __future__ import annotations

import html
import sys
from pathlib import Path

from starlette.middleware import Middleware
from starlette.responses import FileResponse, PlainTextResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from viz.i18n import t

from .intake import INTAKE
from .state import example_photos

DOCS = ("explain", "inside", "maps", "trust", "app", "tutorial")   # the documents the page links to (docs/NAME.md)
DOCS_DIR = next((d for d in (Path(__file__).resolve().parent.parent / "docs",                            # a clone
                             Path(sys.prefix) / "share" / "vit-attention-explorer" / "docs")              # pip install
                 if d.is_dir()), None)
GRADIO_META = ('<meta property="og:title" content="Gradio" />', '<meta name="twitter:title" content="Gradio" />',
               '<meta property="og:description" content="Click to try out the app!" />',
               '<meta name="twitter:description" content="Click to try out the app!" />')


def preview_meta() -> tuple[str, ...]:
    """The page's link-preview tags, in the order of Gradio's (``GRADIO_META``): its name and what it does."""
    title, intro = (html.escape(t(key, "en"), quote=True) for key in ("page.title", "page.intro"))
    return (f'<meta property="og:title" content="{title}" />', f'<meta name="twitter:title" content="{title}" />',
            f'<meta property="og:description" content="{intro}" />',
            f'<meta name="twitter:description" content="{intro}" />')


def with_preview(page: str) -> str:
    """Gradio's page with its link-preview tags naming this app (and a <title> before any script runs)."""
    for gradio, ours in zip(GRADIO_META, preview_meta()):
        page = page.replace(gradio, ours, 1)
    return page.replace("<head>", f"<head>\n\t\t<title>{html.escape(t('page.title', 'en'))}</title>", 1)


def document(name: str) -> Response:
    """docs/NAME.md as UTF-8 text, for a name in ``DOCS``; 404 for any other (nothing is read from a visitor's
    path)."""
    if name not in DOCS or DOCS_DIR is None or not (DOCS_DIR / f"{name}.md").is_file():
        return PlainTextResponse("Not found.", status_code=404)
    return PlainTextResponse((DOCS_DIR / f"{name}.md").read_text(encoding="utf-8"))


EXAMPLES_ROUTE = "/examples/"


def examples_by_name(examples, photos: list[str]) -> None:
    """The example photos in the page's config (a ``gr.Examples``'s samples) by their names, their thumbnails served
    from ``examples/NAME``: Gradio lists each with its copy's path in the server's upload folder. A click on one still
    sends the photo itself (Gradio looks the sample up by its index)."""
    names = {Path(p).name for p in photos}
    for sample in examples.dataset.samples:
        for value in sample:
            if isinstance(value, dict) and Path(str(value.get("path", ""))).name in names:
                name = Path(value["path"]).name
                value.update(path=name, url=EXAMPLES_ROUTE + name)


def example_photo(name: str, photos: list[str]) -> Response:
    """An example photo by its name, for a name among ``photos``; 404 for any other (nothing is read from a visitor's
    path)."""
    found = {Path(p).name: p for p in photos}
    if name not in found:
        return PlainTextResponse("Not found.", status_code=404)
    return FileResponse(found[name])


class SiteMiddleware:
    """The page's HTML with its own name (``with_preview``), ``GET docs/NAME.md`` (``document``) and ``GET
    examples/NAME`` (``example_photo``)."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        root = scope.get("root_path", "").rstrip("/")
        local = path[len(root):] if root and path.startswith(root) else path
        if local.startswith("/docs/") and local.endswith(".md") and scope.get("method") == "GET":
            await document(local[len("/docs/"):-len(".md")])(scope, receive, send)
            return
        if local.startswith(EXAMPLES_ROUTE) and scope.get("method") == "GET":
            await example_photo(local[len(EXAMPLES_ROUTE):], example_photos())(scope, receive, send)
            return
        if local not in ("/", "") or scope.get("method") != "GET":
            await self.app(scope, receive, send)
            return
        start, body = {}, []

        async def keep(message) -> None:                  # hold the page until it is whole, then send it renamed
            if message["type"] == "http.response.start":
                start.update(message)
                return
            body.append(message.get("body", b""))
            if message.get("more_body"):
                return
            page = b"".join(body)
            headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
            if any(k.lower() == b"content-type" and b"text/html" in v for k, v in headers):
                page = with_preview(page.decode("utf-8")).encode("utf-8")
            await send({**start, "headers": [*headers, (b"content-length", str(len(page)).encode())]})
            await send({"type": "http.response.body", "body": page})

        await self.app(scope, receive, keep)


MIDDLEWARE = [INTAKE, Middleware(SiteMiddleware)]
