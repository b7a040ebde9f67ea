"""Chat conversations at ``/conversations``: each a thread of messages and replies.

The butler that keeps a channel (its own, or the switchboard's home) lists
every conversation its channels had: who, on which channel, with which
butler, and under them the messages refused lately and why (a sender not
paired, or not proven: a forged email); a conversation's page shows its
messages in order, each reply with the session that wrote it. Every text
was written by a sender or a runtime and is shown escaped, never as markup.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from butler.dashboard.params import BadParam, only
from butler.dashboard.render import Page, e, live, refused, table, when
from butler.dashboard.view import View, bad
from butler.store.conversations import ConversationStore

PAGE = 100
#: Refused messages shown under the conversations, the latest ones.
REFUSED = 20
#: Messages shown of one conversation, the latest ones.
MAX_MESSAGES = 500
NOT_FOUND = "no such conversation of this butler's channels"


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def render_listing(rows: list[dict[str, Any]]) -> str:
    """One row per conversation, most recently active first."""
    if not rows:
        return (
            '<section id="conversations"><p class="empty">No conversations yet: pair a '
            "sender with <code>butler channels pair</code> (docs/channels.md).</p></section>"
        )
    lines = [
        f'<tr data-conversation="{e(r["id"])}">'
        f'<td><a href="/conversations/{e(r["id"])}">{e(when(_iso(r["last_message_at"])))}</a></td>'
        f"<td>{e(r['channel'])}</td><td>{e(r['sender'])}</td><td>{e(r['butler'])}</td>"
        f'<td class="num">{e(r["messages"])}</td>'
        f"<td>{'open' if r['closed_at'] is None else 'ended'}</td></tr>"
        for r in rows
    ]
    head = ["Last message", "Channel", "Sender", "Butler", "Messages", "State"]
    return f'<section id="conversations">{table(head, lines)}</section>'


def render_refused(rows: list[dict[str, Any]]) -> str:
    """The latest messages refused, newest first, with why (never what they said)."""
    if not rows:
        return ""
    lines = [
        f'<tr data-refused="{e(r["id"])}"><td>{e(when(_iso(r["created_at"])))}</td>'
        f"<td>{e(r['channel'])}</td><td>{e(r['sender'])}</td>"
        f"<td>{e(r['reason'] or 'refused')}</td></tr>"
        for r in rows
    ]
    table_html = table(["Received", "Channel", "Sender", "Why refused"], lines)
    return f'<section id="refused"><h2>Refused lately</h2>{table_html}</section>'


def render_thread(
    conversation: dict[str, Any], messages: list[dict[str, Any]], sessions: dict[str, str]
) -> str:
    """The conversation's messages in order; ``sessions`` maps a butler to its dashboard URL."""
    items = []
    for m in messages:
        side = "in" if m["direction"] == "in" else "out"
        who = m["display_name"] or m["sender"] if side == "in" else m["butler"] or "butler"
        link = ""
        if m["session_id"] and m["butler"] in sessions:
            href = f"{sessions[m['butler']]}/sessions/{m['session_id']}"
            link = f' · <a href="{e(href)}">session</a>'
        items.append(
            f'<li class="message message-{side}" data-status="{e(m["status"])}">'
            f'<p class="meta"><b>{e(who)}</b> · {e(when(_iso(m["created_at"])))} · '
            f"{e(m['status'])}{link}</p><pre>{e(m['body'])}</pre></li>"
        )
    head = (
        f"<p>{e(conversation['channel'])} · sender {e(conversation['sender'])} · "
        f"with {e(conversation['butler'])} · chat {e(conversation['chat'])}"
        f"{' · thread ' + e(conversation['thread']) if conversation['thread'] else ''}</p>"
    )
    body = "".join(items) or '<li class="empty">No messages.</li>'
    return f'<section id="thread">{head}<ol class="thread">{body}</ol></section>'


class Conversations:
    """The two views over one butler's conversation store."""

    def __init__(self, view: View) -> None:
        self.view = view
        self.store = ConversationStore(view.butler.db)

    def dashboards(self) -> dict[str, str]:
        """Where each butler of this process serves (a reply's session is on its own)."""
        butler = self.view.butler
        return {p.config.name: p.config.mcp_base_url for p in butler.peers or [butler]}

    async def listing_body(self, request: Request) -> str:
        only(request.query_params, ())
        listing = render_listing(await self.store.listing(PAGE))
        return listing + render_refused(await self.store.refused(REFUSED))

    async def thread_body(self, request: Request) -> str | None:
        only(request.query_params, ())
        try:
            key = uuid.UUID(request.path_params["id"][:40])
        except ValueError:
            raise BadParam("expected a conversation id (a UUID)") from None
        conversation = await self.store.get(key)
        if conversation is None:
            return None
        messages = await self.store.exchanges(key, MAX_MESSAGES)
        return render_thread(conversation, messages, self.dashboards())

    async def listing(self, request: Request) -> Response:
        try:
            html = await self.listing_body(request)
        except BadParam as exc:
            return await self.view.refused_page(str(exc), 400, "/conversations")
        return await self.view.page(
            Page(
                title=f"{self.view.butler.config.name} · conversations",
                subtitle="chat conversations of this butler's channels",
                source="/api/conversations",
                body=html,
                current="/conversations",
            )
        )

    async def listing_json(self, request: Request) -> Response:
        try:
            return live(await self.listing_body(request))
        except BadParam as exc:
            return bad(exc)

    async def thread(self, request: Request) -> Response:
        try:
            html = await self.thread_body(request)
        except BadParam as exc:
            return await self.view.refused_page(str(exc), 400, "/conversations")
        if html is None:
            return await self.view.refused_page(NOT_FOUND, 404, "/conversations")
        return await self.view.page(
            Page(
                title=f"{self.view.butler.config.name} · conversation",
                subtitle="a conversation, oldest message first",
                source=f"/api/conversations/{request.path_params['id']}",
                body=html,
                current="/conversations",
            )
        )

    async def thread_json(self, request: Request) -> Response:
        try:
            html = await self.thread_body(request)
        except BadParam as exc:
            return bad(exc)
        return refused(NOT_FOUND, 404, json=True) if html is None else live(html)


def conversation_routes(view: View) -> list[Route]:
    """``/conversations``, ``/conversations/<id>`` and their live twins."""
    views = Conversations(view)
    return [
        Route("/conversations", views.listing, methods=["GET"]),
        Route("/api/conversations", views.listing_json, methods=["GET"]),
        Route("/conversations/{id}", views.thread, methods=["GET"]),
        Route("/api/conversations/{id}", views.thread_json, methods=["GET"]),
    ]
