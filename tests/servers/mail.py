"""A real SMTP server on loopback (aiosmtpd) that keeps every message it is given."""

from __future__ import annotations

import asyncio
import email
import email.policy
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any

import pytest

from tests.helpers import free_port, missing_tool


@dataclass(frozen=True)
class Received:
    """One message as the server got it: the envelope and the parsed message."""

    mail_from: str
    rcpt_tos: list[str]
    message: EmailMessage

    @property
    def subject(self) -> str:
        return str(self.message["Subject"])

    @property
    def body(self) -> str:
        part = self.message.get_body(preferencelist=("plain", "html"))
        return part.get_content() if part is not None else ""

    def attachments(self) -> dict[str, bytes]:
        return {
            part.get_filename(): part.get_payload(decode=True)
            for part in self.message.iter_attachments()
        }


class MailServer:
    """aiosmtpd on 127.0.0.1; :meth:`wait` returns once ``count`` messages arrived."""

    def __init__(self) -> None:
        self.port = free_port()
        self.received: list[Received] = []
        self._arrived = threading.Condition()
        try:
            from aiosmtpd.controller import Controller
        except ImportError:
            missing_tool("aiosmtpd (the tests' mail server)")
        self._controller = Controller(self, hostname="127.0.0.1", port=self.port)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        parsed = email.message_from_bytes(envelope.content, policy=email.policy.default)
        with self._arrived:
            self.received.append(Received(envelope.mail_from, list(envelope.rcpt_tos), parsed))
            self._arrived.notify_all()
        return "250 OK"

    def url(self, sender: str, to: str) -> str:
        """An Apprise URL sending through this server, from ``sender`` to ``to``."""
        return f"mailto://127.0.0.1:{self.port}?from={sender}&to={to}"

    def wait(self, count: int = 1, timeout: float = 30.0) -> list[Received]:
        deadline = time.monotonic() + timeout
        with self._arrived:
            while len(self.received) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"{len(self.received)} of {count} messages within {timeout} s"
                    )
                self._arrived.wait(left)
            return list(self.received)

    async def until(self, count: int = 1, timeout: float = 30.0) -> list[Received]:
        """:meth:`wait` from a test's event loop, which goes on running meanwhile."""
        return await asyncio.to_thread(self.wait, count, timeout)

    def __enter__(self) -> MailServer:
        self._controller.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._controller.stop()


@pytest.fixture
def mail_server() -> Iterator[MailServer]:
    with MailServer() as server:
        yield server
