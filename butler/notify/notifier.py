"""A butler reaching its person: the one way a message is accepted, recorded and sent.

:meth:`Notifier.deliver` is the path for everything that reaches the person
(the ``notify`` tool, a schedule's answer, a channel's reply): it picks the
owner's channels by name, applies the limits (per session, per hour, size,
quiet hours), records one row per channel, and either makes the first
attempt at once (``wait=True``: the caller hears how it went) or leaves it
to the outbox. Retries and held messages are the outbox's
(:mod:`butler.notify.outbox`).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from butler.clock import Clock, SystemClock
from butler.config import ButlerConfig
from butler.config.notify import PLACEHOLDER
from butler.notify.channels import ChannelUnavailable, NotifyRefused, chosen, fill
from butler.notify.message import Message, bounded, one_line, session_link
from butler.notify.outbox import Outbox, Sender
from butler.notify.send import Outcome, send
from butler.store.credentials import CredentialStore
from butler.store.deliveries import DeliveryStore, NewDelivery

log = logging.getLogger(__name__)

#: Sources whose messages count toward no limit: the owner's own test.
UNLIMITED = ("test",)


@dataclass(frozen=True)
class ChannelTest:
    """``butler notify test`` on one channel: delivered, or the service's error line."""

    channel: str
    outcome: Outcome


async def test_channels(
    config: ButlerConfig,
    credentials: CredentialStore,
    channel: str | None = None,
    sender: Sender = send,
) -> list[ChannelTest]:
    """A test message to ``channel`` (every channel when None), sent now, not recorded.

    It needs no database but for credentials kept there: ``butler notify test``
    opens one only when a channel names a credential the environment lacks.
    """
    settings = config.butler.notify
    names = chosen(settings, channel or sorted(settings.channels))
    message = Message(
        body=f"A test from the butler {config.name}: this channel reaches you.",
        title=f"{config.name}: test",
    )

    async def one(name: str) -> ChannelTest:
        try:
            filled = await fill(settings, name, credentials)
        except ChannelUnavailable as exc:
            return ChannelTest(name, Outcome(False, str(exc)))
        try:
            outcome = await sender(filled.urls, message)
        except Exception as exc:
            outcome = Outcome(False, f"{type(exc).__name__}: {exc}")
        return ChannelTest(name, Outcome(outcome.delivered, filled.redact(outcome.error)))

    return list(await asyncio.gather(*(one(name) for name in names)))


def credentials_named(config: ButlerConfig, channel: str | None = None) -> list[str]:
    """The credentials the channels a test reaches name (``{NAME}`` in their URLs)."""
    settings = config.butler.notify
    names = chosen(settings, channel or sorted(settings.channels))
    return sorted({m for n in names for url in settings.urls(n) for m in PLACEHOLDER.findall(url)})


