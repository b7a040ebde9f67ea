"""Matrix: a bot user on a homeserver, reached by the client-server API's long-polling sync.

Built on matrix-nio's :class:`nio.AsyncClient` (its requests and response
parsing), with the daemon's own loop, cursor and retries. The cursor is the
sync token: a first start takes the current one and answers nothing older.
The bot joins the rooms it is invited to, answers in
the room and thread a message came from with ``m.notice`` (which bots must
not answer, so two bots never loop), and reads unencrypted rooms only: in an
end-to-end encrypted room it says so in one line (docs/channels.md).

A room of more than the bot and one person is a group: there the bot hears
what is addressed to it (a mention of it, a reply to it, a ``/`` command),
and sits only in rooms on ``groups``. The sender is the event's user id,
which the homeserver vouches for; a display name is only shown.

Invites are of two kinds. A paired sender's invite, or one to a room on
``groups``, is the owner's: such rooms count against ``max_rooms``. Anyone
else's is a stranger's: the bot must join it so the stranger can pair with a
code, but such rooms have a bound of their own (``max_stranger_rooms``), so
strangers can never use up the owner's rooms, and a stranger's room where
nobody paired is left after ``stranger_room_minutes``. A room counts as the
owner's once one of its members is paired; which rooms are which is worked out
again from the homeserver's member lists at each connection (docs/security.md).
"""

from __future__ import annotations

import hashlib
import io
import logging
import time
import urllib.parse
from typing import Any

from nio import (
    AsyncClient,
    AsyncClientConfig,
    JoinedMembersError,
    JoinedRoomsError,
    JoinError,
    RoomLeaveError,
    SyncError,
    WhoamiError,
)

from butler.channels.base import Channel, ChannelError, Misconfigured, NotSendable
from butler.channels.download import bounded
from butler.channels.files_out import IMAGES
from butler.channels.matrix_events import (
    addressing,
    attachments_of,
    follows_of,
    inviter_of,
    text_of,
)
from butler.channels.message import AttachmentRef, Batch, Inbound
from butler.config.channels import MatrixSettings

#: What a sync brings: messages of joined rooms, their members' names, invites.
SYNC_FILTER: dict[str, Any] = {
    "presence": {"types": []},
    "account_data": {"types": []},
    "room": {
        "timeline": {"limit": 50, "types": ["m.room.message", "m.room.encrypted"]},
        "state": {"types": ["m.room.member"], "lazy_load_members": True},
        "ephemeral": {"types": []},
        "account_data": {"types": []},
    },
}
#: A first sync takes the position only: what was said before the bot came is not answered.
FIRST_FILTER: dict[str, Any] = {
    **SYNC_FILTER,
    "room": {**SYNC_FILTER["room"], "timeline": {"limit": 0}},
}

log = logging.getLogger(__name__)


