"""The web chat's JSON routes and the event stream an answer is followed on.

``POST /chat/api/messages`` takes a message (multipart: ``id``, ``conversation``,
``text``, ``files``) only from this dashboard's own pages: the request's
``Origin`` must be the dashboard's, and it must carry the form token in the
``X-Butler-Form-Token`` header, both checked before a byte of the body is
read; the body is bounded by its ``Content-Length``. A command is answered in
the response; anything else starts its turn, which
``GET /chat/api/turns/<id>/events`` streams as Server-Sent Events: each step
with its number as the event's id, so a browser that reconnects (a phone
waking up) sends ``Last-Event-ID`` and gets what it missed, and the stream
ends with the recorded answer. A turn no longer in hand (a restart) answers
204, which tells the browser to stop and read the conversation instead.

Server-Sent Events rather than the dashboard's WebSocket: the answer flows one
way, a message is a POST that must carry the form token anyway (and files),
and an event stream is plain HTTP: the login cookie and the Host/Origin guard
apply as to any page, and the browser's ``EventSource`` reconnects and resumes
by itself.
"""

from __future__ import annotations

import hmac
import json
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from typing import Any
from urllib.parse import quote

from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from butler.channels.attachments import AttachmentRefused
from butler.channels.text import one_line
from butler.channels.turn import Step
from butler.channels.uploads import Upload, session_files
from butler.channels.web import Busy, Duplicate, NotFound, WebChat
from butler.channels.web_message import WebMessage
from butler.config.channels import DEFAULT_ATTACHMENT_TYPES
from butler.dashboard.forms import PostRefused, check_origin, form_token
from butler.dashboard.render import SECURITY_HEADERS
from butler.dashboard.view import View

Endpoint = Callable[[Request], Awaitable[Response]]

#: The header the page's script sends the form token in.
TOKEN_HEADER = "x-butler-form-token"
#: A message's own id, as the browser makes it (a UUID).
MESSAGE_ID = re.compile(r"[A-Za-z0-9-]{8,64}")
#: Conversations listed, and messages shown of one.
MAX_CONVERSATIONS = 100
MAX_MESSAGES = 200
#: A comment on an idle stream this often, so no proxy takes it for dead.
KEEPALIVE_S = 15.0
#: How soon a browser comes back after a stream is cut.
RETRY_MS = 2000
STREAM_HEADERS = {
    **SECURITY_HEADERS,
    "Content-Type": "text/event-stream; charset=utf-8",
    "X-Accel-Buffering": "no",
}


def refusal(line: str, status: int) -> JSONResponse:
    return JSONResponse({"error": line}, status, headers=SECURITY_HEADERS)


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def message_json(row: dict[str, Any]) -> dict[str, Any]:
    """One recorded message of a conversation, as the page shows it."""
    notes = [str(a.get("note") or a.get("name") or "") for a in row["attachments"]]
    return {
        "id": row["external_id"],
        "direction": row["direction"],
        "body": row["body"],
        "at": _iso(row["created_at"]),
        "status": row["status"],
        "session_id": str(row["session_id"]) if row["session_id"] else None,
        "attachments": notes,
    }


def event(step: Step) -> str:
    """One step as a Server-Sent Event (its JSON on one line)."""
    return f"id: {step.number}\nevent: {step.kind}\ndata: {json.dumps(step.data)}\n\n"


