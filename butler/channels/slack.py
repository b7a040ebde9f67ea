"""Slack: an app reached over Socket Mode, so no public address is needed.

Built on slack-sdk alone (not the Bolt framework): its ``AsyncWebClient`` for
the Web API and its aiohttp ``SocketModeClient`` for the WebSocket, with the
daemon's own loop and retries. Slack delivers each event in an envelope the
app must acknowledge, and delivers it again when it is not; the channel
acknowledges an envelope only at the next read, once the service has recorded
its message, so a message is never lost between the socket and the table
(and one delivered twice is recognised by its ``channel:ts``). What Slack
gave up delivering while the daemon was away is read back at the next
connection from each recent chat's history (``conversations.history``,
after the cursor's last message there; thread replies are not read back).

In a direct message the conversation is the chat, answered in place (in the
thread the person wrote in, if any). In a channel every message the bot
answers becomes a thread: the reply goes under it, and a follow-up in that
thread continues the same conversation.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Awaitable
from dataclasses import replace
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.async_client import AsyncBaseSocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient

from butler.channels.base import Channel, ChannelError, Misconfigured, Need, TooLarge
from butler.channels.cursor import READ_BACK, Seen
from butler.channels.download import bounded
from butler.channels.message import AttachmentRef, Batch, Inbound
from butler.channels.slack_events import inbound_of
from butler.config.channels import SlackSettings

log = logging.getLogger(__name__)

#: How long opening the connection (and Slack's ``hello`` on it) may take.
CONNECT_S = 30.0
#: How often a quiet connection is checked; lost on two checks in a row, it is reopened.
CHECK_S = 2.0
#: The SDK's ping interval: a connection with no pong for four of them is stale.
PING_S = 5.0
#: Errors that mean a token is wrong, not that Slack is away.
REFUSED = {
    "invalid_auth",
    "not_authed",
    "account_inactive",
    "token_revoked",
    "token_expired",
    "not_allowed_token_type",
    "missing_scope",
}
#: What the bot shows while an answer is written.
THINKING = "is thinking…"
#: What Slack ids look like: a conversation's (C..., D..., G...) and a message's ts.
CONVERSATION = re.compile(r"[A-Z0-9]{1,24}")
TS = re.compile(r"[0-9]{1,12}\.[0-9]{1,8}")
#: Answered messages remembered, so a late typing renewal sets no status again.
ANSWERED_KEPT = 1000


class SlackChannel(Channel):
    """A Slack app, over Socket Mode."""

    kind = "slack"
    follows_threads = True
    settings: SlackSettings
    #: Slack takes files up to 1 GB; the channel's own bound is far below it.
    max_file_bytes = 1024 * 1024 * 1024

    def __init__(self, settings: SlackSettings, need: Need) -> None:
        super().__init__(settings)
        self._need = need
        self._web: AsyncWebClient | None = None
        self._socket: SocketModeClient | None = None
        self._http: aiohttp.ClientSession | None = None
        self._token = ""
        #: The bot's own user id: its mentions and its threads address it.
        self.me = ""
        #: Envelopes from the socket (with the id to acknowledge), or messages read back (None).
        self._events: asyncio.Queue[tuple[str | None, dict[str, Any]]] = asyncio.Queue()
        self._hello = asyncio.Event()
        self._unacked: list[str] = []
        self._names: dict[str, str | None] = {}
        #: Messages answered (their status cleared), and those showing "is thinking…".
        self._answered: dict[str, None] = {}
        self._thinking: set[str] = set()
        #: The cursor: each recent chat's last message recorded.
        self._seen = cursor_of(None)
        self._reading_back: set[asyncio.Task[None]] = set()

    @property
    def max_reply_chars(self) -> int:
        return self.settings.max_reply_chars

    @property
    def web(self) -> AsyncWebClient:
        if self._web is None:
            raise ChannelError("slack: not connected")
        return self._web

    async def connect(self, secret: str, position: str | None) -> str | None:
        app_token = await self._need(self.settings.app_token_credential)
        self.secrets.add(app_token)
        self._token = secret
        self._events, self._hello, self._unacked = asyncio.Queue(), asyncio.Event(), []
        self._seen = cursor_of(position)
        web = AsyncWebClient(
            token=secret,
            base_url=f"{self.settings.api_url}/",
            timeout=30,
            retry_handlers=[
                AsyncConnectionErrorRetryHandler(max_retry_count=1),
                AsyncRateLimitErrorRetryHandler(max_retry_count=3),
            ],
        )
        self._web = web
        self._http = aiohttp.ClientSession()
        self.me = (await self._call(web.auth_test(), "the bot token"))["user_id"]
        socket = SocketModeClient(
            app_token, web_client=web, auto_reconnect_enabled=False, ping_interval=PING_S
        )
        self._socket = socket
        socket.message_listeners.append(self._on_message)
        socket.socket_mode_request_listeners.append(self._on_request)
        # Asked here, not inside the SDK's connect(), which would retry a refused token forever.
        socket.wss_uri = await self._call(socket.issue_new_wss_url(), "the app-level token")
        try:
            await asyncio.wait_for(socket.connect(), CONNECT_S)
            await asyncio.wait_for(self._hello.wait(), CONNECT_S)
        except TimeoutError:
            raise ChannelError("slack: the Socket Mode connection did not open") from None
        if self._seen:
            task = asyncio.create_task(self._read_back(web, list(self._seen)))
            self._reading_back.add(task)
            task.add_done_callback(self._reading_back.discard)
        return None

    async def _read_back(self, web: AsyncWebClient, seen: list[tuple[str, str]]) -> None:
        """Each recent chat's messages after the last one recorded, oldest first."""
        for chat, last in seen:
            try:
                history = await web.conversations_history(
                    channel=chat, oldest=last, inclusive=False, limit=READ_BACK
                )
            except Exception as exc:  # a missing scope, a chat left, Slack away: the next start
                error = exc.response.get("error") if isinstance(exc, SlackApiError) else None
                log.warning(
                    "slack messages missed could not be read back",
                    extra={"chat": chat, "error": error or type(exc).__name__},
                )
                continue
            kind = "im" if chat.startswith("D") else "channel"
            for item in reversed(history.get("messages") or []):
                if isinstance(item, dict):
                    event = {**item, "channel": chat, "channel_type": kind}
                    self._events.put_nowait((None, {"type": "event_callback", "event": event}))

    async def _call(self, call: Awaitable[Any], what: str) -> Any:
        try:
            return await call
        except SlackApiError as exc:
            error = str(exc.response.get("error", "error"))
            if error in REFUSED:
                raise Misconfigured(f"slack: {what} was refused ({error})") from None
            raise ChannelError(f"slack: {error}") from None
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise ChannelError(f"slack: {type(exc).__name__}: {exc}") from None

    async def _on_message(
        self, client: AsyncBaseSocketModeClient, message: dict[str, Any], raw: str | None
    ) -> None:
        if message.get("type") == "hello":
            self._hello.set()

    async def _on_request(
        self, client: AsyncBaseSocketModeClient, request: SocketModeRequest
    ) -> None:
        if request.type == "events_api":
            self._events.put_nowait((request.envelope_id, request.payload))
        else:  # slash commands and interactions are not taken: acknowledged, never retried
            await client.send_socket_mode_response(SocketModeResponse(request.envelope_id))

    async def receive(self) -> Batch:
        await self._ack(self._unacked)  # the service recorded them before reading again
        self._unacked = []
        first = await self._next()
        waiting = [first]
        while not self._events.empty():
            waiting.append(self._events.get_nowait())
        found, ignored = [], []
        for envelope, payload in waiting:
            message = inbound_of(payload, self.me)
            if message is not None:
                found.append(_named(message, await self._name(message.sender)))
                self._seen.saw(message.chat, str(message.reply["ts"]))
            if envelope is not None:
                (ignored if message is None else self._unacked).append(envelope)
        await self._ack(ignored)
        return Batch(found, self._seen.position() if found else None)

    async def _next(self) -> tuple[str | None, dict[str, Any]]:
        """The next envelope; ChannelError once the connection is lost for two checks."""
        lost = 0
        while True:
            try:
                return await asyncio.wait_for(self._events.get(), CHECK_S)
            except TimeoutError:
                socket = self._socket
                if socket is None:
                    raise ChannelError("slack: not connected") from None
                # A refresh Slack asked for replaces the connection within a check.
                lost = 0 if await socket.is_connected() else lost + 1
                if lost >= 2:
                    raise ChannelError("slack: the Socket Mode connection was lost") from None

    async def _ack(self, envelopes: list[str]) -> None:
        socket = self._socket
        for envelope in envelopes:
            if socket is None:
                return
            try:
                await socket.send_socket_mode_response(SocketModeResponse(envelope))
            except Exception as exc:  # not acknowledged: Slack delivers it again
                log.debug("envelope not acknowledged", extra={"error": type(exc).__name__})

    async def _name(self, user: str) -> str | None:
        """The person's display name (users.info, kept); None when Slack will not say."""
        if user not in self._names:
            try:
                info = await asyncio.wait_for(self.web.users_info(user=user), 3)
            except SlackApiError:  # no users:read scope, or no such user: asked no more
                self._names[user] = None
            except Exception:  # Slack slow or away: asked again at the next message
                return None
            else:
                profile = info["user"].get("profile") or {}
                name = profile.get("display_name") or profile.get("real_name")
                self._names[user] = name or info["user"].get("name")
        return self._names[user]

    async def send(self, to: Inbound, text: str) -> str:
        thread = to.reply.get("thread_ts") or None
        sent = await self._call(
            self.web.chat_postMessage(
                channel=to.chat,
                text=escaped(text),
                thread_ts=thread,
                unfurl_links=False,
                unfurl_media=False,
            ),
            "the bot token",
        )
        self._answered[to.external_id] = None
        while len(self._answered) > ANSWERED_KEPT:
            del self._answered[next(iter(self._answered))]
        if to.external_id in self._thinking:
            self._thinking.discard(to.external_id)
            await self._status(to, "")
        return f"{to.chat}:{sent['ts']}"

    async def send_file(
        self, to: Inbound, name: str, media_type: str, data: bytes, caption: str = ""
    ) -> str:
        """``files_upload_v2``: an upload URL, the bytes to it, then the file shared in the
        chat (in the thread the message is in), the caption its comment. Slack shows an
        image inline itself."""
        sent = await self._call(
            self.web.files_upload_v2(
                channel=to.chat,
                file=data,
                filename=name,
                title=name,
                initial_comment=escaped(caption) if caption else None,
                thread_ts=to.reply.get("thread_ts") or None,
            ),
            "the bot token",
        )
        return f"{to.chat}:{sent['file']['id']}"

    async def typing(self, to: Inbound) -> None:
        if to.external_id in self._answered:
            return
        self._thinking.add(to.external_id)
        await self._status(to, THINKING)
        if to.external_id in self._answered:  # answered while the status was on its way
            await self._status(to, "")

    async def _status(self, to: Inbound, status: str) -> None:
        """Slack's loading status under the person's message ("" clears it)."""
        thread = to.reply.get("thread_ts") or to.reply.get("ts")
        if not thread:
            return
        try:
            await self.web.assistant_threads_setStatus(
                channel_id=to.chat, thread_ts=thread, status=status
            )
        except SlackApiError as exc:  # a missed indicator is no failure
            log.debug("slack status not set", extra={"error": exc.response.get("error")})

    async def fetch(self, attachment: AttachmentRef, limit: int) -> bytes:
        """The file, by files.info; downloaded with the bot token from Slack's file host only."""
        info = (await self._call(self.web.files_info(file=attachment.ref), "the bot token"))["file"]
        size = info.get("size")
        if isinstance(size, int) and size > limit:
            raise TooLarge(attachment.kind)
        url = str(info.get("url_private_download") or info.get("url_private") or "")
        if not url.startswith(f"{self.settings.files_url}/"):
            raise ChannelError(f"slack: the {attachment.kind} is not on {self.settings.files_url}")
        if self._http is None:
            raise ChannelError("slack: not connected")
        headers = {"Authorization": f"Bearer {self._token}"}
        timeout = aiohttp.ClientTimeout(total=60)
        async with self._http.get(
            url, headers=headers, allow_redirects=False, timeout=timeout
        ) as response:
            return await bounded(response, limit, attachment.kind, "slack")

    async def close(self) -> None:
        for task in list(self._reading_back):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        socket, self._socket = self._socket, None
        http, self._http = self._http, None
        self._web = None
        if socket is not None:
            await socket.close()
        if http is not None:
            await http.close()


def cursor_of(position: str | None) -> Seen:
    """The stored cursor: each recent conversation's last message recorded (its ts)."""
    return Seen(position, CONVERSATION, TS, lambda ts: tuple(int(p) for p in ts.split(".")))


def escaped(text: str) -> str:
    """``text`` with Slack's three control characters escaped: no <!channel> from an answer."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _named(message: Inbound, name: str | None) -> Inbound:
    return replace(message, display_name=name)