class MatrixChannel(Channel):
    """A Matrix bot user."""

    kind = "matrix"
    settings: MatrixSettings
    #: Synapse's default ``max_upload_size``; a homeserver that takes less says M_TOO_LARGE.
    max_file_bytes = 50 * 1024 * 1024

    def __init__(self, settings: MatrixSettings) -> None:
        super().__init__(settings)
        self._client: AsyncClient | None = None
        self._since: str | None = None
        #: The rooms of strangers the bot sits in, and since when (monotonic seconds).
        self._strangers: dict[str, float] = {}
        #: Rooms known to be the owner's (a paired member, or on ``groups``).
        self._owners: set[str] = set()

    @property
    def max_reply_chars(self) -> int:
        return self.settings.max_reply_chars

    @property
    def client(self) -> AsyncClient:
        if self._client is None:
            raise ChannelError("matrix: not connected")
        return self._client

    async def connect(self, secret: str, position: str | None) -> str | None:
        # No retries of its own: a failure reaches the service, which reconnects with backoff.
        config = AsyncClientConfig(max_timeouts=0, max_limit_exceeded=3, request_timeout=30)
        client = AsyncClient(self.settings.homeserver, self.settings.user_id, config=config)
        client.access_token = secret
        self._client = client
        who = await client.whoami()
        if isinstance(who, WhoamiError):
            raise Misconfigured(f"matrix: the access token was refused: {who.message}")
        if who.user_id != self.settings.user_id:
            raise Misconfigured(
                f"matrix: the access token is {who.user_id}'s; expected {self.settings.user_id}"
            )
        self._since = position
        await self._sort_rooms()
        if position is not None:
            return None
        first = await client.sync(timeout=0, sync_filter=FIRST_FILTER)
        if isinstance(first, SyncError):
            raise ChannelError(f"matrix: {first.message}")
        await self._join(first)
        self._since = first.next_batch
        return first.next_batch

    async def receive(self) -> Batch:
        response = await self.client.sync(
            timeout=30_000, since=self._since, sync_filter=SYNC_FILTER
        )
        if isinstance(response, SyncError):
            if response.status_code == "M_UNKNOWN_TOKEN":
                raise Misconfigured(f"matrix: the access token was refused: {response.message}")
            raise ChannelError(f"matrix: {response.message}")
        await self._join(response)
        await self._leave_stale_strangers()
        found = []
        for room_id, room in response.rooms.join.items():
            for event in room.timeline.events:
                message = await self._inbound(room_id, event.source)
                if message is not None:
                    found.append(message)
        self._since = response.next_batch
        return Batch(found, response.next_batch)

    async def _join(self, sync: Any) -> None:
        """Join the rooms the bot is invited to while their kind has room; decline the rest."""
        for room_id, invite in sync.rooms.invite.items():
            inviter = inviter_of(invite.invite_state, self.settings.user_id)
            owners = self.settings.allows_group(room_id) or (
                inviter is not None and await self.paired(inviter)
            )
            if owners:
                theirs = [r for r in await self._joined() if r not in self._strangers]
                room = len(theirs) < self.settings.max_rooms
            else:
                if len(self._strangers) >= self.settings.max_stranger_rooms:
                    await self._check_strangers(list(self._strangers))  # one may have paired
                room = len(self._strangers) < self.settings.max_stranger_rooms
            where = {"channel": "matrix", "chat": room_id, "sender": inviter}
            if not room:
                await self.client.room_leave(room_id)  # declines the invite
                full = "max_rooms" if owners else "max_stranger_rooms"
                log.warning("invite declined: no room left", extra={**where, "limit": full})
                continue
            if isinstance(await self.client.join(room_id), JoinError):
                continue  # withdrawn meanwhile, or refused: the next invite is asked again
            if owners:
                self._owners.add(room_id)
            else:
                self._strangers[room_id] = time.monotonic()
                log.info("joined a stranger's room, for pairing", extra=where)

    async def _joined(self) -> list[str]:
        joined = await self.client.joined_rooms()
        if isinstance(joined, JoinedRoomsError):
            raise ChannelError(f"matrix: {joined.message}")
        return list(joined.rooms)

    async def _sort_rooms(self) -> None:
        """Tell the owner's rooms from strangers' among those joined (at each connection, so
        a restart forgets no stranger's room); a stranger's gets its full window again."""
        joined = await self._joined()
        self._strangers = {r: t for r, t in self._strangers.items() if r in joined}
        self._owners &= set(joined)
        unsorted = [r for r in joined if r not in self._owners and r not in self._strangers]
        now = time.monotonic()
        for room_id in unsorted:
            self._strangers[room_id] = now
        await self._check_strangers(unsorted)

    async def _check_strangers(self, rooms: list[str]) -> None:
        """Count each of ``rooms`` as the owner's when it is on ``groups`` or a joined member
        is paired."""
        for room_id in rooms:
            if self.settings.allows_group(room_id) or await self._has_paired_member(room_id):
                self._strangers.pop(room_id, None)
                self._owners.add(room_id)

    async def _has_paired_member(self, room_id: str) -> bool:
        found = await self.client.joined_members(room_id)
        if isinstance(found, JoinedMembersError):
            return False
        for member in found.members:
            if member.user_id != self.settings.user_id and await self.paired(member.user_id):
                return True
        return False

    async def _leave_stale_strangers(self) -> None:
        """Leave each stranger's room where nobody paired within ``stranger_room_minutes``."""
        since = time.monotonic() - self.settings.stranger_room_minutes * 60
        stale = [r for r, joined in self._strangers.items() if joined <= since]
        await self._check_strangers(stale)
        for room_id in stale:
            if room_id in self._strangers:
                try:
                    await self.leave(room_id)
                except ChannelError:  # gone already (kicked, say): nothing left to leave
                    self._strangers.pop(room_id, None)
                    continue
                log.warning(
                    "left a stranger's room where nobody paired",
                    extra={"channel": "matrix", "chat": room_id},
                )

    async def _inbound(self, room_id: str, event: dict[str, Any]) -> Inbound | None:
        sender = event.get("sender")
        if not isinstance(sender, str) or sender == self.settings.user_id:
            return None
        content = event.get("content") or {}
        if not isinstance(content, dict):
            return None
        if event.get("type") == "m.room.encrypted":
            content = {"msgtype": "m.encrypted"}
        elif content.get("msgtype") == "m.notice":
            return None  # another bot's output is never a request
        relates = content.get("m.relates_to") or {}
        if not isinstance(relates, dict):
            relates = {}
        thread = relates.get("event_id") if relates.get("rel_type") == "m.thread" else None
        room = self._client.rooms.get(room_id) if self._client else None
        # A room the client does not know yet counts as a group: heard only when addressed.
        group = room is None or room.member_count > 2
        text = text_of(content)
        addressed = True
        if group:
            own = room.user_name(self.settings.user_id) if room else None
            addressed, text = addressing(content, text, self.settings.user_id, own)
            addressed = addressed or await self._replies_to_bot(room_id, relates)
        return Inbound(
            channel="matrix",
            external_id=str(event.get("event_id")),
            chat=room_id,
            thread=str(thread) if thread else "",
            sender=sender,
            display_name=room.user_name(sender) if room else None,
            text=text,
            attachments=attachments_of(content),
            reply={"event_id": event.get("event_id")},
            group=group,
            addressed=addressed,
            follows=follows_of(relates),
        )

    async def _replies_to_bot(self, room_id: str, relates: dict[str, Any]) -> bool:
        """Whether a message answers one of the bot's own (its ``m.in_reply_to``)."""
        replied = relates.get("m.in_reply_to")
        event_id = replied.get("event_id") if isinstance(replied, dict) else None
        if not isinstance(event_id, str):
            return False
        found = await self.client.room_get_event(room_id, event_id)
        event = getattr(found, "event", None)
        return getattr(event, "sender", None) == self.settings.user_id

    async def leave(self, chat: str) -> bool:
        left = await self.client.room_leave(chat)
        if isinstance(left, RoomLeaveError):
            raise ChannelError(f"matrix: could not leave {chat}: {left.message}")
        self._strangers.pop(chat, None)
        self._owners.discard(chat)
        return True

    async def send(self, to: Inbound, text: str) -> str:
        content: dict[str, Any] = {"msgtype": "m.notice", "body": text}
        # The same piece of the same answer keeps its transaction id, so a retry after a
        # lost response is recognised by the homeserver and never shown twice.
        txn = hashlib.sha256(f"{to.external_id}\0{text}".encode()).hexdigest()[:32]
        return await self._send(to, content, txn)

    async def send_file(
        self, to: Inbound, name: str, media_type: str, data: bytes, caption: str = ""
    ) -> str:
        """Upload to the media repository, then an ``m.image`` or ``m.file`` message
        pointing at it (the caption its body, the name its ``filename``)."""
        uploaded, _ = await self.client.upload(
            io.BytesIO(data), content_type=media_type, filename=name, filesize=len(data)
        )
        uri = getattr(uploaded, "content_uri", None)
        if not uri:
            status = getattr(uploaded, "status_code", "")
            message = f"matrix: upload refused: {getattr(uploaded, 'message', 'no address')}"
            if status == "M_TOO_LARGE":
                raise NotSendable(message)
            raise ChannelError(message)
        content: dict[str, Any] = {
            "msgtype": "m.image" if media_type in IMAGES else "m.file",
            "body": caption or name,
            "filename": name,
            "url": uri,
            "info": {"mimetype": media_type, "size": len(data)},
        }
        txn = hashlib.sha256(f"{to.external_id}\0{uri}".encode()).hexdigest()[:32]
        return await self._send(to, content, txn)

    async def _send(self, to: Inbound, content: dict[str, Any], txn: str) -> str:
        """``content`` as a message where ``to`` came from: in its thread, or replying."""
        replied = to.reply.get("event_id")
        if to.thread:
            content["m.relates_to"] = {
                "rel_type": "m.thread",
                "event_id": to.thread,
                "is_falling_back": True,
                "m.in_reply_to": {"event_id": replied},
            }
        elif replied:
            content["m.relates_to"] = {"m.in_reply_to": {"event_id": replied}}
        sent = await self.client.room_send(to.chat, "m.room.message", content, tx_id=txn)
        event_id = getattr(sent, "event_id", None)
        if not event_id:
            raise ChannelError(f"matrix: {getattr(sent, 'message', 'not sent')}")
        return str(event_id)

    async def typing(self, to: Inbound) -> None:
        await self.client.room_typing(to.chat, True, timeout=10_000)

    async def fetch(self, attachment: AttachmentRef, limit: int) -> bytes:
        """Download through the authenticated media API, reading at most ``limit`` bytes."""
        parts = urllib.parse.urlsplit(attachment.ref)
        if parts.scheme != "mxc" or not parts.netloc or not parts.path.strip("/"):
            raise ChannelError("matrix: the attachment has no mxc:// address")
        server, media = (
            urllib.parse.quote(p, safe="") for p in (parts.netloc, parts.path.strip("/"))
        )
        url = f"{self.settings.homeserver}/_matrix/client/v1/media/download/{server}/{media}"
        session = self.client.client_session
        if session is None:
            raise ChannelError("matrix: not connected")
        headers = {"Authorization": f"Bearer {self.client.access_token}"}
        async with session.get(url, headers=headers, timeout=60) as response:
            return await bounded(response, limit, attachment.kind, "matrix")

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()