class Notifier:
    """Reaches one butler's person through the owner's channels."""

    def __init__(
        self,
        config: ButlerConfig,
        store: DeliveryStore,
        credentials: CredentialStore,
        clock: Clock | None = None,
        sender: Sender | None = None,
    ) -> None:
        self.config = config
        self.settings = config.butler.notify
        self.store = store
        self.credentials = credentials
        self.clock = clock or SystemClock()
        self.sender: Sender = sender or send
        self.outbox = Outbox(self.settings, store, credentials, self.clock, self.sender)
        # Counting and recording under one lock: two calls at once cannot both pass a limit.
        self._admit = asyncio.Lock()

    @property
    def channels(self) -> list[str]:
        """The owner's channel names."""
        return sorted(self.settings.channels)

    async def start(self) -> None:
        """Send on what is waiting in the database (held, retrying, interrupted).

        Never raises: without its database the butler serves on, and what
        waits is sent once the outbox starts (at the next delivery or start).
        """
        try:
            await self.outbox.start()
        except Exception:
            log.exception("the outbox could not start; waiting messages go at the next start")

    async def stop(self) -> None:
        await self.outbox.stop()

    async def deliver(
        self,
        message: Message,
        channels: str | list[str] | None = None,
        *,
        session_id: str | None = None,
        source: str = "tool",
        wait: bool = False,
    ) -> list[dict[str, Any]]:
        """Accept ``message`` for ``channels`` (names; the default ones when None).

        Raises :class:`NotifyRefused` (one line) for an unknown channel or a
        limit reached. With ``wait``, makes the first attempt now and reports
        it; otherwise the outbox sends it. Either way every attempt ends on
        the row and a failed one is tried again in the background.
        """
        names = chosen(self.settings, channels)
        message = self._bounded(message, session_id)
        async with self._admit:
            now = self.clock.now()
            try:
                await self._check_limits(now, session_id, source)
            except NotifyRefused as exc:  # refused, never dropped: a row says why
                key = uuid.uuid4()
                refused = [
                    replace(
                        self._row(key, message, n, session_id, source, "refused", None),
                        error=str(exc),
                    )
                    for n in names
                ]
                await self.store.add(refused)
                raise
            until = self.outbox.held_until(message.priority, now)
            status = "held" if until else ("sending" if wait else "pending")
            key = uuid.uuid4()
            rows = [
                self._row(key, message, name, session_id, source, status, until or now)
                for name in names
            ]
            attached = message.attachment
            stored = (attached.name, attached.content) if attached else None
            await self.store.add(rows, stored)
        self.outbox.ensure_running()
        if status != "sending":  # the outbox sends it, now or when quiet hours end
            self.outbox.poke()
            held = {"until": until.isoformat()} if until else {}
            return [{"channel": r.channel, "status": status, **held} for r in rows]
        tasks = [self.outbox.spawn(self.outbox.attempt(_claimed(r))) for r in rows]
        # Shielded: a caller that goes away does not cut an attempt short.
        return list(await asyncio.shield(asyncio.gather(*tasks)))

    async def test(self, channel: str | None = None) -> list[ChannelTest]:
        """A test message to ``channel`` (every channel when None), sent now, not recorded."""
        return await test_channels(self.config, self.credentials, channel, self.sender)

    def _bounded(self, message: Message, session_id: str | None) -> Message:
        link = session_link(self.config.butler.public_url, session_id)
        body = bounded(message.body, self.settings.max_chars, link, session_id)
        return replace(message, body=body, title=one_line(message.title, self.config.name))

    async def _check_limits(self, now: datetime, session_id: str | None, source: str) -> None:
        if source in UNLIMITED:
            return
        settings = self.settings
        if session_id is not None and source == "tool":
            sent = await self.store.messages_of(session_id)
            if sent >= settings.max_per_session:
                raise NotifyRefused(
                    f"this session has sent {sent} messages, the most "
                    f"[butler.notify] max_per_session allows; nothing more is sent"
                )
        sent = await self.store.messages_since(now - timedelta(hours=1))
        if sent >= settings.max_per_hour:
            raise NotifyRefused(
                f"this butler has sent {sent} messages in the last hour, the most "
                f"[butler.notify] max_per_hour allows; try again later"
            )

    def _row(
        self,
        key: uuid.UUID,
        message: Message,
        channel: str,
        session_id: str | None,
        source: str,
        status: str,
        next_at: datetime,
    ) -> NewDelivery:
        return NewDelivery(
            message=key,
            session_id=session_id,
            source=source,
            channel=channel,
            priority=message.priority,
            kind=message.kind,
            title=message.title,
            body=message.body,
            attachment=message.attachment.name if message.attachment else None,
            status=status,
            next_at=next_at,
            created_at=self.clock.now(),
            id=uuid.uuid4(),
        )


def _claimed(row: NewDelivery) -> dict[str, Any]:
    """A recorded row as the outbox reads one it claimed."""
    return {
        "id": str(row.id),
        "message": str(row.message),
        "session_id": row.session_id,
        "channel": row.channel,
        "priority": row.priority,
        "kind": row.kind,
        "title": row.title,
        "body": row.body,
        "attachment": row.attachment,
        "attempts": [],
    }