class ChatApi:
    """The web chat's routes of one butler."""

    def __init__(self, view: View, chat: WebChat, max_body: int) -> None:
        self.view = view
        self.chat = chat
        self.max_body = max_body

    def routes(self) -> list[Route]:
        """The message POST, and the reads: each refused to another site's page (any
        loopback origin passes the guard in front; only the dashboard's own passes here)."""
        reads = (
            ("/chat/api/turns/{turn}/events", self.events),
            ("/chat/api/conversations", self.conversations),
            ("/chat/api/conversations/{id}", self.thread),
            ("/chat/api/files/{id}", self.file),
        )
        return [
            Route("/chat/api/messages", self.post, methods=["POST"]),
            *(Route(path, self._own(read), methods=["GET"]) for path, read in reads),
        ]

    def _own(self, read: Endpoint) -> Endpoint:
        async def endpoint(request: Request) -> Response:
            foreign = self._foreign(request)
            return refusal(foreign, 403) if foreign else await read(request)

        return endpoint

    def _foreign(self, request: Request) -> str | None:
        """Why this request came from another site's page (a browser names the page's
        origin on any request that is not the page's own), or None."""
        if "origin" not in request.headers:
            return None
        try:
            check_origin(request, self.view.butler.config.butler.allowed_origins)
        except PostRefused as exc:
            return str(exc)
        return None

    def _forged(self, request: Request) -> str | None:
        """Why this request did not come from the chat page, or None when it did."""
        try:
            check_origin(request, self.view.butler.config.butler.allowed_origins)
        except PostRefused as exc:
            return str(exc)
        presented = request.headers.get(TOKEN_HEADER, "")[:256]
        if not hmac.compare_digest(presented.encode(), form_token(self.view.owner_token).encode()):
            return "form token: missing or wrong; send messages from the chat page"
        return None

    async def post(self, request: Request) -> Response:
        """Take one message: a command's answer, or the turn that answers it."""
        forged = self._forged(request)
        if forged:
            return refusal(forged, 403)
        size = request.headers.get("content-length", "")
        if not size.isdigit() or int(size) > self.max_body:
            limit = self.max_body // (1024 * 1024)
            return refusal(f"message of {size or 'unknown'} bytes; at most {limit} MiB", 400)
        try:
            message = await self._message(request)
            posted = await self.chat.post(message)
        except AttachmentRefused as exc:
            return refusal(f"not sent: {exc}", 400)
        except NotFound as exc:
            return refusal(str(exc), 404)
        except Duplicate as exc:
            return refusal(str(exc), 409)
        except Busy as exc:
            return refusal(str(exc), 429)
        conversation = str(posted.conversation_id) if posted.conversation_id else None
        body: dict[str, Any] = {"conversation": conversation}
        if posted.reply is not None:
            body["reply"] = posted.reply
        if posted.turn is not None:
            body["turn"] = posted.turn.id
        return JSONResponse(body, headers=SECURITY_HEADERS)

    async def _message(self, request: Request) -> WebMessage:
        settings = self.chat.settings
        try:
            form = await request.form(
                max_files=settings.max_attachments + 1,
                max_fields=8,
                max_part_size=settings.max_message_chars * 4 + 1024,
            )
        except HTTPException as exc:
            raise AttachmentRefused(one_line(str(exc.detail), 200)) from None
        try:
            fields = {name: form.get(name) for name in ("id", "conversation", "text")}
            if any(isinstance(value, UploadFile) for value in fields.values()):
                raise AttachmentRefused("id, conversation and text are text fields, not files")
            message_id = str(fields["id"] or "")
            if not MESSAGE_ID.fullmatch(message_id):
                raise AttachmentRefused("expected the message's id (a UUID the page makes)")
            conversation = str(fields["conversation"] or "")
            try:
                conversation_id = uuid.UUID(conversation[:40]) if conversation else None
            except ValueError:
                raise AttachmentRefused("expected a conversation id (a UUID) or none") from None
            uploads = []
            for part in form.getlist("files"):
                if not isinstance(part, UploadFile):
                    raise AttachmentRefused("files must be files")
                data = await part.read(settings.max_attachment_bytes + 1)
                if part.filename or data:  # an empty file input sends one nameless part
                    uploads.append(Upload(part.filename or "", part.content_type or "", data))
            files = session_files(uploads, settings) if uploads else ()
            return WebMessage(message_id, str(fields["text"] or ""), conversation_id, files)
        finally:
            await form.close()

    async def events(self, request: Request) -> Response:
        """The turn's steps as Server-Sent Events, from the first the browser has not seen."""
        turn = self.chat.turn(request.path_params["turn"][:80])
        if turn is None:  # no longer in hand: 204 stops the browser; the record answers
            return Response(status_code=204, headers=SECURITY_HEADERS)
        seen = request.headers.get("last-event-id", "")
        after = int(seen) if seen.isdigit() and len(seen) < 8 else 0

        async def stream() -> AsyncIterator[str]:
            yield f"retry: {RETRY_MS}\n\n"
            async for step in turn.follow(after, KEEPALIVE_S):
                yield ": still here\n\n" if step is None else event(step)

        return StreamingResponse(stream(), headers=STREAM_HEADERS)

    async def conversations(self, request: Request) -> Response:
        rows = await self.chat.conversations(MAX_CONVERSATIONS)
        listed = [
            {
                "id": str(row["id"]),
                "opening": one_line(row.get("opening") or "", 120),
                "last_message_at": _iso(row["last_message_at"]),
                "messages": row["messages"],
            }
            for row in rows
        ]
        return JSONResponse({"conversations": listed}, headers=SECURITY_HEADERS)

    async def thread(self, request: Request) -> Response:
        try:
            conversation_id = uuid.UUID(request.path_params["id"][:40])
        except ValueError:
            return refusal("expected a conversation id (a UUID)", 400)
        try:
            found = await self.chat.thread(conversation_id, MAX_MESSAGES)
        except NotFound as exc:
            return refusal(str(exc), 404)
        messages = [message_json(m) for m in found["messages"]]
        body = {"id": str(conversation_id), "messages": messages, "running": found["running"]}
        return JSONResponse(body, headers=SECURITY_HEADERS)

    async def file(self, request: Request) -> Response:
        """A file a session sent the person: always a download, never a page that runs."""
        found = self.chat.outbox.get(request.path_params["id"][:64])
        if found is None:
            return refusal("no such file (files are kept for a while only)", 404)
        known = found.media_type in DEFAULT_ATTACHMENT_TYPES
        media = found.media_type if known else "application/octet-stream"
        name = quote(one_line(found.name, 100) or "file", safe="")
        headers = {
            **SECURITY_HEADERS,
            "Content-Disposition": f"attachment; filename*=UTF-8''{name}",
            "Content-Security-Policy": "sandbox; default-src 'none'",
        }
        return Response(found.data, media_type=media, headers=headers)
