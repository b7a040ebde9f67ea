"""The one place butler hands a message to Apprise.

Apprise gets the owner's URLs (filled by :mod:`.channels`) and, from the
session, only a body and a title as plain text and an attachment as bytes in
memory: never a string it would parse as a URL or a path (Apprise fetches an
``http://`` attachment and opens a ``file://`` one), never markdown or HTML
to render, never escapes to interpret. Its own log lines stay inside it
(its debug lines name the URLs, secrets and all); what a service answered
comes back as one line, which the caller redacts.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from butler.notify.message import Message

#: Longest an Apprise call may take, all of a channel's services together.
SEND_TIMEOUT_S = 60.0
#: Longest error line kept from a service.
MAX_ERROR_CHARS = 500

_apprise: ModuleType | None = None


@dataclass(frozen=True)
class Outcome:
    """How one attempt on one channel went: delivered, or the service's own error line."""

    delivered: bool
    error: str | None = None


def _load() -> ModuleType:
    """Import Apprise (a fifth of a second: only when a message is first sent)."""
    module = importlib.import_module("apprise")
    importlib.import_module("apprise.attachment.memory")  # an attachment held in memory
    apprise_log = logging.getLogger("apprise")
    # Not through the daemon's handler: at debug level Apprise logs whole URLs.
    apprise_log.propagate = False
    apprise_log.setLevel(logging.WARNING)  # what a result captures, whatever the root says
    apprise_log.addHandler(logging.NullHandler())
    # requests' connection pool logs each request line, a secret in the path and all.
    logging.getLogger("urllib3").setLevel(logging.WARNING)
    return module


async def apprise_module() -> ModuleType:
    """Apprise, imported off the event loop the first time."""
    global _apprise
    if _apprise is None:
        _apprise = await asyncio.to_thread(_load)
    return _apprise


def _prepared(apprise: ModuleType, urls: list[str], message: Message) -> tuple[Any, Any, list[Any]]:
    """An Apprise object holding ``urls``, the attachment and the services (or None, a
    refusal line and none)."""
    # In memory: nothing Apprise caches (a Matrix login) is written to disk.
    asset = apprise.AppriseAsset(storage_mode="memory", secure_logging=True)
    notifier = apprise.Apprise(asset=asset)
    services = []
    for index, url in enumerate(urls, 1):
        # One service per URL: ``add`` of a string would split it at commas and spaces.
        service = apprise.Apprise.instantiate(url, asset=asset)
        if service is None:
            return (
                None,
                f"Apprise cannot use URL {index} of this channel (an unknown service, "
                "or a part it cannot read); see docs/notify.md",
                [],
            )
        notifier.add(service)
        services.append(service)
    attach = None
    if message.attachment is not None:
        memory = apprise.attachment.memory.AttachMemory(
            content=message.attachment.content, name=message.attachment.name
        )
        attach = apprise.AppriseAttachment(memory, asset=asset)
    return notifier, attach, services


def _error_line(result: Any) -> str:
    """The first warning a service logged during ``result``, else its status."""
    for service in result:
        for entry in service.logs():
            if entry.level in ("WARNING", "ERROR", "CRITICAL") and entry.message:
                return f"{service.name}: {' '.join(str(entry.message).split())}"
    for entry in result.call_logs():
        if entry.level in ("WARNING", "ERROR", "CRITICAL") and entry.message:
            return " ".join(str(entry.message).split())
    return f"not delivered (Apprise status {result.status.name.lower()})"


async def _rooms_problem(services: list[Any]) -> str | None:
    """Why a Matrix service of the channel must not be handed to Apprise (a room missing, or
    the bot not in it: Apprise would create or join one), else None."""
    # Here, not at the top: httpx is imported only when a message is sent.
    from butler.notify.matrix_rooms import RoomProblem, check_rooms, is_matrix, unreachable

    for service in services:
        if is_matrix(service):
            try:
                await check_rooms(service)
            except RoomProblem as exc:
                return str(exc)
            except Exception as exc:
                if not unreachable(exc):
                    raise
                return f"Matrix could not be reached: {type(exc).__name__}"
    return None


async def send(urls: list[str], message: Message, timeout_s: float = SEND_TIMEOUT_S) -> Outcome:
    """Send ``message`` to every URL of one channel; delivered only if all took it."""
    apprise = await apprise_module()
    notifier, attach, services = await asyncio.to_thread(_prepared, apprise, urls, message)
    if notifier is None:
        return Outcome(False, attach)
    problem = await _rooms_problem(services)
    if problem is not None:
        return Outcome(False, problem[:MAX_ERROR_CHARS])
    kind = apprise.NotifyType.FAILURE if message.kind == "failure" else apprise.NotifyType.INFO
    if message.priority == "high" and message.kind != "failure":
        kind = apprise.NotifyType.WARNING
    try:
        result = await notifier.async_notify(
            body=message.body,
            title=message.title,
            notify_type=kind,
            body_format=apprise.NotifyFormat.TEXT,
            attach=attach,
            interpret_escapes=False,
            timeout=timeout_s,
        )
        with result:
            outcome = Outcome(True) if result else Outcome(False, _error_line(result))
        del result
    finally:
        # A service may still talk to its server as it goes (a Matrix logout): let the
        # last reference go in a thread, never on the event loop.
        held = [notifier]
        del notifier
        await asyncio.to_thread(held.clear)
    return Outcome(outcome.delivered, (outcome.error or "")[:MAX_ERROR_CHARS] or None)
