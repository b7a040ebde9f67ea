"""The web chat at ``/chat/``: a page, its JSON and event stream, and the files of its app.

The page is a shell (:func:`chat_page`); ``chat.js`` fills it from the JSON
routes (every text set as text, never as markup), sends each message by a
POST that carries the dashboard's form token and is refused from any other
origin, and follows the answer on a Server-Sent Events stream
(:mod:`.chat_api`). Everything is behind the owner's login like every page
of the dashboard. The app is installable: a manifest, icons, and a service
worker scoped to ``/chat/`` that keeps only the shell's files (script,
style, icons, an offline page), never the page itself (it holds the form
token), an answer or a conversation.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from string import Template

from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from butler.channels.uploads import max_body_bytes
from butler.channels.web import WebChat
from butler.dashboard.chat_api import ChatApi
from butler.dashboard.forms import form_token
from butler.dashboard.render import SECURITY_HEADERS, e
from butler.dashboard.view import View

#: The app's own files under ``/chat/``, and their media types.
FILES = {
    "chat.js": "text/javascript",
    "chat.css": "text/css",
    "sw.js": "text/javascript",
    "offline.html": "text/html; charset=utf-8",
    "icon.svg": "image/svg+xml",
    "icon-192.png": "image/png",
    "icon-512.png": "image/png",
}
FILE_HEADERS = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}
THEME = "#1d4ed8"


def _asset(name: str) -> Path:
    return Path(str(resources.files("butler") / "assets" / "chat" / name))


def manifest(butler: str) -> dict[str, object]:
    """The web app manifest of ``butler``'s chat (each butler's dashboard is its own app)."""
    return {
        "id": "/chat/",
        "name": f"{butler} · butler chat",
        "short_name": butler,
        "description": f"Chat with the butler {butler}",
        "start_url": "/chat/",
        "scope": "/chat/",
        "display": "standalone",
        "background_color": "#f4f5f7",
        "theme_color": THEME,
        "icons": [
            {"src": "/chat/icon-192.png", "sizes": "192x192", "type": "image/png"},
            {"src": "/chat/icon-512.png", "sizes": "512x512", "type": "image/png"},
            {"src": "/chat/icon.svg", "sizes": "any", "type": "image/svg+xml"},
        ],
    }


class ChatPages:
    """The page, the manifest and the app's files of one butler's web chat."""

    def __init__(self, view: View, chat: WebChat) -> None:
        self.view = view
        self.chat = chat

    async def page(self, request: Request) -> Response:
        """The chat's shell: the butler's name, the form token and the limits, for chat.js."""
        settings = self.chat.settings
        text = Template(_asset("chat.html").read_text(encoding="utf-8")).substitute(
            butler=e(self.chat.name),
            token=e(form_token(self.view.owner_token)),
            max_chars=settings.max_message_chars,
            max_files=settings.max_attachments,
            max_file_bytes=settings.max_attachment_bytes,
            accept=e(",".join(settings.attachment_types)),
            banner=await self.view.banner(),
        )
        return HTMLResponse(text, headers=SECURITY_HEADERS)

    async def manifest(self, request: Request) -> Response:
        body = json.dumps(manifest(self.chat.name), indent=1)
        return Response(body, media_type="application/manifest+json", headers=FILE_HEADERS)

    async def file(self, request: Request) -> Response:
        """One of the app's files; nothing else is served from here."""
        name = request.path_params["name"]
        if name not in FILES:
            return Response("not found", 404, headers=FILE_HEADERS)
        headers = dict(FILE_HEADERS)
        if name == "offline.html":
            headers.update(SECURITY_HEADERS)
            headers["Cache-Control"] = "no-cache"
        return FileResponse(_asset(name), media_type=FILES[name], headers=headers)


async def to_the_chat(request: Request) -> Response:
    """``/chat`` is ``/chat/``: the app's scope, where its service worker answers."""
    return RedirectResponse("/chat/", 308)


def chat_routes(view: View) -> list[BaseRoute]:
    """``/chat/`` and everything under it."""
    chat = view.butler.web_chat
    pages = ChatPages(view, chat)
    api = ChatApi(view, chat, max_body_bytes(chat.settings))
    return [
        Route("/chat", to_the_chat, methods=["GET"]),
        Route("/chat/", pages.page, methods=["GET"]),
        Route("/chat/manifest.webmanifest", pages.manifest, methods=["GET"]),
        *api.routes(),
        Route("/chat/{name}", pages.file, methods=["GET"]),
    ]
